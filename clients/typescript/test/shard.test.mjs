// Shard bits (gene IDs, docs/kinds.md#shard-bits-gene-ids) through the
// client, against real frond servers (FROND_TEST_BIN): nextShard and
// nextForKey put the shard below a counter leased from the servers; the
// hash of a key against the documented vectors; compose and bounds against
// the servers' /v1/compose and /v1/bounds. npm test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient, FrondError, keyHash, shardOf, decode, compose, bounds, layouts, preset, withShardBits } from "../dist/esm/index.js";
import { startFrond } from "./server.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "frond-ts-"));
const invalid = (e) => e instanceof FrondError && e.code === "invalid_argument" && !e.retryable;

// docs/kinds.md's table (TestKeyHash_Vectors): key, hash, K=1, K=4, K=10.
const vectors = [
  ["", 0xefd01f60ba992926n, 0n, 6n, 294n],
  ["a", 0x82a2a958a9bece5bn, 1n, 11n, 603n],
  ["user-42", 0xa39532c7ab051e8dn, 1n, 13n, 653n],
  ["tenant-7", 0xc9050cf8782d9e66n, 0n, 6n, 614n],
  ["shop:10086", 0x176fc3a8d6e8bcebn, 1n, 11n, 235n],
  ["用户-1", 0x3d39baa19bd993dfn, 1n, 15n, 991n],
];

// The hash as docs/kinds.md writes it, in bigint over Node's UTF-8 bytes.
function refHash(key) {
  const M = (1n << 64n) - 1n;
  let h = 14695981039346656037n;
  for (const b of Buffer.from(key, "utf8")) h = ((h ^ BigInt(b)) * 1099511628211n) & M;
  h ^= h >> 33n;
  h = (h * 0xff51afd7ed558ccdn) & M;
  h ^= h >> 33n;
  h = (h * 0xc4ceb9fe1a85ec53n) & M;
  return h ^ (h >> 33n);
}

test("keyHash and shardOf: the documented vectors", () => {
  for (const [key, hash, k1, k4, k10] of vectors) {
    assert.equal(keyHash(key), hash, `keyHash(${JSON.stringify(key)})`);
    assert.equal(shardOf(key, 1), k1, `shardOf(${JSON.stringify(key)}, 1)`);
    assert.equal(shardOf(key, 4), k4, `shardOf(${JSON.stringify(key)}, 4)`);
    assert.equal(shardOf(key, 10), k10, `shardOf(${JSON.stringify(key)}, 10)`);
    assert.equal(shardOf(key, 64), hash);
    assert.equal(shardOf(key, 0), 0n);
  }
  // Keys of every UTF-8 length (1 to 4 bytes a code point), and lone
  // surrogates (U+FFFD, as Buffer and TextEncoder write them), against the
  // bigint version; the 32-bit halves at every width.
  const pick = ["a", "~", "é", "ß", "€", "用", "户", "😀", "𝄞", "\ud800", "\udfff", "x\ud83d", "\ude00y", "\u0000", "\u07ff", "\u0800", "\uffff"];
  for (let i = 0; i < 2000; i++) {
    let key = "";
    const n = i % 17;
    for (let j = 0; j < n; j++) key += pick[(i * 7 + j * 13 + (i >> 3)) % pick.length];
    if (i % 5 === 0) key += String(Math.random());
    const h = refHash(key);
    assert.equal(keyHash(key), h, `keyHash(${JSON.stringify(key)})`);
    const bits = i % 65;
    assert.equal(shardOf(key, bits), h & ((1n << BigInt(bits)) - 1n), `shardOf(${JSON.stringify(key)}, ${bits})`);
  }
  assert.throws(() => shardOf("a", 65), RangeError);
  assert.throws(() => shardOf("a", -1), RangeError);
});

