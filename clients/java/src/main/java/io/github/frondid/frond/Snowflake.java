package io.github.frondid.frond;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Locale;

/**
 * Snowflake layouts and the decoding of their IDs, as frond's server
 * decodes them (snowflake/layout.go; GET /v1/decode/{id}): the time, the
 * node (with datacenter bits: the datacenter and the worker within it) and
 * the sequence.
 */
public final class Snowflake {
    private Snowflake() {
    }

    /** A bit layout: a time field of {@code unitMicros}, node bits, sequence bits, from an epoch. */
    public static final class Layout {
        public final String name;
        public final int timeBits, nodeBits, seqBits, datacenterBits;
        public final long unitMicros;
        public final Instant epoch;

        public Layout(String name, int timeBits, int nodeBits, int seqBits, long unitMicros, Instant epoch, int datacenterBits) {
            if (timeBits < 1 || seqBits < 1 || timeBits + nodeBits + seqBits > 63 || nodeBits < 0) {
                throw new IllegalArgumentException("layout " + name + ": time " + timeBits + " + node " + nodeBits + " + sequence " + seqBits + " bits: at most 63, each at least 1");
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
        }

        /** This layout with that many of its node bits, from the top, the datacenter (snowflake.datacenter_bits). */
        public Layout withDatacenterBits(int bits) {
            return new Layout(name, timeBits, nodeBits, seqBits, unitMicros, epoch, bits);
        }

        /** The largest ID of the layout. */
        public long maxId() {
            return (1L << (timeBits + nodeBits + seqBits)) - 1;
        }

        /** Decodes id; IllegalArgumentException when it is not an ID of this layout. */
        public Parts decode(long id) {
            if (id < 0 || id > maxId()) {
                throw new IllegalArgumentException(id + " is not between 0 and " + maxId() + " for layout " + name);
            }
            long tick = id >>> (nodeBits + seqBits);
            long node = (id >>> seqBits) & ((1L << nodeBits) - 1);
            long seq = id & ((1L << seqBits) - 1);
            int workerBits = nodeBits - datacenterBits;
            Instant time = epoch.plus(Math.multiplyExact(tick, unitMicros), ChronoUnit.MICROS);
            return new Parts(id, name, time, tick, node, seq, datacenterBits > 0 ? node >>> workerBits : -1,
                    datacenterBits > 0 ? node & ((1L << workerBits) - 1) : -1);
        }
    }

    /** What an ID holds. Without datacenter bits, datacenter and worker are -1. */
    public static final class Parts {
        public final long id;
        public final String layout;
        public final Instant time;
        public final long tick, node, sequence, datacenter, worker;

        Parts(long id, String layout, Instant time, long tick, long node, long sequence, long datacenter, long worker) {
            this.id = id;
            this.layout = layout;
            this.time = time;
            this.tick = tick;
            this.node = node;
            this.sequence = sequence;
            this.datacenter = datacenter;
            this.worker = worker;
        }

        @Override
        public String toString() {
            return "id " + id + " (" + layout + "): time " + time + ", tick " + tick + ", node " + node + ", sequence " + sequence
                    + (datacenter >= 0 ? ", datacenter " + datacenter + ", worker " + worker : "");
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
