/** A snowflake bit layout (snowflake/layout.go), as the server's layout setting names it. */
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
}

/** What a snowflake ID holds; without datacenter bits, datacenter and worker are undefined. */
export interface Parts {
  readonly id: bigint;
  readonly layout: string;
  readonly time: Date;
  readonly tick: bigint;
  readonly node: bigint;
  readonly sequence: bigint;
  readonly datacenter?: bigint;
  readonly worker?: bigint;
}

const layout = (name: string, timeBits: number, nodeBits: number, seqBits: number, unitMicros: bigint, epochMs: bigint): Layout =>
  Object.freeze({ name, timeBits, nodeBits, seqBits, unitMicros, epochMs, datacenterBits: 0 });

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

/** Decodes a snowflake ID (a bigint, or its decimal string) as the server decodes it. */
export function decode(id: bigint | string, l: Layout = layouts.twitter): Parts {
  const v = typeof id === "string" ? BigInt(id) : id;
  const max = (1n << BigInt(l.timeBits + l.nodeBits + l.seqBits)) - 1n;
  if (v < 0n || v > max) {
    throw new RangeError(`${v} is not between 0 and ${max} for layout ${l.name}`);
  }
  const tick = v >> BigInt(l.nodeBits + l.seqBits);
  const node = (v >> BigInt(l.seqBits)) & ((1n << BigInt(l.nodeBits)) - 1n);
  const sequence = v & ((1n << BigInt(l.seqBits)) - 1n);
  const micros = l.epochMs * 1000n + tick * l.unitMicros;
  const parts: Parts = { id: v, layout: l.name, time: new Date(Number(micros / 1000n)), tick, node, sequence };
  if (l.datacenterBits > 0) {
    const workerBits = BigInt(l.nodeBits - l.datacenterBits);
    return { ...parts, datacenter: node >> workerBits, worker: node & ((1n << workerBits) - 1n) };
  }
  return parts;
}