// Two clients on two servers sharing one store: 2,000 IDs on random shards
// and keys; each id % 16 is the shard asked for (the server's own for a
// key), and no counter (id >> 4) repeats.
test("gene IDs from leases of counters", async () => {
  const dir = tmp();
  const store = "sqlite://" + join(dir, "shared.db");
  const a = await startFrond(join(dir, "a"), {}, "--store", store);
  const b = await startFrond(join(dir, "b"), { FROND_NODE: "1" }, "--store", store);
  const clients = [a, b].map((s) => new FrondClient({ servers: [s.url], minLease: 10, maxLease: 200 }));
  try {
    await clients[0].createTag("orders", 50, { mapping: "shard:4" });
    const seen = new Set();
    let byKey = 0;
    for (let i = 0; i < 2000; i++) {
      const c = clients[i % 2];
      let id, want;
      const r = Math.random();
      if (r < 0.4) {
        const key = `user-${Math.floor(Math.random() * 1e6)}`;
        want = shardOf(key, 4);
        id = i % 4 === 0 ? c.tryNextForKey("orders", key) ?? (await c.nextForKey("orders", key)) : await c.nextForKey("orders", key);
        byKey++;
      } else {
        const s = Math.floor(Math.random() * 16);
        want = BigInt(s);
        const arg = i % 3 === 0 ? BigInt(s) : s;
        id = i % 5 === 0 ? c.tryNextShard("orders", arg) ?? (await c.nextShard("orders", arg)) : await c.nextShard("orders", arg);
      }
      assert.equal(typeof id, "bigint");
      assert.equal(id % 16n, want, `ID ${id}: shard ${id % 16n}, want ${want}`);
      assert.ok(!seen.has(id >> 4n), `counter ${id >> 4n} (ID ${id}) handed out twice`);
      seen.add(id >> 4n);
    }
    assert.equal(seen.size, 2000);
    // Concurrent callers on a fresh client share its first lease of counters.
    const third = new FrondClient({ servers: [a.url, b.url], minLease: 10, maxLease: 100 });
    try {
      const got = await Promise.all(Array.from({ length: 300 }, (_, i) => (i % 2 ? third.nextShard("orders", i % 16) : third.nextForKey("orders", `k${i}`))));
      for (const [i, id] of got.entries()) {
        assert.equal(id % 16n, i % 2 ? BigInt(i % 16) : shardOf(`k${i}`, 4));
        assert.ok(!seen.has(id >> 4n), `counter ${id >> 4n} handed out twice`);
        seen.add(id >> 4n);
      }
    } finally {
      third.close();
    }
    assert.ok(byKey > 500 && byKey < 1100, `${byKey} by key`);
    // The servers' shard of a key is the client's.
    for (const [key] of vectors.filter(([k]) => k !== "")) {
      const m = await (await fetch(`${b.url}/v1/segment/orders?shard_key=${encodeURIComponent(key)}`)).json();
      assert.equal(BigInt(m.shard), shardOf(key, 4), key);
      assert.equal(BigInt(m.id_str) % 16n, shardOf(key, 4));
      assert.ok(!seen.has(BigInt(m.id_str) >> 4n));
    }
    const st = clients[0].stats();
    assert.ok(st.counterLeases.orders.size >= 10, JSON.stringify(st));
    for (const c of clients) assert.ok(c.stats().calls >= 4, `a lease per call, several each: ${JSON.stringify(c.stats())}`);
    assert.equal(st.leases.orders, undefined, "a plain lease of the tag was asked for");
  } finally {
    for (const c of clients) c.close();
    await a.kill();
    await b.kill();
  }
});

// Issue 60's fail-over, of counters: a server whose buffered counters lie
// far below those handed out is passed (the lease keeps counters moved up
// by K: the floor and the catch-up ask hold in counters).
test("a server whose buffered counters lie far behind is passed", async () => {
  const dir = tmp();
  const store = "sqlite://" + join(dir, "shared.db");
  const env = { FROND_SEGMENT__FIXED_STEP: "true" };
  const a = await startFrond(join(dir, "a"), env, "--store", store);
  const b = await startFrond(join(dir, "b"), { ...env, FROND_NODE: "1" }, "--store", store);
  const c = new FrondClient({ servers: [a.url, b.url], timeoutMs: 2000, backoffMinMs: 20, backoffMaxMs: 200, minLease: 100, maxLease: 1_000 });
  try {
    await c.createTag("far", 50_000, { mapping: "shard:4" });
    const r = await fetch(b.url + "/v1/segment/far?shard=3"); // b buffers counters [1, 50001)
    assert.equal(r.status, 200);
    let prev = 0n;
    const take = async (i) => {
      const id = await c.nextShard("far", i % 16);
      assert.equal(id % 16n, BigInt(i % 16));
      assert.ok(id >> 4n > prev, `counter ${id >> 4n} after ${prev}`);
      prev = id >> 4n;
    };
    for (let i = 0; i < 3_000; i++) await take(i);
    assert.ok(prev > 50_001n, `the client's counters ${prev} are not above b's buffer`);
    await a.kill();
    const calls = c.stats().calls;
    let jump = 0n;
    for (let i = 0; i < 3_000; i++) {
      const last = prev;
      await take(i);
      if (prev - last > jump) jump = prev - last;
    }
    // The rest of a's segment, [50001, 100001), is skipped: a gap, no more.
    assert.ok(jump < 100_000n, `a gap of ${jump} counters`);
    assert.ok(c.stats().calls - calls < 40, `${c.stats().calls - calls} calls to pass b's buffer`);
  } finally {
    c.close();
    await a.kill();
    await b.kill();
  }
});

