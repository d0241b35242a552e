import * as http from "node:http";
import * as https from "node:https";
import { FrondError } from "./errors.js";
import type { ErrorCode } from "./codes.js";
import { keyHash, keyShard, MAX_SHARD_BITS } from "./shard.js";

/** The header of a keyed sequence's answer: the key's section and whether the server that answered serves it ("5/16 self", or "other"). */
const SEQ_ROUTE_HEADER = "frond-seq-section";
/** The most sections a route is kept for (a header naming more is ignored). */
const MAX_ROUTE_SECTIONS = 1 << 16;

/** What a call learned of the server that answered it. */
interface CallInfo {
  server?: number;
  route?: string;
}

/** The options of a client (docs/clients.md). */
export interface ClientOptions {
  /** The servers' HTTP addresses (http://host:8080, https://..., or host:port), sharing one store. */
  servers: string[];
  /** Bounds one attempt on one server, in ms (2000). */
  timeoutMs?: number;
  /** Bounds the attempts of one call across all servers (three per server). */
  attempts?: number;
  /** A server that failed rests, doubling from min to max with ±20% jitter, at least its Retry-After (100, 5000 ms). */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** The bounds of one lease, and how long a lease should last (1000, 1,000,000, 10,000 ms). */
  minLease?: number;
  maxLease?: number;
  leaseTargetMs?: number;
  /** Accept leases below IDs already handed out (servers combining stores by residue class); by default IDs increase strictly. */
  unordered?: boolean;
  /** The tag token (X-Frond-Token), for servers configured with tokens. */
  tagToken?: string;
  /** The admin token, for createTag. */
  adminToken?: string;
  /** CA certificates (PEM) to trust for https:// servers, instead of Node's. */
  ca?: string | Buffer;
  /** How long seq keeps asking while a key's section is between owners (its owner killed), in ms (10,000). */
  seqWaitMs?: number;
}

/** IDs start, start+stride, ... below end (exclusive): count of them. */
export interface Range {
  readonly start: bigint;
  readonly end: bigint;
  readonly stride: bigint;
  readonly count: number;
}

/** The client's counters. */
export interface Stats {
  calls: number;
  failovers: number;
  waits: number;
  /** Per tag: the IDs in hand (both leases) and the size of the last lease. */
  leases: Record<string, { remaining: number; size: number }>;
  /** The same of the leases of counters (nextShard, nextForKey), per tag with shard bits. */
  counterLeases: Record<string, { remaining: number; size: number }>;
}

const MAX_LEASE = 1_000_000; // the server's largest ranges request
const SAFE = BigInt(Number.MAX_SAFE_INTEGER); // 2^53 - 1: exact as a number

type Answer = Record<string, unknown>;

/** One server and its health as this client sees it. */
class Server {
  downUntil = 0; // performance.now()
  fails = 0;
  readonly agent: http.Agent;
  constructor(readonly base: string, ca: string | Buffer | undefined) {
    this.agent = base.startsWith("https:") ? new https.Agent({ keepAlive: true, ca }) : new http.Agent({ keepAlive: true });
  }
}

/** A segment of a lease: its ranges. */
interface Segment {
  readonly ranges: Range[];
  readonly count: number;
  readonly loadedAt: number;
}

/**
 * The leases of one tag: the current one, handed out from memory, and the
 * next one, fetched in the background once a tenth of the current one is
 * used (Leaf's double buffer, over a client's leases). A lease of counters
 * (counters: nextShard, nextForKey) holds a tag's counters, apart from its
 * plain lease: its answer says the tag's shard bits, and gene() puts a
 * shard below a counter.
 */
class Lease {
  // The range in hand: val is its next ID.
  private val = 0n;
  private stride = 1n;
  // The range in hand as plain numbers while its IDs are below 2^53 (most
  // are): an ID is one number addition and one BigInt() when handed out,
  // not a bigint addition.
  private small = false;
  private num = 0;
  private numStride = 1;
  private left = 0;
  // The segment in hand: the ranges after the one in hand.
  private rest: Range[] = [];
  // The next lease is fetched when the range in hand has this many IDs
  // left (a tenth of the segment used), or never (-1).
  private prefetchLeft = -1;
  private prefetchAt = 0; // the segment's IDs handed out before the prefetch
  private cur: Segment | undefined;
  private pending: Segment | undefined;
  private fetching: Promise<FrondError | undefined> | undefined;
  private floor = -1n; // the highest ID leased (strictly increasing IDs)
  size: number;
  via: ErrorCode | undefined; // set once the server refused to lease the tag
  // Of a lease of counters: the tag's shard bits as its last lease said
  // (undefined before one answered; 0: a tag without them). Its ranges are
  // kept moved up by them (counter << K, the ID of shard 0), so that an ID
  // is one or away (gene).
  bits: number | undefined;
  private shift = 0n;
  private maxBase = 0n; // the last counter that fits below K bits in 63, moved up
  private readonly shards: bigint[] = []; // BigInt(shard), made once each

