// The client against real frond servers (FROND_TEST_BIN), with Node's own test
// runner: npm test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient, FrondError, decode, layouts, preset, errorCodes } from "../dist/esm/index.js";
import { startFrond } from "./server.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "frond-ts-"));

// Leasing: IDs increase strictly and come from memory; the lease grows.
test("leases and grows", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url], minLease: 10, maxLease: 100_000 });
  try {
    await c.createTag("order", 10);
    const t = c.tag("order");
    let prev = 0n;
    for (let i = 0; i < 20_000; i++) {
      const id = i % 3 === 0 ? await c.nextId("order") : i % 3 === 1 ? await t.next() : t.tryNext() ?? (await t.next());
      assert.equal(typeof id, "bigint");
      assert.ok(id > prev, `ID ${id} after ${prev}`);
      prev = id;
    }
    const st = c.stats();
    assert.ok(st.leases.order.size > 10, `the lease did not grow: ${JSON.stringify(st)}`);
    assert.ok(st.calls < 2000, `a call per lease, fewer as it grows: ${JSON.stringify(st)}`);
    const batch = await c.nextIds("order", 5);
    assert.ok(batch[0] > prev && batch[4] > batch[0]);
    assert.equal(await c.nextString("order"), (batch[4] + 1n).toString());
  } finally {
    c.close();
    await s.kill();
  }
});

// IDs above 2^53 through every call: every digit kept.
test("IDs past 2^53 keep every digit", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url], minLease: 100 });
  try {
    const base = 2n ** 53n + 12_345n; // 9007199254753337: a JavaScript number cannot hold base + 1
    await c.createTag("big", 100, { maxId: base });
    await c.createTag("bigseq", 1, { mode: "sequence", maxId: base });
    assert.equal(await c.nextId("big"), base);
    assert.equal(await c.nextId("big"), base + 1n);
    assert.equal(await c.nextString("big"), (base + 2n).toString());
    const rs = await c.nextRanges("big", 3);
    assert.equal(rs[0].start > base, true);
    assert.equal(rs[0].end - rs[0].start, 3n);
    assert.deepEqual(await c.nextIds("bigseq", 2), [base, base + 1n]);
    assert.equal(await c.nextId("bigseq"), base + 2n);
    const [sf] = await c.snowflake(1);
    assert.ok(sf > 2n ** 53n, `a snowflake ID ${sf}`);
    assert.equal(decode(sf).id, sf);
    // A lease served below 2^53 as plain numbers, across 2^53 as bigints:
    // every ID exact and one after the other through the edge.
    const edge = 2n ** 53n - 150n;
    await c.createTag("edge", 100, { maxId: edge });
    const t = c.tag("edge");
    let want = edge;
    for (let i = 0; i < 400; i++) {
      const id = t.tryNext() ?? (await t.next());
      assert.equal(id, want, `ID ${i} near 2^53`);
      want = id + 1n;
    }
  } finally {
    c.close();
    await s.kill();
  }
});

// kill -9 of one of two servers (one SQLite store) while 8 loops take IDs:
// no duplicate, no error; the longest wait is reported.
test("fails over without duplicates", async () => {
  const dir = tmp();
  const store = "sqlite://" + join(dir, "shared.db");
  const a = await startFrond(join(dir, "a"), {}, "--store", store);
  const b = await startFrond(join(dir, "b"), { FROND_NODE: "1" }, "--store", store);
  const c = new FrondClient({ servers: [a.url, b.url], timeoutMs: 1000, backoffMinMs: 50, backoffMaxMs: 1000, minLease: 100, maxLease: 10_000, leaseTargetMs: 200 });
  try {
    await c.createTag("pay", 100);
    let stop = false;
    let longest = 0;
    const seen = new Set();
    const loops = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const t0 = performance.now();
        const id = await c.nextId("pay");
        longest = Math.max(longest, performance.now() - t0);
        assert.ok(!seen.has(id), `ID ${id} handed out twice`);
        seen.add(id);
        if (seen.size % 256 === 0) await new Promise((r) => setImmediate(r)); // let the timers run
      }
    });
    await new Promise((r) => setTimeout(r, 300));
    await a.kill(); // the preferred server
    await new Promise((r) => setTimeout(r, 700));
    stop = true;
    await Promise.all(loops);
    assert.ok(seen.size > 1000, `only ${seen.size} IDs`);
    console.log(`fail-over: ${seen.size} IDs by 8 loops, no duplicate; the longest wait ${longest.toFixed(1)} ms; ${JSON.stringify(c.stats())}`);
  } finally {
    c.close();
    await a.kill();
    await b.kill();
  }
});