// docs/clients.md's routing: a user and their orders, both created with
// nextForKey on the user's key, land on one of two databases by id % 2n.
test("a user and their orders on one of two databases", async () => {
  const s = await startFrond(tmp());
  const ids = new FrondClient({ servers: [s.url], minLease: 100 });
  try {
    await ids.createTag("users", 1000, { mapping: "shard:1" });
    await ids.createTag("orders", 1000, { mapping: "shard:1" });
    const dbs = [new Map(), new Map()]; // "table id" -> row
    const dbOf = (id) => dbs[Number(id % 2n)];
    for (let u = 0; u < 200; u++) {
      const userKey = `user-${u}`;
      const userId = await ids.nextForKey("users", userKey);
      dbOf(userId).set(`users ${userId}`, { table: "users", userKey });
      for (let o = 0; o < 3; o++) {
        const orderId = await ids.nextForKey("orders", userKey);
        assert.equal(orderId % 2n, userId % 2n, `${userKey}: order ${orderId}, user ${userId}`);
        dbOf(orderId).set(`orders ${orderId}`, { table: "orders", userKey, userId });
      }
      assert.equal(userId % 2n, shardOf(userKey, 1));
    }
    for (const db of dbs) {
      const users = new Set([...db.values()].filter((r) => r.table === "users").map((r) => r.userKey));
      assert.ok(users.size > 60, `${users.size} users on one database`);
      for (const r of db.values()) assert.ok(users.has(r.userKey), `${r.userKey}'s row away from the user`);
      assert.equal(db.size, users.size * 4);
    }
  } finally {
    ids.close();
    await s.kill();
  }
});

// The refusals: a shard past the tag's bits or 2^16, an empty key, a tag
// without shard bits; nextId of a tag with shard bits never hands out a
// bare counter; a counter past 2^(63-K)-1.
test("gene ID refusals", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url], minLease: 10 });
  const fresh = new FrondClient({ servers: [s.url], minLease: 10 });
  try {
    await c.createTag("orders", 50, { mapping: "shard:4" });
    await c.createTag("plain", 50);
    // The server refuses the plain lease of the tag.
    const r = await fetch(`${s.url}/v1/segment/orders?format=ranges&lease=1&n=5`);
    assert.equal(r.status, 409);
    assert.equal((await r.json()).error.code, "form_not_carried");
    // nextId, before and after the tag's counters were leased: rejected, never a counter.
    await assert.rejects(fresh.nextId("orders"), (e) => invalid(e) && /nextShard/.test(e.message));
    await assert.rejects(fresh.nextIds("orders", 3), invalid);
    await assert.rejects(fresh.tag("orders").next(), invalid);
    assert.equal(fresh.tryNext("orders"), undefined);
    assert.equal((await c.nextShard("orders", 3)) % 16n, 3n);
    await assert.rejects(c.nextId("orders"), invalid);
    assert.equal(c.tryNext("orders"), undefined);

    for (const bad of [16, 16n, -1, -1n, 1.5, 65536, 1n << 16n, NaN, "3", undefined]) {
      await assert.rejects(c.nextShard("orders", bad), invalid, `shard ${String(bad)}`);
      assert.throws(() => c.tryNextShard("orders", bad), invalid, `shard ${String(bad)}`);
    }
    await assert.rejects(c.nextForKey("orders", ""), invalid);
    await assert.rejects(c.nextForKey("orders", undefined), invalid);
    assert.throws(() => c.tryNextForKey("orders", ""), invalid);
    // A shard past the bits is refused before a counter is taken, once they are known.
    const before = c.stats().counterLeases.orders.remaining;
    await assert.rejects(c.nextShard("orders", 15 + 1), invalid);
    assert.equal(c.stats().counterLeases.orders.remaining, before);

    // A tag without shard bits: its lease of counters says none; refused,
    // the first time (a counter skipped) and after.
    for (let i = 0; i < 2; i++) {
      await assert.rejects(c.nextShard("plain", 1), (e) => invalid(e) && /no shard bits/.test(e.message));
      await assert.rejects(c.nextForKey("plain", "user-42"), invalid);
      assert.throws(() => c.tryNextShard("plain", 1), invalid);
    }
    assert.ok((await c.nextId("plain")) >= 1n, "the plain tag beside");

    // The counter's room: 2^59 - 1 with 4 shard bits. The server cuts a
    // lease of counters there and refuses one past it (tag_exhausted);
    // nothing past it is in hand.
    const top = (1n << 59n) - 1n;
    await c.createTag("full", 10, { mapping: "shard:4", maxId: top - 1n });
    assert.equal(await c.nextShard("full", 1), ((top - 1n) << 4n) | 1n);
    assert.equal(await c.nextForKey("full", "user-42"), (top << 4n) | 13n);
    await assert.rejects(c.nextShard("full", 2), (e) => e instanceof FrondError && e.code === "tag_exhausted");
    assert.equal(c.tryNextShard("full", 2), undefined);
  } finally {
    c.close();
    fresh.close();
    await s.kill();
  }
});

