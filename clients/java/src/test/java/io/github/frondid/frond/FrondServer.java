package io.github.frondid.frond;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real frond serve (the binary at FROND_TEST_BIN) on a free port, for the
 * tests: started with extra flags and environment, stopped with SIGKILL
 * (kill -9) or at close.
 */
final class FrondServer implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("\"msg\":\"frond listening\".*\"addr\":\"([^\"]+)\"");

    final Process process;
    final String url;
    final Path dataDir;
    private final StringBuffer log; // the server's stderr, as it comes

    private FrondServer(Process p, String url, Path dataDir, StringBuffer log) {
        this.log = log;
        this.process = p;
        this.url = url;
        this.dataDir = dataDir;
    }

    static FrondServer start(Path dataDir, Map<String, String> env, String... flags) throws IOException, InterruptedException {
        String bin = System.getenv("FROND_TEST_BIN");
        if (bin == null || bin.isEmpty()) {
            throw new IllegalStateException("FROND_TEST_BIN is not set: run the tests with clients/java/build.sh test");
        }
        Files.createDirectories(dataDir);
        List<String> cmd = new ArrayList<>(List.of(bin, "serve", "--data-dir", dataDir.toString(), "--http-addr", "127.0.0.1:0", "--log-format", "json"));
        cmd.addAll(List.of(flags));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("FROND_CONFIG", "");
        pb.environment().putAll(env);
        Process p = pb.start();
        StringBuffer log = new StringBuffer();
        String[] addr = new String[1];
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    log.append(line).append('\n');
                    Matcher m = LISTENING.matcher(line);
                    if (m.find()) {
                        synchronized (addr) {
                            addr[0] = m.group(1);
                            addr.notifyAll();
                        }
                    }
                }
            } catch (IOException e) {
                // the process ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        synchronized (addr) {
            while (addr[0] == null && p.isAlive() && System.nanoTime() < deadline) {
                addr.wait(100);
            }
        }
        if (addr[0] == null) {
            p.destroyForcibly();
            throw new IllegalStateException("frond serve did not start:\n" + log);
        }
        boolean tls = List.of(flags).contains("--tls-cert-file");
        return new FrondServer(p, (tls ? "https://" : "http://") + addr[0], dataDir, log);
    }

    /** The server's log (JSON lines) so far. */
    String log() {
        return log.toString();
    }

    /** kill -9. */
    void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        kill();
    }
}
