"""A benchmark of the Python client (not a test: it reports, it gates
nothing). Against real frond servers (FROND_TEST_BIN):

  FROND_TEST_BIN=path/to/frond python3 clients/python/bench.py [ROUNDS] [IDS]

1. ns per ID from a tag handle (a lease of 1,000,000), against a
   Python-level counter (an object whose __next__ adds one) and
   itertools.count, one thread and 8 threads: the median of ROUNDS rounds
   of IDS IDs each, after a warm-up, in the same run.
2. 8 threads (FrondClient) and 8 asyncio tasks (AsyncFrondClient) for 3 s
   on a tag of step 100,000, with no fault, then through a kill -9 of the
   preferred of two servers: IDs a second and the longest stall a caller
   saw (the longest time between two of its IDs)."""

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

from conftest import Frond  # noqa: E402
from frond_client import AsyncFrondClient, FrondClient  # noqa: E402


class Counter:
    """The Python-level counter the issue names: __next__ adds one."""

    def __init__(self):
        self.v = 0

    def __next__(self):
        self.v += 1
        return self.v


def per_id(make, ids, rounds, threads):
    """The median ns per ID of rounds rounds, each ids IDs split over threads."""
    out = []
    for r in range(rounds + 1):  # round 0 warms up
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
        t0 = time.perf_counter_ns()
        for t in ts:
            t.join()
        if r:
            out.append((time.perf_counter_ns() - t0) / (each * threads))
    return statistics.median(out)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    ids = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
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

        # A kill -9 under 8 threads, then under 8 asyncio tasks (a fresh
        # pair of servers for each).
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
    finally:
        a.kill()
        b.kill()


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
