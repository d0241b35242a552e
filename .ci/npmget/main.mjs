// A Node.js program outside frond's repository, run by .ci/run from a
// project that installed the packed tarball (npm pack) alone, as a user's:
// segment IDs from a lease and a snowflake ID from the running frond serve
// whose address is its argument, as bigint; the CommonJS build too.
import { createRequire } from "node:module";
import { FrondClient, decode } from "@frond-id/client";

const ids = new FrondClient({ servers: [process.argv[2]] });
await ids.createTag("order", 1000);
const a = await ids.nextId("order");
const b = await ids.nextId("order");
const [sf] = await ids.snowflake(1);
if (a !== 1n || b !== 2n || typeof sf !== "bigint") throw new Error(`segment IDs ${a}, ${b}, snowflake ${sf}`);
const cjs = createRequire(import.meta.url)("@frond-id/client");
if (typeof cjs.FrondClient !== "function") throw new Error("no CommonJS build");
console.log(`segment IDs ${a}, ${b}; snowflake ${sf} at ${decode(sf).time.toISOString()}`);
ids.close();
