package io.github.frondid.frond;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Keyed sequences through the Java client against real frond servers (FROND_TEST_BIN): each key sent to its
 * section's owner, and the kill -9 of one of two servers ridden through (issue 72).
 */
class SeqTest {
    @TempDir
    Path dir;

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static String get(String url) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    // Two servers on one store, the space msgs (16 sections) started on both and its sections split between them.
    private FrondServer[] seqPair(String lease) throws Exception {
        String store = "sqlite://" + dir.resolve("seq.db");
        Map<String, String> env = Map.of("FROND_SEQUENCES__LEASE_TTL", lease);
        Map<String, String> envB = new HashMap<>(env);
        envB.put("FROND_NODE", "1");
        FrondServer a = FrondServer.start(dir.resolve("a"), env, "--store", store);
        FrondServer b = FrondServer.start(dir.resolve("b"), envB, "--store", store);
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(a.url + "/v1/spaces"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"msgs\",\"step\":1000,\"sections\":16}")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(201, r.statusCode(), r.body());
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            int[] held = new int[2];
            FrondServer[] both = {a, b};
            for (int i = 0; i < 2; i++) {
                get(both[i].url + "/v1/seq/msgs/start"); // starts the space on each
                Map<String, Object> m = Json.object(Json.parse(get(both[i].url + "/v1/spaces")), "spaces");
                for (Object sp : (List<?>) m.get("spaces")) {
                    Map<String, Object> s = Json.object(sp, "space");
                    if ("msgs".equals(s.get("name")) && s.get("held") != null) {
                        held[i] += ((Number) s.get("held")).intValue();
                    }
                }
            }
            if (held[0] > 0 && held[1] > 0 && held[0] + held[1] == 16) {
                return both;
            }
            assertTrue(System.nanoTime() < deadline, "the sections were not split: " + held[0] + ", " + held[1]);
            Thread.sleep(200);
        }
    }

    // How long after since s's log first says it took sections.
    private static Duration takenAfter(FrondServer s, java.time.Instant since) {
        for (String line : s.log().split("\n")) {
            if (!line.contains("\"msg\":\"keyed sequence: sections taken\"")) {
                continue;
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"time\":\"([^\"]+)\"").matcher(line);
            if (m.find()) {
                java.time.Instant t = java.time.Instant.parse(m.group(1));
                if (t.isAfter(since)) {
                    return Duration.between(since, t);
                }
            }
        }
        throw new AssertionError("the survivor never took sections after the kill:\n" + s.log());
    }

    private static long forwarded(FrondServer... servers) throws Exception {
        long n = 0;
        for (FrondServer s : servers) {
            for (String line : get(s.url + "/metrics").split("\n")) {
                if (line.startsWith("frond_keyseq_forwarded_total{space=\"msgs\"}")) {
                    n += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        }
        return n;
    }

    @Test
    void seqGoesToTheSectionsOwner() throws Exception {
        FrondServer[] p = seqPair("3s");
        try (FrondServer a = p[0]; FrondServer b = p[1]; FrondClient c = FrondClient.builder().servers(a.url, b.url).build()) {
            long before = forwarded(a, b);
            for (int i = 0; i < 64; i++) {
                c.seq("msgs", "key-" + i);
            }
            long learned = forwarded(a, b);
            assertTrue(learned > before, "no key was forwarded while the client knew no owner: the test shows nothing");
            for (int i = 0; i < 64; i++) {
                c.seq("msgs", "key-" + i);
            }
            assertEquals(learned, forwarded(a, b), "keys forwarded once the client knew their owners");
        }
    }

    // kill -9 of one of two servers while 4 threads ask one value of each of 64 keys in turn: no error, every
    // key's values increase, and each thread's answers come again within 2 s of the survivor taking the dead
    // owner's sections (its log says when: about the lease, 5 s, after the kill; a call's attempts alone ran out
    // before that).
    @Test
    void seqRidesThroughAKill() throws Exception {
        FrondServer[] p = seqPair("5s");
        try (FrondServer a = p[0]; FrondServer b = p[1];
                FrondClient c = FrondClient.builder().servers(a.url, b.url).timeout(Duration.ofSeconds(1)).build()) {
            Map<String, List<Long>> values = new HashMap<>();
            for (int k = 0; k < 64; k++) {
                values.put("conv-" + k, java.util.Collections.synchronizedList(new ArrayList<>()));
            }
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<Long> gaps = new ConcurrentLinkedQueue<>();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                final int mine = w;
                Thread th = new Thread(() -> {
                    long prev = System.nanoTime(), gap = 0;
                    try {
                        while (!stop.get()) {
                            for (int k = mine; k < 64 && !stop.get(); k += 4) {
                                String key = "conv-" + k;
                                values.get(key).add(c.seq("msgs", key, 1).first);
                                long now = System.nanoTime();
                                gap = Math.max(gap, now - prev);
                                prev = now;
                            }
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                    gaps.add(gap);
                });
                th.start();
                threads.add(th);
            }
            Thread.sleep(1500);
            java.time.Instant killed = java.time.Instant.now();
            a.kill();
            Thread.sleep(10_000);
            stop.set(true);
            for (Thread th : threads) {
                th.join();
            }
            assertTrue(errors.isEmpty(), "errors: " + errors);
            for (Map.Entry<String, List<Long>> e : values.entrySet()) {
                List<Long> vs = e.getValue();
                assertTrue(!vs.isEmpty(), e.getKey() + ": no value");
                for (int i = 1; i < vs.size(); i++) {
                    assertTrue(vs.get(i) > vs.get(i - 1), e.getKey() + ": " + vs.get(i) + " after " + vs.get(i - 1));
                }
            }
            long longest = gaps.stream().mapToLong(Long::longValue).max().orElse(0);
            Duration taken = takenAfter(b, killed);
            System.out.printf("the longest wait of a thread through the kill: %.2f s; the survivor took the sections %.2f s after it%n",
                    longest / 1e9, taken.toNanos() / 1e9);
            assertEquals(4, gaps.size());
            assertTrue(longest < taken.plusSeconds(2).toNanos(), "a thread's longest wait " + longest / 1e6 + " ms: past the take (" + taken + ") and 2 s");
        }
    }

    // Once every attempt failed, the error is the last a server answered (a 503 store_unavailable with its
    // Retry-After and hint), not a dead server's refused connection (it said UNKNOWN, status 0).
    @Test
    void theErrorNamesWhatAServerAnswered() throws Exception {
        HttpServer live = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        java.util.Set<String> timeouts = java.util.concurrent.ConcurrentHashMap.newKeySet(); // the Frond-Timeout each request carried
        live.createContext("/", ex -> {
            timeouts.add(String.valueOf(ex.getRequestHeaders().getFirst("Frond-Timeout")));
            try (InputStream in = ex.getRequestBody()) {
                in.readAllBytes();
            }
            byte[] body = ("{\"error\":{\"code\":\"store_unavailable\",\"message\":\"the section is between owners\","
                    + "\"hint\":\"retry: the section is taken within a lease\"}}").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().add("Content-Type", "application/json");
            ex.getResponseHeaders().add("Retry-After", "1");
            ex.sendResponseHeaders(503, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        live.start();
        int deadPort;
        try (ServerSocket s = new ServerSocket(0)) {
            deadPort = s.getLocalPort(); // closed below: nothing listens there
        }
        String liveUrl = "http://127.0.0.1:" + live.getAddress().getPort();
        try (FrondClient c = FrondClient.builder().servers("http://127.0.0.1:" + deadPort, liveUrl).timeout(Duration.ofSeconds(1))
                .backoff(Duration.ofMillis(50), Duration.ofSeconds(5)).seqWait(Duration.ofMillis(2500)).build()) {
            long t0 = System.nanoTime();
            FrondException e = assertThrows(FrondException.class, () -> c.seq("msgs", "k"));
            long took = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(ErrorCode.STORE_UNAVAILABLE, e.code(), e.toString());
            assertEquals(503, e.status());
            assertEquals(1000, e.retryAfterMillis());
            assertEquals("retry: the section is taken within a lease", e.hint());
            assertTrue(e.getMessage().contains("the last answer, from " + liveUrl), e.getMessage());
            assertTrue(took >= 2000 && took < 4500, "took " + took + " ms");
            // Each request says how long the client waits for it (one attempt's timeout, in ms): a server that
            // would wait longer answers first.
            assertEquals(java.util.Set.of("1000"), timeouts);
        } finally {
            live.stop(0);
        }
    }

    @Test
    void anUnknownSpacesHintIsTheServers() throws Exception {
        try (FrondServer s = FrondServer.start(dir.resolve("s"), Map.of()); FrondClient c = FrondClient.builder().servers(s.url).build()) {
            FrondException e = assertThrows(FrondException.class, () -> c.seq("nospace", "k"));
            assertEquals(ErrorCode.TAG_NOT_FOUND, e.code());
            assertTrue(e.hint().startsWith("create the space first (frond space create nospace"), e.hint());
        }
    }
}