// Issue 60: with leases capped, a fail-over to a server whose buffered
// segment lies far below the IDs handed out (its step grew) is passed, not
// answered with "ten leases in a row lay below..." and the advice to give
// up the order: one store never interleaves.
test("a server whose buffer lies far behind is passed", async () => {
  const dir = tmp();
  const store = "sqlite://" + join(dir, "shared.db");
  const env = { FROND_SEGMENT__FIXED_STEP: "true" };
  const a = await startFrond(join(dir, "a"), env, "--store", store);
  const b = await startFrond(join(dir, "b"), { ...env, FROND_NODE: "1" }, "--store", store);
  const c = new FrondClient({ servers: [a.url, b.url], timeoutMs: 2000, backoffMinMs: 20, backoffMaxMs: 200, minLease: 100, maxLease: 1_000 });
  try {
    await c.createTag("far", 50_000);
    // b buffers the tag's first segment, [1, 50001).
    const r = await fetch(b.url + "/v1/segment/far");
    assert.equal(r.status, 200);
    // The client leases from a, past b's segment.
    let prev = 0n;
    for (let i = 0; i < 3_000; i++) {
      const id = await c.nextId("far");
      assert.ok(id > prev, `ID ${id} after ${prev}`);
      prev = id;
    }
    assert.ok(prev > 50_001n, `the client's IDs ${prev} are not above b's buffer`);
    await a.kill();
    for (let i = 0; i < 3_000; i++) {
      const id = await c.nextId("far");
      assert.ok(id > prev, `ID ${id} after ${prev}`);
      prev = id;
    }
  } finally {
    c.close();
    await a.kill();
    await b.kill();
  }
});

// A server that answers slowly: the client goes on to the next and stays.
test("a slow server is passed by", async () => {
  const slow = createServer(() => {}); // never answers
  await new Promise((r) => slow.listen(0, "127.0.0.1", r));
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [`127.0.0.1:${slow.address().port}`, s.url], timeoutMs: 300 });
  try {
    assert.equal((await c.snowflake(3)).length, 3);
    assert.ok(c.stats().failovers >= 1);
    const t0 = performance.now();
    await c.snowflake(1);
    assert.ok(performance.now() - t0 < 250, "the slow server was tried again at once");
  } finally {
    c.close();
    slow.closeAllConnections();
    slow.close();
    await s.kill();
  }
});

// A lease in hand keeps serving while every server is down; then a clear,
// retryable error.
test("a lease serves while the servers are down", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url], minLease: 1000, maxLease: 1000, leaseTargetMs: 3_600_000, timeoutMs: 300, backoffMinMs: 10, backoffMaxMs: 20 });
  try {
    await c.createTag("invoice", 1000);
    await c.nextId("invoice");
    for (let i = 0; i < 150; i++) await c.nextId("invoice"); // past a tenth: the next lease is fetched
    await new Promise((r) => setTimeout(r, 200));
    await s.kill();
    let served = 151;
    let err;
    try {
      while (served < 10_000) {
        await c.nextId("invoice");
        served++;
      }
    } catch (e) {
      err = e;
    }
    assert.ok(served >= 1000, `served ${served} IDs from the leases in hand`);
    assert.ok(err instanceof FrondError && err.retryable && /no ID in hand/.test(err.message), String(err));
  } finally {
    c.close();
  }
});

// A sequence tag is served call by call; a text-form tag is refused
// clearly, and nextStrings serves it.
test("tags that cannot be leased", async () => {
  const s = await startFrond(tmp(), { FROND_FORMS__text: "base62" });
  const c = new FrondClient({ servers: [s.url] });
  try {
    await c.createTag("ticket", 1, { mode: "sequence" });
    for (let i = 1n; i <= 5n; i++) assert.equal(await c.nextId("ticket"), i);
    assert.deepEqual(await c.nextIds("ticket", 2), [6n, 7n]);
    assert.equal(c.tryNext("ticket"), undefined);
    await c.createTag("text", 100);
    await assert.rejects(c.nextId("text"), (e) => e instanceof FrondError && e.code === "form_not_carried" && /nextStrings/.test(e.message));
    const strs = await c.nextStrings("text", 2);
    assert.match(strs[0], /^[0-9A-Za-z]{11}$/);
  } finally {
    c.close();
    await s.kill();
  }
});

// Errors carry frond's code; a non-retryable one is thrown at once.
test("typed errors", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url, s.url] });
  try {
    await assert.rejects(c.nextId("no-such-tag"), (e) => e.code === "tag_not_found" && !e.retryable && e.status === 404);
    assert.equal(c.stats().failovers, 0);
    await assert.rejects(c.serials("nope"), FrondError);
  } finally {
    c.close();
    await s.kill();
  }
});

