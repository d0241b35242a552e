package io.github.frondid.frond;

/**
 * The shard of a key, as every frond server and client computes it (Go:
 * {@code frond.KeyHash}, {@code frond.ShardOf}; docs/kinds.md, "Shard bits
 * (gene IDs)"): the low K bits of FNV-1a (64-bit) of the key's UTF-8 bytes
 * followed by MurmurHash3's finaliser fmix64.
 *
 * <pre>
 * h = 14695981039346656037
 * for each byte b: h = (h XOR b) * 1099511628211          (mod 2^64)
 * h ^= h &gt;&gt; 33; h *= 0xff51afd7ed558ccd; h ^= h &gt;&gt; 33; h *= 0xc4ceb9fe1a85ec53; h ^= h &gt;&gt; 33
 * shard = h &amp; (2^K - 1)
 * </pre>
 *
 * An ID of a tag with K shard bits ({@link FrondClient#nextShard},
 * {@link FrondClient#nextForKey}) is {@code counter << K | shard}: its shard
 * is {@code id % 2^K}.
 */
public final class Shards {
    /** The most shard bits a tag or a snowflake layout has. */
    public static final int MAX_SHARD_BITS = 16;
    /** The largest shard of the most shard bits, 2^16-1. */
    public static final long MAX_SHARD = (1L << MAX_SHARD_BITS) - 1;

    private static final long OFFSET = 0xcbf29ce484222325L; // 14695981039346656037
    private static final long PRIME = 0x100000001b3L; // 1099511628211

    private Shards() {
    }

    /**
     * The 64-bit hash of key (as an unsigned value in a long): FNV-1a of its UTF-8 bytes, then fmix64. A
     * lone surrogate counts as {@code '?'}, as {@code key.getBytes(UTF_8)} and the client's requests write it.
     */
    public static long keyHash(String key) {
        long h = OFFSET;
        int n = key.length();
        for (int i = 0; i < n; i++) { // UTF-8, byte by byte, without an array
            char ch = key.charAt(i);
            if (ch < 0x80) {
                h = (h ^ ch) * PRIME;
            } else if (ch < 0x800) {
                h = (h ^ (0xc0 | ch >>> 6)) * PRIME;
                h = (h ^ (0x80 | ch & 0x3f)) * PRIME;
            } else if (!Character.isSurrogate(ch)) {
                h = (h ^ (0xe0 | ch >>> 12)) * PRIME;
                h = (h ^ (0x80 | ch >>> 6 & 0x3f)) * PRIME;
                h = (h ^ (0x80 | ch & 0x3f)) * PRIME;
            } else if (Character.isHighSurrogate(ch) && i + 1 < n && Character.isLowSurrogate(key.charAt(i + 1))) {
                int cp = Character.toCodePoint(ch, key.charAt(++i));
                h = (h ^ (0xf0 | cp >>> 18)) * PRIME;
                h = (h ^ (0x80 | cp >>> 12 & 0x3f)) * PRIME;
                h = (h ^ (0x80 | cp >>> 6 & 0x3f)) * PRIME;
                h = (h ^ (0x80 | cp & 0x3f)) * PRIME;
            } else {
                h = (h ^ '?') * PRIME;
            }
        }
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    /** The shard of key under bits shard bits (0 to 16): the low bits of {@link #keyHash}(key). */
    public static long shardOf(String key, int bits) {
        if (bits < 0 || bits > MAX_SHARD_BITS) {
            throw new IllegalArgumentException("shard bits " + bits + ": 0 to " + MAX_SHARD_BITS);
        }
        return keyHash(key) & ((1L << bits) - 1);
    }
}
