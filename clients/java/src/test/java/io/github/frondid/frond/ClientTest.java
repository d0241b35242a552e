package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client against real frond servers (FROND_TEST_BIN). */
class ClientTest {
    @TempDir
    Path dir;

    private static FrondClient client(String... servers) {
        return FrondClient.builder().servers(servers).build();
    }

    // Leasing: IDs increase strictly and come from memory; the lease grows
    // with demand.
    @Test
    void leasesAndGrows() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of());
                FrondClient c = FrondClient.builder().servers(s.url).lease(10, 100_000, Duration.ofSeconds(10)).build()) {
            c.createTag("order", 10, "");
            long prev = 0;
            FrondClient.Tag t = c.tag("order");
            for (int i = 0; i < 20_000; i++) {
                long id = i % 2 == 0 ? c.nextId("order") : t.next();
                assertTrue(id > prev, "ID " + id + " after " + prev);
                prev = id;
            }
            FrondClient.Stats st = c.stats();
            assertTrue(st.leaseSize.get("order") > 10, "the lease did not grow: " + st);
            assertTrue(st.calls < 20_000 / 10, "a call per lease of 10 at most, and fewer as it grows: " + st);
            long[] batch = c.nextIds("order", 5);
            for (long id : batch) {
                assertTrue(id > prev);
                prev = id;
            }
        }
    }

    // Issue 60: with leases capped, a fail-over to a server whose buffered
    // segment lies far below the IDs handed out (its step grew) is passed,
    // not answered with "ten leases in a row lay below..." and the advice to
    // give up the order: one store never interleaves.
    @Test
    void serverWithBufferFarBehindIsPassed() throws Exception {
        String store = "sqlite://" + dir.resolve("far.db");
        Map<String, String> env = Map.of("FROND_SEGMENT__FIXED_STEP", "true");
        try (FrondServer a = FrondServer.start(dir.resolve("fa"), env, "--store", store);
                FrondServer b = FrondServer.start(dir.resolve("fb"), Map.of("FROND_SEGMENT__FIXED_STEP", "true", "FROND_NODE", "1"), "--store", store);
                FrondClient c = FrondClient.builder().servers(a.url, b.url).timeout(Duration.ofSeconds(2))
                        .backoff(Duration.ofMillis(20), Duration.ofMillis(200)).lease(100, 1_000, Duration.ofMillis(200)).build()) {
            c.createTag("far", 50_000, "");
            // b buffers the tag's first segment, [1, 50001).
            java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create(b.url + "/v1/segment/far")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            long prev = 0;
            for (int i = 0; i < 3_000; i++) {
                long id = c.nextId("far");
                assertTrue(id > prev, "ID " + id + " after " + prev);
                prev = id;
            }
            assertTrue(prev > 50_001, "the client's IDs " + prev + " are not above b's buffer");
            a.kill();
            for (int i = 0; i < 3_000; i++) {
                long id = c.nextId("far");
                assertTrue(id > prev, "ID " + id + " after " + prev);
                prev = id;
            }
        }
    }

    // kill -9 of one of two servers (one SQLite store) while 8 threads take
    // IDs: no duplicate, no error; the longest wait is reported.
    @Test
    void failsOverWithoutDuplicates() throws Exception {
        String store = "sqlite://" + dir.resolve("shared.db");
        try (FrondServer a = FrondServer.start(dir.resolve("a"), Map.of(), "--store", store);
                FrondServer b = FrondServer.start(dir.resolve("b"), Map.of("FROND_NODE", "1"), "--store", store);
                FrondClient c = FrondClient.builder().servers(a.url, b.url).timeout(Duration.ofSeconds(1))
                        .backoff(Duration.ofMillis(50), Duration.ofSeconds(1)).lease(100, 10_000, Duration.ofMillis(200)).build()) {
            c.createTag("pay", 100, "");
            ConcurrentLinkedQueue<long[]> got = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicLong longest = new AtomicLong();
            CountDownLatch started = new CountDownLatch(8);
            List<Thread> threads = new ArrayList<>();
            for (int k = 0; k < 8; k++) {
                Thread th = new Thread(() -> {
                    long[] mine = new long[2_000_000];
                    int n = 0;
                    started.countDown();
                    try {
                        while (!stop.get() && n < mine.length) {
                            long t0 = System.nanoTime();
                            mine[n++] = c.nextId("pay");
                            longest.accumulateAndGet(System.nanoTime() - t0, Math::max);
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                    got.add(java.util.Arrays.copyOf(mine, n));
                });
                th.start();
                threads.add(th);
            }
            started.await();
            Thread.sleep(300);
            a.kill(); // the preferred server
            Thread.sleep(700);
            stop.set(true);
            for (Thread th : threads) {
                th.join();
            }
            assertTrue(errors.isEmpty(), "errors: " + errors);
            Set<Long> seen = new HashSet<>();
            long total = 0;
            for (long[] ids : got) {
                for (long id : ids) {
                    assertTrue(seen.add(id), "ID " + id + " handed out twice");
                    total++;
                }
            }
            assertTrue(total > 1000, "only " + total + " IDs");
            System.out.printf("fail-over: %d IDs by 8 threads, no duplicate; the longest wait %.1f ms; %s%n", total, longest.get() / 1e6, c.stats());
        }
    }

    // A server that answers slowly (past the attempt's deadline): the
    // client goes on to the next and stays there.
    @Test
    void slowServerIsPassedBy() throws Exception {
        HttpServer slow = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        slow.createContext("/", ex -> {
            try {
                Thread.sleep(3_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ex.sendResponseHeaders(500, -1);
            ex.close();
        });
        slow.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        slow.start();
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of());
                FrondClient c = FrondClient.builder().servers("127.0.0.1:" + slow.getAddress().getPort(), s.url)
                        .timeout(Duration.ofMillis(300)).build()) {
            long t0 = System.nanoTime();
            long[] ids = c.snowflake(3);
            assertEquals(3, ids.length);
            assertTrue(c.stats().failovers >= 1, "no fail-over: " + c.stats());
            long again = System.nanoTime();
            c.snowflake(1); // the slow server rests: straight to the other
            assertTrue(System.nanoTime() - again < TimeUnit.MILLISECONDS.toNanos(250), "the slow server was tried again at once");
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3));
        } finally {
            slow.stop(0);
        }
    }

    // A lease in hand keeps serving while every server is down; once it is
    // used up, a clear, retryable exception.
    @Test
    void leaseServesWhileServersAreDown() throws Exception {
        FrondServer s = FrondServer.start(dir.resolve("a"), Map.of());
        try (FrondClient c = FrondClient.builder().servers(s.url).lease(1000, 1000, Duration.ofHours(1)).timeout(Duration.ofMillis(300))
                .backoff(Duration.ofMillis(10), Duration.ofMillis(20)).build()) {
            c.createTag("invoice", 1000, "");
            c.nextId("invoice");
            Thread.sleep(200); // the next lease, fetched in the background
            s.kill();
            long served = 1;
            FrondException e = null;
            try {
                while (served < 10_000) {
                    c.nextId("invoice");
                    served++;
                }
            } catch (FrondException x) {
                e = x;
            }
            assertTrue(served >= 1000, "served " + served + " IDs from the leases in hand, not 1000");
            assertTrue(e != null && e.retryable() && e.getMessage().contains("no ID in hand"), "then: " + e);
        } finally {
            s.close();
        }
    }

    // Tags that cannot be leased: a sequence tag is served call by call;
    // a tag whose form is text is refused clearly (nextStrings serves it).
    @Test
    void unleasedTags() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of("FROND_FORMS__text", "base62"));
                FrondClient c = client(s.url)) {
            c.createTag("ticket", 1, "sequence");
            long prev = 0;
            for (int i = 0; i < 20; i++) {
                long id = c.nextId("ticket");
                assertEquals(prev + 1, id);
                prev = id;
            }
            long[] more = c.nextIds("ticket", 3);
            assertEquals(prev + 1, more[0]);
            assertEquals(prev + 3, more[2]);
            c.createTag("text", 100, "");
            FrondException e = assertThrows(FrondException.class, () -> c.nextId("text"));
            assertEquals(ErrorCode.FORM_NOT_CARRIED, e.code());
            assertTrue(e.getMessage().contains("nextStrings"), e.getMessage());
            List<String> strs = c.nextStrings("text", 2);
            assertEquals(2, strs.size());
            assertTrue(Pattern.matches("[0-9A-Za-z]{11}", strs.get(0)), strs.get(0));
        }
    }

    // Errors carry frond's code; a non-retryable one is thrown at once.
    @Test
    void errorsAreTyped() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of()); FrondClient c = client(s.url, s.url)) {
            FrondException e = assertThrows(FrondException.class, () -> c.nextId("no-such-tag"));
            assertEquals(ErrorCode.TAG_NOT_FOUND, e.code());
            assertFalse(e.retryable());
            assertEquals(404, e.status());
            assertEquals(0, c.stats().failovers, "a non-retryable answer was retried elsewhere");
            assertThrows(FrondException.class, () -> c.serials("nope", 1));
        }
    }

    // Tag tokens and the admin token.
    @Test
    void tokens() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of("FROND_TOKENS__t0ken-order", "order"), "--admin-token", "adm1n-secret")) {
            try (FrondClient anon = client(s.url)) {
                FrondException e = assertThrows(FrondException.class, () -> anon.createTag("order", 10, ""));
                assertEquals(ErrorCode.UNAUTHORIZED, e.code());
            }
            try (FrondClient admin = FrondClient.builder().servers(s.url).adminToken("adm1n-secret").build()) {
                admin.createTag("order", 10, "");
                FrondException e = assertThrows(FrondException.class, () -> admin.nextId("order"));
                assertEquals(ErrorCode.FORBIDDEN, e.code());
            }
            try (FrondClient c = FrondClient.builder().servers(s.url).tagToken("t0ken-order").build()) {
                assertEquals(1, c.nextId("order"));
            }
        }
    }

    // TLS with a given CA.
    @Test
    void tls() throws Exception {
        Path ca = dir.resolve("ca.pem"), caKey = dir.resolve("ca.key"), cert = dir.resolve("cert.pem"), key = dir.resolve("key.pem");
        Path ext = dir.resolve("ext.cnf");
        Files.writeString(ext, "subjectAltName=IP:127.0.0.1\n");
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=frond test CA",
                "-keyout", caKey.toString(), "-out", ca.toString());
        Path csr = dir.resolve("cert.csr");
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key.toString(), "-out", csr.toString());
        run("openssl", "x509", "-req", "-in", csr.toString(), "-CA", ca.toString(), "-CAkey", caKey.toString(), "-CAcreateserial", "-days", "2",
                "-extfile", ext.toString(), "-out", cert.toString());
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of(), "--tls-cert-file", cert.toString(), "--tls-key-file", key.toString());
                FrondClient c = FrondClient.builder().servers(s.url).caCertificate(ca).build()) {
            assertTrue(s.url.startsWith("https://"));
            assertEquals(2, c.snowflake(2).length);
            try (FrondClient untrusting = FrondClient.builder().servers(s.url).attempts(1).build()) {
                assertThrows(FrondException.class, untrusting::snowflake);
            }
        }
    }

    // Per call: snowflake IDs (decoded as the server decodes them), UUIDs,
    // TypeIDs.
    @Test
    void perCall() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of("FROND_NODE", "7")); FrondClient c = client(s.url)) {
            long[] ids = c.snowflake(3);
            assertTrue(ids[0] < ids[1] && ids[1] < ids[2]);
            Snowflake.Parts p = Snowflake.TWITTER.decode(ids[0]);
            assertEquals(7, p.node);
            assertTrue(Math.abs(p.time.toEpochMilli() - System.currentTimeMillis()) < 60_000, p.toString());
            List<String> us = c.uuids(7, 2);
            assertTrue(Pattern.matches("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", us.get(0)), us.get(0));
            assertEquals(c.nameUuid(5, "dns", "example.com"), c.nameUuid(5, "dns", "example.com"));
            assertTrue(c.typeIds("user", 1).get(0).startsWith("user_"));
            assertEquals(1, c.snowflakeStrings("base62", "", 1).size());
        }
    }

    // Keyed sequences: each key's values increase, whatever its bytes (a
    // slash, a space, UTF-8: one path segment each).
    @Test
    void keyedSequences() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("a"), Map.of()); FrondClient c = client(s.url)) {
            java.net.http.HttpResponse<String> created = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create(s.url + "/v1/spaces"))
                            .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"name\":\"chat\",\"step\":100,\"sections\":4}")).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(201, created.statusCode(), created.body());
            Map<String, Long> last = new java.util.HashMap<>();
            String[] keys = {"conv/1", "conv 2", "\u00fc-3"};
            for (int i = 0; i < 300; i++) {
                String key = keys[i % 3];
                int n = 1 + i % 4;
                SeqValues v = c.seq("chat", key, n);
                assertEquals(n, v.count());
                assertTrue(v.first > last.getOrDefault(key, 0L), key + ": " + v + " after " + last.get(key));
                last.put(key, v.last);
            }
            assertTrue(c.seq("chat", "conv/1") > last.get("conv/1"));
            FrondException e = assertThrows(FrondException.class, () -> c.seq("nope", "k"));
            assertEquals(ErrorCode.TAG_NOT_FOUND, e.code());
            assertThrows(IllegalArgumentException.class, () -> c.seq("chat", "k", 10_001));
        }
    }

    private static void run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + ": failed");
        }
    }
}
