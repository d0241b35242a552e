package io.github.frondid.frond;

import java.math.BigInteger;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/**
 * Snowflake layouts, the decoding of their IDs as frond's server decodes
 * them (snowflake/layout.go; GET /v1/decode/{id}): the time, the node (with
 * datacenter bits: the datacenter and the worker within it), the sequence
 * and (with shard bits) the shard; and, offline, as the server's
 * GET /v1/compose and GET /v1/bounds answer: the ID of a time, node,
 * sequence and shard ({@link Layout#compose(Instant, long, long, long)}),
 * and the first and last IDs of a range of time
 * ({@link Layout#bounds(Instant, Instant)}).
 */
public final class Snowflake {
    private Snowflake() {
    }

    /**
     * A bit layout: a time field of {@code unitMicros}, node bits, sequence bits and shard bits (the lowest;
     * none in the presets), from an epoch. The sign bit is always 0.
     *
     * <pre>| 0 | time (timeBits) | node (nodeBits) | sequence (seqBits) | shard (shardBits) |</pre>
     */
    public static final class Layout {
        public final String name;
        /** seqBits: the sequence's bits, the shard bits not counted (Go's SeqBits). */
        public final int timeBits, nodeBits, seqBits, datacenterBits, shardBits;
        public final long unitMicros;
        public final Instant epoch;

        public Layout(String name, int timeBits, int nodeBits, int seqBits, long unitMicros, Instant epoch, int datacenterBits) {
            this(name, timeBits, nodeBits, seqBits, unitMicros, epoch, datacenterBits, 0);
        }

        /** A layout with shard bits (0 to 16): the lowest, below seqBits of sequence. */
        public Layout(String name, int timeBits, int nodeBits, int seqBits, long unitMicros, Instant epoch, int datacenterBits, int shardBits) {
            if (shardBits < 0 || shardBits > Shards.MAX_SHARD_BITS) {
                throw new IllegalArgumentException("layout " + name + ": shard bits " + shardBits + ": 0 to " + Shards.MAX_SHARD_BITS);
            }
            if (timeBits < 1 || seqBits < 1 || nodeBits < 0 || timeBits + nodeBits + seqBits + shardBits > 63) {
                throw new IllegalArgumentException("layout " + name + ": time " + timeBits + " + node " + nodeBits + " + sequence " + seqBits + " + shard " + shardBits
                        + " bits: at most 63, time and sequence at least 1");
            }
            if (datacenterBits < 0 || (datacenterBits > 0 && datacenterBits >= nodeBits)) {
                throw new IllegalArgumentException("layout " + name + ": " + datacenterBits + " datacenter bits: fewer than the " + nodeBits + " node bits");
            }
            if (unitMicros < 1) {
                throw new IllegalArgumentException("layout " + name + ": unit of " + unitMicros + " µs");
            }
            this.name = name;
            this.timeBits = timeBits;
            this.nodeBits = nodeBits;
            this.seqBits = seqBits;
            this.unitMicros = unitMicros;
            this.epoch = epoch;
            this.datacenterBits = datacenterBits;
            this.shardBits = shardBits;
        }

        /** This layout with that many of its node bits, from the top, the datacenter (snowflake.datacenter_bits). */
        public Layout withDatacenterBits(int bits) {
            return new Layout(name, timeBits, nodeBits, seqBits, unitMicros, epoch, bits, shardBits);
        }

        /**
         * This layout with k (0 to 16) of its sequence bits, the lowest, made shard bits
         * (snowflake.shard_bits; the shard bits it had go back to the sequence first): at least one sequence
         * bit is left (twitter: k at most 11). The IDs keep their width; a node issues 2^k times fewer a tick.
         */
        public Layout withShardBits(int k) {
            int seq = seqBits + shardBits;
            if (k < 0 || k > Shards.MAX_SHARD_BITS || k >= seq) {
                throw new IllegalArgumentException("layout " + name + ": shard bits " + k + ": 0 to " + Math.min(Shards.MAX_SHARD_BITS, seq - 1)
                        + ", fewer than the " + seq + " sequence bits (at least one is left to the sequence)");
            }
            return new Layout(name, timeBits, nodeBits, seq - k, unitMicros, epoch, datacenterBits, k);
        }

        /** The largest ID of the layout. */
        public long maxId() {
            return (1L << (timeBits + nodeBits + seqBits + shardBits)) - 1;
        }

        /** The largest tick of the time field. */
        public long maxTick() {
            return (1L << timeBits) - 1;
        }

