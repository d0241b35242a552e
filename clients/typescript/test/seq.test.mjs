// Keyed sequences through the TypeScript client against real frond servers
// (FROND_TEST_BIN): each key sent to its section's owner, and the kill -9 of
// one of two servers ridden through (issue 72).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient, FrondError } from "../dist/esm/index.js";
import { startFrond } from "./server.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "frond-ts-seq-"));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Two servers on one store, the space msgs (16 sections) started on both
// and its sections split between them.
async function seqPair(lease = "3s") {
  const dir = tmp();
  const store = "sqlite://" + join(dir, "seq.db");
  const env = { FROND_SEQUENCES__LEASE_TTL: lease };
  const a = await startFrond(join(dir, "a"), env, "--store", store);
  const b = await startFrond(join(dir, "b"), { ...env, FROND_NODE: "1" }, "--store", store);
  const r = await fetch(a.url + "/v1/spaces", { method: "POST", body: '{"name":"msgs","step":1000,"sections":16}' });
  assert.equal(r.status, 201, await r.text());
  const deadline = performance.now() + 30_000;
  for (;;) {
    const held = [];
    for (const s of [a, b]) {
      await (await fetch(s.url + "/v1/seq/msgs/start")).text(); // starts the space on each
      const { spaces } = await (await fetch(s.url + "/v1/spaces")).json();
      held.push(spaces.filter((sp) => sp.name === "msgs").reduce((n, sp) => n + (sp.held ?? 0), 0));
    }
    if (held.every((h) => h > 0) && held[0] + held[1] === 16) return { a, b };
    assert.ok(performance.now() < deadline, `the sections were not split: ${held}`);
    await sleep(200);
  }
}

// How long after since (ms since 1970) s's log first says it took sections, in ms.
function takenAfter(s, since) {
  for (const line of s.log().split("\n")) {
    let rec;
    try {
      rec = JSON.parse(line);
    } catch {
      continue;
    }
    if (rec.msg === "keyed sequence: sections taken") {
      const t = Date.parse(String(rec.time).replace(/(\.\d{3})\d+/, "$1")); // ms: Date reads three digits
      if (t > since) return t - since;
    }
  }
  throw new Error("the survivor never took sections after the kill:\n" + s.log());
}

async function forwarded(...servers) {
  let n = 0;
  for (const s of servers) {
    const text = await (await fetch(s.url + "/metrics")).text();
    for (const line of text.split("\n")) {
      if (line.startsWith('frond_keyseq_forwarded_total{space="msgs"}')) n += Number(line.split(" ").at(-1));
    }
  }
  return n;
}

test("seq goes to the key's section's owner", async () => {
  const { a, b } = await seqPair();
  const c = new FrondClient({ servers: [a.url, b.url] });
  try {
    const keys = Array.from({ length: 64 }, (_, i) => `key-${i}`);
    const before = await forwarded(a, b);
    for (const k of keys) await c.seq("msgs", k);
    const learned = await forwarded(a, b);
    assert.ok(learned > before, "no key was forwarded while the client knew no owner: the test shows nothing");
    for (const k of keys) await c.seq("msgs", k);
    assert.equal(await forwarded(a, b), learned, "keys forwarded once the client knew their owners");
  } finally {
    c.close();
    await a.kill();
    await b.kill();
  }
});

