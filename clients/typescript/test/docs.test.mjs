// The JavaScript snippet of docs/clients.md, word
// for word (the repository's TestDocs_GoSnippetsAreCode checks that they
// are here): loaded by node --test, so they parse and their imports
// resolve (the package by its own name); not run (their servers are the
// docs').
import { test } from "node:test";
import assert from "node:assert/strict";
import { FrondClient, FrondError, decode } from "@frond-id/client";

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
