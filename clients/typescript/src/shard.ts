// The shard of a key (docs/kinds.md#shard-bits-gene-ids): the low K bits of
// FNV-1a (64-bit) of the key's UTF-8 bytes, then MurmurHash3's fmix64, as
// every frond server and client computes it (Go: frond.KeyHash,
// frond.ShardOf). Computed on two 32-bit halves in numbers, not in bigint
// (a bigint per byte would cost about ten times as much); the tests check
// it against the documented vectors and a bigint version.

/** The most shard bits a tag or a snowflake layout has (frond.MaxShardBits). */
export const MAX_SHARD_BITS = 16;

// The 64-bit hash of key as its two 32-bit halves: hashLo returns the low
// one and leaves the high one in hashHi (no array allocated on the hot
// path: nextForKey).
let hashHi = 0;

function hashLo(key: string): number {
  // FNV-1a: h = (h XOR b) * 1099511628211 mod 2^64, the prime 2^40 + 0x1b3,
  // so h * 0x1b3 + (lo << 40): lo * 0x1b3 in 16-bit pieces, all in int32
  // (no float division, no closure over hi and lo: either costs more than
  // the hash).
  let hi = 0xcbf29ce4 | 0;
  let lo = 0x84222325 | 0;
  for (let i = 0; i < key.length; i++) {
    let c = key.charCodeAt(i);
    let b = c; // the byte, then the continuation bytes of c still to come
    let more = 0;
    if (c >= 0x80) {
      if (c >= 0xd800 && c <= 0xdfff) {
        // A surrogate pair is one code point; a lone surrogate is U+FFFD,
        // as TextEncoder and Buffer.from(key, "utf8") write it.
        const d = i + 1 < key.length ? key.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else {
          c = 0xfffd;
        }
      }
      if (c < 0x800) {
        b = 0xc0 | (c >> 6);
        more = 1;
      } else if (c < 0x10000) {
        b = 0xe0 | (c >> 12);
        more = 2;
      } else {
        b = 0xf0 | (c >> 18);
        more = 3;
      }
    }
    for (;;) {
      lo ^= b;
      const p0 = (lo & 0xffff) * 0x1b3; // < 2^25
      const p1 = (lo >>> 16) * 0x1b3 + (p0 >>> 16); // < 2^26
      hi = (Math.imul(hi, 0x1b3) + (p1 >>> 16) + (lo << 8)) | 0;
      lo = (p1 << 16) | (p0 & 0xffff);
      if (more === 0) break;
      more--;
      b = 0x80 | ((c >> (6 * more)) & 0x3f);
    }
  }
  // fmix64: h ^= h >> 33; h *= 0xff51afd7ed558ccd; h ^= h >> 33;
  // h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33. h >> 33 is hi >>> 1, in the low
  // half. A product's low half: lo * the constant's low half in 16-bit
  // pieces; its high half adds the cross products (Math.imul, mod 2^32).
  lo ^= hi >>> 1;
  let a0 = lo & 0xffff;
  let a1 = lo >>> 16;
  let p00 = a0 * 0x8ccd;
  let mid = a1 * 0x8ccd + a0 * 0xed55 + (p00 >>> 16); // < 2^33
  let low = ((mid & 0xffff) << 16) | (p00 & 0xffff);
  hi = (a1 * 0xed55 + ((mid / 65536) | 0) + Math.imul(hi, 0xed558ccd | 0) + Math.imul(lo, 0xff51afd7 | 0)) | 0;
  lo = low ^ (hi >>> 1);
  a0 = lo & 0xffff;
  a1 = lo >>> 16;
  p00 = a0 * 0xec53;
  mid = a1 * 0xec53 + a0 * 0x1a85 + (p00 >>> 16);
  low = ((mid & 0xffff) << 16) | (p00 & 0xffff);
  hi = (a1 * 0x1a85 + ((mid / 65536) | 0) + Math.imul(hi, 0x1a85ec53) + Math.imul(lo, 0xc4ceb9fe | 0)) | 0;
  hashHi = hi >>> 0;
  return (low ^ (hi >>> 1)) >>> 0;
}

/**
 * frond's hash of a key (Go: frond.KeyHash): FNV-1a (64-bit) of its UTF-8
 * bytes, then MurmurHash3's fmix64, as an unsigned 64-bit bigint.
 */
export function keyHash(key: string): bigint {
  if (typeof key !== "string") throw new TypeError("frond: a key is a string");
  const lo = hashLo(key);
  return (BigInt(hashHi) << 32n) | BigInt(lo);
}

/**
 * The shard of key under bits shard bits (Go: frond.ShardOf): the low bits
 * of keyHash(key), 0 to 2^bits - 1. The shard nextForKey puts in an ID, and
 * a server's shard_key.
 */
export function shardOf(key: string, bits: number): bigint {
  if (!Number.isInteger(bits) || bits < 0 || bits > 64) throw new RangeError(`frond: ${bits} shard bits: 0 to 64`);
  if (bits <= 32) {
    if (typeof key !== "string") throw new TypeError("frond: a key is a string");
    return BigInt(bits === 32 ? hashLo(key) : hashLo(key) & (2 ** bits - 1));
  }
  return keyHash(key) & ((1n << BigInt(bits)) - 1n);
}

/** @internal The shard of key under bits (1 to 16) shard bits, as a number: no bigint. */
export function keyShard(key: string, bits: number): number {
  return hashLo(key) & ((1 << bits) - 1);
}
