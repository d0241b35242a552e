package io.github.frondid.frond;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cost of an ID from the lease against an AtomicLong.incrementAndGet in
 * the same run (JMH is not reachable here: a harness of its own that warms
 * up, then reports the median of rounds, in ns per ID), one thread, against
 * a real frond serve (FROND_TEST_BIN); and of a gene ID (a tag with 4 shard
 * bits: nextShard on shards 0 to 15 in turn, nextForKey on 1,024 keys
 * "user-0" to "user-1023" in turn) against nextId:
 *
 * <pre>clients/java/build.sh bench [ROUNDS] [IDS_PER_ROUND]</pre>
 */
public final class Bench {
    private static volatile long sink;

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20_000_000;
        Path dir = Files.createTempDirectory("frond-bench");
        try (FrondServer s = FrondServer.start(dir, Map.of());
                FrondClient c = FrondClient.builder().servers(s.url).lease(1_000_000, 1_000_000, Duration.ofMinutes(10)).build()) {
            c.createTag("bench", 1_000_000, "");
            c.createTag("gene", 1_000_000, "", "shard:4");
            FrondClient.Tag tag = c.tag("bench");
            String[] keys = new String[1024];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = "user-" + i;
            }
            AtomicLong counter = new AtomicLong();
            double[][] ns = new double[5][rounds];
            for (int warm = 0; warm < 3; warm++) { // JIT: every loop compiled before the rounds
                atomic(counter, n / 4);
                byName(c, n / 4);
                handle(tag, n / 4);
                shard(c, n / 4);
                key(c, keys, n / 4);
            }
            for (int r = 0; r < rounds; r++) {
                ns[0][r] = atomic(counter, n);
                ns[1][r] = byName(c, n);
                ns[2][r] = handle(tag, n);
                ns[3][r] = shard(c, n);
                ns[4][r] = key(c, keys, n);
            }
            double a = median(ns[0]), b = median(ns[1]), h = median(ns[2]), sh = median(ns[3]), k = median(ns[4]);
            System.out.printf("%d rounds of %,d IDs, one thread, medians: AtomicLong.incrementAndGet %.2f ns/op; client.nextId(tag) %.2f ns/op (%.2fx); tag.next() %.2f ns/op (%.2fx)%n",
                    rounds, n, a, b, b / a, h, h / a);
            System.out.printf("gene IDs (4 shard bits), medians: client.nextShard(tag, shard) %.2f ns/op (%.2fx nextId); client.nextForKey(tag, \"user-N\") %.2f ns/op (%.2fx nextId)%n",
                    sh, sh / b, k, k / b);
            System.out.println("java " + System.getProperty("java.version") + ", " + Runtime.getRuntime().availableProcessors() + " cores; " + c.stats());
        }
    }

    private static double atomic(AtomicLong c, int n) {
        long t0 = System.nanoTime(), x = 0;
        for (int i = 0; i < n; i++) {
            x += c.incrementAndGet();
        }
        sink = x;
        return (System.nanoTime() - t0) / (double) n;
    }

    private static double byName(FrondClient c, int n) {
        long t0 = System.nanoTime(), x = 0;
        for (int i = 0; i < n; i++) {
            x += c.nextId("bench");
        }
        sink = x;
        return (System.nanoTime() - t0) / (double) n;
    }

    private static double handle(FrondClient.Tag t, int n) {
        long t0 = System.nanoTime(), x = 0;
        for (int i = 0; i < n; i++) {
            x += t.next();
        }
        sink = x;
        return (System.nanoTime() - t0) / (double) n;
    }

    private static double shard(FrondClient c, int n) {
        long t0 = System.nanoTime(), x = 0;
        for (int i = 0; i < n; i++) {
            x += c.nextShard("gene", i & 15);
        }
        sink = x;
        return (System.nanoTime() - t0) / (double) n;
    }

    private static double key(FrondClient c, String[] keys, int n) {
        long t0 = System.nanoTime(), x = 0;
        for (int i = 0; i < n; i++) {
            x += c.nextForKey("gene", keys[i & 1023]);
        }
        sink = x;
        return (System.nanoTime() - t0) / (double) n;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
