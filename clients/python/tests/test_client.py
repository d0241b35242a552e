"""The Python client against real frond servers (FROND_TEST_BIN): pytest."""

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from frond_client import AsyncFrondClient, ErrorCode, FrondClient, FrondError, decode, preset


def test_leases_and_grows(frond):
    s = frond()
    with FrondClient([s.url], min_lease=10, max_lease=100_000, admin_token="") as c:
        c.create_tag("order", 10)
        t = c.tag("order")
        prev = 0
        for i in range(20_000):
            v = c.next_id("order") if i % 3 == 0 else t.next() if i % 3 == 1 else (t.try_next() or t.next())
            assert v > prev, f"ID {v} after {prev}"
            prev = v
        st = c.stats()
        assert st["leases"]["order"]["size"] > 10, st
        assert st["calls"] < 2000, st
        batch = c.next_ids("order", 5)
        assert batch[0] > prev and batch == sorted(batch)


def test_ids_past_2_53_and_near_2_63(frond):
    s = frond()
    with FrondClient([s.url], min_lease=100) as c:
        for base in (2**53 + 12_345, 2**63 - 10_000_000):
            name = f"big{base % 1000}"
            c.create_tag(name, 100, max_id=base)
            assert c.next_id(name) == base
            assert c.next_id(name) == base + 1
            rs = c.next_ranges(name, 3)
            assert rs[0].start > base and rs[0].end - rs[0].start == 3
        c.create_tag("bigseq", 1, mode="sequence", max_id=2**53 + 7)
        assert c.next_ids("bigseq", 2) == [2**53 + 7, 2**53 + 8]
        assert c.next_id("bigseq") == 2**53 + 9
        sf = c.snowflake(3)
        assert all(x > 2**53 for x in sf) and decode(sf[0]).id == sf[0]


