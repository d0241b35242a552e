// The package README's JavaScript snippet, word for word (the repository's
// TestDocs_GoSnippetsAreCode checks that it is here): loaded by node
// --test, so it parses and its import resolves (the package by its own
// name); not run (its servers are the README's).
import { test } from "node:test";
import assert from "node:assert/strict";
import { FrondClient } from "@frond-id/client";

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