  constructor(private readonly c: FrondClient, readonly tag: string, readonly counters = false) {
    this.size = c.o.minLease;
  }

  // learn takes the shard bits a lease of counters answered (a tag's never
  // change: the stores refuse a change of mapping to or from them).
  private learn(bits: number): void {
    if (bits === this.bits) return;
    this.bits = bits;
    this.shift = BigInt(bits);
    this.maxBase = ((1n << BigInt(63 - bits)) - 1n) << this.shift;
  }

  /** Throws unless shard (0 to 2^16-1) fits the tag's shard bits, once a lease said them. */
  check(shard: number): void {
    const k = this.bits;
    if (k === undefined) return;
    if (k === 0) throw noShardBits(this.tag);
    if (shard >= 1 << k) {
      throw new FrondError("invalid_argument", 400, `shard ${shard}: tag ${this.tag} has ${k} shard bits (0 to ${(1 << k) - 1})`);
    }
  }

  /** The ID on shard (checked) of base, a counter moved up: counter << K | shard, or tag_exhausted past 63 bits. */
  gene(base: bigint, shard: number): bigint {
    if (base > this.maxBase) {
      throw new FrondError("tag_exhausted", 409, `tag ${this.tag}: counter ${base >> this.shift} does not fit below its ${this.bits} shard bits in 63 bits: use a new tag`);
    }
    return base | (this.shards[shard] ??= BigInt(shard));
  }

  /** An ID from the lease in hand, or undefined: no I/O. */
  tryNext(): bigint | undefined {
    const left = this.left;
    if (left > 0) {
      this.left = left - 1;
      let id: bigint;
      if (this.small) {
        const v = this.num;
        this.num = v + this.numStride;
        id = BigInt(v);
      } else {
        id = this.val;
        this.val = id + this.stride;
      }
      if (left === this.prefetchLeft) {
        this.prefetch();
      }
      return id;
    }
    return this.advance();
  }

  next(): Promise<bigint> {
    const id = this.tryNext();
    return id !== undefined ? Promise.resolve(id) : this.slow();
  }

  remaining(): number {
    let n = this.left;
    for (const r of this.rest) n += r.count;
    if (this.pending) n += this.pending.count;
    return n;
  }

  // advance moves to the next range of the segment, or to the next
  // segment once it is there.
  private advance(): bigint | undefined {
    for (;;) {
      const r = this.rest.shift();
      if (r !== undefined) {
        if (r.count === 0) continue;
        this.val = r.start;
        this.stride = r.stride;
        this.small = r.start >= 0n && r.start + BigInt(r.count) * r.stride <= SAFE;
        if (this.small) {
          this.num = Number(r.start);
          this.numStride = Number(r.stride);
        }
        this.left = r.count;
        // The prefetch falls in this range when a tenth of the segment ends in it.
        this.prefetchLeft = this.prefetchAt >= 0 && this.prefetchAt < r.count ? r.count - this.prefetchAt : -1;
        this.prefetchAt = this.prefetchLeft >= 0 ? -1 : this.prefetchAt - r.count;
        return this.tryNext();
      }
      const n = this.pending;
      if (n === undefined) {
        return undefined;
      }
      this.install(n, false);
    }
  }

  private install(n: Segment, waited: boolean): void {
    this.resize(waited);
    this.pending = undefined;
    this.cur = n;
    this.rest = n.ranges.slice();
    this.left = 0;
    this.prefetchLeft = -1;
    this.prefetchAt = Math.floor(n.count / 10);
  }

  // resize sizes the next lease by how long the one used up lasted.
  private resize(waited: boolean): void {
    const o = this.c.o;
    if (this.cur === undefined) return;
    const lasted = performance.now() - this.cur.loadedAt;
    if (waited || lasted < o.leaseTargetMs / 2) {
      this.size = Math.min(this.size * 2, o.maxLease);
    } else if (lasted > 2 * o.leaseTargetMs) {
      this.size = Math.max(Math.floor(this.size / 2), o.minLease);
    }
  }

  // slow runs when nothing is in hand: the next lease, fetched now if it is
  // not under way (the caller waits).
  private async slow(): Promise<bigint> {
    for (;;) {
      const id = this.tryNext();
      if (id !== undefined) return id;
      if (this.via !== undefined) {
        if (this.counters) {
          // nextShard asks a server for each ID, with the shard, instead:
          // never a counter from elsewhere.
          throw new FrondError(this.via, 409, `tag ${this.tag}: its counters cannot be leased (${this.via})`);
        }
        return (await this.c.unleasedIds(this.tag, 1))[0];
      }
      let err: FrondError | undefined;
      if (this.fetching !== undefined) {
        err = await this.fetching;
      } else {
        this.c.counters.waits++;
        this.size = Math.min(this.size * 2, this.c.o.maxLease); // a lease that came too late doubles
        err = await this.start(this.size, true);
      }
      if (err !== undefined && this.via === undefined && this.pending === undefined && this.left === 0 && this.rest.length === 0) {
        throw err.withMessage(`tag ${this.tag}: no ID in hand and none could be leased: ${err.message}`);
      }
    }
  }

