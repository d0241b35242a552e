import { shardOf, MAX_SHARD_BITS } from "./shard.js";

/**
 * A snowflake bit layout (snowflake/layout.go), as the server's layout
 * setting names it: from the top, timeBits of ticks of the unit since the
 * epoch, nodeBits of worker ID, seqBits of sequence, and shardBits of shard
 * (snowflake.shard_bits; none in the presets: withShardBits).
 *
 *     | 0 | time | node | sequence | shard |
 */
export interface Layout {
  readonly name: string;
  readonly timeBits: number;
  readonly nodeBits: number;
  readonly seqBits: number;
  /** The time unit in microseconds. */
  readonly unitMicros: bigint;
  /** The epoch in milliseconds since 1970. */
  readonly epochMs: bigint;
  /** How many of the node bits, from the top, are the datacenter (snowflake.datacenter_bits). */
  readonly datacenterBits: number;
  /** The lowest bits, below the sequence: the shard an ID carries (snowflake.shard_bits; 0 when absent). */
  readonly shardBits?: number;
}

/** What a snowflake ID holds; without datacenter bits, datacenter and worker are undefined, without shard bits shard. */
export interface Parts {
  readonly id: bigint;
  readonly layout: string;
  readonly time: Date;
  readonly tick: bigint;
  readonly node: bigint;
  readonly sequence: bigint;
  readonly datacenter?: bigint;
  readonly worker?: bigint;
  readonly shard?: bigint;
}

/** The fields of a snowflake ID to compose: its time, node (or datacenter and worker), sequence and shard. */
export interface ComposeParts {
  /** A Date, or Unix milliseconds (a bigint or an integer number): the ID carries the tick that holds it. */
  readonly time: Date | bigint | number;
  /** The node field (0 unless given), or datacenter and worker with a layout that has datacenter bits. */
  readonly node?: bigint | number;
  readonly datacenter?: bigint | number;
  readonly worker?: bigint | number;
  /** The sequence within the tick (0 unless given). */
  readonly sequence?: bigint | number;
  /** The shard (0 unless given), or the shard of a key (shardOf), with a layout that has shard bits. */
  readonly shard?: bigint | number;
  readonly shardKey?: string;
}

const layout = (name: string, timeBits: number, nodeBits: number, seqBits: number, unitMicros: bigint, epochMs: bigint): Layout =>
  Object.freeze({ name, timeBits, nodeBits, seqBits, unitMicros, epochMs, datacenterBits: 0, shardBits: 0 });

/** The presets: twitter (Leaf's), sonyflake, uid-generator and javascript (53 bits). */
export const layouts = Object.freeze({
  twitter: layout("twitter", 41, 10, 12, 1_000n, 1288834974657n),
  sonyflake: layout("sonyflake", 39, 16, 8, 10_000n, BigInt(Date.UTC(2014, 8, 1))),
  "uid-generator": layout("uid-generator", 28, 22, 13, 1_000_000n, BigInt(Date.UTC(2025, 0, 1))),
  javascript: layout("javascript", 38, 6, 9, 10_000n, BigInt(Date.UTC(2025, 0, 1))),
});

/** The preset named name ("leaf" is twitter, "js" javascript, "baidu" uid-generator), with datacenter bits. */
export function preset(name: string, datacenterBits = 0): Layout {
  const n = name.trim().toLowerCase();
  const alias: Record<string, keyof typeof layouts> = {
    "": "twitter", leaf: "twitter", twitter: "twitter", sonyflake: "sonyflake", "uid-generator": "uid-generator",
    uidgenerator: "uid-generator", baidu: "uid-generator", javascript: "javascript", js: "javascript", js53: "javascript",
  };
  const key = alias[n];
  if (key === undefined) {
    throw new RangeError(`no preset layout "${name}" (have javascript, sonyflake, twitter, uid-generator)`);
  }
  const l = layouts[key];
  if (datacenterBits < 0 || (datacenterBits > 0 && datacenterBits >= l.nodeBits)) {
    throw new RangeError(`layout ${l.name}: ${datacenterBits} datacenter bits: fewer than the ${l.nodeBits} node bits`);
  }
  return Object.freeze({ ...l, datacenterBits });
}

/**
 * l with k of its sequence bits, the lowest, made shard bits (the server's
 * snowflake.shard_bits; the shard bits it had go back to the sequence
 * first): the IDs keep their width and their time, and a node issues 2^k
 * times fewer in a tick. k is 0 to 16, and at least one sequence bit is
 * left (twitter: k at most 11).
 */
