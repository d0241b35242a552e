package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tags with shard bits (gene IDs): the shard of a key, nextShard and nextForKey against real frond servers. */
class ShardTest {
    @TempDir
    Path dir;

    // docs/kinds.md's test vectors (frond's TestKeyHash_Vectors): key, hash, K=1, K=4, K=10.
    private static final Object[][] VECTORS = {
        {"", 0xefd01f60ba992926L, 0, 6, 294},
        {"a", 0x82a2a958a9bece5bL, 1, 11, 603},
        {"user-42", 0xa39532c7ab051e8dL, 1, 13, 653},
        {"tenant-7", 0xc9050cf8782d9e66L, 0, 6, 614},
        {"shop:10086", 0x176fc3a8d6e8bcebL, 1, 11, 235},
        {"\u7528\u6237-1", 0x3d39baa19bd993dfL, 1, 15, 991}, // 用户-1
    };

    @Test
    void keyHashVectors() {
        for (Object[] v : VECTORS) {
            String key = (String) v[0];
            assertEquals((long) v[1], Shards.keyHash(key), "keyHash(\"" + key + "\")");
            assertEquals((int) v[2], Shards.shardOf(key, 1), "shardOf(\"" + key + "\", 1)");
            assertEquals((int) v[3], Shards.shardOf(key, 4), "shardOf(\"" + key + "\", 4)");
            assertEquals((int) v[4], Shards.shardOf(key, 10), "shardOf(\"" + key + "\", 10)");
            assertEquals(0, Shards.shardOf(key, 0));
            assertEquals(Shards.keyHash(key) & 0xffff, Shards.shardOf(key, 16));
            assertEquals(Shards.shardOf(key, 1), Shards.shardOf(key, 4) & 1, "a key's shards nest: the low bit of K=4 is K=1");
        }
        assertThrows(IllegalArgumentException.class, () -> Shards.shardOf("a", 17));
        assertThrows(IllegalArgumentException.class, () -> Shards.shardOf("a", -1));
    }

    // The hash walks the key's UTF-8 without an array: the same as over
    // key.getBytes(UTF_8), for every kind of character (1 to 4 bytes, and
    // a lone surrogate, which getBytes and the requests write as '?').
    @Test
    void keyHashIsOverUtf8() {
        Random r = new Random(70);
        char[] pool = {'a', 'Z', '0', '-', '\u00e9', '\u07ff', '\u0800', '\u7528', '\uffff', '\ud83d', '\ude00', '\ud800', '\udfff'};
        for (int i = 0; i < 20_000; i++) {
            char[] cs = new char[r.nextInt(12)];
            for (int k = 0; k < cs.length; k++) {
                cs[k] = pool[r.nextInt(pool.length)];
            }
            String key = new String(cs);
            assertEquals(reference(key.getBytes(StandardCharsets.UTF_8)), Shards.keyHash(key), () -> "key " + codes(key));
        }
        assertEquals(reference("\ud83d\ude00".getBytes(StandardCharsets.UTF_8)), Shards.keyHash("\ud83d\ude00")); // 😀, 4 bytes
    }

    private static long reference(byte[] b) {
        long h = 0xcbf29ce484222325L;
        for (byte x : b) {
            h ^= x & 0xff;
            h *= 1099511628211L;
        }
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    private static String codes(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            b.append(String.format("\\u%04x", (int) c));
        }
        return b.toString();
    }