  private prefetch(): void {
    if (this.fetching === undefined && this.pending === undefined && !this.c.closed) {
      void this.start(this.size, false);
    }
  }

  // start fetches a lease of n; the promise answers its error (or none):
  // it never rejects, so that every caller waiting on it sees the outcome.
  private start(n: number, waited: boolean): Promise<FrondError | undefined> {
    const p = this.fetch(n).then(
      (seg) => {
        if (this.pending === undefined) {
          this.pending = seg;
        }
        if (waited && this.left === 0 && this.rest.length === 0 && this.pending !== undefined) {
          this.install(this.pending, true);
        }
        return undefined;
      },
      (e: unknown) => {
        const err = e instanceof FrondError ? e : new FrondError("", 0, `tag ${this.tag}: ${String(e)}`, 0, { cause: e });
        if (err.code === "not_leasable" || err.code === "form_not_carried") {
          this.via = err.code;
        }
        return err;
      },
    );
    this.fetching = p.finally(() => {
      this.fetching = undefined;
    });
    return this.fetching;
  }

  // fetch leases n IDs. By default IDs increase strictly: what lies below
  // the IDs leased before is skipped (after a fail-over to a server whose
  // buffered ranges are lower): a gap, never a duplicate.
  private async fetch(n: number): Promise<Segment> {
    let ask = n;
    for (let tries = 0; ; tries++) {
      const leased = await this.c.lease(this.tag, ask, this.counters);
      let rs = leased.ranges;
      if (this.counters) {
        // Counters, moved up by the tag's shard bits (the order and the
        // floor below hold as they do of counters).
        this.learn(leased.shardBits);
        const k = this.shift;
        if (k > 0n) rs = rs.map((r) => ({ start: r.start << k, end: r.end << k, stride: r.stride << k, count: r.count }));
      }
      const kept: Range[] = [];
      let count = 0;
      for (const r of rs) {
        let x = r;
        if (!this.c.o.unordered && r.count > 0 && r.start <= this.floor) {
          const last = r.start + BigInt(r.count - 1) * r.stride;
          if (last <= this.floor) continue; // wholly below
          const skip = (this.floor - r.start) / r.stride + 1n;
          x = { start: r.start + skip * r.stride, end: r.end, stride: r.stride, count: r.count - Number(skip) };
        }
        kept.push(x);
        count += x.count;
      }
      if (count > 0) {
        for (const r of kept) {
          if (r.count > 0) {
            const last = r.start + BigInt(r.count - 1) * r.stride;
            if (last > this.floor) this.floor = last;
          }
        }
        return { ranges: kept, count, loadedAt: performance.now() };
      }
      // The whole lease lay below the IDs handed out: this server had
      // them buffered before another served this handle (a fail-over).
      // Ask for what lies between as well, so that the next lease passes
      // it, however far behind the buffer lies (issue 60: ten capped
      // leases in a row failed with the wrong advice).
      let top = 0n;
      for (const r of rs) {
        if (r.count > 0) {
          const last = r.start + BigInt(r.count - 1) * r.stride;
          if (last > top) top = last;
        }
      }
      // (In counters: a lease of counters holds them moved up by K.)
      const want = BigInt(n) + (this.floor > top ? (this.floor - top) >> this.shift : 0n);
      ask = want > BigInt(MAX_LEASE_REQUEST) ? MAX_LEASE_REQUEST : Number(want);
      if (tries >= 64) {
        throw new FrondError("store_unavailable", 0, `tag ${this.tag}: 64 leases in a row, the last of ${ask} IDs, lay below the IDs this client handed out: ` +
          "the servers' stores interleave (a set of stores, whose IDs do not increase across stores); set unordered if IDs need not increase per client");
      }
    }
  }
}

/** The most IDs one lease request asks for (the server's bound). */
const MAX_LEASE_REQUEST = 1_000_000;

/** A handle on one tag (FrondClient.tag): its next() skips the tag lookup. */
export class Tag {
  /** @internal */
  constructor(private readonly lease: Lease, private readonly c: FrondClient) {}

  /** The tag's name. */
  get name(): string {
    return this.lease.tag;
  }

  /** The next segment ID: from memory on a warm lease (no I/O). */
  next(): Promise<bigint> {
    return this.lease.next();
  }

  /** The next segment ID as a decimal string. */
  async nextString(): Promise<string> {
    return (await this.lease.next()).toString();
  }

  /** An ID from the lease in hand, synchronously, or undefined when it is used up (then await next()). */
  tryNext(): bigint | undefined {
    return this.lease.via === undefined ? this.lease.tryNext() : undefined;
  }

  /** n segment IDs, in order. */
  async nextN(n: number): Promise<bigint[]> {
    count(n, 10_000);
    if (this.lease.via !== undefined) {
      return this.c.unleasedIds(this.lease.tag, n);
    }
    const out: bigint[] = [];
    for (let i = 0; i < n; i++) {
      out.push(this.lease.tryNext() ?? (await this.lease.next()));
    }
    return out;
  }
}

