"""A benchmark of the Python client (not a test: it reports, it gates
nothing). Against real frond servers (FROND_TEST_BIN):

  FROND_TEST_BIN=path/to/frond python3 clients/python/bench.py [ROUNDS] [IDS] [SECTION...]

1. ns per ID from a tag handle (a lease of 1,000,000), against a
   Python-level counter (an object whose __next__ adds one) and
   itertools.count, one thread and 8 threads: the median of ROUNDS rounds
   of IDS IDs each, after a warm-up, in the same run.
2. 8 threads (FrondClient) and 8 asyncio tasks (AsyncFrondClient) for 3 s
   on a tag of step 100,000, with no fault, then through a kill -9 of the
   preferred of two servers: IDs a second and the longest stall a caller
   saw (the longest time between two of its IDs).
3. Gene IDs (a tag with shard bits, shard:4): next_shard and next_for_key
   (a 7-byte key, a 21-byte one, both hashed once and then found in the
   hash's cache, and a new key each call) beside next_id's plain leased ID, each
   from a lease of 1,000,000, one thread and 8 threads, and awaited on
   AsyncFrondClient by one task: the process's CPU time per ID
   (time.process_time_ns: what a busy machine's other work takes is not
   counted), medians of ROUNDS rounds of IDS IDs.

SECTION is ids, kill or genes (all three when none is named)."""

import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "src"))
sys.path.insert(0, os.path.join(here, "tests"))

from frond_server import Frond  # noqa: E402  (standard library only: no pytest)
from frond_client import AsyncFrondClient, FrondClient  # noqa: E402


class Counter:
    """The Python-level counter the issue names: __next__ adds one."""

    def __init__(self):
        self.v = 0

    def __next__(self):
        self.v += 1
        return self.v


def per_id(make, ids, rounds, threads, warm=True, clock=time.perf_counter_ns):
    """The median ns per ID of rounds rounds, each ids IDs split over threads
    (after a round that warms up, unless warm is False), by clock."""
    out = []
    for r in range(rounds + 1 if warm else 1):
        fns = [make() for _ in range(threads)]
        each = ids // threads
        barrier = threading.Barrier(threads + 1)

        def run(fn):
            barrier.wait()
            for _ in range(each):
                fn()

        ts = [threading.Thread(target=run, args=(fn,)) for fn in fns]
        for t in ts:
            t.start()
        barrier.wait()
        t0 = clock()
        for t in ts:
            t.join()
        if r or not warm:
            out.append((clock() - t0) / (each * threads))
    return statistics.median(out)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    ids = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    sections = set(sys.argv[3:]) or {"ids", "kill", "genes"}
    tmp = tempfile.mkdtemp(prefix="frond-py-bench-")
    store = "sqlite://" + os.path.join(tmp, "shared.db")
    a = Frond(os.path.join(tmp, "a"), {}, "--store", store)
    b = Frond(os.path.join(tmp, "b"), {"FROND_NODE": "1"}, "--store", store)
    try:
        c = FrondClient([a.url, b.url], min_lease=1_000_000, max_lease=1_000_000)
        c.create_tag("bench", 1_000_000)
        tag = c.tag("bench")
        tag.next()
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; median of {rounds} rounds of {ids:,} IDs")
        if "genes" in sections:
            genes(c, rounds, ids)
        if "ids" not in sections:
            c.close()
            if "kill" in sections:
                kills()
            return
        print("| | 1 thread, ns per ID | 8 threads, ns per ID |")
        print("|---|---|---|")
        rows = [
            ("Python-level counter (`__next__` adds one)", lambda: Counter().__next__),
            ("`itertools.count`", lambda: itertools.count().__next__),
            ("`tag.try_next()`", lambda: tag.try_next),
            ("`tag.next()`", lambda: tag.next),
            ("`client.next_id(\"bench\")`", lambda: (lambda: c.next_id("bench"))),
        ]
        base = {}
        for name, make in rows:
            one, eight = per_id(make, ids, rounds, 1), per_id(make, ids, rounds, 8)
            base.setdefault(1, one)
            base.setdefault(8, eight)
            print(f"| {name} | {one:.0f} ({one / base[1]:.1f}x) | {eight:.0f} ({eight / base[8]:.1f}x) |")
        c.close()
        if "kill" in sections:
            kills()
    finally:
        a.kill()
        b.kill()


def kills():
    """A kill -9 under 8 threads, then under 8 asyncio tasks (a fresh pair
    of servers for each)."""
    for kind in ("threads", "asyncio"):
        d = tempfile.mkdtemp(prefix="frond-py-bench-kill-")
        st = "sqlite://" + os.path.join(d, "s.db")
        x = Frond(os.path.join(d, "x"), {}, "--store", st)
        y = Frond(os.path.join(d, "y"), {"FROND_NODE": "1"}, "--store", st)
        try:
            for kill in (False, True):
                n, stall, secs = kill_run(kind, x, y, kill)
                what = "kill -9 of the preferred of two servers" if kill else "no fault"
                print(f"{what}, 8 {kind}: {n:,} IDs in {secs:.1f} s ({n / secs:,.0f}/s), none twice; the longest stall {stall * 1000:.1f} ms")
        finally:
            x.kill()
            y.kill()