// A sequence tag with shard bits cannot be leased: the server applies the
// shard, call by call.
test("a sequence tag with shard bits", async () => {
  const s = await startFrond(tmp());
  const c = new FrondClient({ servers: [s.url] });
  try {
    await c.createTag("tickets", 1, { mode: "sequence", mapping: "shard:2" });
    let prev = -1n;
    for (let i = 0; i < 20; i++) {
      const id = i % 2 === 0 ? await c.nextShard("tickets", i % 4) : await c.nextForKey("tickets", `k${i}`);
      assert.equal(id % 4n, i % 2 === 0 ? BigInt(i % 4) : shardOf(`k${i}`, 2));
      assert.ok(id >> 2n > prev, `counter ${id >> 2n} after ${prev}`);
      prev = id >> 2n;
    }
    assert.equal(c.tryNextShard("tickets", 1), undefined);
    await assert.rejects(c.nextShard("tickets", 4), invalid);
  } finally {
    c.close();
    await s.kill();
  }
});

// What a server might answer wrongly, from a stand-in: a plain lease that
// says shard bits is refused (never bare counters); a counter past the
// room is tag_exhausted.
test("leases of counters that the client refuses", async () => {
  const leases = { plain: 0, counters: 0 };
  const fake = createServer((req, res) => {
    const u = new URL(req.url, "http://x");
    const counters = u.searchParams.get("counters") === "1";
    leases[counters ? "counters" : "plain"]++;
    const start = (1n << 59n) - 1n;
    res.setHeader("content-type", "application/json");
    res.end(`{"tag":"t","count":2,"ranges":[{"start":${start},"end":${start + 2n},"stride":1,"count":2,"start_str":"${start}","end_str":"${start + 2n}"}],"shard_bits":4}`);
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  const c = new FrondClient({ servers: [`127.0.0.1:${fake.address().port}`], attempts: 1 });
  try {
    assert.equal(await c.nextShard("t", 7), (((1n << 59n) - 1n) << 4n) | 7n);
    await assert.rejects(c.nextShard("t", 7), (e) => e.code === "tag_exhausted");
    await assert.rejects(c.nextId("t"), (e) => e instanceof FrondError && e.code === "form_not_carried");
    assert.ok(leases.counters >= 1);
    assert.ok(leases.plain >= 1);
  } finally {
    c.close();
    fake.closeAllConnections();
    fake.close();
  }
});

// compose and bounds offline against the servers' /v1/compose and
// /v1/bounds: the presets (twitter, the server's layout, and the others by
// name), at the epoch, tick boundaries and the end; then a layout with
// shard bits (snowflake.shard_bits 4).
test("compose and bounds as the server", async () => {
  const s = await startFrond(tmp());
  const get = async (server, q) => {
    const r = await fetch(`${server.url}${q}`);
    return { status: r.status, body: await r.json() };
  };
  try {
    const now = Date.now();
    const times = [now, 1764417600123, 1288834974657, 1288834974658, 1420070400000, 1735689600000, 1735689600999, 1735689601000, 1735689600005];
    const ranges = [
      [1764417600000, 1767225600000], // 2025-11-29 to 2026-01-01
      [1764417600123, 1764417600124],
      [1764417600123, 1764417600125],
      [1735689600005, 1735689600015],
      [1735689600000, 1735689601000],
      [1735689600001, 1735689601001],
      [1000, 1288834974658], // before the twitter epoch: cut
      [now, now + 1],
      [1700000000000, 4102444800000], // past the javascript and uid-generator ends: cut
    ];
    for (const name of ["twitter", "sonyflake", "uid-generator", "javascript"]) {
      const l = preset(name);
      for (const t of times) {
        for (const [node, seq] of [[0, 0], [5, 7], [Number((1n << BigInt(l.nodeBits)) - 1n), Number((1n << BigInt(l.seqBits)) - 1n)]]) {
          const { status, body } = await get(s, `/v1/compose?time=${t}&node=${node}&sequence=${seq}&layout=${name}`);
          if (status !== 200) {
            assert.throws(() => compose(l, { time: t, node, sequence: seq }), RangeError, `${name} ${t}: ${JSON.stringify(body)}`);
            continue;
          }
          const id = compose(l, { time: BigInt(t), node, sequence: BigInt(seq) });
          assert.equal(id, BigInt(body.id_str), `compose ${name} ${t} ${node} ${seq}`);
          assert.equal(compose(l, { time: new Date(t), node: BigInt(node), sequence: seq }), id);
          const p = decode(id, l);
          assert.equal(p.time.getTime(), new Date(body.time).getTime());
          assert.equal(p.tick, BigInt(body.tick));
          assert.equal(p.shard, undefined);
        }
      }
      for (const [from, to] of ranges) {
        const { status, body } = await get(s, `/v1/bounds?from=${from}&to=${to}&layout=${name}`);
        if (status !== 200) {
          assert.equal(body.error.code, "invalid_argument");
          assert.throws(() => bounds(l, from, to), RangeError, `${name} [${from}, ${to})`);
          continue;
        }
        const b = bounds(l, new Date(from), BigInt(to));
        assert.deepEqual(b, { first: BigInt(body.first_str), last: BigInt(body.last_str) }, `bounds ${name} [${from}, ${to})`);
      }
      // Empty ranges and ranges before the epoch: refused by both.
      for (const [from, to] of [[now, now], [now + 1, now], [0, 1000]]) {
        const { status } = await get(s, `/v1/bounds?from=${from}&to=${to}&layout=${name}`);
        assert.equal(status, 400);
        assert.throws(() => bounds(l, from, to), RangeError);
      }
    }
    assert.throws(() => compose(layouts.twitter, { time: 1000 }), RangeError);
    assert.throws(() => compose(layouts.twitter, { time: now, node: 1024 }), RangeError);
    assert.throws(() => compose(layouts.twitter, { time: now, sequence: 4096 }), RangeError);
    assert.throws(() => compose(layouts.twitter, { time: now, shard: 1 }), RangeError);
    assert.throws(() => compose(layouts.twitter, { time: 1.5 }), TypeError);
    assert.throws(() => compose(layouts.twitter, { time: new Date(NaN) }), RangeError);
  } finally {
    await s.kill();
  }

  // The server's layout with shard bits: IDs it hands out for a key carry
  // the key's shard; compose and bounds agree with it.
  const t = await startFrond(tmp(), { FROND_SNOWFLAKE__SHARD_BITS: "4", FROND_NODE: "9" });
  const c = new FrondClient({ servers: [t.url] });
  try {
    const l = withShardBits(layouts.twitter, 4);
    assert.deepEqual([l.seqBits, l.shardBits], [8, 4]);
    const info = (await get(t, "/v1/info")).body.layout;
    assert.deepEqual([info.sequence_bits, info.shard_bits], [l.seqBits, l.shardBits]);
    const { body } = await get(t, "/v1/snowflake?shard_key=user-42&n=3");
    for (const id of body.id_strs.map(BigInt)) {
      const p = decode(id, l);
      assert.equal(p.shard, shardOf("user-42", 4));
      assert.equal(p.node, 9n);
      assert.equal(compose(l, { time: p.time, node: p.node, sequence: p.sequence, shardKey: "user-42" }), id);
    }
    for (const [time, node, seq, shard] of [[1764417600123, 5, 7, 13], [1288834974657, 0, 0, 0], [Date.now(), 1023, 255, 15]]) {
      const r = await get(t, `/v1/compose?time=${time}&node=${node}&sequence=${seq}&shard=${shard}`);
      assert.equal(compose(l, { time, node, sequence: seq, shard }), BigInt(r.body.id_str));
      assert.equal(decode(BigInt(r.body.id_str), l).shard, BigInt(shard));
      const k = await get(t, `/v1/compose?time=${time}&node=${node}&sequence=${seq}&shard_key=tenant-7`);
      assert.equal(compose(l, { time, node, sequence: seq, shardKey: "tenant-7" }), BigInt(k.body.id_str));
    }
    assert.equal((await get(t, "/v1/compose?time=1764417600123&sequence=256")).status, 400);
    assert.throws(() => compose(l, { time: 1764417600123, sequence: 256 }), RangeError);
    assert.throws(() => compose(l, { time: 1764417600123, shard: 16 }), RangeError);
    assert.throws(() => compose(l, { time: 1764417600123, shard: 1, shardKey: "a" }), RangeError);
    for (const [from, to] of [[1764417600000, 1767225600000], [1764417600123, 1764417600125], [1000, 1288834974658]]) {
      const r = await get(t, `/v1/bounds?from=${from}&to=${to}`);
      const b = bounds(l, from, to);
      assert.deepEqual(b, { first: BigInt(r.body.first_str), last: BigInt(r.body.last_str) });
      assert.equal(b.first % 16n, 0n);
      assert.equal(b.last % 16n, 15n);
    }
  } finally {
    c.close();
    await t.kill();
  }
});

test("layouts with shard bits, offline", () => {
  const l = withShardBits(layouts.twitter, 4);
  assert.deepEqual([l.timeBits, l.nodeBits, l.seqBits, l.shardBits, l.name], [41, 10, 8, 4, "twitter"]);
  // The Go layout's arithmetic: (tick << (node+seq) | node << seq | seq) << K | shard.
  const id = compose(l, { time: 1764417600123n, node: 5, sequence: 7, shard: 13 });
  assert.equal(id, (((475582625466n << 18n) | (5n << 8n) | 7n) << 4n) | 13n);
  assert.equal(id, 1994738108322566269n); // the server's /v1/compose, snowflake.shard_bits 4
  const p = decode(id, l);
  assert.deepEqual([p.tick, p.node, p.sequence, p.shard], [475582625466n, 5n, 7n, 13n]);
  assert.equal(p.time.getTime(), 1764417600123);
  assert.equal(compose(l, { time: 1764417600123n, node: 5, sequence: 7, shardKey: "user-42" }), id);
  assert.equal(decode(id).shard, undefined, "decoded without shard bits");
  // Twitter keeps one sequence bit at most 11 shard bits; 16 at most.
  assert.equal(withShardBits(layouts.twitter, 11).seqBits, 1);
  assert.throws(() => withShardBits(layouts.twitter, 12), RangeError);
  assert.throws(() => withShardBits(layouts["uid-generator"], 17), RangeError);
  assert.throws(() => withShardBits(layouts.twitter, 1.5), RangeError);
  assert.equal(withShardBits(layouts["uid-generator"], 12).seqBits, 1);
  // Shard bits set again go back to the sequence first.
  assert.deepEqual([withShardBits(l, 2).seqBits, withShardBits(l, 2).shardBits], [10, 2]);
  assert.equal(withShardBits(l, 0).seqBits, 12);
  // With datacenter bits as well.
  const dc = withShardBits(preset("leaf", 5), 3);
  const x = compose(dc, { time: 1764417600123, datacenter: 22, worker: 3, sequence: 77, shard: 5 });
  const q = decode(x, dc);
  assert.deepEqual([q.datacenter, q.worker, q.sequence, q.shard, q.node], [22n, 3n, 77n, 5n, (22n << 5n) | 3n]);
  assert.throws(() => compose(dc, { time: 1764417600123, datacenter: 32, worker: 0 }), RangeError);
  assert.throws(() => compose(dc, { time: 1764417600123, datacenter: 1 }), RangeError);
  assert.throws(() => compose(l, { time: 1764417600123, datacenter: 1, worker: 1 }), RangeError);
  // Bounds of one tick span every node, sequence and shard of it.
  const b = bounds(l, 1764417600123, 1764417600124);
  assert.equal(b.first, compose(l, { time: 1764417600123 }));
  assert.equal(b.last, b.first + (1n << 22n) - 1n);
  // The layout's end: the last tick is its last.
  const end = l.epochMs + (1n << 41n);
  assert.equal(bounds(l, end - 1n, end + 1000n).last, (1n << 63n) - 1n);
  assert.throws(() => bounds(l, end, end + 1n), RangeError);
  assert.throws(() => compose(l, { time: end }), RangeError);
});
