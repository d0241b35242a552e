export { FrondClient, Tag } from "./client.js";
export type { ClientOptions, Range, Stats } from "./client.js";
export { FrondError } from "./errors.js";
export { errorCodes } from "./codes.js";
export type { ErrorCode, CodeInfo } from "./codes.js";
export { decode, preset, layouts } from "./snowflake.js";
export type { Layout, Parts } from "./snowflake.js";
