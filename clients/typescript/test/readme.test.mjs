// The package README's JavaScript snippets, word for word (the repository's
// TestDocs_GoSnippetsAreCode checks that they are here): loaded by node
// --test, so they parse and their imports resolve (the package by its own
// name). The first is not run (its servers are the README's); the second,
// a function of a client, runs against a real frond serve (FROND_TEST_BIN).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient } from "@frond-id/client";
import { shardOf, keyHash, compose, bounds, decode, layouts, withShardBits } from "@frond-id/client";
import { startFrond } from "./server.mjs";

// The README's.
async function readme() {
  const ids = new FrondClient({ servers: ["http://id-1:8080", "http://id-2:8080"] });
  const id = await ids.nextId("order");         // 1n: from the lease, no I/O
  const order = ids.tag("order");               // a handle: skips the tag lookup
  const next = order.tryNext() ?? (await order.next()); // synchronous while the lease lasts
  const [flake] = await ids.snowflake(1);       // per call
  ids.close();
  return [id, next, flake];
}

test("the README's snippet loads", () => {
  assert.equal(typeof readme, "function");
});

// The README's, of shard bits.
async function shards(ids) {
  await ids.createTag("orders", 1000, { mapping: "shard:4" }); // once, with adminToken
  const a = await ids.nextShard("orders", 5);          // a % 16n === 5n
  const b = await ids.nextForKey("orders", "user-42"); // b % 16n === shardOf("user-42", 4), 13n
  const c = ids.tryNextForKey("orders", "user-42") ?? (await ids.nextForKey("orders", "user-42"));
  const h = keyHash("user-42");                        // 0xa39532c7ab051e8dn, as every server computes it
  const flake = compose(layouts.twitter, { time: new Date("2026-11-29T12:00:00.123Z"), node: 5, sequence: 7 });
  const { first, last } = bounds(layouts.twitter, new Date("2026-11-01"), new Date("2026-12-01")); // WHERE id BETWEEN first AND last
  const sharded = withShardBits(layouts.twitter, 4);   // a server's snowflake.shard_bits: 4
  const { shard } = decode(compose(sharded, { time: Date.now(), node: 5, shardKey: "user-42" }), sharded); // 13n
  return [a, b, c, h, flake, first, last, shard];
}

test("the README's snippet of shard bits says what it does", async () => {
  const s = await startFrond(mkdtempSync(join(tmpdir(), "frond-ts-")));
  const ids = new FrondClient({ servers: [s.url] });
  try {
    const [a, b, c, h, flake, first, last, shard] = await shards(ids);
    assert.equal(a % 16n, 5n);
    assert.equal(b % 16n, shardOf("user-42", 4));
    assert.equal(shardOf("user-42", 4), 13n);
    assert.equal(c % 16n, 13n);
    assert.deepEqual([a >> 4n, b >> 4n, c >> 4n], [1n, 2n, 3n]);
    assert.equal(h, 0xa39532c7ab051e8dn);
    // The server's /v1/compose and /v1/bounds (docs/kinds.md's example).
    const composed = await (await fetch(`${s.url}/v1/compose?time=2026-11-29T12:00:00.123Z&node=5&sequence=7`)).json();
    assert.equal(flake, BigInt(composed.id_str));
    const b2 = await (await fetch(`${s.url}/v1/bounds?from=2026-11-01&to=2026-12-01`)).json();
    assert.deepEqual([first, last], [BigInt(b2.first_str), BigInt(b2.last_str)]);
    assert.equal(shard, 13n);
  } finally {
    ids.close();
    await s.kill();
  }
});
