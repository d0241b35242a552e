// What a gene ID costs beside a plain leased ID (docs/kinds.md#shard-bits-gene-ids):
// nextShard and nextForKey (a lease of counters, a shift and an or, and
// for a key its hash) against nextId (a plain lease) in the same run, with
// bench.mjs's harness (process.hrtime.bigint(): warm-up, then the median
// of the rounds, in ns per ID), one loop, against a real frond serve
// (FROND_TEST_BIN):
//
//   npm run bench:shard [-- ROUNDS IDS_PER_ROUND]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient, shardOf } from "../dist/esm/index.js";
import { startFrond } from "../test/server.mjs";

const rounds = Number(process.argv[2] ?? 9);
const n = Number(process.argv[3] ?? 1_000_000);
const s = await startFrond(mkdtempSync(join(tmpdir(), "frond-bench-")));
const c = new FrondClient({ servers: [s.url], minLease: 1_000_000, maxLease: 1_000_000, leaseTargetMs: 600_000 });
await c.createTag("plain", 1_000_000);
await c.createTag("genes", 1_000_000, { mapping: "shard:4" });
const tag = c.tag("plain");
await tag.next();
await c.nextShard("genes", 5);

let sink = 0n;
const time = async (f, count) => {
  const t0 = process.hrtime.bigint();
  await f(count);
  return Number(process.hrtime.bigint() - t0) / count;
};
const key = "user-42";
const fs = {
  // Synchronous, from the lease in hand.
  tryNext: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= c.tryNext("plain") ?? (await c.nextId("plain"));
    sink ^= x;
  },
  tryNextShard: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= c.tryNextShard("genes", 5) ?? (await c.nextShard("genes", 5));
    sink ^= x;
  },
  tryNextForKey: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= c.tryNextForKey("genes", key) ?? (await c.nextForKey("genes", key));
    sink ^= x;
  },
  // Awaited.
  nextId: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= await c.nextId("plain");
    sink ^= x;
  },
  nextShard: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= await c.nextShard("genes", 5);
    sink ^= x;
  },
  nextForKey: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= await c.nextForKey("genes", key);
    sink ^= x;
  },
  // The key's hash alone (shardOf, a bigint out).
  shardOf: async (k) => {
    let x = 0n;
    for (let i = 0; i < k; i++) x ^= shardOf(key, 4);
    sink ^= x;
  },
};
for (let w = 0; w < 3; w++) for (const f of Object.values(fs)) await time(f, n / 4);
const res = Object.fromEntries(Object.keys(fs).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const [k, f] of Object.entries(fs)) res[k].push(await time(f, n));
const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const vs = (k, base) => `${med(res[k]).toFixed(1)} (${(med(res[k]) / med(res[base])).toFixed(2)}x)`;
console.log(`${rounds} rounds of ${n.toLocaleString("en")} IDs, one loop, medians (ns per ID): ` +
  `client.tryNext(tag) ${med(res.tryNext).toFixed(1)}; tryNextShard ${vs("tryNextShard", "tryNext")}; tryNextForKey ${vs("tryNextForKey", "tryNext")}; ` +
  `await client.nextId(tag) ${med(res.nextId).toFixed(1)}; await nextShard ${vs("nextShard", "nextId")}; await nextForKey ${vs("nextForKey", "nextId")}; ` +
  `shardOf(key, 4) alone ${med(res.shardOf).toFixed(1)}`);
console.log(`node ${process.version}; ${JSON.stringify(c.stats())}; sink ${sink & 1n}`);
c.close();
await s.kill();
