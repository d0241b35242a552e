package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Decoding, composing and bounds as the server does them (frond decode, /v1/compose, /v1/bounds). */
class SnowflakeTest {
    @TempDir
    Path dir;

    @Test
    void decodesAsTheServer() {
        // frond decode 2124376161118060544: 2026-11-22T05:35:20.468Z, node 0, sequence 0.
        Snowflake.Parts p = Snowflake.TWITTER.decode(2124376161118060544L);
        assertEquals(Instant.parse("2026-11-22T05:35:20.468Z"), p.time);
        assertEquals(506490745811L, p.tick);
        assertEquals(0, p.node);
        // node 0b10110_00011 with 5 datacenter bits: datacenter 22, worker 3.
        long id = (506490745811L << 22) | ((22L << 5 | 3) << 12) | 77;
        Snowflake.Parts q = Snowflake.preset("leaf").withDatacenterBits(5).decode(id);
        assertEquals(22, q.datacenter);
        assertEquals(3, q.worker);
        assertEquals(22 << 5 | 3, q.node);
        assertEquals(77, q.sequence);
        assertEquals(-1, p.datacenter);
        assertThrows(IllegalArgumentException.class, () -> Snowflake.JAVASCRIPT.decode(1L << 53));
        assertThrows(IllegalArgumentException.class, () -> Snowflake.TWITTER.withDatacenterBits(10));
        assertEquals(Snowflake.UID_GENERATOR, Snowflake.preset("baidu"));
    }

    @Test
    void errorCodes() {
        assertEquals(ErrorCode.TAG_NOT_FOUND, ErrorCode.of("tag_not_found"));
        assertEquals(ErrorCode.UNKNOWN, ErrorCode.of("something_new"));
        assertEquals(true, ErrorCode.STORE_UNAVAILABLE.retryable());
        assertEquals(false, ErrorCode.FORM_NOT_CARRIED.retryable());
    }