/**
 * A client of frond servers over their HTTP API, with the Go client's
 * semantics: segment IDs from leases in process, per-call snowflake IDs,
 * UUIDs and serials, fail-over across servers, typed errors. Every ID is a
 * bigint (or its decimal string): none passes through a JavaScript number.
 */
export class FrondClient {
  /** @internal */
  readonly o: Required<Omit<ClientOptions, "ca" | "tagToken" | "adminToken">> & { tagToken: string; adminToken: string };
  private readonly servers: Server[];
  private readonly timeoutHeader: string;
  private preferred = 0;
  private readonly leases = new Map<string, Lease>();
  private readonly counterLeases = new Map<string, Lease>(); // nextShard's, apart
  /** @internal */
  readonly counters = { calls: 0, failovers: 0, waits: 0 };
  /** @internal */
  closed = false;
  // By keyed sequence space, by section: the server that last said it
  // serves the section (its index + 1), or the last that said it sent the
  // request on (-(index + 1): the next one is asked), or 0.
  private readonly routes = new Map<string, Int32Array>();

  constructor(options: ClientOptions) {
    const o = options;
    if (!o || !Array.isArray(o.servers) || o.servers.length === 0) {
      throw new TypeError("frond: no servers");
    }
    const pos = (v: number | undefined, d: number, what: string): number => {
      if (v === undefined) return d;
      if (!Number.isFinite(v) || v <= 0) throw new RangeError(`frond: ${what} ${v}: must be positive`);
      return v;
    };
    this.o = {
      servers: o.servers,
      timeoutMs: pos(o.timeoutMs, 2000, "timeoutMs"),
      attempts: o.attempts ?? 0,
      backoffMinMs: pos(o.backoffMinMs, 100, "backoffMinMs"),
      backoffMaxMs: pos(o.backoffMaxMs, 5000, "backoffMaxMs"),
      minLease: pos(o.minLease, 1000, "minLease"),
      maxLease: pos(o.maxLease, MAX_LEASE, "maxLease"),
      leaseTargetMs: pos(o.leaseTargetMs, 10_000, "leaseTargetMs"),
      seqWaitMs: pos(o.seqWaitMs, 10_000, "seqWaitMs"),
      unordered: o.unordered ?? false,
      tagToken: o.tagToken ?? "",
      adminToken: o.adminToken ?? "",
    };
    if (this.o.minLease > this.o.maxLease || this.o.maxLease > MAX_LEASE) {
      throw new RangeError(`frond: lease ${this.o.minLease}..${this.o.maxLease}: 1 <= min <= max <= ${MAX_LEASE}`);
    }
    if (this.o.backoffMaxMs < this.o.backoffMinMs) {
      throw new RangeError("frond: backoffMaxMs below backoffMinMs");
    }
    this.timeoutHeader = String(Math.min(Math.max(Math.floor(this.o.timeoutMs), 1), 600_000));
    this.servers = o.servers.map((raw) => {
      let u = raw.trim();
      if (!u.includes("://")) u = "http://" + u;
      const url = new URL(u);
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new TypeError(`frond: server ${raw}: want http://host:port or https://host:port`);
      }
      return new Server(u.replace(/\/+$/, ""), o.ca);
    });
  }

  // ---- Segment IDs ----

  /** The next segment ID of tag, from the lease: no I/O unless both the lease and the next one are used up. */
  nextId(tag: string): Promise<bigint> {
    const l = this.leases.get(tag);
    return l !== undefined ? l.next() : this.tag(tag).next();
  }

  /** The next segment ID of tag as a decimal string. */
  async nextString(tag: string): Promise<string> {
    return (await this.nextId(tag)).toString();
  }

  /** n segment IDs of tag, in order. */
  nextIds(tag: string, n: number): Promise<bigint[]> {
    return this.tag(tag).nextN(n);
  }

  /** A handle on tag; handles of one tag share one lease. */
  tag(tag: string): Tag {
    if (typeof tag !== "string" || tag === "") {
      throw new TypeError("frond: a tag needs a name");
    }
    let l = this.leases.get(tag);
    if (l === undefined) {
      l = new Lease(this, tag);
      this.leases.set(tag, l);
    }
    return new Tag(l, this);
  }

  /** An ID of tag from the lease in hand, synchronously, or undefined (then await nextId). */
  tryNext(tag: string): bigint | undefined {
    const l = this.leases.get(tag);
    return l !== undefined && l.via === undefined ? l.tryNext() : undefined;
  }

  /** n segment IDs of tag as ranges, straight from a server (not from the lease). */
  async nextRanges(tag: string, n: number): Promise<Range[]> {
    return ranges(await this.call(`/v1/segment/${path(tag)}?format=ranges&n=${count(n, MAX_LEASE)}`));
  }

  /** n segment IDs of tag in its form (a text form: base62, opaque62, ...), from a server. */
  async nextStrings(tag: string, n: number): Promise<string[]> {
    return strs(await this.call(`/v1/segment/${path(tag)}?n=${count(n, 10_000)}`), "id_strs", "id_str");
  }

  /** @internal The IDs of a tag that cannot be leased, call by call. */
  async unleasedIds(tag: string, n: number): Promise<bigint[]> {
    const l = this.leases.get(tag);
    if (l?.via === "not_leasable") {
      const out: bigint[] = [];
      for (const r of await this.nextRanges(tag, n)) {
        for (let i = 0; i < r.count && out.length < n; i++) out.push(r.start + BigInt(i) * r.stride);
      }
      return out;
    }
    let m: Answer;
    try {
      m = await this.call(`/v1/segment/${path(tag)}?n=${n}`);
    } catch (e) {
      if (e instanceof FrondError && e.code === "invalid_argument" && /shard bits/.test(e.message)) {
        throw e.withMessage(`${e.message} (its IDs need a shard: use nextShard or nextForKey)`);
      }
      throw e;
    }
    if (!("ids" in m) && !("id" in m)) {
      throw new FrondError("form_not_carried", 409, `tag ${tag} hands out text IDs (its form), not numbers: use nextStrings`);
    }
    return strs(m, "id_strs", "id_str").map((s) => BigInt(s));
  }

  /**
   * @internal A lease of n IDs of tag, or of its counters (counters=1:
   * nextShard), with the shard bits the answer says (0 without).
   */
  async lease(tag: string, n: number, counters = false): Promise<{ ranges: Range[]; shardBits: number }> {
    const m = await this.call(`/v1/segment/${path(tag)}?format=ranges&lease=1${counters ? "&counters=1" : ""}&n=${n}`);
    const bits = m.shard_bits ?? 0;
    if (typeof bits !== "number" || !Number.isInteger(bits) || bits < 0 || bits > MAX_SHARD_BITS) {
      throw new FrondError("", 0, `frond's lease of tag ${tag} says ${JSON.stringify(bits)} shard bits: 0 to ${MAX_SHARD_BITS}`);
    }
    if (!counters && bits !== 0) {
      // A server refuses this (form_not_carried); never hand out bare counters.
      throw new FrondError("form_not_carried", 409, `tag ${tag} has ${bits} shard bits: its IDs need a shard: use nextShard or nextForKey`);
    }
    return { ranges: ranges(m), shardBits: bits };
  }

  // ---- Shard bits (gene IDs) ----

  /**
   * The next ID of tag, a tag with shard bits ("mapping": "shard:K",
   * docs/kinds.md#shard-bits-gene-ids), on shard: the tag's next counter,
   * from a lease of its counters (no I/O while it lasts), moved up by K
   * with shard below, counter << K | shard. So id % 2^K is shard, and the
   * IDs of every shard are unique across clients and servers (the
   * counter's uniqueness). A shard outside 0..2^K-1 and a tag without shard
   * bits are FrondError invalid_argument; a counter past 2^(63-K)-1
   * tag_exhausted. nextId refuses a tag with shard bits.
   */
  nextShard(tag: string, shard: number | bigint): Promise<bigint> {
    let s: number;
    let id: bigint | undefined;
    try {
      s = shardArg(shard);
      id = this.tryShard(tag, s);
    } catch (e) {
      return Promise.reject(e);
    }
    return id !== undefined ? Promise.resolve(id) : this.slowShard(tag, s, undefined);
  }

  /**
   * nextShard on the shard of key (a user, a tenant, a shop): the low K
   * bits of keyHash(key), shardOf, which every server and client computes
   * alike, so that the rows of one key and the rows whose IDs carry it
   * land on one shard. An empty key is invalid_argument.
   */
  nextForKey(tag: string, key: string): Promise<bigint> {
    let id: bigint | undefined;
    try {
      id = this.tryKey(tag, key);
    } catch (e) {
      return Promise.reject(e);
    }
    return id !== undefined ? Promise.resolve(id) : this.slowShard(tag, 0, key);
  }

  /** nextShard from the lease of counters in hand, synchronously, or undefined (then await nextShard). */
  tryNextShard(tag: string, shard: number | bigint): bigint | undefined {
    return this.tryShard(tag, shardArg(shard));
  }

  /** nextForKey from the lease of counters in hand, synchronously, or undefined (then await nextForKey). */
  tryNextForKey(tag: string, key: string): bigint | undefined {
    return this.tryKey(tag, key);
  }

  private tryShard(tag: string, shard: number): bigint | undefined {
    const l = this.counterLeases.get(tag);
    if (l === undefined || l.bits === undefined || l.via !== undefined) return undefined;
    l.check(shard);
    const c = l.tryNext();
    return c === undefined ? undefined : l.gene(c, shard);
  }

  private tryKey(tag: string, key: string): bigint | undefined {
    if (typeof key !== "string" || key === "") {
      throw new FrondError("invalid_argument", 400, `tag ${tag}: an empty shard key`);
    }
    const l = this.counterLeases.get(tag);
    if (l === undefined || l.bits === undefined || l.via !== undefined) return undefined;
    if (l.bits === 0) throw noShardBits(tag);
    const c = l.tryNext();
    return c === undefined ? undefined : l.gene(c, keyShard(key, l.bits));
  }

  // slowShard runs when no counter is in hand: the tag's lease of counters
  // (started at its first call), or a server's ID per call when the tag
  // cannot be leased (a sequence tag).
  private async slowShard(tag: string, shard: number, key: string | undefined): Promise<bigint> {
    let l = this.counterLeases.get(tag);
    if (l === undefined) {
      if (typeof tag !== "string" || tag === "") throw new TypeError("frond: a tag needs a name");
      l = new Lease(this, tag, true);
      this.counterLeases.set(tag, l);
    }
    for (;;) {
      if (l.via !== undefined) {
        return this.unleasedShard(tag, shard, key);
      }
      if (key === undefined) l.check(shard);
      else if (l.bits === 0) throw noShardBits(tag);
      let c: bigint;
      try {
        c = await l.next();
      } catch (e) {
        if (l.via !== undefined) continue;
        throw e;
      }
      // The first lease said the bits: of a tag without them the counter
      // is a plain ID, skipped (a gap of one), never handed out.
      const bits = l.bits ?? 0;
      if (key === undefined) l.check(shard);
      else if (bits === 0) throw noShardBits(tag);
      return l.gene(c, key === undefined ? shard : keyShard(key, bits));
    }
  }

  // unleasedShard asks a server for an ID of a tag whose counters cannot
  // be leased (a sequence tag with shard bits): the server applies the shard.
  private async unleasedShard(tag: string, shard: number, key: string | undefined): Promise<bigint> {
    const q = key === undefined ? `shard=${shard}` : `shard_key=${encodeURIComponent(key)}`;
    const m = await this.call(`/v1/segment/${path(tag)}?${q}`);
    if (!("id" in m) || typeof m.id_str !== "string") {
      throw new FrondError("form_not_carried", 409, `tag ${tag} hands out text IDs (its form), not numbers: use nextStrings`);
    }
    return BigInt(m.id_str);
  }

  // ---- Per call ----

  /** n snowflake IDs (1 to 10,000). */
  async snowflake(n = 1): Promise<bigint[]> {
    return strs(await this.call(`/v1/snowflake?n=${count(n, 10_000)}`), "id_strs", "id_str").map((s) => BigInt(s));
  }

  /** n snowflake IDs in a text form (base62, base32, friendly, ...), with an optional prefix. */
  async snowflakeStrings(form: string, n = 1, prefix = ""): Promise<string[]> {
    const p = prefix ? `&prefix=${encodeURIComponent(prefix)}` : "";
    return strs(await this.call(`/v1/snowflake?n=${count(n, 10_000)}&form=${encodeURIComponent(form)}${p}`), "id_strs", "id_str");
  }

  /** n UUIDs of version 1, 4, 6 or 7. */
  async uuids(version: number, n = 1): Promise<string[]> {
    return strs(await this.call(`/v1/uuid?version=${version}&n=${count(n, 10_000)}`), "uuids", "uuid");
  }

  /** The name-based UUID (version 3 or 5) of name in namespace (dns, url, oid, x500 or a UUID). */
  async nameUuid(version: number, namespace: string, name: string): Promise<string> {
    return strs(await this.call(`/v1/uuid?version=${version}&namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(name)}`), "uuids", "uuid")[0];
  }

  /** n TypeIDs (UUID version 7) with the prefix: user_01h455vb4pex5vsknk084sn02q. */
  async typeIds(prefix: string, n = 1): Promise<string[]> {
    return strs(await this.call(`/v1/uuid?version=7&form=typeid&prefix=${encodeURIComponent(prefix)}&n=${count(n, 10_000)}`), "uuids", "uuid");
  }

  /** n serial numbers of the serial configured as name (serials: on the servers). */
  async serials(name: string, n = 1): Promise<string[]> {
    return strs(await this.call(`/v1/serial/${path(name)}?n=${count(n, 10_000)}`), "serials", "serial");
  }

  /**
   * The next n values (1 to 10,000) of key in a keyed sequence space, first
   * to last: each above every value the key was given before, whichever
   * server answered (docs/sequences.md). A call whose answer was lost and is
   * retried skips values, never repeats them.
   */
  async seq(space: string, key: string, n = 1): Promise<{ first: bigint; last: bigint }> {
    const p = `/v1/seq/${path(space)}/${path(key)}?n=${count(n, 10_000)}`;
    const info: CallInfo = {};
    const m = await this.send("GET", p, undefined, false, this.seqWant(space, key), this.o.seqWaitMs, info);
    this.learnRoute(space, info);
    if (typeof m.first_str !== "string" || typeof m.last_str !== "string") throw new FrondError("", 0, "frond's answer has no first_str and last_str");
    return { first: BigInt(m.first_str), last: BigInt(m.last_str) };
  }

  // The server to ask first for key: its section's owner as the answers
  // said, the server after one that sent it on, or -1.
  private seqWant(space: string, key: string): number {
    const r = this.routes.get(space);
    if (!r) return -1;
    const v = r[Number(keyHash(key) % BigInt(r.length))];
    if (v > 0) return v - 1;
    if (v < 0) return -v % this.servers.length;
    return -1;
  }

  // Keeps what the server that answered said of the key's section.
  private learnRoute(space: string, info: CallInfo): void {
    const m = /^(\d+)\/(\d+) (self|other)$/.exec((info.route ?? "").trim());
    if (!m || info.server === undefined) return;
    const section = Number(m[1]), sections = Number(m[2]);
    if (!(sections > 0 && sections <= MAX_ROUTE_SECTIONS && section < sections)) return;
    let r = this.routes.get(space);
    if (!r || r.length !== sections) {
      r = new Int32Array(sections);
      this.routes.set(space, r);
    }
    r[section] = m[3] === "self" ? info.server + 1 : -(info.server + 1);
  }

  /**
   * Creates a tag (tag administration, with the admin token): step, and
   * optionally its mode, first ID and mapping ("shard:K" for K shard bits:
   * nextShard, nextForKey).
   */
  async createTag(name: string, step: number, opts: { mode?: "segment" | "sequence"; maxId?: bigint; mapping?: string } = {}): Promise<void> {
    // Built by hand: a maxId past 2^53 must not pass through a number.
    let body = `{"name":${JSON.stringify(name)},"step":${Math.trunc(step)}`;
    if (opts.mode) body += `,"mode":${JSON.stringify(opts.mode)}`;
    if (opts.mapping) body += `,"mapping":${JSON.stringify(opts.mapping)}`;
    if (opts.maxId !== undefined) body += `,"max_id":${opts.maxId.toString()}`;
    await this.send("POST", "/v1/tags", body + "}", true);
  }

  /** The client's counters. */
  stats(): Stats {
    const leases: Stats["leases"] = {};
    for (const [t, l] of this.leases) leases[t] = { remaining: l.remaining(), size: l.size };
    const counterLeases: Stats["counterLeases"] = {};
    for (const [t, l] of this.counterLeases) counterLeases[t] = { remaining: l.remaining(), size: l.size };
    return { ...this.counters, leases, counterLeases };
  }

  /** Closes the connections. frond has no call to give a lease's tail back: it is skipped (a gap), never reused. */
  close(): void {
    this.closed = true;
    for (const s of this.servers) s.agent.destroy();
  }

  // ---- Transport ----

  /** @internal */
  call(pathAndQuery: string): Promise<Answer> {
    return this.send("GET", pathAndQuery, undefined, false);
  }

  // send runs one call with fail-over: the preferred server unless it
  // rests (the first attempt on want when it is a server that does not: a
  // keyed sequence's section owner), else the next that does not, else the
  // one resting least, after its rest; with patienceMs (a keyed sequence's
  // seqWaitMs), more attempts past the attempts until that long has passed.
  // A non-retryable answer is thrown at once; once every attempt failed,
  // the error is the last a server answered, when one did (a live server's
  // 503, not a dead one's refused connection). info gets the server that
  // answered and its Frond-Seq-Section.
  private async send(method: string, pathAndQuery: string, body: string | undefined, admin: boolean,
    want = -1, patienceMs = 0, info?: CallInfo): Promise<Answer> {
    if (this.closed) throw new FrondError("", 0, "frond: the client is closed");
    const attempts = this.o.attempts > 0 ? this.o.attempts : 3 * this.servers.length;
    const deadline = patienceMs > 0 ? performance.now() + patienceMs : 0;
    let last: FrondError | undefined;
    let answered: FrondError | undefined;
    let a = 0;
    while (a < attempts || performance.now() < deadline) {
      const i = a === 0 && want >= 0 && want < this.servers.length && this.servers[want].downUntil <= performance.now() ? want : this.pick();
      const s = this.servers[i];
      const rest = s.downUntil - performance.now();
      if (rest > 0) {
        if (a >= attempts && performance.now() + rest > deadline) break; // a rest past the patience
        await new Promise((r) => setTimeout(r, rest));
      }
      a++;
      try {
        this.counters.calls++;
        const m = await this.once(s, method, pathAndQuery, body, admin, info);
        s.fails = 0;
        s.downUntil = 0;
        this.preferred = i;
        if (info) info.server = i;
        return m;
      } catch (e) {
        const err = e as FrondError;
        if (!(err instanceof FrondError) || !err.retryable) throw e;
        if (err.status > 0 && err.retryAfterMs > 0) {
          // It answered, and said when to come back: no later (a live
          // server resting past it while the others are down), and it is
          // up: no failure in a row of a server that does not answer.
          s.fails = 0;
          s.downUntil = performance.now() + err.retryAfterMs;
        } else {
          s.fails = Math.min(s.fails + 1, 30);
          let wait = Math.min(this.o.backoffMaxMs, this.o.backoffMinMs * 2 ** Math.min(s.fails - 1, 20));
          wait = Math.max(wait * (0.8 + 0.4 * Math.random()), err.retryAfterMs);
          s.downUntil = performance.now() + wait;
        }
        last = err;
        if (err.status > 0) {
          err.server = s.base;
          answered = err;
        }
        if (this.servers.length > 1) this.counters.failovers++;
      }
    }
    const l = last as FrondError;
    const head = `no server could answer (${a} attempts on ${this.servers.length} server${this.servers.length === 1 ? "" : "s"}); `;
    if (answered) {
      const also = answered !== l ? `; the last attempt: ${l.message}` : "";
      throw answered.withMessage(`${head}the last answer, from ${answered.server}: ${answered.status} ${answered.wireCode}: ${answered.message}${also}`);
    }
    throw l.withMessage(`${head}the last: ${l.message}`);
  }

  private pick(): number {
    const now = performance.now();
    let best = this.preferred;
    let bestRest = Infinity;
    for (let k = 0; k < this.servers.length; k++) {
      const i = (this.preferred + k) % this.servers.length;
      const r = this.servers[i].downUntil - now;
      if (r <= 0) return i;
      if (r < bestRest) {
        best = i;
        bestRest = r;
      }
    }
    return best;
  }

  private once(s: Server, method: string, pathAndQuery: string, body: string | undefined, admin: boolean, info?: CallInfo): Promise<Answer> {
    const url = new URL(s.base + pathAndQuery);
    // One attempt's timeout (1 to 600,000 ms): a keyed sequence request that
    // waits at the server (a section between owners) is answered 503 with
    // Retry-After before it, not left to time out.
    const headers: Record<string, string> = { accept: "application/json", "frond-timeout": this.timeoutHeader };
    if (this.o.tagToken) headers["x-frond-token"] = this.o.tagToken;
    if (admin && this.o.adminToken) headers["authorization"] = `Bearer ${this.o.adminToken}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const mod = url.protocol === "https:" ? https : http;
    return new Promise<Answer>((resolve, reject) => {
      const fail = (e: Error) => reject(new FrondError("", 0, `server ${s.base}: ${e.message}`, 0, { cause: e }));
      const req = mod.request(url, { method, headers, agent: s.agent, signal: AbortSignal.timeout(this.o.timeoutMs) }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", fail);
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString("utf8");
          const ra = Number(res.headers["retry-after"] ?? 0);
          const retryAfterMs = Number.isFinite(ra) && ra > 0 ? ra * 1000 : 0;
          if (info) {
            const route = res.headers[SEQ_ROUTE_HEADER];
            info.route = typeof route === "string" ? route : undefined;
          }
          let v: unknown;
          try {
            // IDs are read from the *_str fields: a number past 2^53 in
            // this parse is never used.
            v = JSON.parse(text);
          } catch {
            reject(new FrondError("", status === 200 ? 0 : status, `server ${s.base} answered ${status}: ${text.slice(0, 200)}`, retryAfterMs));
            return;
          }
          const m = (v ?? {}) as Answer;
          if (status >= 200 && status < 300) {
            resolve(m);
            return;
          }
          const e = m.error as { code?: string; message?: string; hint?: string } | undefined;
          reject(new FrondError(e?.code ?? "", status, e?.message ?? `server ${s.base} answered ${status}: ${text.slice(0, 200)}`, retryAfterMs,
            { hint: typeof e?.hint === "string" ? e.hint : "" }));
        });
      });
      req.on("error", fail);
      if (body !== undefined) req.write(body);
      req.end();
    });
  }
}

function ranges(m: Answer): Range[] {
  const rs = m.ranges;
  if (!Array.isArray(rs)) throw new FrondError("", 0, "frond's answer has no ranges");
  return rs.map((r: Record<string, unknown>) => ({
    start: BigInt(r.start_str as string),
    end: BigInt(r.end_str as string),
    stride: BigInt(r.stride as number),
    count: r.count as number,
  }));
}

function strs(m: Answer, many: string, one: string): string[] {
  if (typeof m[one] === "string") return [m[one] as string];
  const v = m[many];
  if (!Array.isArray(v)) throw new FrondError("", 0, `frond's answer has no ${many}`);
  return v.map(String);
}

// shardArg checks a shard given to nextShard: 0 to 2^16-1 (the most shard
// bits), then the tag's bits once a lease said them.
function shardArg(shard: number | bigint): number {
  const s = typeof shard === "bigint" ? (shard >= 0n && shard < 1n << BigInt(MAX_SHARD_BITS) ? Number(shard) : -1) : shard;
  if (typeof s !== "number" || !Number.isInteger(s) || s < 0 || s >= 1 << MAX_SHARD_BITS) {
    throw new FrondError("invalid_argument", 400, `shard ${String(shard)}: from 0 to 2^K-1 (K, the tag's shard bits, at most ${MAX_SHARD_BITS})`);
  }
  return s;
}

function noShardBits(tag: string): FrondError {
  return new FrondError("invalid_argument", 400, `tag ${tag} has no shard bits: ask with nextId`);
}

function count(n: number, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max) throw new RangeError(`frond: n ${n}: 1 to ${max}`);
  return n;
}

function path(s: string): string {
  if (typeof s !== "string" || s === "") throw new TypeError("frond: an empty name");
  return encodeURIComponent(s);
}