        /** The largest node. */
        public long maxNode() {
            return (1L << nodeBits) - 1;
        }

        /** The largest sequence. */
        public long maxSeq() {
            return (1L << seqBits) - 1;
        }

        /** The largest shard; 0 without shard bits. */
        public long maxShard() {
            return (1L << shardBits) - 1;
        }

        /** Decodes id; IllegalArgumentException when it is not an ID of this layout. */
        public Parts decode(long id) {
            if (id < 0 || id > maxId()) {
                throw new IllegalArgumentException(id + " is not between 0 and " + maxId() + " for layout " + name);
            }
            long shard = id & maxShard();
            long rest = id >>> shardBits;
            long tick = rest >>> (nodeBits + seqBits);
            long node = (rest >>> seqBits) & maxNode();
            long seq = rest & maxSeq();
            int workerBits = nodeBits - datacenterBits;
            Instant time = epoch.plus(Math.multiplyExact(tick, unitMicros), ChronoUnit.MICROS);
            return new Parts(id, name, time, tick, node, seq, datacenterBits > 0 ? node >>> workerBits : -1,
                    datacenterBits > 0 ? node & ((1L << workerBits) - 1) : -1, shardBits > 0 ? shard : -1);
        }

        /**
         * The ID of a tick, a node, a sequence and a shard (0 without shard bits), as the server's Compose;
         * IllegalArgumentException when a field is out of the layout's range.
         */
        public long composeTick(long tick, long node, long sequence, long shard) {
            check("tick", tick, maxTick());
            check("node", node, maxNode());
            check("sequence", sequence, maxSeq());
            check("shard", shard, maxShard());
            return (tick << (nodeBits + seqBits) | node << seqBits | sequence) << shardBits | shard;
        }

        /**
         * The ID issued at time by node with that sequence and shard (0 without shard bits), as
         * {@code GET /v1/compose?time=...&node=...&sequence=...&shard=...} answers: its tick is
         * {@link #tickAt}(time). IllegalArgumentException for a time outside the layout's or a field out of
         * its range.
         */
        public long compose(Instant time, long node, long sequence, long shard) {
            return composeTick(tickAt(time), node, sequence, shard);
        }

        /** {@link #compose(Instant, long, long, long)} of a time in Unix milliseconds. */
        public long compose(long timeMillis, long node, long sequence, long shard) {
            return compose(Instant.ofEpochMilli(timeMillis), node, sequence, shard);
        }

        /**
         * The tick an ID issued at t carries, the tick that holds t: floor((t - epoch) / unit), exact at any
         * time. IllegalArgumentException when t is before the epoch or past the time field's last tick.
         */
        public long tickAt(Instant t) {
            BigInteger q = tickOf(t);
            if (q.signum() < 0 || q.compareTo(BigInteger.valueOf(maxTick())) > 0) {
                throw new IllegalArgumentException("time out of the snowflake layout's range: " + t + " is not within the " + (maxTick() + 1) + " ticks of "
                        + unitMicros + " µs from the epoch " + epoch + " of layout " + name);
            }
            return q.longValueExact();
        }

        /**
         * The smallest and the largest ID of the layout issued at an instant in [from, to), as
         * {@code GET /v1/bounds?from=...&to=...} answers: the first tick's ID of node 0, sequence 0 and shard
         * 0, and the last tick's (the tick of to less a nanosecond) of the largest node, sequence and shard,
         * so that {@code WHERE id BETWEEN first AND last} holds every ID issued in the range (and maybe some
         * of the same first and last ticks just outside it). A range reaching before the epoch or past the
         * last tick is cut to the layout's; IllegalArgumentException when from is not before to, or the range
         * holds none of the layout's ticks.
         */
        public Bounds bounds(Instant from, Instant to) {
            if (!from.isBefore(to)) {
                throw new IllegalArgumentException("the range [" + from + ", " + to + ") is empty: from must be before to");
            }
            BigInteger first = tickOf(from), last = tickOf(to.minusNanos(1)), max = BigInteger.valueOf(maxTick());
            if (last.signum() < 0 || first.compareTo(max) > 0) {
                throw new IllegalArgumentException("time out of the snowflake layout's range: no ID of layout " + name + " has a time in [" + from + ", " + to
                        + "): its " + (maxTick() + 1) + " ticks of " + unitMicros + " µs start at " + epoch);
            }
            long lo = composeTick(first.signum() < 0 ? 0 : first.longValueExact(), 0, 0, 0);
            long hi = composeTick(last.compareTo(max) > 0 ? maxTick() : last.longValueExact(), maxNode(), maxSeq(), maxShard());
            return new Bounds(lo, hi);
        }

