package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The JSON reader: exact 64-bit integers, strictness, and a property test on random values. */
class JsonTest {
    @Test
    void answers() {
        Map<String, Object> m = Json.object(Json.parse("{\"tag\":\"order\",\"ids\":[9223372036854775807,-9223372036854775808,1],\"ok\":true,\"x\":null,\"f\":1.5e3,\"big\":18446744073709551616}"), "x");
        assertEquals(List.of(Long.MAX_VALUE, Long.MIN_VALUE, 1L), m.get("ids"));
        assertEquals(Boolean.TRUE, m.get("ok"));
        assertEquals(1500.0, m.get("f"));
        assertEquals(new BigInteger("18446744073709551616"), m.get("big"));
        assertEquals("a\"b\\c/\n\u00e9\u4e2d", Json.parse("\"a\\\"b\\\\c\\/\\n\\u00e9中\""));
    }

    @Test
    void strict() {
        for (String bad : new String[] {"", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "\"\u0001\"", "tru", "{} x", "\"\\x\"", "[" .repeat(100) + "]".repeat(100), "{\"a\" 1}", "1e"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
    }

    // Random values written as JSON read back equal: longs at their bounds,
    // strings with every escape.
    @Test
    void roundTrip() {
        Random r = new Random(44);
        for (int i = 0; i < 2000; i++) {
            Object v = random(r, 0);
            assertEquals(v, Json.parse(write(v)));
        }
    }

    private static Object random(Random r, int depth) {
        switch (depth > 3 ? r.nextInt(4) : r.nextInt(6)) {
            case 0:
                long[] edges = {0, 1, -1, Long.MAX_VALUE, Long.MIN_VALUE, 1L << 53, (1L << 53) + 1};
                return r.nextBoolean() ? edges[r.nextInt(edges.length)] : r.nextLong();
            case 1: {
                StringBuilder b = new StringBuilder();
                for (int k = r.nextInt(8); k > 0; k--) {
                    b.append((char) (r.nextBoolean() ? r.nextInt(0x80) : r.nextInt(0xd7ff)));
                }
                return b.toString();
            }
            case 2:
                return r.nextBoolean();
            case 3:
                return null;
            case 4: {
                List<Object> l = new ArrayList<>();
                for (int k = r.nextInt(4); k > 0; k--) {
                    l.add(random(r, depth + 1));
                }
                return l;
            }
            default: {
                Map<String, Object> m = new LinkedHashMap<>();
                for (int k = r.nextInt(4); k > 0; k--) {
                    m.put("k" + r.nextInt(100), random(r, depth + 1));
                }
                return m;
            }
        }
    }

    private static String write(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : ((String) v).toCharArray()) {
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20 || c > 0x7e) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            return b.append('"').toString();
        }
        if (v instanceof List) {
            List<String> parts = new ArrayList<>();
            for (Object o : (List<?>) v) {
                parts.add(write(o));
            }
            return "[" + String.join(",", parts) + "]";
        }
        if (v instanceof Map) {
            List<String> parts = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                parts.add(write(e.getKey()) + ":" + write(e.getValue()));
            }
            return "{" + String.join(",", parts) + "}";
        }
        return String.valueOf(v);
    }
}
