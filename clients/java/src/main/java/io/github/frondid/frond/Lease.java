package io.github.frondid.frond;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The leases of one tag: the current one, from which IDs are handed out by
 * an atomic add, and the next one, fetched in the background once a tenth
 * of the current one is used (Leaf's double buffer, over a client's
 * leases).
 *
 * <p>A lease of counters ({@code counters}: nextShard, nextForKey) leases
 * the tag's counters ({@code counters=1}) rather than its IDs: the answer
 * says the tag's shard bits K ({@link #shardBits}), and each ID is made in
 * process, {@code counter << K | shard} ({@link #gene}). A client keeps the
 * two apart: a tag with shard bits refuses plain leases
 * ({@code form_not_carried}), so that no client hands out bare counters.
 */
final class Lease {
    /** The most IDs one lease request asks for (the server's bound). */
    static final long MAX_LEASE_REQUEST = 1_000_000;
    /**
     * What {@link #next()} of a lease of counters answers once the servers refused to lease them
     * (not_leasable: a sequence tag): the IDs are then asked for call by call, each with its shard.
     * Counters are never negative.
     */
    static final long UNLEASED = Long.MIN_VALUE;

    final FrondClient c;
    final String tag;
    /** Whether this is a lease of the tag's counters (nextShard) rather than of its IDs (nextId). */
    final boolean counters;
    // Of a lease of counters: the tag's shard bits as the last lease said
    // (-1 before the first; 0: the tag has none, its counters are plain
    // IDs). Written before the lease's counters are handed out.
    volatile int shardBits = -1;

    // The lease IDs are handed out of: read without a lock.
    private volatile Segment cur = Segment.EMPTY;
    // Guarded by this.
    private Segment next;
    private boolean fetching;
    private long size;
    private long floor = Long.MIN_VALUE; // the end of the highest ID leased (strictly increasing IDs)
    // Set once the server refused to lease the tag (not_leasable: a
    // sequence tag; form_not_carried: its IDs are not plain numbers): its
    // IDs are then asked for call by call.
    volatile ErrorCode via;

    Lease(FrondClient c, String tag, boolean counters) {
        this.c = c;
        this.tag = tag;
        this.counters = counters;
        this.size = c.o.minLease;
    }

    /** What a lease request answered: its ranges and, for a lease of counters, the tag's shard bits. */
    static final class Answer {
        final List<Range> ranges;
        final int shardBits;

        Answer(List<Range> ranges, int shardBits) {
            this.ranges = ranges;
            this.shardBits = shardBits;
        }
    }

    /**
     * The next ID of a tag with shard bits, from this lease of counters: {@code counter << K | shard}, the
     * shard given or, with a key, {@link Shards#shardOf}(key, K). A shard past 2^K-1 and a tag without shard
     * bits are INVALID_ARGUMENT (once a lease said the tag has none, no counter is taken); a counter that
     * does not fit below the K bits is TAG_EXHAUSTED.
     */
    long gene(long shard, String key) {
        int bits = shardBits;
        if (bits > 0) { // known: a tag's shard bits never change
            if (key == null && shard >> bits != 0) {
                throw badShard(shard, bits); // before a counter is taken: no gap
            }
            long n = next();
            return n == UNLEASED ? c.unleasedShard(tag, shard, key) : place(n, bits, shard, key);
        }
        if (bits == 0) {
            throw noShardBits();
        }
        // The first ID: K is known once a lease said it (or, when the servers
        // will not lease the counters, the calls carry the shard).
        long n = next();
        if (n == UNLEASED) {
            return c.unleasedShard(tag, shard, key);
        }
        bits = shardBits; // as the lease n came from said
        if (bits <= 0) {
            throw noShardBits(); // n, a plain ID of the tag, is skipped: a gap of one
        }
        if (key == null && shard >> bits != 0) {
            throw badShard(shard, bits);
        }
        return place(n, bits, shard, key);
    }

    // place is counter n moved up by the bits, the shard (the key's) below.
    private long place(long n, int bits, long shard, String key) {
        if (key != null) {
            shard = Shards.keyHash(key) & ((1L << bits) - 1);
        }
        if (n < 0 || n > Long.MAX_VALUE >> bits) {
            throw new FrondException(ErrorCode.TAG_EXHAUSTED, null, 0, "tag " + tag + ": counter " + n + " does not fit below its " + bits
                    + " shard bits (at most 2^" + (63 - bits) + "-1): use a new tag", 0, null);
        }
        return n << bits | shard;
    }

    private FrondException noShardBits() {
        return new FrondException(ErrorCode.INVALID_ARGUMENT, null, 0, "tag " + tag + " has no shard bits: take its IDs with nextId", 0, null);
    }

    private FrondException badShard(long shard, int bits) {
        return new FrondException(ErrorCode.INVALID_ARGUMENT, null, 0, "shard " + shard + ": tag " + tag + " has " + bits + " shard bits (0 to " + ((1L << bits) - 1) + ")", 0, null);
    }

    // unleased records that the servers refuse to lease this tag (or its
    // counters): its IDs are asked for call by call from then on.
    private void unleased(ErrorCode why) {
        if (counters) {
            via = why;
        } else {
            c.markUnleased(tag, why);
        }
    }

    // unleasedNext is the next ID of a tag that cannot be leased: one call
    // (a lease of counters leaves it to gene, which knows the shard).
    private long unleasedNext() {
        return counters ? UNLEASED : c.unleasedIds(tag, 1)[0];
    }

    /** IDs of one lease: ranges, handed out by index. */
    static final class Segment {
        static final Segment EMPTY = new Segment(new ArrayList<>(), 0);

        final AtomicLong pos = new AtomicLong();
        final long count, prefetchAt, loadedAt;
        final long start0, stride0, count0; // the first range: the hot path's
        final Range[] ranges;

        Segment(List<Range> rs, long loadedAt) {
            this.ranges = rs.toArray(new Range[0]);
            long n = 0;
            for (Range r : ranges) {
                n += r.count;
            }
            this.count = n;
            this.prefetchAt = n / 10;
            this.loadedAt = loadedAt;
            this.start0 = ranges.length > 0 ? ranges[0].start : 0;
            this.stride0 = ranges.length > 0 ? ranges[0].stride : 1;
            this.count0 = ranges.length > 0 ? ranges[0].count : 0;
        }

        long at(long i) {
            if (i < count0) {
                return start0 + i * stride0;
            }
            for (Range r : ranges) {
                if (i < r.count) {
                    return r.at(i);
                }
                i -= r.count;
            }
            throw new IllegalStateException("index past the lease");
        }

        long remaining() {
            return Math.max(0, count - pos.get());
        }

        long max() {
            long m = Long.MIN_VALUE;
            for (Range r : ranges) {
                if (r.count > 0) {
                    m = Math.max(m, r.at(r.count - 1));
                }
            }
            return m;
        }
    }

    /** The next ID: an atomic add on the lease in hand. */
    long next() {
        Segment s = cur;
        long i = s.pos.getAndIncrement();
        if (i < s.count) {
            if (i == s.prefetchAt) {
                prefetch();
            }
            return s.at(i);
        }
        return slow();
    }

    // slow runs when the lease in hand is used up: the next one takes its
    // place (fetched now if it is not there: the caller waits).
    private synchronized long slow() {
        boolean waited = false;
        while (true) {
            Segment s = cur;
            long i = s.pos.getAndIncrement();
            if (i < s.count) {
                return s.at(i);
            }
            if (next != null) {
                resize(s, waited);
                cur = next;
                next = null;
                continue;
            }
            if (via != null) {
                return unleasedNext();
            }
            if (fetching) { // the background fetch is under way: wait for it
                waited = true;
                try {
                    wait(c.o.timeout.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FrondException(ErrorCode.UNKNOWN, "", 0, "interrupted", 0, e);
                }
                continue;
            }
            // Nothing in hand: fetch now, the caller waits.
            waited = true;
            c.waits.incrementAndGet();
            size = Math.min(size * 2, c.o.maxLease); // a lease that came too late doubles
            try {
                next = fetch(size);
            } catch (FrondException e) {
                if (e.code() == ErrorCode.NOT_LEASABLE || e.code() == ErrorCode.FORM_NOT_CARRIED) {
                    unleased(e.code());
                    return unleasedNext();
                }
                throw e.withMessage("tag " + tag + ": no ID in hand and none could be leased: " + e.getMessage());
            }
        }
    }

    // resize sizes the next lease by how long the one used up lasted.
    private void resize(Segment used, boolean waited) {
        if (used.loadedAt == 0) {
            return;
        }
        long lasted = System.nanoTime() - used.loadedAt, target = c.o.leaseTarget.toNanos();
        if (waited || lasted < target / 2) {
            size = Math.min(size * 2, c.o.maxLease);
        } else if (lasted > 2 * target) {
            size = Math.max(size / 2, c.o.minLease);
        }
    }

    // prefetch fetches the next lease in the background, once.
    private void prefetch() {
        synchronized (this) {
            if (fetching || next != null || c.closed()) {
                return;
            }
            fetching = true;
        }
        long n = size;
        try {
            c.background.execute(() -> {
                Segment got = null;
                FrondException err = null;
                try {
                    got = fetch(n);
                } catch (FrondException e) {
                    err = e;
                } catch (RuntimeException e) {
                    err = new FrondException(ErrorCode.UNKNOWN, "", 0, "tag " + tag + ": " + e, 0, e);
                }
                synchronized (Lease.this) {
                    fetching = false;
                    if (got != null && next == null) {
                        next = got;
                    }
                    if (err != null && (err.code() == ErrorCode.NOT_LEASABLE || err.code() == ErrorCode.FORM_NOT_CARRIED)) {
                        unleased(err.code());
                    }
                    Lease.this.notifyAll();
                }
            });
        } catch (RejectedExecutionException e) { // closed
            synchronized (this) {
                fetching = false;
                notifyAll();
            }
        }
    }

    // fetch leases n IDs from a server. By default IDs increase strictly:
    // what lies below the IDs leased before is skipped (after a fail-over
    // to a server whose buffered ranges are lower): a gap, never a
    // duplicate.
    private Segment fetch(long n) {
        long ask = n;
        for (int tries = 0; ; tries++) {
            Answer a = c.lease(tag, ask, counters);
            List<Range> rs = a.ranges;
            List<Range> kept = new ArrayList<>();
            long below;
            synchronized (this) {
                below = floor;
            }
            for (Range r : rs) {
                if (c.o.unordered || r.count == 0 || r.start > below) {
                    kept.add(r);
                    continue;
                }
                if (r.at(r.count - 1) <= below) {
                    continue; // wholly below
                }
                long skip = (below - r.start) / r.stride + 1;
                kept.add(new Range(r.at(skip), r.end, r.stride, r.count - skip));
            }
            Segment s = new Segment(kept, System.nanoTime());
            if (s.count > 0) {
                synchronized (this) {
                    floor = Math.max(floor, s.max());
                }
                if (counters) {
                    shardBits = a.shardBits; // before its counters are handed out
                }
                return s;
            }
            // The whole lease lay below the IDs handed out: this server had
            // them buffered before another served this client (a fail-over).
            // Ask for what lies between as well, so that the next lease
            // passes it, however far behind the buffer lies (issue 60: ten
            // capped leases in a row failed with the wrong advice).
            long top = 0;
            for (Range r : rs) {
                if (r.count > 0) {
                    top = Math.max(top, r.at(r.count - 1));
                }
            }
            ask = Math.min(n + Math.max(below - top, 0), MAX_LEASE_REQUEST);
            if (tries >= 64) {
                throw new FrondException(ErrorCode.STORE_UNAVAILABLE, "store_unavailable", 0, "tag " + tag + ": 64 leases in a row, the last of " + ask
                        + " IDs, lay below the IDs this client handed out: the servers' stores interleave (a set of stores, whose IDs do not increase across stores); "
                        + "set unordered(true) if IDs need not increase per client", 1000, null);
            }
        }
    }

    synchronized long remaining() {
        return cur.remaining() + (next == null ? 0 : next.remaining());
    }

    synchronized long size() {
        return size;
    }
}
