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
 */
final class Lease {
    /** The most IDs one lease request asks for (the server's bound). */
    static final long MAX_LEASE_REQUEST = 1_000_000;

    final FrondClient c;
    final String tag;

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

    Lease(FrondClient c, String tag) {
        this.c = c;
        this.tag = tag;
        this.size = c.o.minLease;
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
                return c.unleasedIds(tag, 1)[0];
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
                    c.markUnleased(tag, e.code());
                    return c.unleasedIds(tag, 1)[0];
                }
                throw new FrondException(e.code(), e.wireCode(), e.status(),
                        "tag " + tag + ": no ID in hand and none could be leased: " + e.getMessage(), e.retryAfterMillis(), e);
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
                        c.markUnleased(tag, err.code());
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
            List<Range> rs = c.lease(tag, ask);
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
