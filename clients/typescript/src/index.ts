export { FrondClient, Tag } from "./client.js";
export type { ClientOptions, Range, Stats } from "./client.js";
export { FrondError } from "./errors.js";
export { errorCodes } from "./codes.js";
export type { ErrorCode, CodeInfo } from "./codes.js";
export { decode, preset, layouts, withShardBits, compose, bounds } from "./snowflake.js";
export type { Layout, Parts, ComposeParts } from "./snowflake.js";
export { keyHash, shardOf } from "./shard.js";