    // Shard bits, offline: the lowest bits, taken from the sequence.
    @Test
    void shardBitsOffline() {
        Snowflake.Layout l = Snowflake.TWITTER.withShardBits(4);
        assertEquals(8, l.seqBits);
        assertEquals(4, l.shardBits);
        assertEquals(Snowflake.TWITTER.maxId(), l.maxId(), "the IDs keep their width");
        assertEquals(12, l.withShardBits(0).seqBits);
        assertEquals(1, l.withShardBits(11).seqBits);
        assertThrows(IllegalArgumentException.class, () -> Snowflake.TWITTER.withShardBits(12)); // no sequence bit left
        assertThrows(IllegalArgumentException.class, () -> Snowflake.TWITTER.withShardBits(-1));
        assertThrows(IllegalArgumentException.class, () -> new Snowflake.Layout("wide", 30, 10, 20, 1000, Instant.EPOCH, 0).withShardBits(17));
        assertEquals(16, new Snowflake.Layout("wide", 30, 10, 20, 1000, Instant.EPOCH, 0).withShardBits(16).shardBits);

        // | time | node | sequence (8) | shard (4) |: docs/kinds.md's frond decode 2126828484817866765 --shard-bits 4.
        long id = (507075425343L << 18 | 5L << 8 | 0) << 4 | 13;
        assertEquals(2126828484817866765L, l.composeTick(507075425343L, 5, 0, 13));
        Snowflake.Parts p = l.decode(id);
        assertEquals(13, p.shard);
        assertEquals(5, p.node);
        assertEquals(0, p.sequence);
        assertEquals(507075425343L, p.tick);
        assertEquals(id, l.compose(p.time, 5, 0, 13));
        assertEquals(Shards.shardOf("user-42", 4), p.shard);
        assertEquals(-1, Snowflake.TWITTER.decode(id).shard);
        assertTrue(Snowflake.TWITTER.decode(id).toString().indexOf("shard") < 0);
        assertTrue(p.toString().endsWith("shard 13"), p.toString());

        // With datacenter bits too: | time | datacenter | worker | sequence | shard |.
        Snowflake.Layout dc = l.withDatacenterBits(5);
        assertEquals(4, dc.shardBits);
        Snowflake.Parts q = dc.decode(dc.composeTick(7, 22 << 5 | 3, 255, 15));
        assertEquals(22, q.datacenter);
        assertEquals(3, q.worker);
        assertEquals(255, q.sequence);
        assertEquals(15, q.shard);

        assertThrows(IllegalArgumentException.class, () -> l.composeTick(0, 0, 256, 0));
        assertThrows(IllegalArgumentException.class, () -> l.composeTick(0, 0, 0, 16));
        assertThrows(IllegalArgumentException.class, () -> l.composeTick(0, 1024, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> Snowflake.TWITTER.composeTick(0, 0, 0, 1)); // no shard bits

        // Bounds span every node, sequence and shard of the ticks.
        Instant from = Instant.parse("2026-11-29T12:00:00.0005Z"), to = Instant.parse("2026-11-29T12:00:00.003Z");
        Snowflake.Bounds b = l.bounds(from, to);
        long t0 = l.tickAt(from);
        assertEquals(l.composeTick(t0, 0, 0, 0), b.first);
        assertEquals(l.composeTick(t0 + 2, 1023, 255, 15), b.last, "the tick of to less a nanosecond: 12:00:00.002");
        assertEquals(b.last + 1, l.composeTick(t0 + 3, 0, 0, 0));
        assertEquals(Snowflake.TWITTER.bounds(from, to).first, b.first, "the same bits, another cut");
        assertEquals(Snowflake.TWITTER.bounds(from, to).last, b.last);
        assertEquals(b.first, l.bounds(from.toEpochMilli(), to.toEpochMilli()).first);
        // Cut to the layout's range; empty and outside ranges are errors.
        assertEquals(0, l.bounds(Instant.EPOCH, Instant.parse("2011-01-01T00:00:00Z")).first);
        assertEquals(l.maxId(), l.bounds(Instant.parse("2080-01-01T00:00:00Z"), Instant.parse("2200-01-01T00:00:00Z")).last);
        assertThrows(IllegalArgumentException.class, () -> l.bounds(from, from));
        assertThrows(IllegalArgumentException.class, () -> l.bounds(to, from));
        assertThrows(IllegalArgumentException.class, () -> l.bounds(Instant.EPOCH, Snowflake.TWITTER.epoch));
        assertThrows(IllegalArgumentException.class, () -> l.bounds(Instant.parse("2100-01-01T00:00:00Z"), Instant.parse("2101-01-01T00:00:00Z")));
        assertThrows(IllegalArgumentException.class, () -> l.tickAt(Snowflake.TWITTER.epoch.minusNanos(1)));
        assertEquals(0, l.tickAt(Snowflake.TWITTER.epoch));
        assertEquals(l.maxTick(), l.tickAt(Snowflake.TWITTER.epoch.plusMillis(l.maxTick()).plusNanos(999_999)));
        assertThrows(IllegalArgumentException.class, () -> l.tickAt(Snowflake.TWITTER.epoch.plusMillis(l.maxTick() + 1)));
        // A tick of 10 ms before the epoch floors (the tick of epoch - 1 ns is -1, not 0).
        assertEquals(0, Snowflake.SONYFLAKE.bounds(Snowflake.SONYFLAKE.epoch.minusNanos(1), Snowflake.SONYFLAKE.epoch.plusNanos(1)).first);
        assertThrows(IllegalArgumentException.class, () -> Snowflake.SONYFLAKE.bounds(Snowflake.SONYFLAKE.epoch.minusSeconds(1), Snowflake.SONYFLAKE.epoch));
    }

    // compose and bounds against the server's /v1/compose and /v1/bounds:
    // the twitter layout, sonyflake (by name) and a layout with 4 shard bits.
    @Test
    void composeAndBoundsAsTheServer() throws Exception {
        String[] times = {"2026-11-29T12:00:00.123456789Z", "2026-11-29", "1764417600123", "2010-11-04T01:42:54.657Z", "2031-02-03T04:05:06.999999999+02:00",
            "2080-07-10T17:30:30.208Z"};
        String[][] ranges = {{"2026-11-29", "2026-11-30"}, {"2026-11-29T12:00:00.0000005Z", "2026-11-29T12:00:00.001000001Z"}, {"1764417600123", "1764417600124"},
            {"2000-01-01", "2010-11-04T12:00:00Z"}, {"2080-07-01", "2090-01-01"}, {"2026-11-29T00:00:00.009999999Z", "2026-11-29T00:00:00.010000001Z"}};
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of()); FrondClient c = FrondClient.builder().servers(s.url).build()) {
            for (String t : times) {
                for (long[] f : new long[][] {{0, 0}, {5, 7}, {1023, 4095}}) {
                    Map<String, Object> m = c.call("/v1/compose?time=" + q(t) + "&node=" + f[0] + "&sequence=" + f[1], false);
                    assertEquals(Json.getLong(m, "id"), Snowflake.TWITTER.compose(time(t), f[0], f[1], 0), "compose " + t + " " + f[0] + " " + f[1]);
                }
                // Before sonyflake's epoch (2014) the server and the layout both refuse.
                long id;
                try {
                    id = Json.getLong(c.call("/v1/compose?time=" + q(t) + "&layout=sonyflake&node=3&sequence=9", false), "id");
                } catch (FrondException e) {
                    assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
                    assertTrue(t.startsWith("2010"), t + ": " + e);
                    assertThrows(IllegalArgumentException.class, () -> Snowflake.SONYFLAKE.compose(time(t), 3, 9, 0));
                    continue;
                }
                assertEquals(id, Snowflake.SONYFLAKE.compose(time(t), 3, 9, 0), "sonyflake compose " + t);
            }
            for (String layout : new String[] {"twitter", "sonyflake"}) {
                Snowflake.Layout l = Snowflake.preset(layout);
                for (String[] r : ranges) {
                    sameBounds(c, "&layout=" + layout, l, r[0], r[1]);
                }
            }
            assertEquals(1, sameBounds(c, "", Snowflake.TWITTER, "2000-01-01", "2001-01-01"), "refused");
            assertEquals(1, sameBounds(c, "", Snowflake.TWITTER, "2026-11-29", "2026-11-29"), "refused");
            assertEquals(1, sameBounds(c, "&layout=sonyflake", Snowflake.SONYFLAKE, "2000-01-01", "2010-11-04T12:00:00Z"), "refused");
        }
        try (FrondServer s = FrondServer.start(dir.resolve("b"), Map.of("FROND_SNOWFLAKE__SHARD_BITS", "4", "FROND_NODE", "9"));
                FrondClient c = FrondClient.builder().servers(s.url).build()) {
            Snowflake.Layout l = Snowflake.TWITTER.withShardBits(4);
            for (String t : times) {
                Map<String, Object> m = c.call("/v1/compose?time=" + q(t) + "&node=5&sequence=255&shard_key=user-42", false);
                assertEquals(Json.getLong(m, "id"), l.compose(time(t), 5, 255, Shards.shardOf("user-42", 4)), "compose " + t);
                assertEquals(13, Json.getLong(m, "shard"));
                m = c.call("/v1/compose?time=" + q(t) + "&node=1023&sequence=3&shard=15", false);
                assertEquals(Json.getLong(m, "id"), l.compose(time(t), 1023, 3, 15), "compose " + t);
            }
            for (String[] r : ranges) {
                sameBounds(c, "", l, r[0], r[1]);
            }
            // IDs the server issues for a key decode offline to the key's shard.
            Map<String, Object> m = c.call("/v1/snowflake?shard_key=user-42&n=3", false);
            for (Object id : Json.list(m, "ids")) {
                Snowflake.Parts p = l.decode((Long) id);
                assertEquals(13, p.shard);
                assertEquals(9, p.node);
                assertTrue(Math.abs(p.time.toEpochMilli() - System.currentTimeMillis()) < 60_000, p.toString());
            }
        }
    }

    // sameBounds checks that the layout's bounds of [from, to) are the
    // server's, or that both refuse the range (then 1).
    private static int sameBounds(FrondClient c, String layout, Snowflake.Layout l, String from, String to) {
        Map<String, Object> m;
        try {
            m = c.call("/v1/bounds?from=" + q(from) + "&to=" + q(to) + layout, false);
        } catch (FrondException e) {
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertThrows(IllegalArgumentException.class, () -> l.bounds(time(from), time(to)), l.name + " " + from + " " + to + ": the server refused it: " + e);
            return 1;
        }
        Snowflake.Bounds b = l.bounds(time(from), time(to));
        assertEquals(Json.getLong(m, "first"), b.first, l.name + " bounds " + from + " " + to);
        assertEquals(Json.getLong(m, "last"), b.last, l.name + " bounds " + from + " " + to);
        return 0;
    }

    private static String q(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    // A time as the server reads it: Unix milliseconds, a date (midnight UTC), or RFC 3339.
    private static Instant time(String s) {
        if (s.matches("-?[0-9]+")) {
            return Instant.ofEpochMilli(Long.parseLong(s));
        }
        if (s.length() == 10) {
            return LocalDate.parse(s).atStartOfDay(ZoneOffset.UTC).toInstant();
        }
        return java.time.OffsetDateTime.parse(s).toInstant();
    }
}