def test_fails_over_without_duplicates(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "shared.db")
    a = frond("a", {}, "--store", store)
    b = frond("b", {"FROND_NODE": "1"}, "--store", store)
    with FrondClient([a.url, b.url], timeout=1, backoff_min=0.05, backoff_max=1, min_lease=100, max_lease=10_000, lease_target=0.2) as c:
        c.create_tag("pay", 100)
        seen, errors, stop = [], [], threading.Event()

        def loop():
            mine = []
            try:
                while not stop.is_set():
                    mine.append(c.next_id("pay"))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            seen.append(mine)

        threads = [threading.Thread(target=loop) for _ in range(8)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        a.kill()
        time.sleep(0.7)
        stop.set()
        for th in threads:
            th.join()
        assert not errors, errors
        every = [v for mine in seen for v in mine]
        assert len(every) > 1000 and len(set(every)) == len(every), "an ID handed out twice"
        for mine in seen:
            assert mine == sorted(mine) and len(set(mine)) == len(mine), "a thread's IDs did not increase"


def test_passes_a_buffer_far_behind(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "far.db")
    env = {"FROND_SEGMENT__FIXED_STEP": "true"}
    a = frond("a", env, "--store", store)
    b = frond("b", dict(env, FROND_NODE="1"), "--store", store)
    with FrondClient([a.url, b.url], timeout=2, backoff_min=0.02, backoff_max=0.2, min_lease=100, max_lease=1_000) as c:
        c.create_tag("far", 50_000)
        with urllib.request.urlopen(b.url + "/v1/segment/far") as r:  # b buffers [1, 50001)
            assert r.status == 200
        prev = 0
        for _ in range(3_000):
            v = c.next_id("far")
            assert v > prev
            prev = v
        assert prev > 50_001
        a.kill()
        for _ in range(3_000):
            v = c.next_id("far")
            assert v > prev
            prev = v


def test_typed_errors_and_per_call(frond):
    s = frond()
    with FrondClient([s.url]) as c:
        with pytest.raises(FrondError) as e:
            c.next_id("nope")
        assert e.value.code is ErrorCode.TAG_NOT_FOUND and not e.value.retryable and e.value.status == 404 and e.value.hint
        assert len(c.uuids(7, 3)) == 3 and c.type_ids("user")[0].startswith("user_")
        assert len(c.snowflake_strings("base62", 2)) == 2
    with FrondClient(["127.0.0.1:1"], timeout=0.5, backoff_min=0.01, backoff_max=0.02) as c:
        with pytest.raises(FrondError) as e:
            c.snowflake()
        assert e.value.code is ErrorCode.UNKNOWN and e.value.status == 0 and e.value.retryable


def test_tokens(frond):
    s = frond("a", {"FROND_TOKENS__t0ken-order": "order"}, "--admin-token", "adm1n-secret")
    with FrondClient([s.url]) as anon, FrondClient([s.url], admin_token="adm1n-secret") as admin, FrondClient([s.url], tag_token="t0ken-order") as c:
        with pytest.raises(FrondError) as e:
            anon.create_tag("order", 10)
        assert e.value.code is ErrorCode.UNAUTHORIZED
        admin.create_tag("order", 10)
        with pytest.raises(FrondError) as e:
            anon.next_id("order")
        assert e.value.code is ErrorCode.FORBIDDEN
        assert c.next_id("order") == 1


def test_keyed_sequences(frond):
    s = frond()
    with FrondClient([s.url], admin_token="") as c:
        urllib.request.urlopen(urllib.request.Request(s.url + "/v1/spaces", data=b'{"name":"msgs","step":100,"sections":4}', method="POST")).close()
        last = {}
        for i in range(50):
            for key in ("conv-1", ".", "..", "a/b"):
                first, end = c.seq("msgs", key, 1 + i % 3)
                assert first > last.get(key, 0) and end == first + i % 3
                last[key] = end


def test_asyncio(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "aio.db")
    a = frond("a", {}, "--store", store)
    b = frond("b", {"FROND_NODE": "1"}, "--store", store)

    async def main():
        async with AsyncFrondClient([a.url, b.url], timeout=1, backoff_min=0.05, backoff_max=1, min_lease=100, max_lease=10_000) as c:
            await c.create_tag("aio", 100)
            t = c.tag("aio")
            seen = []

            async def loop(n):
                prev = 0
                for _ in range(n):
                    v = t.try_next()
                    if v is None:
                        v = await t.next()
                    assert v > prev
                    prev = v
                    seen.append(v)

            await asyncio.gather(*(loop(2_000) for _ in range(4)))
            a.kill()
            await asyncio.gather(*(loop(2_000) for _ in range(4)))
            assert len(set(seen)) == len(seen) == 16_000
            assert (await c.next_ids("aio", 3))[0] > 0
            assert len(await c.snowflake(2)) == 2
            with pytest.raises(FrondError) as e:
                await c.next_id("missing")
            assert e.value.code is ErrorCode.TAG_NOT_FOUND

    asyncio.run(main())


def test_tls_with_a_ca_file(frond, tmp_path):
    f = lambda n: str(tmp_path / n)  # noqa: E731
    (tmp_path / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")

    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=frond test CA", "-keyout", f("ca.key"), "-out", f("ca.pem"))
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f("key.pem"), "-out", f("cert.csr"))
    ossl("x509", "-req", "-in", f("cert.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-days", "2", "-extfile", f("ext.cnf"), "-out", f("cert.pem"))
    s = frond("tls", {}, "--tls-cert-file", f("cert.pem"), "--tls-key-file", f("key.pem"))
    assert s.url.startswith("https://")
    with FrondClient([s.url], ca_file=f("ca.pem")) as c:
        assert len(c.snowflake(2)) == 2

    async def aio():
        async with AsyncFrondClient([s.url], ca_file=f("ca.pem")) as c:
            assert len(await c.snowflake(2)) == 2

    asyncio.run(aio())
    with FrondClient([s.url], attempts=1) as untrusting:
        with pytest.raises(FrondError):
            untrusting.snowflake()


def test_decode_offline():
    p = decode("2126681580226215936")
    assert p.layout == "twitter" and p.time.year == 2026
    l = preset("twitter", 5)
    q = decode((1 << 22) * 7 + (3 << 17) + (9 << 12) + 5, l)
    assert (q.datacenter, q.worker, q.sequence) == (3, 9, 5)
    with pytest.raises(ValueError):
        preset("nope")


def test_lease_serves_while_every_server_is_down(frond):
    s = frond("a")
    with FrondClient([s.url], timeout=0.5, backoff_min=0.05, backoff_max=0.2, attempts=2, min_lease=5000, max_lease=5000) as c:
        c.create_tag("down", 1000)
        t = c.tag("down")
        first = t.next()
        s.kill()
        # The lease in hand (and the one prefetched, if any) keeps serving.
        got = [t.next() for _ in range(3000)]
        assert got == list(range(first + 1, first + 3001))
        with pytest.raises(FrondError) as e:
            while True:
                t.next()
        assert e.value.retryable and "no ID in hand" in str(e.value)


def test_a_slow_server_is_passed_by(frond):
    import http.server

    release = threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            release.wait(5)  # past the client's timeout
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args):
            pass

    slow = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    s = frond("a")
    try:
        with FrondClient([f"http://127.0.0.1:{slow.server_port}", s.url], timeout=0.3, backoff_min=0.5, backoff_max=1) as c:
            c.create_tag("slow", 100)  # admin calls fail over too
            t0 = time.monotonic()
            ids = [c.next_id("slow") for _ in range(50)]
            assert ids == sorted(ids) and len(set(ids)) == 50
            assert time.monotonic() - t0 < 3, "the slow server was waited for more than once"
            assert c.stats()["failovers"] >= 1
    finally:
        release.set()
        slow.shutdown()


def test_asyncio_8_tasks_through_a_kill(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "aio8.db")
    a = frond("a", {}, "--store", store)
    b = frond("b", {"FROND_NODE": "1"}, "--store", store)
    stalls = []

    async def main():
        async with AsyncFrondClient([a.url, b.url], timeout=1, backoff_min=0.05, backoff_max=1, min_lease=100, max_lease=10_000) as c:
            await c.create_tag("aio8", 100)
            t = c.tag("aio8")
            seen, stop = [], asyncio.Event()

            async def loop():
                prev, last, worst = 0, time.monotonic(), 0.0
                while not stop.is_set():
                    v = t.try_next()
                    if v is None:
                        v = await t.next()
                    else:
                        await asyncio.sleep(0)
                    now = time.monotonic()
                    worst, last = max(worst, now - last), now
                    assert v > prev
                    prev = v
                    seen.append(v)
                stalls.append(worst)

            async def killer():
                await asyncio.sleep(0.3)
                a.kill()
                await asyncio.sleep(0.7)
                stop.set()

            await asyncio.gather(killer(), *(loop() for _ in range(8)))
            assert len(seen) > 1000 and len(set(seen)) == len(seen), "an ID handed out twice"

    asyncio.run(main())
    print(f"8 asyncio tasks through a kill -9: the longest stall {max(stalls) * 1000:.1f} ms")


def test_bench_runs_without_pytest():
    """bench.py, the documented benchmark, needs the client alone: run with
    pytest made unimportable, it measures and prints its table (it imported
    conftest, and so pytest: `No module named 'pytest'` under another
    python3)."""
    bench = os.path.join(os.path.dirname(__file__), "..", "bench.py")
    code = ("import runpy, sys; sys.modules['pytest'] = None; "
            "sys.argv = ['bench.py', '1', '2000', 'ids']; runpy.run_path(%r, run_name='__main__')" % bench)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "`tag.try_next()`" in out.stdout and "ns per ID" in out.stdout, out.stdout


def seq_pair(frond, tmp_path, lease="3s"):
    """Two servers sharing one store, the keyed sequence space msgs (16
    sections) started on both and its sections split between them."""
    store = "sqlite://" + str(tmp_path / "seq.db")
    env = {"FROND_SEQUENCES__LEASE_TTL": lease}
    a = frond("a", env, "--store", store)
    b = frond("b", dict(env, FROND_NODE="1"), "--store", store)
    req = urllib.request.Request(a.url + "/v1/spaces", data=b'{"name":"msgs","step":1000,"sections":16}', method="POST")
    urllib.request.urlopen(req).close()
    deadline = time.monotonic() + 30
    while True:
        held = []
        for s in (a, b):
            urllib.request.urlopen(s.url + "/v1/seq/msgs/start").close()  # starts the space on each
            with urllib.request.urlopen(s.url + "/v1/spaces") as r:
                spaces = json.loads(r.read())["spaces"]
            held.append(sum(sp.get("held", 0) for sp in spaces if sp["name"] == "msgs"))
        if all(held) and sum(held) == 16:
            return a, b
        assert time.monotonic() < deadline, "the sections were not split: %s" % held
        time.sleep(0.2)


def forwarded(*servers):
    """The requests of msgs the servers forwarded to a section's owner."""
    n = 0
    for s in servers:
        with urllib.request.urlopen(s.url + "/metrics") as r:
            for line in r.read().decode().splitlines():
                if line.startswith('frond_keyseq_forwarded_total{space="msgs"}'):
                    n += int(float(line.split()[-1]))
    return n


def test_seq_goes_to_the_sections_owner(frond, tmp_path):
    """Once an answer named a key's section's owner (Frond-Seq-Section), the
    client sends the key there: one hop, no forward; both clients."""
    a, b = seq_pair(frond, tmp_path)
    keys = ["key-%d" % i for i in range(64)]
    with FrondClient([a.url, b.url]) as c:
        before = forwarded(a, b)
        for k in keys:
            c.seq("msgs", k)
        learned = forwarded(a, b)
        assert learned > before, "no key was forwarded while the client knew no owner: the test shows nothing"
        for k in keys:
            c.seq("msgs", k)
        assert forwarded(a, b) == learned

    async def aio():
        async with AsyncFrondClient([b.url, a.url]) as ac:
            for k in keys:
                await ac.seq("msgs", k)
            mid = forwarded(a, b)
            for k in keys:
                await ac.seq("msgs", k)
            assert forwarded(a, b) == mid

    asyncio.run(aio())


@pytest.mark.parametrize("kind", ["threads", "asyncio"])
def test_seq_rides_through_a_kill(frond, tmp_path, kind):
    """kill -9 of one of two servers while 4 callers ask seq(msgs, key, 1) of
    64 keys: no caller sees an error, every key's values increase, and each
    caller's answers come again within 2 s of the survivor taking the dead
    owner's sections (its log says when: about the lease, 5 s, after the
    kill; a call's attempts alone ran out before that)."""
    a, b = seq_pair(frond, tmp_path, lease="5s")
    keys = ["conv-%d" % i for i in range(64)]
    values = {k: [] for k in keys}
    errors, gaps, killed = [], [], []
    stop = threading.Event()

    if kind == "threads":
        c = FrondClient([a.url, b.url], timeout=1)

        def caller(mine):
            prev = time.monotonic()
            gap = 0.0
            while not stop.is_set():
                for k in mine:
                    try:
                        first, _ = c.seq("msgs", k, 1)
                    except FrondError as e:
                        errors.append(e)
                        return
                    values[k].append(first)
                    now = time.monotonic()
                    gap, prev = max(gap, now - prev), now
            gaps.append(gap)

        ts = [threading.Thread(target=caller, args=(keys[i::4],)) for i in range(4)]
        for t in ts:
            t.start()
        time.sleep(1.5)
        killed.append(time.time())
        a.kill()
        time.sleep(10)
        stop.set()
        for t in ts:
            t.join()
        c.close()
    else:
        async def main():
            async with AsyncFrondClient([a.url, b.url], timeout=1) as ac:
                async def caller(mine):
                    prev = time.monotonic()
                    gap = 0.0
                    while not stop.is_set():
                        for k in mine:
                            try:
                                first, _ = await ac.seq("msgs", k, 1)
                            except FrondError as e:
                                errors.append(e)
                                return
                            values[k].append(first)
                            now = time.monotonic()
                            gap, prev = max(gap, now - prev), now
                    gaps.append(gap)

                async def killer():
                    await asyncio.sleep(1.5)
                    killed.append(time.time())
                    a.kill()
                    await asyncio.sleep(10)
                    stop.set()

                await asyncio.gather(killer(), *(caller(keys[i::4]) for i in range(4)))

        asyncio.run(main())
    assert not errors, errors
    for k, vs in values.items():
        assert vs and all(x < y for x, y in zip(vs, vs[1:])), "key %s: %s" % (k, vs)
    taken = taken_after(b, killed[0])
    print("the longest wait of a caller through the kill: %.2f s; the survivor took the sections %.2f s after it" % (max(gaps), taken))
    assert len(gaps) == 4 and max(gaps) < taken + 2, (gaps, taken)


def taken_after(s, since):
    """How long after since (time.time()) s's log first says it took sections."""
    import calendar
    import re
    for line in s.log:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", str(rec.get("time", "")))
        if rec.get("msg") == "keyed sequence: sections taken" and m:
            t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + float(m.group(2) or 0)
            if t > since:
                return t - since
    raise AssertionError("the survivor never took sections after the kill:\n" + "".join(s.log))


def test_error_names_what_a_server_answered():
    """Once every attempt failed, the error is the last a server answered
    (503 store_unavailable, its Retry-After and hint), not the last
    attempt's refused connection (it said UNKNOWN, status 0); a live
    server rests for its Retry-After only."""
    import http.server
    import socket

    timeouts = []  # the Frond-Timeout each request carried

    class Busy(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            timeouts.append(self.headers.get("Frond-Timeout"))
            body = b'{"error":{"code":"store_unavailable","message":"the section is between owners","hint":"retry: the section is taken within a lease"}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    live = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=live.serve_forever, daemon=True).start()
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_url = "http://127.0.0.1:%d" % dead.getsockname()[1]
    dead.close()  # nothing listens there: refused
    live_url = "http://127.0.0.1:%d" % live.server_address[1]
    try:
        with FrondClient([dead_url, live_url], timeout=1, backoff_min=0.05, seq_wait=2.5) as c:
            t0 = time.monotonic()
            with pytest.raises(FrondError) as e:
                c.seq("msgs", "k")
            took = time.monotonic() - t0
        assert e.value.code is ErrorCode.STORE_UNAVAILABLE and e.value.status == 503 and e.value.retryable, e.value
        assert e.value.retry_after == 1 and e.value.hint == "retry: the section is taken within a lease"
        assert "the last answer" in str(e.value) and live_url in str(e.value), str(e.value)
        assert 2.0 <= took < 4.5, took  # seq_wait, then the error
        # Each request says how long the client waits for it (one attempt's
        # timeout, in ms): a server that would wait longer answers first.
        assert timeouts and set(timeouts) == {"1000"}, timeouts
        timeouts.clear()

        async def aio():
            async with AsyncFrondClient([live_url], timeout=0.75, backoff_min=0.05, seq_wait=0.3) as ac:
                with pytest.raises(FrondError):
                    await ac.seq("msgs", "k")

        asyncio.run(aio())
        assert timeouts and set(timeouts) == {"750"}, timeouts
    finally:
        live.shutdown()


def test_hint_is_the_servers(frond):
    s = frond()
    with FrondClient([s.url]) as c:
        with pytest.raises(FrondError) as e:
            c.seq("nospace", "k")
    assert e.value.code is ErrorCode.TAG_NOT_FOUND
    assert e.value.hint.startswith("create the space first (frond space create nospace"), e.value.hint
    with pytest.raises(ValueError):
        FrondClient([s.url]).seq("msgs", "k", 0)
