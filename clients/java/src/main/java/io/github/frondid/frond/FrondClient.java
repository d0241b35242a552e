package io.github.frondid.frond;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client of frond servers over their HTTP API (docs/api.md), with the Go
 * client's semantics (docs/client.md).
 *
 * <p><b>Segment IDs</b> come from leases: the client leases ranges of a tag
 * from a server ({@code GET /v1/segment/{tag}?format=ranges&lease=1}),
 * hands IDs out of them in process, fetches the next lease in the
 * background once a tenth of the current one is used, and sizes leases by
 * demand (one used up in less than half of {@code leaseTarget} doubles the
 * next, one lasting more than twice it halves it, between
 * {@code minLease} and {@code maxLease}). A lease in hand keeps serving
 * while every server is down. A tag that cannot be leased (a sequence tag:
 * {@code not_leasable}; a tag whose IDs are not plain numbers:
 * {@code form_not_carried}) is asked for call by call from then on.
 *
 * <p><b>Shard bits</b> (gene IDs, docs/kinds.md#shard-bits-gene-ids): the
 * IDs of a tag created with the mapping {@code shard:K} are
 * {@code counter << K | shard}, so that {@code id % 2^K} routes a row to its
 * shard. {@link #nextShard} and {@link #nextForKey} lease the tag's
 * counters ({@code counters=1}), apart from the leases of {@link #nextId},
 * and put the shard below each counter in process ({@link Shards#shardOf}
 * for a key: the hash every server and client computes alike).
 *
 * <p><b>Per call</b>: snowflake IDs, UUIDs, TypeIDs, serial numbers and
 * text forms, batched with {@code n}.
 *
 * <p><b>Several servers</b>: each attempt has a deadline ({@code timeout});
 * a server that fails or answers a retryable error rests (backoff doubling
 * from {@code backoffMin} to {@code backoffMax}, with jitter, and at least
 * its Retry-After) while the next one is tried; a non-retryable answer is
 * thrown at once as a {@link FrondException} with its {@link ErrorCode}.
 * No ID is handed out twice: leases are never reused, and by default the
 * IDs of a tag increase strictly (after a fail-over, IDs below those
 * handed out are skipped: a gap, never a duplicate).
 *
 * <p>Thread-safe. {@link #close()} stops the background fetches; frond has
 * no call to give a lease's unused tail back, so it is skipped (a gap).
 */
public final class FrondClient implements AutoCloseable {
    /** The defaults of the builder. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_BACKOFF_MIN = Duration.ofMillis(100);
    public static final Duration DEFAULT_BACKOFF_MAX = Duration.ofSeconds(5);
    public static final long DEFAULT_MIN_LEASE = 1_000;
    public static final long DEFAULT_MAX_LEASE = 1_000_000; // the server's largest ranges request
    public static final Duration DEFAULT_LEASE_TARGET = Duration.ofSeconds(10);
    public static final Duration DEFAULT_SEQ_WAIT = Duration.ofSeconds(10);
    /** The header of a keyed sequence's answer: the key's section and whether the server that answered serves it. */
    static final String SEQ_ROUTE_HEADER = "Frond-Seq-Section";
    // One attempt's timeout in milliseconds (1 to 600,000), sent with every
    // request: a keyed sequence request that waits at the server (a section
    // between owners) is answered 503 with Retry-After before it, not left
    // to time out.
    static final String TIMEOUT_HEADER = "Frond-Timeout";
    /** The most sections a route is kept for (a header naming more is ignored). */
    static final int MAX_ROUTE_SECTIONS = 1 << 16;
    private static final java.util.regex.Pattern ROUTE = java.util.regex.Pattern.compile("(\\d{1,9})/(\\d{1,9}) (self|other)");

    final Builder o;
    private final HttpClient http;
    private final List<Server> servers;
    private final AtomicInteger preferred = new AtomicInteger();
    private final ConcurrentHashMap<String, Lease> leases = new ConcurrentHashMap<>();
    // The leases of counters of tags with shard bits (nextShard, nextForKey).
    private final ConcurrentHashMap<String, Lease> counterLeases = new ConcurrentHashMap<>();
    // Tags met that cannot be leased: how their IDs are asked for.
    private final ConcurrentHashMap<String, ErrorCode> unleased = new ConcurrentHashMap<>();
    final ExecutorService background;
    private final AtomicBoolean closed = new AtomicBoolean();
    // By keyed sequence space, by section: the server that last said it
    // serves the section (its index + 1), or the last that said it sent the
    // request on (-(index + 1): the next one is asked), or 0.
    private final ConcurrentHashMap<String, java.util.concurrent.atomic.AtomicIntegerArray> routes = new ConcurrentHashMap<>();
    final AtomicLong calls = new AtomicLong(), failovers = new AtomicLong(), waits = new AtomicLong();
    private final String timeoutHeader;

    private FrondClient(Builder o) {
        this.o = o;
        this.timeoutHeader = Long.toString(Math.min(Math.max(o.timeout.toMillis(), 1), 600_000));
        HttpClient.Builder hb = HttpClient.newBuilder().connectTimeout(o.timeout).version(HttpClient.Version.HTTP_1_1);
        if (o.ssl != null) {
            hb.sslContext(o.ssl);
        }
        this.http = hb.build();
        List<Server> s = new ArrayList<>();
        for (String u : o.servers) {
            s.add(new Server(u));
        }
        this.servers = Collections.unmodifiableList(s);
        this.background = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "frond-lease");
            t.setDaemon(true);
            return t;
        });
    }

    /** A builder: {@code FrondClient.builder().servers("http://id-1:8080", "http://id-2:8080").build()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** The options of a client. */
    public static final class Builder {
        List<String> servers = new ArrayList<>();
        String tagToken = "", adminToken = "";
        Duration timeout = DEFAULT_TIMEOUT, backoffMin = DEFAULT_BACKOFF_MIN, backoffMax = DEFAULT_BACKOFF_MAX;
        int attempts;
        long minLease = DEFAULT_MIN_LEASE, maxLease = DEFAULT_MAX_LEASE;
        Duration leaseTarget = DEFAULT_LEASE_TARGET;
        Duration seqWait = DEFAULT_SEQ_WAIT;
        boolean unordered;
        SSLContext ssl;

        private Builder() {
        }

        /**
         * The servers' HTTP addresses ({@code http://host:8080}, {@code https://...}, or a bare
         * {@code host:port} for http), sharing one store. Calls go to the first that answers and stay
         * there while it does; the others are the fail-over.
         */
        public Builder servers(String... urls) {
            for (String u : urls) {
                u = u.trim();
                if (u.isEmpty()) {
                    continue;
                }
                if (!u.contains("://")) {
                    u = "http://" + u;
                }
                URI uri = URI.create(u);
                if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
                    throw new IllegalArgumentException("server " + u + ": want http://host:port or https://host:port");
                }
                servers.add(u.replaceAll("/+$", ""));
            }
            return this;
        }

        /** The tag token sent with every ID call (X-Frond-Token), for servers configured with tokens. */
        public Builder tagToken(String token) {
            this.tagToken = token == null ? "" : token;
            return this;
        }

        /** The admin token, for tag administration (createTag). */
        public Builder adminToken(String token) {
            this.adminToken = token == null ? "" : token;
            return this;
        }

        /** Bounds one attempt on one server (2 s). */
        public Builder timeout(Duration d) {
            this.timeout = positive(d, "timeout");
            return this;
        }

        /** Bounds the attempts of one call across all servers (0: three per server). */
        public Builder attempts(int n) {
            if (n < 0) {
                throw new IllegalArgumentException("attempts " + n + ": 0 (three per server) or more");
            }
            this.attempts = n;
            return this;
        }

        /** How long a server that failed rests: doubling from min to max with jitter (100 ms, 5 s). */
        public Builder backoff(Duration min, Duration max) {
            this.backoffMin = positive(min, "backoff min");
            this.backoffMax = positive(max, "backoff max");
            if (max.compareTo(min) < 0) {
                throw new IllegalArgumentException("backoff max " + max + " below min " + min);
            }
            return this;
        }

        /** The bounds of one lease and how long a lease should last (1,000, 1,000,000 and 10 s). */
        public Builder lease(long min, long max, Duration target) {
            if (min < 1 || max < min || max > DEFAULT_MAX_LEASE) {
                throw new IllegalArgumentException("lease " + min + ".." + max + ": 1 <= min <= max <= " + DEFAULT_MAX_LEASE);
            }
            this.minLease = min;
            this.maxLease = max;
            this.leaseTarget = positive(target, "lease target");
            return this;
        }

        /**
         * How long {@link FrondClient#seq} keeps asking, past the attempts, while a key's section is between
         * owners (its owner killed: another server takes it once its lease runs out; 10 s).
         */
        public Builder seqWait(Duration d) {
            this.seqWait = positive(d, "seq wait");
            return this;
        }

        /**
         * Accepts leases below IDs already handed out: set it when the servers combine several stores by
         * residue class, whose ranges interleave. By default a tag's IDs increase strictly.
         */
        public Builder unordered(boolean u) {
            this.unordered = u;
            return this;
        }

        /** TLS with this context (for https:// servers); by default the JDK's trust store. */
        public Builder sslContext(SSLContext ctx) {
            this.ssl = ctx;
            return this;
        }

        /** TLS trusting the CA certificates (PEM) in this file, instead of the JDK's trust store. */
        public Builder caCertificate(Path pem) {
            try (InputStream in = Files.newInputStream(pem)) {
                KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
                ks.load(null, null);
                int n = 0;
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    ks.setCertificateEntry("frond-ca-" + n++, c);
                }
                if (n == 0) {
                    throw new IllegalArgumentException(pem + ": no certificate");
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(ks);
                SSLContext ctx = SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                this.ssl = ctx;
                return this;
            } catch (IOException | GeneralSecurityException e) {
                throw new IllegalArgumentException("CA certificates " + pem + ": " + e.getMessage(), e);
            }
        }

        /** The client. */
        public FrondClient build() {
            if (servers.isEmpty()) {
                throw new IllegalArgumentException("no servers");
            }
            return new FrondClient(this);
        }

        private static Duration positive(Duration d, String what) {
            if (d == null || d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " " + d + ": must be positive");
            }
            return d;
        }
    }

    // ---- Segment IDs ----

    /**
     * The next segment ID of tag, from the lease: no network call unless both the lease and the next one
     * are used up. See {@link #tag(String)} to skip the tag lookup too.
     */
    public long nextId(String tag) {
        Lease l = leases.get(tag);
        if (l != null) {
            return l.next();
        }
        return tag(tag).next();
    }

    /** n segment IDs of tag, in order (from the lease). */
    public long[] nextIds(String tag, int n) {
        return tag(tag).next(n);
    }

    /**
     * A handle on tag: its {@link Tag#next()} skips the lookup of the tag. Handles of one tag share
     * one lease.
     */
    public Tag tag(String tag) {
        if (tag == null || tag.isEmpty()) {
            throw new IllegalArgumentException("a tag needs a name");
        }
        Lease l = leases.computeIfAbsent(tag, t -> new Lease(this, t, false));
        return new Tag(l);
    }

    // ---- Shard bits (gene IDs) ----

    /**
     * The next ID of tag, a tag with shard bits ({@code "mapping": "shard:K"}), on shard:
     * {@code counter << K | shard}, so that {@code id % 2^K == shard}. The counter is the tag's next, from a
     * lease of its counters (no network call unless the lease and the next one are used up); K is what the
     * lease said. Unique across clients and servers, whatever shards they ask for (the counter's uniqueness).
     *
     * @throws FrondException INVALID_ARGUMENT for a shard outside 0..2^K-1 or a tag without shard bits;
     *     TAG_EXHAUSTED for a counter that does not fit below the K bits; the server's code for the rest
     */
    public long nextShard(String tag, long shard) {
        if (shard < 0 || shard > Shards.MAX_SHARD) {
            throw new FrondException(ErrorCode.INVALID_ARGUMENT, null, 0, "shard " + shard + ": from 0 to 2^K-1 (K, the tag's shard bits, at most " + Shards.MAX_SHARD_BITS + ")", 0, null);
        }
        return counterLease(tag).gene(shard, null);
    }

    /**
     * {@link #nextShard} on the shard of key (a user, a tenant, a shop): {@link Shards#shardOf}(key, K), the
     * shard every frond server and client gives the key, so that the rows of one key and the rows whose IDs
     * carry it land on one shard.
     *
     * @throws FrondException INVALID_ARGUMENT for an empty key or a tag without shard bits, and as nextShard
     */
    public long nextForKey(String tag, String key) {
        if (key == null || key.isEmpty()) {
            throw new FrondException(ErrorCode.INVALID_ARGUMENT, null, 0, "an empty shard key", 0, null);
        }
        return counterLease(tag).gene(0, key);
    }

    private Lease counterLease(String tag) {
        Lease l = counterLeases.get(tag);
        if (l != null) {
            return l;
        }
        if (tag == null || tag.isEmpty()) {
            throw new IllegalArgumentException("a tag needs a name");
        }
        return counterLeases.computeIfAbsent(tag, t -> new Lease(this, t, true));
    }

    // The ID of a tag with shard bits whose counters cannot be leased (a
    // sequence tag): one call, with the shard or the key.
    long unleasedShard(String tag, long shard, String key) {
        Map<String, Object> m = call("/v1/segment/" + path(tag) + (key != null ? "?shard_key=" + q(key) : "?shard=" + shard), false);
        if (!(m.get("id") instanceof Long)) {
            throw new FrondException(ErrorCode.FORM_NOT_CARRIED, null, 409, "tag " + tag + " hands out text IDs (its form), not numbers", 0, null);
        }
        return (Long) m.get("id");
    }

    /** A handle on one tag (see {@link FrondClient#tag(String)}). */
    public static final class Tag {
        private final Lease lease;

        Tag(Lease lease) {
            this.lease = lease;
        }

        /** The tag's name. */
        public String name() {
            return lease.tag;
        }

        /** The next segment ID of the tag. */
        public long next() {
            return lease.next();
        }

        /** n segment IDs of the tag, in order. */
        public long[] next(int n) {
            if (n < 1 || n > 10_000) {
                throw new IllegalArgumentException("n " + n + ": 1 to 10,000");
            }
            if (lease.via != null) { // not leasable: one call for the n
                return lease.c.unleasedIds(lease.tag, n);
            }
            long[] out = new long[n];
            for (int i = 0; i < n; i++) {
                out[i] = lease.next();
            }
            return out;
        }
    }

    /** n segment IDs of tag as ranges, straight from a server (not from the lease). */
    public List<Range> nextRanges(String tag, long n) {
        return ranges(call("/v1/segment/" + path(tag) + "?format=ranges&n=" + count(n, 1_000_000), false));
    }

    /** n segment IDs of tag in the tag's form (a text form: base62, opaque62, ...), from a server. */
    public List<String> nextStrings(String tag, int n) {
        Map<String, Object> m = call("/v1/segment/" + path(tag) + "?n=" + count(n, 10_000), false);
        return strings(m, "id_strs");
    }

    // The IDs of a tag that cannot be leased, call by call: a sequence tag
    // (ranges), or a tag of a numeric form (its numbers; a text form is
    // refused: nextStrings).
    long[] unleasedIds(String tag, int n) {
        ErrorCode why = unleased.get(tag);
        long[] out = new long[n];
        if (why == ErrorCode.NOT_LEASABLE) {
            int k = 0;
            for (Range r : nextRanges(tag, n)) {
                for (long i = 0; i < r.count && k < n; i++) {
                    out[k++] = r.at(i);
                }
            }
            return out;
        }
        Map<String, Object> m;
        try {
            m = call("/v1/segment/" + path(tag) + "?n=" + n, false);
        } catch (FrondException e) {
            if (why == ErrorCode.FORM_NOT_CARRIED && e.code() == ErrorCode.INVALID_ARGUMENT) {
                // A tag that refuses leases and a plain request: one with shard bits, whose every ID names its shard.
                throw e.withMessage("tag " + tag + ": " + e.getMessage() + " (a tag with shard bits: take its IDs with nextShard or nextForKey)");
            }
            throw e;
        }
        if (!(m.get("ids") instanceof List)) {
            throw new FrondException(ErrorCode.FORM_NOT_CARRIED, null, 409, "tag " + tag + " hands out text IDs (its form), not numbers: use nextStrings", 0, null);
        }
        List<Object> ids = Json.list(m, "ids");
        for (int i = 0; i < n; i++) {
            out[i] = (Long) ids.get(i);
        }
        return out;
    }

    void markUnleased(String tag, ErrorCode why) {
        unleased.put(tag, why);
        Lease l = leases.get(tag);
        if (l != null) {
            l.via = why;
        }
    }

    // A lease of n IDs of tag (or, counters, of its counters): its ranges,
    // and the tag's shard bits the answer of a lease of counters says.
    Lease.Answer lease(String tag, long n, boolean counters) {
        Map<String, Object> m = call("/v1/segment/" + path(tag) + "?format=ranges&lease=1" + (counters ? "&counters=1" : "") + "&n=" + n, false);
        int bits = 0;
        if (counters && m.get("shard_bits") != null) {
            long b = Json.getLong(m, "shard_bits");
            if (b < 0 || b > Shards.MAX_SHARD_BITS) {
                throw new IllegalArgumentException("frond's answer: shard_bits " + b + ", not 0 to " + Shards.MAX_SHARD_BITS);
            }
            bits = (int) b;
        }
        return new Lease.Answer(ranges(m), bits);
    }

    // ---- Per call ----

    /** One snowflake ID. */
    public long snowflake() {
        return snowflake(1)[0];
    }

    /** n snowflake IDs (1 to 10,000). */
    public long[] snowflake(int n) {
        return longs(call("/v1/snowflake?n=" + count(n, 10_000), false));
    }

    /** n snowflake IDs in a text form (base62, base32, friendly, ...), with an optional prefix. */
    public List<String> snowflakeStrings(String form, String prefix, int n) {
        return strings(call("/v1/snowflake?n=" + count(n, 10_000) + "&form=" + q(form) + (prefix == null || prefix.isEmpty() ? "" : "&prefix=" + q(prefix)), false), "id_strs");
    }

    /** n UUIDs of version 1, 4, 6 or 7. */
    public List<String> uuids(int version, int n) {
        Map<String, Object> m = call("/v1/uuid?version=" + version + "&n=" + count(n, 10_000), false);
        return strings(m, "uuids");
    }

    /** The name-based UUID (version 3 or 5) of name in namespace (dns, url, oid, x500 or a UUID): always the same. */
    public String nameUuid(int version, String namespace, String name) {
        Map<String, Object> m = call("/v1/uuid?version=" + version + "&namespace=" + q(namespace) + "&name=" + q(name), false);
        return Json.getString(m, "uuid");
    }

    /** n TypeIDs (UUID version 7) with the prefix: {@code user_01h455vb4pex5vsknk084sn02q}. */
    public List<String> typeIds(String prefix, int n) {
        return strings(call("/v1/uuid?version=7&form=typeid&prefix=" + q(prefix) + "&n=" + count(n, 10_000), false), "uuids");
    }

    /** n serial numbers of the serial configured as name (serials: in the server's configuration). */
    public List<String> serials(String name, int n) {
        return strings(call("/v1/serial/" + path(name) + "?n=" + count(n, 10_000), false), "serials");
    }

    /** The next value of key in a keyed sequence space: above every value the key was given before. */
    public long seq(String space, String key) {
        return seq(space, key, 1).first;
    }

    /**
     * The next n values (1 to 10,000) of key in a keyed sequence space, first to last: each above every value the
     * key was given before, whichever server answered (docs/sequences.md). A call whose answer was lost and is
     * retried skips values, never repeats them. The key goes to its section's owner once an answer named it (one
     * hop); a section between owners (its owner killed) is asked again, on any server, for up to
     * {@link Builder#seqWait} before the error is thrown.
     */
    public SeqValues seq(String space, String key, int n) {
        String p = "/v1/seq/" + path(space) + "/" + path(key) + "?n=" + count(n, 10_000);
        CallInfo info = new CallInfo();
        Map<String, Object> m = send("GET", p, null, false, seqWant(space, key), o.seqWait.toNanos(), info);
        learnRoute(space, info);
        SeqValues v = new SeqValues(space, key, Json.getLong(m, "first"), Json.getLong(m, "last"));
        if (v.count() != n) {
            throw new IllegalArgumentException("frond's answer: " + v.count() + " values for " + n);
        }
        return v;
    }

    /** Creates a segment tag (mode "segment" or "sequence") starting at ID 1: tag administration, with the admin token. */
    public void createTag(String name, long step, String mode) {
        createTag(name, step, mode, null);
    }

    /**
     * Creates a tag with a mapping: {@code "shard:K"} (K 1 to 16: IDs {@code counter << K | shard}, for
     * {@link #nextShard} and {@link #nextForKey}), {@code "mist"}, {@code "opaque"}, or null or "" (plain).
     */
    public void createTag(String name, long step, String mode, String mapping) {
        String body = "{\"name\":" + quote(name) + ",\"step\":" + step + (mode == null || mode.isEmpty() ? "" : ",\"mode\":" + quote(mode))
                + (mapping == null || mapping.isEmpty() ? "" : ",\"mapping\":" + quote(mapping)) + "}";
        send("POST", "/v1/tags", body, true);
    }

    // ---- Statistics ----

    /** The client's counters: calls to servers, fail-overs, and callers that waited for a lease. */
    public Stats stats() {
        Map<String, Long> remaining = new java.util.TreeMap<>();
        Map<String, Long> size = new java.util.TreeMap<>();
        for (Lease l : leases.values()) {
            remaining.put(l.tag, l.remaining());
            size.put(l.tag, l.size());
        }
        Map<String, Long> cRemaining = new java.util.TreeMap<>();
        Map<String, Long> cSize = new java.util.TreeMap<>();
        for (Lease l : counterLeases.values()) {
            cRemaining.put(l.tag, l.remaining());
            cSize.put(l.tag, l.size());
        }
        return new Stats(calls.get(), failovers.get(), waits.get(), remaining, size, cRemaining, cSize);
    }

    /** What {@link #stats()} answers. */
    public static final class Stats {
        public final long calls, failovers, waits;
        /** Per tag: the IDs left in hand (both leases), and the size of the last lease. */
        public final Map<String, Long> remaining, leaseSize;
        /** The same of the leases of counters (tags with shard bits: nextShard, nextForKey). */
        public final Map<String, Long> countersRemaining, countersLeaseSize;

        Stats(long calls, long failovers, long waits, Map<String, Long> remaining, Map<String, Long> leaseSize,
                Map<String, Long> countersRemaining, Map<String, Long> countersLeaseSize) {
            this.calls = calls;
            this.failovers = failovers;
            this.waits = waits;
            this.remaining = Collections.unmodifiableMap(remaining);
            this.leaseSize = Collections.unmodifiableMap(leaseSize);
            this.countersRemaining = Collections.unmodifiableMap(countersRemaining);
            this.countersLeaseSize = Collections.unmodifiableMap(countersLeaseSize);
        }

        @Override
        public String toString() {
            return "calls " + calls + ", fail-overs " + failovers + ", waits " + waits + ", remaining " + remaining + ", lease sizes " + leaseSize
                    + (countersLeaseSize.isEmpty() ? "" : ", counters remaining " + countersRemaining + ", counters lease sizes " + countersLeaseSize);
        }
    }

    // The server to ask first for key: its section's owner as the answers
    // said, the server after one that sent it on, or -1.
    private int seqWant(String space, String key) {
        java.util.concurrent.atomic.AtomicIntegerArray r = routes.get(space);
        if (r == null) {
            return -1;
        }
        int v = r.get((int) Long.remainderUnsigned(Shards.keyHash(key), r.length()));
        if (v > 0) {
            return v - 1;
        }
        return v < 0 ? -v % servers.size() : -1;
    }

    // Keeps what the server that answered said of the key's section
    // ("5/16 self", or "other": it sent the request on).
    private void learnRoute(String space, CallInfo info) {
        if (info.route == null || info.server < 0) {
            return;
        }
        java.util.regex.Matcher mt = ROUTE.matcher(info.route.trim());
        if (!mt.matches()) {
            return;
        }
        int section = Integer.parseInt(mt.group(1)), sections = Integer.parseInt(mt.group(2));
        if (sections < 1 || sections > MAX_ROUTE_SECTIONS || section >= sections) {
            return;
        }
        java.util.concurrent.atomic.AtomicIntegerArray r = routes.get(space);
        if (r == null || r.length() != sections) {
            r = new java.util.concurrent.atomic.AtomicIntegerArray(sections);
            routes.put(space, r);
        }
        r.set(section, mt.group(3).equals("self") ? info.server + 1 : -(info.server + 1));
    }

    /** What a call learned of the server that answered it. */
    static final class CallInfo {
        int server = -1;
        String route;
    }

    /** Stops the background fetches. Leases in hand are dropped (a gap, never a duplicate). */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            background.shutdownNow();
        }
    }

    boolean closed() {
        return closed.get();
    }

    // ---- Transport ----

    /** One server and its health as this client sees it. */
    final class Server {
        final String base;
        private long downUntil; // System.nanoTime(); guarded by this
        private int fails; // failures in a row; guarded by this

        Server(String base) {
            this.base = base;
        }

        synchronized long restingFor(long now) {
            return Math.max(0, downUntil - now);
        }

        synchronized void ok() {
            fails = 0;
            downUntil = 0;
        }

        // fail rests the server: for its Retry-After when it answered with
        // one (it is up, and said when to come back: no longer), else a
        // backoff doubling with each failure in a row, ±20% jitter, at
        // least retryAfter.
        synchronized void fail(FrondException e) {
            long retryAfterMillis = e.retryAfterMillis();
            if (e.status() != 0 && retryAfterMillis > 0) {
                fails = 0; // it is up: no failure in a row of a server that does not answer
                downUntil = System.nanoTime() + retryAfterMillis * 1_000_000L;
                return;
            }
            fails = Math.min(fails + 1, 30);
            long min = o.backoffMin.toNanos(), max = o.backoffMax.toNanos();
            long rest = Math.min(max, min << Math.min(fails - 1, 20));
            rest = (long) (rest * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
            rest = Math.max(rest, retryAfterMillis * 1_000_000L);
            downUntil = System.nanoTime() + rest;
        }
    }

    Map<String, Object> call(String pathAndQuery, boolean admin) {
        return send("GET", pathAndQuery, null, admin);
    }

    private Map<String, Object> send(String method, String pathAndQuery, String body, boolean admin) {
        return send(method, pathAndQuery, body, admin, -1, 0, null);
    }

    // send runs one call with fail-over: each attempt on the preferred
    // server unless it rests (the first on want when it is a server that
    // does not: a keyed sequence's section owner), else the next that does
    // not, else (all resting) the one that rests least, after its rest;
    // with patienceNanos (a keyed sequence's seqWait), more attempts past
    // the attempts until that long has passed. Once every attempt failed,
    // the error is the last a server answered, when one did (a live
    // server's 503, not a dead one's refused connection). info gets the
    // server that answered and its Frond-Seq-Section.
    private Map<String, Object> send(String method, String pathAndQuery, String body, boolean admin, int want, long patienceNanos, CallInfo info) {
        if (closed.get()) {
            throw new FrondException(ErrorCode.UNKNOWN, "", 0, "the client is closed", 0, null);
        }
        int attempts = o.attempts > 0 ? o.attempts : 3 * servers.size();
        long deadline = patienceNanos > 0 ? System.nanoTime() + patienceNanos : 0;
        FrondException last = null, answered = null;
        int a = 0;
        while (a < attempts || (deadline != 0 && System.nanoTime() - deadline < 0)) {
            int i = a == 0 && want >= 0 && want < servers.size() && servers.get(want).restingFor(System.nanoTime()) == 0 ? want : pick();
            Server s = servers.get(i);
            long rest = s.restingFor(System.nanoTime());
            if (rest > 0) { // every server rests: wait for the first back
                if (a >= attempts && System.nanoTime() + rest - deadline > 0) {
                    break; // a rest past the patience
                }
                waitNanos(rest);
            }
            a++;
            try {
                calls.incrementAndGet();
                Map<String, Object> m = once(s, method, pathAndQuery, body, admin, info);
                s.ok();
                preferred.set(i);
                if (info != null) {
                    info.server = i;
                }
                return m;
            } catch (FrondException e) {
                if (!e.retryable()) {
                    throw e;
                }
                s.fail(e);
                last = e;
                if (e.status() != 0) {
                    e.server(s.base);
                    answered = e;
                }
                if (servers.size() > 1) {
                    failovers.incrementAndGet();
                }
            }
        }
        String head = "no server could answer (" + a + " attempts on " + servers.size() + " server" + (servers.size() == 1 ? "" : "s") + "); ";
        if (answered != null) {
            throw answered.withMessage(head + "the last answer, from " + answered.server() + ": " + answered.status() + " " + answered.wireCode() + ": "
                    + answered.getMessage() + (answered != last ? "; the last attempt: " + last.getMessage() : ""));
        }
        throw last.withMessage(head + "the last: " + last.getMessage());
    }

    // pick is the preferred server if it does not rest, else the next one
    // that does not, else the one that rests least.
    private int pick() {
        long now = System.nanoTime();
        int p = preferred.get(), n = servers.size();
        int best = p;
        long bestRest = Long.MAX_VALUE;
        for (int k = 0; k < n; k++) {
            int i = (p + k) % n;
            long r = servers.get(i).restingFor(now);
            if (r == 0) {
                return i;
            }
            if (r < bestRest) {
                best = i;
                bestRest = r;
            }
        }
        return best;
    }

    private static void waitNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FrondException(ErrorCode.UNKNOWN, "", 0, "interrupted", 0, e);
        }
    }

    private Map<String, Object> once(Server s, String method, String pathAndQuery, String body, boolean admin, CallInfo info) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(s.base + pathAndQuery)).timeout(o.timeout).header("Accept", "application/json")
                .header(TIMEOUT_HEADER, timeoutHeader);
        if (!o.tagToken.isEmpty()) {
            rb.header("X-Frond-Token", o.tagToken);
        }
        if (admin && !o.adminToken.isEmpty()) {
            rb.header("Authorization", "Bearer " + o.adminToken);
        }
        if (body != null) {
            rb.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> r;
        try {
            r = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new FrondException(ErrorCode.UNKNOWN, "", 0, "server " + s.base + ": " + e, 0, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new FrondException(ErrorCode.UNKNOWN, "", 0, "interrupted", 0, e);
        }
        long retryAfter = r.headers().firstValue("Retry-After").map(FrondClient::seconds).orElse(0L) * 1000;
        if (info != null) {
            info.route = r.headers().firstValue(SEQ_ROUTE_HEADER).orElse(null);
        }
        Object v;
        try {
            v = Json.parse(r.body());
        } catch (IllegalArgumentException e) {
            if (r.statusCode() / 100 == 2) {
                throw new FrondException(ErrorCode.UNKNOWN, "", r.statusCode(), "server " + s.base + ": an answer that is not JSON: " + e.getMessage(), retryAfter, e);
            }
            throw new FrondException(ErrorCode.UNKNOWN, "", r.statusCode(), "server " + s.base + " answered " + r.statusCode() + ": " + snippet(r.body()), retryAfter, e);
        }
        Map<String, Object> m = Json.object(v, "the answer");
        if (r.statusCode() / 100 != 2) {
            Object e = m.get("error");
            if (e instanceof Map) {
                Map<String, Object> em = Json.object(e, "error");
                String code = String.valueOf(em.getOrDefault("code", ""));
                Object hint = em.get("hint");
                throw new FrondException(ErrorCode.of(code), code, r.statusCode(), String.valueOf(em.getOrDefault("message", "")), retryAfter, null,
                        hint instanceof String ? (String) hint : "");
            }
            throw new FrondException(ErrorCode.UNKNOWN, "", r.statusCode(), "server " + s.base + " answered " + r.statusCode() + ": " + snippet(r.body()), retryAfter, null);
        }
        return m;
    }

    private static long seconds(String v) {
        try {
            return Math.max(0, Long.parseLong(v.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String snippet(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "…" : s;
    }

    // ---- Answers ----

    private static List<Range> ranges(Map<String, Object> m) {
        List<Range> out = new ArrayList<>();
        for (Object o : Json.list(m, "ranges")) {
            Map<String, Object> r = Json.object(o, "a range");
            out.add(new Range(Json.getLong(r, "start"), Json.getLong(r, "end"), Json.getLong(r, "stride"), Json.getLong(r, "count")));
        }
        return out;
    }

    private static long[] longs(Map<String, Object> m) {
        if (m.containsKey("id")) {
            return new long[] {Json.getLong(m, "id")};
        }
        List<Object> ids = Json.list(m, "ids");
        long[] out = new long[ids.size()];
        for (int i = 0; i < out.length; i++) {
            if (!(ids.get(i) instanceof Long)) {
                throw new IllegalArgumentException("frond's answer: an ID that is not a 64-bit integer");
            }
            out[i] = (Long) ids.get(i);
        }
        return out;
    }

    private static List<String> strings(Map<String, Object> m, String key) {
        String one = key.endsWith("s") ? key.substring(0, key.length() - 1) : key;
        if (key.equals("id_strs")) {
            one = "id_str";
        }
        if (m.get(one) instanceof String) {
            return List.of((String) m.get(one));
        }
        List<String> out = new ArrayList<>();
        for (Object o : Json.list(m, key)) {
            out.add(String.valueOf(o));
        }
        return out;
    }

    private static int count(long n, long max) {
        if (n < 1 || n > max) {
            throw new IllegalArgumentException("n " + n + ": 1 to " + max);
        }
        return (int) n;
    }

    private static String q(String s) {
        return URLEncoder.encode(s == null ? "" : s, StandardCharsets.UTF_8);
    }

    private static String path(String s) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("an empty name");
        }
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