export function withShardBits(l: Layout, k: number): Layout {
  const seq = l.seqBits + (l.shardBits ?? 0);
  if (!Number.isInteger(k) || k < 0 || k > MAX_SHARD_BITS || k >= seq) {
    throw new RangeError(`layout ${l.name}: ${k} shard bits: 0 to ${Math.min(MAX_SHARD_BITS, seq - 1)}, fewer than its ${seq} sequence bits (at least one is left to the sequence)`);
  }
  return Object.freeze({ ...l, seqBits: seq - k, shardBits: k });
}

/** Decodes a snowflake ID (a bigint, or its decimal string) as the server decodes it. */
export function decode(id: bigint | string, l: Layout = layouts.twitter): Parts {
  const v = typeof id === "string" ? BigInt(id) : id;
  const shardBits = BigInt(l.shardBits ?? 0);
  const max = (1n << (BigInt(l.timeBits + l.nodeBits + l.seqBits) + shardBits)) - 1n;
  if (v < 0n || v > max) {
    throw new RangeError(`${v} is not between 0 and ${max} for layout ${l.name}`);
  }
  const rest = v >> shardBits;
  const tick = rest >> BigInt(l.nodeBits + l.seqBits);
  const node = (rest >> BigInt(l.seqBits)) & ((1n << BigInt(l.nodeBits)) - 1n);
  const sequence = rest & ((1n << BigInt(l.seqBits)) - 1n);
  const micros = l.epochMs * 1000n + tick * l.unitMicros;
  let parts: Parts = { id: v, layout: l.name, time: new Date(Number(micros / 1000n)), tick, node, sequence };
  if (l.datacenterBits > 0) {
    const workerBits = BigInt(l.nodeBits - l.datacenterBits);
    parts = { ...parts, datacenter: node >> workerBits, worker: node & ((1n << workerBits) - 1n) };
  }
  if (shardBits > 0n) {
    parts = { ...parts, shard: v & ((1n << shardBits) - 1n) };
  }
  return parts;
}

/**
 * The snowflake ID of l with p's fields (the server's /v1/compose, offline;
 * Go: Layout.Compose at Layout.TickAt): the tick that holds p.time,
 * floor((time - epoch) / unit). A time outside the layout's life, or a
 * field out of its range, is a RangeError naming the range.
 */
export function compose(l: Layout, p: ComposeParts): bigint {
  const tick = tickAt(l, p.time, "time");
  let node = int(p.node ?? 0, "node");
  if (p.datacenter !== undefined || p.worker !== undefined) {
    if (l.datacenterBits === 0) throw new RangeError(`layout ${l.name} has no datacenter bits: give node`);
    if (p.datacenter === undefined || p.worker === undefined) throw new RangeError("datacenter and worker go together");
    if (node !== 0n) throw new RangeError("node, or datacenter and worker, not both");
    const workerBits = BigInt(l.nodeBits - l.datacenterBits);
    const dc = within(int(p.datacenter, "datacenter"), (1n << BigInt(l.datacenterBits)) - 1n, "datacenter", l);
    const w = within(int(p.worker, "worker"), (1n << workerBits) - 1n, "worker", l);
    node = (dc << workerBits) | w;
  }
  const k = l.shardBits ?? 0;
  let shard = int(p.shard ?? 0, "shard");
  if (p.shardKey !== undefined) {
    if (typeof p.shardKey !== "string" || p.shardKey === "") throw new RangeError("an empty shard key");
    if (shard !== 0n) throw new RangeError("shard or shardKey, not both");
  }
  if ((shard !== 0n || p.shardKey !== undefined) && k === 0) throw new RangeError(`layout ${l.name} has no shard bits: give no shard`);
  if (p.shardKey !== undefined) shard = shardOf(p.shardKey, k);
  return make(l, tick, within(node, maxOf(l.nodeBits), "node", l), within(int(p.sequence ?? 0, "sequence"), maxOf(l.seqBits), "sequence", l),
    within(shard, maxOf(k), "shard", l));
}