def genes(c, rounds, ids):
    """What a gene ID (next_shard, next_for_key) costs beside a plain leased
    ID (next_id), in one run: threads, then one asyncio task, in CPU time
    of this process (the servers are other processes; a lease is fetched
    once a million IDs). Each round measures every row in turn; the ratio
    is the median of each round's ratio to next_id's."""
    c.create_tag("genes", 1_000_000, mapping="shard:4")
    tag = c.tag("bench")
    long_key = "tenant-7/user-4200042"  # 21 bytes
    # Keys never seen lately (the hash's cache holds 16,384): user-N, N
    # counting up over all threads, more keys than the cache holds.
    fresh = [f"user-{i}" for i in range(max(ids, 4 * 65536))]
    turn = itertools.count()
    rows = [
        ("`client.next_id(\"bench\")` (plain, from the lease)", lambda: (lambda: c.next_id("bench"))),
        ("`tag.next()` (plain, a handle)", lambda: tag.next),
        ("`client.next_shard(\"genes\", 5)`", lambda: (lambda: c.next_shard("genes", 5))),
        ("`client.next_for_key(\"genes\", \"user-42\")`", lambda: (lambda: c.next_for_key("genes", "user-42"))),
        (f"`client.next_for_key(\"genes\", key)`, a {len(long_key)}-byte key", lambda: (lambda: c.next_for_key("genes", long_key))),
        ("`client.next_for_key(\"genes\", key)`, a new key each call (`user-N`)",
         lambda: (lambda: c.next_for_key("genes", fresh[next(turn) % len(fresh)]))),
    ]
    for _, make in rows:
        make()()
    for threads in (1, 8):
        per = [[] for _ in rows]
        for r in range(rounds + 1):  # round 0 warms up
            for k, (_, make) in enumerate(rows):
                ns = per_id(make, ids, 0, threads, warm=False, clock=time.process_time_ns)
                if r:
                    per[k].append(ns)
        print(f"| gene IDs (shard:4), {threads} thread{'s' if threads > 1 else ''} | CPU ns per ID | beside `next_id` |")
        print("|---|---|---|")
        for k, (name, _) in enumerate(rows):
            ratio = statistics.median(a / b for a, b in zip(per[k], per[0]))
            print(f"| {name} | {statistics.median(per[k]):.0f} | {ratio:.2f}x |")

    async def run():
        async with AsyncFrondClient(c.o.servers, min_lease=1_000_000, max_lease=1_000_000) as ac:
            calls = [
                ("`await client.next_id(\"bench\")` (plain)", lambda: ac.next_id("bench")),
                ("`await client.next_shard(\"genes\", 5)`", lambda: ac.next_shard("genes", 5)),
                ("`await client.next_for_key(\"genes\", \"user-42\")`", lambda: ac.next_for_key("genes", "user-42")),
            ]
            per = [[] for _ in calls]
            for _, call in calls:
                await call()
            for r in range(rounds + 1):
                for k, (_, call) in enumerate(calls):
                    t0 = time.process_time_ns()
                    for _ in range(ids):
                        await call()
                    if r:
                        per[k].append((time.process_time_ns() - t0) / ids)
            return [(name, statistics.median(p), statistics.median(a / b for a, b in zip(p, per[0]))) for (name, _), p in zip(calls, per)]

    print("| gene IDs (shard:4), asyncio, one task | CPU ns per ID | beside `next_id` |")
    print("|---|---|---|")
    for name, ns, ratio in asyncio.run(run()):
        print(f"| {name} | {ns:.0f} | {ratio:.2f}x |")


def kill_run(kind, x, y, kill=True):
    opts = dict(timeout=1, backoff_min=0.05, backoff_max=1)  # leases as by default: 1,000 to 1,000,000
    seen, stalls = [], []
    stop = threading.Event()
    if kind == "threads":
        c = FrondClient([x.url, y.url], **opts)
        c.create_tag(f"k{kill}", 100_000)
        t = c.tag(f"k{kill}")

        def loop():
            mine, last, worst = [], time.perf_counter(), 0.0
            while not stop.is_set():
                v = t.next()
                now = time.perf_counter()
                worst, last = max(worst, now - last), now
                mine.append(v)
            seen.extend(mine)
            stalls.append(worst)

        ts = [threading.Thread(target=loop) for _ in range(8)]
        t0 = time.perf_counter()
        for th in ts:
            th.start()
        time.sleep(1)
        if kill:
            x.kill()
        time.sleep(2)
        stop.set()
        for th in ts:
            th.join()
        c.close()
    else:
        async def run():
            async with AsyncFrondClient([x.url, y.url], **opts) as c:
                await c.create_tag(f"k{kill}", 100_000)
                t = c.tag(f"k{kill}")

                async def loop():
                    mine, last, worst = [], time.perf_counter(), 0.0
                    while not stop.is_set():
                        v = t.try_next()
                        if v is None:
                            v = await t.next()
                        else:
                            await asyncio.sleep(0)  # other tasks run, as in a server
                        now = time.perf_counter()
                        worst, last = max(worst, now - last), now
                        mine.append(v)
                    seen.extend(mine)
                    stalls.append(worst)

                async def killer():
                    await asyncio.sleep(1)
                    if kill:
                        x.kill()
                    await asyncio.sleep(2)
                    stop.set()

                await asyncio.gather(killer(), *(loop() for _ in range(8)))

        t0 = time.perf_counter()
        asyncio.run(run())
    secs = time.perf_counter() - t0
    if len(set(seen)) != len(seen):
        raise SystemExit(f"{len(seen) - len(set(seen))} IDs twice")
    return len(seen), max(stalls), secs


if __name__ == "__main__":
    main()
