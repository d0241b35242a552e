package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** Decoding as the server decodes (frond decode). */
class SnowflakeTest {
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
}