/**
 * The first and the last ID of l issued at an instant in [from, to) (the
 * server's /v1/bounds, offline; Go: Layout.Bounds): first that of from's
 * tick with node, sequence and shard 0, last that of the tick holding the
 * last instant before to with every node, sequence and shard bit set. So
 * `WHERE id BETWEEN first AND last` holds every ID issued in the range
 * (and may hold IDs of the same first and last ticks issued just outside
 * it: a tick is the resolution). A range that begins before the epoch or
 * ends after the layout's end is cut to the layout's; one that holds none
 * of its ticks, or with from not before to, is a RangeError.
 */
export function bounds(l: Layout, from: Date | bigint | number, to: Date | bigint | number): { first: bigint; last: bigint } {
  const f = nanos(from, "from");
  const t = nanos(to, "to");
  if (f >= t) throw new RangeError(`the range [${show(f)}, ${show(t)}) is empty: from must be before to`);
  const maxTick = maxOf(l.timeBits);
  let first = tickOf(l, f);
  let last = tickOf(l, t - 1n); // the last nanosecond before to, as the server takes it
  if (last < 0n || first > maxTick) {
    throw new RangeError(`no ID of layout ${l.name} has a time in [${show(f)}, ${show(t)}): its IDs span ${show(epochNs(l))} to ${show(epochNs(l) + (maxTick + 1n) * unitNs(l))}`);
  }
  if (first < 0n) first = 0n;
  if (last > maxTick) last = maxTick;
  const k = l.shardBits ?? 0;
  return { first: make(l, first, 0n, 0n, 0n), last: make(l, last, maxOf(l.nodeBits), maxOf(l.seqBits), maxOf(k)) };
}

function make(l: Layout, tick: bigint, node: bigint, seq: bigint, shard: bigint): bigint {
  return (((tick << BigInt(l.nodeBits + l.seqBits)) | (node << BigInt(l.seqBits)) | seq) << BigInt(l.shardBits ?? 0)) | shard;
}

const maxOf = (bits: number): bigint => (1n << BigInt(bits)) - 1n;
const epochNs = (l: Layout): bigint => l.epochMs * 1_000_000n;
const unitNs = (l: Layout): bigint => l.unitMicros * 1000n;

// tickOf is floor((t - epoch) / unit), t in nanoseconds since 1970.
function tickOf(l: Layout, ns: bigint): bigint {
  const d = ns - epochNs(l);
  const u = unitNs(l);
  const q = d / u; // truncates toward zero
  return d < 0n && q * u !== d ? q - 1n : q;
}

// tickAt is the tick an ID issued at t carries, or a RangeError when t is
// before the epoch or at or after the layout's end.
function tickAt(l: Layout, t: Date | bigint | number, what: string): bigint {
  const ns = nanos(t, what);
  const q = tickOf(l, ns);
  if (q < 0n || q > maxOf(l.timeBits)) {
    const end = epochNs(l) + (maxOf(l.timeBits) + 1n) * unitNs(l);
    throw new RangeError(`${what} ${show(ns)} is not between the epoch ${show(epochNs(l))} and the end ${show(end)} of layout ${l.name}`);
  }
  return q;
}

// nanos is a time as nanoseconds since 1970: a Date, or Unix milliseconds.
function nanos(t: Date | bigint | number, what: string): bigint {
  let ms: bigint;
  if (t instanceof Date) {
    const v = t.getTime();
    if (!Number.isFinite(v)) throw new RangeError(`${what}: an invalid Date`);
    ms = BigInt(v);
  } else if (typeof t === "bigint") {
    ms = t;
  } else if (typeof t === "number" && Number.isSafeInteger(t)) {
    ms = BigInt(t);
  } else {
    throw new TypeError(`${what} ${String(t)}: a Date, or Unix milliseconds (a bigint or an integer)`);
  }
  return ms * 1_000_000n;
}

// show writes nanoseconds since 1970 as RFC 3339 where a Date can hold it.
function show(ns: bigint): string {
  const ms = ns / 1_000_000n;
  const d = new Date(Number(ms));
  return Number.isFinite(d.getTime()) && ms * 1_000_000n === ns ? d.toISOString() : `${ns} ns since 1970`;
}

function int(v: bigint | number, what: string): bigint {
  if (typeof v === "bigint") return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  throw new TypeError(`${what} ${String(v)}: an integer (a bigint or a number)`);
}

function within(v: bigint, max: bigint, what: string, l: Layout): bigint {
  if (v < 0n || v > max) throw new RangeError(`${what} ${v} out of 0..${max} (layout ${l.name})`);
  return v;
}