    // Two clients on two servers (one store) take 2,000 IDs of a tag with 4
    // shard bits, with random shards and keys, then 20,000 from 4 threads:
    // each ID is on the shard asked for (the key's: Shards.shardOf, which
    // the server gives the key too), and no counter repeats.
    @Test
    void geneIdsOfTwoClients() throws Exception {
        String store = "sqlite://" + dir.resolve("shard.db");
        try (FrondServer a = FrondServer.start(dir.resolve("a"), Map.of(), "--store", store);
                FrondServer b = FrondServer.start(dir.resolve("b"), Map.of("FROND_NODE", "1"), "--store", store);
                FrondClient c1 = FrondClient.builder().servers(a.url, b.url).lease(10, 1_000, Duration.ofSeconds(10)).build();
                FrondClient c2 = FrondClient.builder().servers(b.url, a.url).lease(10, 1_000, Duration.ofSeconds(10)).build()) {
            c1.createTag("orders", 1000, "", "shard:4");
            Random r = new Random(42);
            Set<Long> counters = new HashSet<>();
            Map<FrondClient, Long> last = new HashMap<>();
            for (int i = 0; i < 2_000; i++) {
                FrondClient c = r.nextBoolean() ? c1 : c2;
                long id, want;
                if (r.nextBoolean()) {
                    want = r.nextInt(16);
                    id = c.nextShard("orders", want);
                } else {
                    String key = "user-" + r.nextInt(1_000_000);
                    want = Shards.shardOf(key, 4);
                    id = c.nextForKey("orders", key);
                }
                assertEquals(want, id % 16, "ID " + id);
                assertTrue(counters.add(id >> 4), "counter " + (id >> 4) + " (ID " + id + ") handed out twice");
                assertTrue(id >> 4 > last.getOrDefault(c, 0L), "a client's counters increase");
                last.put(c, id >> 4);
            }
            assertEquals(2_000, counters.size());
            // Then 4 threads, two on each client, 5,000 IDs each.
            long[][] got = new long[4][5_000];
            List<Thread> threads = new ArrayList<>();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            for (int k = 0; k < 4; k++) {
                long[] mine = got[k];
                FrondClient c = k % 2 == 0 ? c1 : c2;
                Thread th = new Thread(() -> {
                    try {
                        for (int i = 0; i < mine.length; i++) {
                            mine[i] = i % 2 == 0 ? c.nextShard("orders", i % 16) : c.nextForKey("orders", "k" + i);
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                });
                th.start();
                threads.add(th);
            }
            for (Thread th : threads) {
                th.join();
            }
            assertTrue(errors.isEmpty(), "errors: " + errors);
            for (long[] mine : got) {
                for (int i = 0; i < mine.length; i++) {
                    assertEquals(i % 2 == 0 ? i % 16 : Shards.shardOf("k" + i, 4), mine[i] % 16);
                    assertTrue(counters.add(mine[i] >> 4), "counter " + (mine[i] >> 4) + " handed out twice");
                }
            }
            FrondClient.Stats st = c1.stats();
            assertTrue(st.countersLeaseSize.containsKey("orders") && !st.leaseSize.containsKey("orders"), st.toString());
            assertTrue(st.calls < 200, "IDs from leases, not a call each: " + st);
            // The server gives each key the shard this client does (the UTF-8 key too).
            for (Object[] v : VECTORS) {
                String key = (String) v[0];
                if (key.isEmpty()) {
                    continue;
                }
                Map<String, Object> m = c1.call("/v1/segment/orders?shard_key=" + URLEncoder.encode(key, StandardCharsets.UTF_8), false);
                assertEquals((long) (int) v[3], Json.getLong(m, "shard"), key);
                assertEquals(Json.getLong(m, "shard"), Json.getLong(m, "id") % 16, key);
                assertTrue(counters.add(Json.getLong(m, "id") >> 4), "the server's counter meets a leased one");
            }
        }
    }

    // Refusals: a shard outside 0..2^K-1, an empty key, a tag without
    // shard bits (once a lease said so, without a call); a counter past
    // 2^(63-K)-1; nextId of a tag with shard bits never hands out a bare
    // counter.
    @Test
    void refusals() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of());
                FrondClient c = FrondClient.builder().servers(s.url).lease(10, 1_000, Duration.ofSeconds(10)).build()) {
            c.createTag("orders", 100, "", "shard:4");
            c.createTag("plain", 100, "");
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextShard("orders", 16)).code());
            long five = c.nextShard("orders", 5);
            assertEquals(5, five % 16);
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextShard("orders", 16)).code()); // K known: no counter taken
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextShard("orders", -1)).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextShard("orders", 1L << 16)).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextForKey("orders", "")).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextForKey("orders", null)).code());
            assertEquals((five >> 4) + 1, c.nextShard("orders", 15) >> 4, "a refused shard took no counter");

            FrondException e = assertThrows(FrondException.class, () -> c.nextShard("plain", 1));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertTrue(e.getMessage().contains("no shard bits"), e.getMessage());
            long calls = c.stats().calls;
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextForKey("plain", "user-42")).code());
            assertEquals(calls, c.stats().calls, "a tag known to have no shard bits is refused without a call");
            assertEquals(ErrorCode.TAG_NOT_FOUND, assertThrows(FrondException.class, () -> c.nextShard("nope", 1)).code());

            // nextId: the plain lease is refused (form_not_carried), and the
            // call without a shard too (invalid_argument): an exception, never a counter.
            for (int i = 0; i < 3; i++) {
                FrondException x = assertThrows(FrondException.class, () -> c.nextId("orders"));
                assertEquals(ErrorCode.INVALID_ARGUMENT, x.code());
                assertTrue(x.getMessage().contains("nextShard"), x.getMessage());
            }
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextIds("orders", 3)).code());
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.tag("orders").next()).code());
            assertEquals(ErrorCode.FORM_NOT_CARRIED, assertThrows(FrondException.class, () -> c.nextRanges("orders", 3)).code());
            assertEquals(3, c.nextShard("orders", 3) % 16, "nextShard still serves the tag");

            // A counter that does not fit below 16 shard bits: tag_exhausted.
            long top = Long.MAX_VALUE >> 16;
            admin(s, "{\"name\":\"full\",\"step\":10,\"max_id\":" + (top - 2) + ",\"mapping\":\"shard:16\"}");
            int served = 0;
            FrondException full = null;
            try {
                for (; served < 100; served++) {
                    long id = c.nextShard("full", 65_535);
                    assertTrue(id > 0 && id % 65_536 == 65_535 && id >> 16 <= top, "ID " + id);
                }
            } catch (FrondException x) {
                full = x;
            }
            assertTrue(full != null && full.code() == ErrorCode.TAG_EXHAUSTED, "after " + served + " IDs: " + full);
            assertTrue(served >= 1 && served <= 3, "served " + served + " IDs below the top");
        }
    }

    // A sequence tag with shard bits cannot be leased (not_leasable): its
    // IDs are asked for call by call, each with its shard.
    @Test
    void sequenceTagWithShardBits() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of()); FrondClient c = FrondClient.builder().servers(s.url).build()) {
            c.createTag("tickets", 1, "sequence", "shard:2");
            long prev = 0;
            for (int i = 0; i < 20; i++) {
                long id = i % 2 == 0 ? c.nextShard("tickets", i % 4) : c.nextForKey("tickets", "k" + i);
                assertEquals(i % 2 == 0 ? i % 4 : Shards.shardOf("k" + i, 2), id % 4);
                assertEquals((prev >> 2) + 1, id >> 2, "a sequence tag's counters follow one another");
                prev = id;
            }
            assertEquals(ErrorCode.INVALID_ARGUMENT, assertThrows(FrondException.class, () -> c.nextShard("tickets", 4)).code());
        }
    }

    // The docs' snippets, run: routing (DocsExample.route: a user and the
    // user's orders land on one of two databases) and genes.
    @Test
    void docsSnippets() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of()); FrondClient ids = FrondClient.builder().servers(s.url).build()) {
            ids.createTag("users", 1000, "", "shard:1");
            ids.createTag("orders", 1000, "", "shard:1");
            String[] databases = {"jdbc:postgresql://db-0/app", "jdbc:postgresql://db-1/app"};
            Object[] got = DocsExample.route(ids, databases);
            long userId = (Long) got[0], orderId = (Long) got[1];
            assertEquals(Shards.shardOf("user-42", 1), userId % 2);
            assertEquals(userId % 2, orderId % 2);
            assertEquals(databases[1], got[2]); // user-42's shard is 1 (docs/kinds.md's vectors)
            assertArrayEquals(new long[] {1, 1}, new long[] {userId >> 1, orderId >> 1});
        }
        try (FrondServer s = FrondServer.start(dir.resolve("b"), Map.of()); FrondClient ids = FrondClient.builder().servers(s.url).build()) {
            ids.createTag("orders", 1000, "", "shard:4");
            Object[] g = DocsExample.genes(ids);
            assertEquals(13, (Long) g[0] % 16);
            assertEquals(13L, g[1]);
            assertEquals(13, (Long) g[2] % 16);
            Snowflake.Parts p = (Snowflake.Parts) g[4];
            assertEquals(g[3], p.id);
            assertEquals(5, p.node);
            assertEquals(0, p.sequence);
            assertEquals(13, p.shard);
            assertEquals(Instant.parse("2026-11-29T12:00:00Z"), p.time);
            Snowflake.Bounds day = (Snowflake.Bounds) g[5];
            assertEquals(2126828484817846272L, day.first); // GET /v1/bounds?from=2026-11-29&to=2026-11-30
            assertEquals(2127190872683446271L, day.last);
        }
    }

    private static void admin(FrondServer s, String body) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(s.url + "/v1/tags"))
                .POST(HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json").build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(201, r.statusCode(), r.body());
    }
}