// Tag tokens and the admin token.
test("tokens", async () => {
  const s = await startFrond(tmp(), { "FROND_TOKENS__t0ken-order": "order" }, "--admin-token", "adm1n-secret");
  const anon = new FrondClient({ servers: [s.url] });
  const admin = new FrondClient({ servers: [s.url], adminToken: "adm1n-secret" });
  const c = new FrondClient({ servers: [s.url], tagToken: "t0ken-order" });
  try {
    await assert.rejects(anon.createTag("order", 10), (e) => e.code === "unauthorized");
    await admin.createTag("order", 10);
    await assert.rejects(admin.nextId("order"), (e) => e.code === "forbidden");
    assert.equal(await c.nextId("order"), 1n);
  } finally {
    for (const x of [anon, admin, c]) x.close();
    await s.kill();
  }
});

// TLS with a given CA.
test("TLS", async () => {
  const d = tmp();
  const f = (n) => join(d, n);
  writeFileSync(f("ext.cnf"), "subjectAltName=IP:127.0.0.1\n");
  const ossl = (...args) => execFileSync("openssl", args, { stdio: "ignore" });
  ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=frond test CA", "-keyout", f("ca.key"), "-out", f("ca.pem"));
  ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f("key.pem"), "-out", f("cert.csr"));
  ossl("x509", "-req", "-in", f("cert.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-days", "2", "-extfile", f("ext.cnf"), "-out", f("cert.pem"));
  const s = await startFrond(join(d, "data"), {}, "--tls-cert-file", f("cert.pem"), "--tls-key-file", f("key.pem"));
  const c = new FrondClient({ servers: [s.url], ca: readFileSync(f("ca.pem")) });
  const untrusting = new FrondClient({ servers: [s.url], attempts: 1 });
  try {
    assert.match(s.url, /^https:/);
    assert.equal((await c.snowflake(2)).length, 2);
    await assert.rejects(untrusting.snowflake(1), FrondError);
  } finally {
    c.close();
    untrusting.close();
    await s.kill();
  }
});

// Per call: snowflake IDs decoded as the server decodes them, UUIDs,
// TypeIDs; the table of codes.
test("per call", async () => {
  const s = await startFrond(tmp(), { FROND_NODE: "7" });
  const c = new FrondClient({ servers: [s.url] });
  try {
    const ids = await c.snowflake(3);
    assert.ok(ids[0] < ids[1] && ids[1] < ids[2]);
    const p = decode(ids[0]);
    assert.equal(p.node, 7n);
    assert.ok(Math.abs(p.time.getTime() - Date.now()) < 60_000);
    assert.match((await c.uuids(7, 2))[0], /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(await c.nameUuid(5, "dns", "example.com"), await c.nameUuid(5, "dns", "example.com"));
    assert.match((await c.typeIds("user"))[0], /^user_/);
    assert.equal((await c.snowflakeStrings("base62")).length, 1);
  } finally {
    c.close();
    await s.kill();
  }
});

test("keyed sequences", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url] });
  try {
    const created = await fetch(s.url + "/v1/spaces", { method: "POST", body: JSON.stringify({ name: "chat", step: 100, sections: 4 }) });
    assert.equal(created.status, 201, await created.text());
    const last = new Map();
    for (let i = 0; i < 300; i++) {
      const key = ["conv/1", "conv 2", "ü-3"][i % 3]; // a slash, a space, UTF-8: one path segment each
      const n = 1 + (i % 4);
      const { first, last: end } = await c.seq("chat", key, n);
      assert.equal(end - first + 1n, BigInt(n));
      assert.ok(first > (last.get(key) ?? 0n), `${key}: ${first} after ${last.get(key)}`);
      last.set(key, end);
    }
    await assert.rejects(c.seq("nope", "k"), (e) => e instanceof FrondError && e.code === "tag_not_found");
    await assert.rejects(c.seq("chat", "k", 10_001), RangeError);
  } finally {
    c.close();
    await s.kill();
  }
});

test("decoding and codes, offline", () => {
  // frond decode 2124376161118060544: 2026-11-22T05:35:20.468Z, node 0.
  const p = decode("2124376161118060544");
  assert.equal(p.time.toISOString(), "2026-11-22T05:35:20.468Z");
  assert.equal(p.tick, 506490745811n);
  const id = (506490745811n << 22n) | (((22n << 5n) | 3n) << 12n) | 77n;
  const q = decode(id, preset("leaf", 5));
  assert.equal(q.datacenter, 22n);
  assert.equal(q.worker, 3n);
  assert.equal(q.sequence, 77n);
  assert.throws(() => decode(1n << 53n, layouts.javascript), RangeError);
  assert.throws(() => preset("twitter", 10), RangeError);
  assert.equal(errorCodes.store_unavailable.retryable, true);
  assert.equal(new FrondError("something_new", 409, "x").code, "unknown");
});
