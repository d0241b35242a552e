// The cost of an ID from the lease against a plain bigint counter in the
// same run (a harness of its own on process.hrtime.bigint(): warm-up, then
// the median of the rounds, in ns per ID), one loop, against a real frond
// serve (FROND_TEST_BIN):
//
//   npm run bench [-- ROUNDS IDS_PER_ROUND]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient } from "../dist/esm/index.js";
import { startFrond } from "../test/server.mjs";

const rounds = Number(process.argv[2] ?? 9);
const n = Number(process.argv[3] ?? 2_000_000);
const s = await startFrond(mkdtempSync(join(tmpdir(), "frond-bench-")));
const c = new FrondClient({ servers: [s.url], minLease: 1_000_000, maxLease: 1_000_000, leaseTargetMs: 600_000 });
await c.createTag("bench", 1_000_000);
const tag = c.tag("bench");
await tag.next();

let sink = 0n;
const time = async (f, count) => {
  const t0 = process.hrtime.bigint();
  await f(count);
  return Number(process.hrtime.bigint() - t0) / count;
};
const counter = async (k) => {
  let x = 0n, v = 0n;
  for (let i = 0; i < k; i++) {
    v += 1n;
    x ^= v;
  }
  sink ^= x;
};
// The same counter kept in an object, as a lease keeps its next ID: each
// increment is a new bigint on the heap.
const box = { v: 0n };
const boxed = async (k) => {
  let x = 0n;
  for (let i = 0; i < k; i++) {
    const id = box.v;
    box.v = id + 1n;
    x ^= id;
  }
  sink ^= x;
};
const tryNext = async (k) => {
  let x = 0n;
  for (let i = 0; i < k; i++) x ^= tag.tryNext() ?? (await tag.next());
  sink ^= x;
};
const awaitNext = async (k) => {
  let x = 0n;
  for (let i = 0; i < k; i++) x ^= await tag.next();
  sink ^= x;
};
const byName = async (k) => {
  let x = 0n;
  for (let i = 0; i < k; i++) x ^= await c.nextId("bench");
  sink ^= x;
};
const fs = { counter, boxed, tryNext, awaitNext, byName };
for (let w = 0; w < 3; w++) for (const f of Object.values(fs)) await time(f, n / 4);
const res = Object.fromEntries(Object.keys(fs).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const [k, f] of Object.entries(fs)) res[k].push(await time(f, n));
const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const base = med(res.counter);
console.log(`${rounds} rounds of ${n.toLocaleString("en")} IDs, one loop, medians (ns per ID): bigint counter ${base.toFixed(1)}; ` +
  `the counter in an object ${med(res.boxed).toFixed(1)} (${(med(res.boxed) / base).toFixed(2)}x); ` +
  `tag.tryNext() ${med(res.tryNext).toFixed(1)} (${(med(res.tryNext) / base).toFixed(2)}x); ` +
  `await tag.next() ${med(res.awaitNext).toFixed(1)} (${(med(res.awaitNext) / base).toFixed(2)}x); ` +
  `await client.nextId(tag) ${med(res.byName).toFixed(1)} (${(med(res.byName) / base).toFixed(2)}x)`);
console.log(`node ${process.version}; ${JSON.stringify(c.stats())}; sink ${sink & 1n}`);
c.close();
await s.kill();