        /** {@link #bounds(Instant, Instant)} of times in Unix milliseconds. */
        public Bounds bounds(long fromMillis, long toMillis) {
            return bounds(Instant.ofEpochMilli(fromMillis), Instant.ofEpochMilli(toMillis));
        }

        // tickOf is floor((t - epoch) / unit), exact (BigInteger: a layout
        // of 1 s ticks spans millennia).
        private BigInteger tickOf(Instant t) {
            BigInteger ns = BigInteger.valueOf(t.getEpochSecond()).subtract(BigInteger.valueOf(epoch.getEpochSecond())).multiply(BigInteger.valueOf(1_000_000_000L))
                    .add(BigInteger.valueOf((long) t.getNano() - epoch.getNano()));
            BigInteger[] qr = ns.divideAndRemainder(BigInteger.valueOf(unitMicros).multiply(BigInteger.valueOf(1_000L)));
            return qr[1].signum() < 0 ? qr[0].subtract(BigInteger.ONE) : qr[0]; // the floor, for a positive divisor
        }

        private void check(String what, long v, long max) {
            if (v < 0 || v > max) {
                throw new IllegalArgumentException(what + " " + v + " out of 0.." + max + " for layout " + name);
            }
        }
    }

    /** What an ID holds. Without datacenter bits, datacenter and worker are -1; without shard bits, shard is -1. */
    public static final class Parts {
        public final long id;
        public final String layout;
        public final Instant time;
        public final long tick, node, sequence, datacenter, worker, shard;

        Parts(long id, String layout, Instant time, long tick, long node, long sequence, long datacenter, long worker, long shard) {
            this.id = id;
            this.layout = layout;
            this.time = time;
            this.tick = tick;
            this.node = node;
            this.sequence = sequence;
            this.datacenter = datacenter;
            this.worker = worker;
            this.shard = shard;
        }

        @Override
        public String toString() {
            return "id " + id + " (" + layout + "): time " + time + ", tick " + tick + ", node " + node + ", sequence " + sequence
                    + (datacenter >= 0 ? ", datacenter " + datacenter + ", worker " + worker : "") + (shard >= 0 ? ", shard " + shard : "");
        }
    }

    /** The first and the last ID of a range of time ({@link Layout#bounds(Instant, Instant)}). */
    public static final class Bounds {
        public final long first, last;

        Bounds(long first, long last) {
            this.first = first;
            this.last = last;
        }

        @Override
        public String toString() {
            return "[" + first + ", " + last + "]";
        }
    }

    /** Twitter's and Leaf's: 41 bits of milliseconds, 10 node bits, 12 sequence bits, from 2010-11-04 (twepoch). */
    public static final Layout TWITTER = new Layout("twitter", 41, 10, 12, 1_000, Instant.ofEpochMilli(1288834974657L), 0);
    /** Sonyflake's: 39 bits of 10 ms, 16 node bits, 8 sequence bits, from 2014-09-01. */
    public static final Layout SONYFLAKE = new Layout("sonyflake", 39, 16, 8, 10_000, Instant.parse("2014-09-01T00:00:00Z"), 0);
    /** Baidu UidGenerator's: 28 bits of seconds, 22 node bits, 13 sequence bits, from 2025-01-01. */
    public static final Layout UID_GENERATOR = new Layout("uid-generator", 28, 22, 13, 1_000_000, Instant.parse("2025-01-01T00:00:00Z"), 0);
    /** JavaScript-safe (53 bits): 38 bits of 10 ms, 6 node bits, 9 sequence bits, from 2025-01-01. */
    public static final Layout JAVASCRIPT = new Layout("javascript", 38, 6, 9, 10_000, Instant.parse("2025-01-01T00:00:00Z"), 0);

    /** The preset of that name, as the server's layout setting names it ("leaf" is twitter, "js" javascript). */
    public static Layout preset(String name) {
        switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "":
            case "twitter":
            case "leaf":
                return TWITTER;
            case "sonyflake":
                return SONYFLAKE;
            case "uid-generator":
            case "uidgenerator":
            case "baidu":
                return UID_GENERATOR;
            case "javascript":
            case "js":
            case "js53":
                return JAVASCRIPT;
            default:
                throw new IllegalArgumentException("no preset layout \"" + name + "\" (have javascript, sonyflake, twitter, uid-generator)");
        }
    }
}