// kill -9 of one of two servers while 4 callers ask one value of each of 64
// keys in turn: no error, every key's values increase, and each caller's
// answers come again within 2 s of the survivor taking the dead owner's
// sections (its log says when: about the lease, 5 s, after the kill; a
// call's attempts alone ran out before that).
test("seq rides through the kill -9 of one of two servers", async () => {
  const { a, b } = await seqPair("5s");
  const c = new FrondClient({ servers: [a.url, b.url], timeoutMs: 1000 });
  const keys = Array.from({ length: 64 }, (_, i) => `conv-${i}`);
  const values = new Map(keys.map((k) => [k, []]));
  const errors = [];
  const gaps = [];
  let stop = false;
  try {
    const callers = [0, 1, 2, 3].map(async (w) => {
      let prev = performance.now();
      let gap = 0;
      while (!stop) {
        for (let k = w; k < 64 && !stop; k += 4) {
          try {
            const { first } = await c.seq("msgs", keys[k], 1);
            values.get(keys[k]).push(first);
          } catch (e) {
            errors.push(e);
            return;
          }
          const now = performance.now();
          gap = Math.max(gap, now - prev);
          prev = now;
        }
      }
      gaps.push(gap);
    });
    await sleep(1500);
    const killed = Date.now();
    await a.kill();
    await sleep(10_000);
    stop = true;
    await Promise.all(callers);
    assert.deepEqual(errors, []);
    for (const [k, vs] of values) {
      assert.ok(vs.length > 0, `key ${k}: no value`);
      for (let i = 1; i < vs.length; i++) assert.ok(vs[i] > vs[i - 1], `key ${k}: ${vs[i]} after ${vs[i - 1]}`);
    }
    const taken = takenAfter(b, killed);
    console.log(`the longest wait of a caller through the kill: ${(Math.max(...gaps) / 1000).toFixed(2)} s; the survivor took the sections ${(taken / 1000).toFixed(2)} s after it`);
    assert.ok(gaps.length === 4 && Math.max(...gaps) < taken + 2000, `callers' longest waits ${gaps}: past the take (${taken} ms after the kill) and 2 s`);
  } finally {
    c.close();
    await a.kill();
    await b.kill();
  }
});

// Once every attempt failed, the error is the last a server answered (a
// 503 store_unavailable with its Retry-After and hint), not a dead
// server's refused connection (it said code unknown, status 0).
test("the error names what a server answered", async () => {
  const timeouts = new Set(); // the frond-timeout each request carried
  const live = createServer((req, res) => {
    timeouts.add(req.headers["frond-timeout"]);
    const body = '{"error":{"code":"store_unavailable","message":"the section is between owners","hint":"retry: the section is taken within a lease"}}';
    res.writeHead(503, { "content-type": "application/json", "retry-after": "1" });
    res.end(body);
  });
  await new Promise((r) => live.listen(0, "127.0.0.1", r));
  const dead = createServer();
  await new Promise((r) => dead.listen(0, "127.0.0.1", r));
  const deadUrl = `http://127.0.0.1:${dead.address().port}`;
  await new Promise((r) => dead.close(r)); // nothing listens there: refused
  const liveUrl = `http://127.0.0.1:${live.address().port}`;
  const c = new FrondClient({ servers: [deadUrl, liveUrl], timeoutMs: 1000, backoffMinMs: 50, seqWaitMs: 2500 });
  try {
    const t0 = performance.now();
    await assert.rejects(c.seq("msgs", "k"), (e) => {
      assert.ok(e instanceof FrondError);
      assert.equal(e.code, "store_unavailable");
      assert.equal(e.status, 503);
      assert.equal(e.retryAfterMs, 1000);
      assert.equal(e.hint, "retry: the section is taken within a lease");
      assert.ok(e.message.includes("the last answer, from " + liveUrl), e.message);
      return true;
    });
    const took = performance.now() - t0;
    assert.ok(took >= 2000 && took < 4500, `took ${took} ms`);
    // Each request says how long the client waits for it (one attempt's
    // timeout, in ms): a server that would wait longer answers first.
    assert.deepEqual([...timeouts], ["1000"]);
  } finally {
    c.close();
    live.close();
  }
});

test("an unknown space's hint is the server's", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url] });
  try {
    await assert.rejects(c.seq("nospace", "k"), (e) => {
      assert.equal(e.code, "tag_not_found");
      assert.ok(e.hint.startsWith("create the space first (frond space create nospace"), e.hint);
      return true;
    });
  } finally {
    c.close();
    await s.kill();
  }
});
