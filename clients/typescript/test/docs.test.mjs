// The JavaScript snippets of docs/clients.md, word
// for word (the repository's TestDocs_GoSnippetsAreCode checks that they
// are here): loaded by node --test, so they parse and their imports
// resolve (the package by its own name). The first is not run (its servers
// are the docs'); the second, a function of a client, runs against a real
// frond serve (FROND_TEST_BIN).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrondClient, FrondError, decode } from "@frond-id/client";
import { shardOf } from "@frond-id/client";
import { startFrond } from "./server.mjs";

// docs/clients.md's.
async function clientsDoc() {
  const ids = new FrondClient({ servers: ["http://id-1:8080", "http://id-2:8080"] }); // or "id-1:8080"

  const id = await ids.nextId("order");          // bigint, from the lease
  const s = await ids.nextString("order");       // "3", its decimal string
  const order = ids.tag("order");                // a handle: skips the tag lookup
  const fast = order.tryNext() ?? (await order.next()); // synchronous while the lease lasts
  const batch = await ids.nextIds("order", 100); // in order
  const flakes = await ids.snowflake(10);        // per call, bigint
  const u7 = await ids.uuids(7, 3);              // versions 1, 4, 6, 7
  const u5 = await ids.nameUuid(5, "dns", "example.com");
  const users = await ids.typeIds("user", 2);    // user_01h455vb4pex5vsknk084sn02q
  const text = await ids.nextStrings("invoice", 2); // a tag whose form is text
  const { first, last } = await ids.seq("msgs", "conversation-42", 3); // keyed sequence values, bigint
  const p = decode(flakes[0]);                   // { time, node, sequence, ... } as frond decode says
  ids.close();
  return [id, s, fast, batch, u7, u5, users, text, first, last, p, FrondError];
}

test("docs/clients.md's snippet loads", () => {
  assert.equal(typeof clientsDoc, "function");
});

// docs/clients.md's, of shard bits: a user and their orders on one of two databases.
async function signUp(ids, dbs, userKey) {
  const dbOf = (id) => dbs[Number(id % 2n)];               // a row's database, by its ID alone
  const userId = await ids.nextForKey("users", userKey);   // userId % 2n === shardOf(userKey, 1)
  const orderId = await ids.nextForKey("orders", userKey); // the same shard: the user's database
  await dbOf(userId).insert("users", { id: userId, key: userKey });
  await dbOf(orderId).insert("orders", { id: orderId, user: userId }); // a join stays on one database
  return { userId, orderId, shard: shardOf(userKey, 1) };
}

test("docs/clients.md's snippet of shard bits routes a user and their orders to one database", async () => {
  const s = await startFrond(mkdtempSync(join(tmpdir(), "frond-ts-")));
  const ids = new FrondClient({ servers: [s.url] });
  const db = () => {
    const rows = [];
    return { rows, insert: async (table, row) => void rows.push({ table, ...row }) };
  };
  const dbs = [db(), db()];
  try {
    await ids.createTag("users", 1000, { mapping: "shard:1" });
    await ids.createTag("orders", 1000, { mapping: "shard:1" });
    for (let i = 0; i < 100; i++) {
      const { userId, orderId, shard } = await signUp(ids, dbs, `user-${i}`);
      assert.equal(userId % 2n, shard);
      assert.equal(orderId % 2n, shard);
    }
    for (const [n, d] of dbs.entries()) {
      assert.ok(d.rows.length > 40, `database ${n}: ${d.rows.length} rows`);
      const users = new Set(d.rows.filter((r) => r.table === "users").map((r) => r.id));
      for (const r of d.rows) {
        assert.equal(r.id % 2n, BigInt(n));
        if (r.table === "orders") assert.ok(users.has(r.user), `order ${r.id} away from its user ${r.user}`);
      }
    }
  } finally {
    ids.close();
    await s.kill();
  }
});
