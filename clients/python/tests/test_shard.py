"""Shard bits (gene IDs: next_shard, next_for_key, key_hash, shard_of) and
the snowflake layout's offline compose and bounds, against real frond
servers (FROND_TEST_BIN) where a server answers too."""

import asyncio
import datetime
import json
import random
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

from frond_client import (
    AsyncFrondClient, ErrorCode, FrondClient, FrondError, LAYOUTS, bounds, compose, decode, key_hash, preset, shard_of,
)
from frond_client._lease import LeaseState, Options

UTC = datetime.timezone.utc

# docs/kinds.md, "Shard bits (gene IDs)": key, hash, shard with K=1, 4, 10.
VECTORS = [
    ("", 0xEFD01F60BA992926, 0, 6, 294),
    ("a", 0x82A2A958A9BECE5B, 1, 11, 603),
    ("user-42", 0xA39532C7AB051E8D, 1, 13, 653),
    ("tenant-7", 0xC9050CF8782D9E66, 0, 6, 614),
    ("shop:10086", 0x176FC3A8D6E8BCEB, 1, 11, 235),
    ("用户-1", 0x3D39BAA19BD993DF, 1, 15, 991),
]


def get(url):
    """GET url: (status, JSON)."""
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def create_tag(url, **body):
    req = urllib.request.Request(url + "/v1/tags", data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req).close()


@pytest.mark.parametrize("key,h,k1,k4,k10", VECTORS)
def test_key_hash_vectors(key, h, k1, k4, k10):
    assert key_hash(key) == h
    assert key_hash(key.encode("utf-8")) == h
    assert (shard_of(key, 1), shard_of(key, 4), shard_of(key, 10)) == (k1, k4, k10)
    assert shard_of(key, 0) == 0 and shard_of(key, 64) == h


def test_key_hash_cache():
    """A str key's hash is kept (a user's rows follow one another): the
    answer from the cache is the computed one, the cache stays bounded, and
    a long key is computed each time instead of held."""
    from frond_client import shard

    shard._cache.clear()
    for key, h, *_ in VECTORS:
        assert key_hash(key) == h and key_hash(key) == h  # the second from the cache
        assert shard._cache[key] == h
    for i in range(shard._CACHE_KEYS + 10):
        key_hash(f"user-{i}")
        assert len(shard._cache) <= shard._CACHE_KEYS
    assert key_hash("user-42") == VECTORS[2][1]
    long = "k" * (shard._CACHE_KEY_CHARS + 1)
    assert key_hash(long) == shard._hash(long.encode()) and long not in shard._cache
    assert key_hash("k" * shard._CACHE_KEY_CHARS) == shard._hash(b"k" * shard._CACHE_KEY_CHARS)
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate has no UTF-8: refused, not cached
        key_hash("\ud800")
    assert "\ud800" not in shard._cache


def test_shard_of_refuses_bad_bits():
    for bits in (-1, 65, True, 4.0):
        with pytest.raises(ValueError):
            shard_of("a", bits)
    for key in (5, None, ["a"]):
        with pytest.raises(TypeError):
            shard_of(key, 4)
    assert key_hash(bytearray(b"user-42")) == key_hash(memoryview(b"user-42")) == VECTORS[2][1]


def test_shard_ids_two_clients(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "shard.db")
    a = frond("a", {}, "--store", store)
    b = frond("b", {"FROND_NODE": "1"}, "--store", store)
    # Small leases: many of them, from both servers.
    opts = dict(min_lease=10, max_lease=60, timeout=2)
    with FrondClient([a.url, b.url], **opts) as c1, FrondClient([b.url, a.url], **opts) as c2:
        c1.create_tag("orders", 100, mapping="shard:4")
        # The server's shard of a key is shard_of's, for keys beyond the vectors.
        rnd = random.Random(70)
        keys = [f"user-{rnd.randrange(10**9)}" for _ in range(40)] + ["用户-%d" % i for i in range(5)] + ["a/b c?d&e=f", "%2F"]
        for key in keys:
            st, m = get(a.url + "/v1/segment/orders?shard_key=" + urllib.parse.quote(key, safe=""))
            assert st == 200 and m["shard"] == shard_of(key, 4) and m["id"] % 16 == shard_of(key, 4), (key, m)

        got, errors = {}, []

        def run(c, seed):
            r = random.Random(seed)
            mine = []
            try:
                for _ in range(500):
                    if r.random() < 0.5:
                        want = r.randrange(16)
                        v = c.next_shard("orders", want)
                    else:
                        key = r.choice(keys) if r.random() < 0.5 else f"k{r.randrange(10**6)}"
                        want = shard_of(key, 4)
                        v = c.next_for_key("orders", key)
                    mine.append((v, want))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            got[seed] = mine

        # Two threads on each client.
        threads = [threading.Thread(target=run, args=(c, seed)) for seed, c in ((1, c1), (2, c2), (3, c1), (4, c2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        every = [x for seed in got for x in got[seed]]
        assert len(every) == 2000
        for v, want in every:
            assert v % 16 == want and v & 15 == want, (v, want)
        counters = [v >> 4 for v, _ in every]
        assert len(set(counters)) == len(counters), "a counter handed out twice"
        for seed in got:
            mine = [v >> 4 for v, _ in got[seed]]
            assert mine == sorted(mine), "a thread's counters did not increase"
        for c in (c1, c2):
            st = c.stats()
            assert st["counter_leases"]["orders"]["shard_bits"] == 4, st
            assert st["calls"] < 200, st  # from leases, not a call an ID
        # The plain lease of the tag is refused (form_not_carried): next_id
        # raises, never handing out a bare counter.
        for call in (lambda: c1.next_id("orders"), lambda: c1.tag("orders").next(), lambda: c1.next_ids("orders", 3)):
            with pytest.raises(FrondError) as e:
                call()
            assert e.value.code is ErrorCode.INVALID_ARGUMENT and "next_shard" in str(e.value), e.value
        assert c1._leases["orders"].s.via == "form_not_carried"
        assert c1.tag("orders").try_next() is None
        with pytest.raises(FrondError) as e:
            c1.next_ranges("orders", 5)
        assert e.value.code is ErrorCode.FORM_NOT_CARRIED
        # next_shard still serves after next_id's refusal.
        assert c1.next_shard("orders", 3) % 16 == 3


def test_shard_refusals(frond):
    s = frond()
    with FrondClient([s.url], min_lease=10, max_lease=100) as c:
        c.create_tag("plain", 10)
        c.create_tag("orders", 10, mapping="shard:4")
        # A tag without shard bits: its lease of counters says none.
        for call in (lambda: c.next_shard("plain", 1), lambda: c.next_for_key("plain", "user-42")):
            with pytest.raises(FrondError) as e:
                call()
            assert e.value.code is ErrorCode.INVALID_ARGUMENT and not e.value.retryable and "no shard bits" in str(e.value)
        calls = c.counters["calls"]
        with pytest.raises(FrondError):
            c.next_shard("plain", 0)
        assert c.counters["calls"] == calls, "asked again for a tag known to have no shard bits"
        assert c.next_id("plain") >= 1  # its plain lease is apart
        # Shards out of range, keys that are none.
        assert c.next_shard("orders", 15) % 16 == 15
        for shard in (-1, 16, 1 << 16, True, "3", 1.0, None):
            with pytest.raises(FrondError) as e:
                c.next_shard("orders", shard)
            assert e.value.code is ErrorCode.INVALID_ARGUMENT, shard
        for key in ("", None, 42, b"user-42"):
            with pytest.raises(FrondError) as e:
                c.next_for_key("orders", key)
            assert e.value.code is ErrorCode.INVALID_ARGUMENT, key
        # No counter was taken for a refusal: the next counters follow on.
        a, b = c.next_shard("orders", 0), c.next_for_key("orders", "user-42")
        assert (a >> 4) + 1 == b >> 4 and b % 16 == 13
        with pytest.raises(FrondError) as e:
            c.next_shard("missing", 1)
        assert e.value.code is ErrorCode.TAG_NOT_FOUND
        # Counters that do not fit below 4 bits within 63: tag_exhausted.
        c.create_tag("full", 10, max_id=2**59 - 2, mapping="shard:4")
        assert c.next_shard("full", 5) == (2**59 - 2) << 4 | 5
        assert c.next_for_key("full", "user-42") == (2**59 - 1) << 4 | 13
        for _ in range(2):
            with pytest.raises(FrondError) as e:
                c.next_shard("full", 0)
            assert e.value.code is ErrorCode.TAG_EXHAUSTED and not e.value.retryable
        # A sequence tag's counters are not leased: the server puts the shard in.
        c.create_tag("sq", 1, mode="sequence", mapping="shard:2")
        ids = [c.next_shard("sq", i % 4) for i in range(8)] + [c.next_for_key("sq", "user-42")]
        assert [v % 4 for v in ids] == [0, 1, 2, 3, 0, 1, 2, 3, 1]
        assert [v >> 2 for v in ids] == sorted(v >> 2 for v in ids) and len({v >> 2 for v in ids}) == 9
        with pytest.raises(FrondError) as e:
            c.next_shard("sq", 4)
        assert e.value.code is ErrorCode.INVALID_ARGUMENT


def test_shard_id_offline():
    s = LeaseState("t", Options(servers=["x"]), counters=True)
    with pytest.raises(FrondError) as e:
        s.shard_id(1, 0, None)  # bits unknown: no lease said them
    assert e.value.code is ErrorCode.INVALID_ARGUMENT
    s.learn_bits(16)
    assert s.shard_id(7, 65535, None) == 7 << 16 | 65535
    assert s.shard_id(7, 0, "user-42") == 7 << 16 | 0x1E8D
    assert s.shard_id(2**47 - 1, 1, None) == 2**63 - 2**16 + 1
    with pytest.raises(FrondError) as e:
        s.shard_id(2**47, 0, None)
    assert e.value.code is ErrorCode.TAG_EXHAUSTED
    s.learn_bits(0)
    with pytest.raises(FrondError) as e:
        s.shard_id(1, 0, None)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT


def test_shard_ids_asyncio(frond, tmp_path):
    store = "sqlite://" + str(tmp_path / "aioshard.db")
    a = frond("a", {}, "--store", store)
    b = frond("b", {"FROND_NODE": "1"}, "--store", store)

    async def main():
        opts = dict(min_lease=10, max_lease=60, timeout=2)
        async with AsyncFrondClient([a.url, b.url], **opts) as c1, AsyncFrondClient([b.url, a.url], **opts) as c2:
            await c1.create_tag("orders", 100, mapping="shard:4")
            await c1.create_tag("plain", 10)
            got = []

            async def loop(c, seed):
                r = random.Random(seed)
                prev = -1
                for _ in range(250):
                    if r.random() < 0.5:
                        want = r.randrange(16)
                        v = await c.next_shard("orders", want)
                    else:
                        key = f"k{r.randrange(10**6)}"
                        want = shard_of(key, 4)
                        v = await c.next_for_key("orders", key)
                    assert v % 16 == want
                    assert v >> 4 > prev
                    prev = v >> 4
                    got.append(v)

            await asyncio.gather(*(loop(c, seed) for seed, c in enumerate((c1, c2, c1, c2, c1, c2, c1, c2))))
            assert len(got) == 2000 and len({v >> 4 for v in got}) == 2000, "a counter handed out twice"
            assert c1.stats()["counter_leases"]["orders"]["shard_bits"] == 4
            # Refusals.
            with pytest.raises(FrondError) as e:
                await c1.next_shard("plain", 1)
            assert e.value.code is ErrorCode.INVALID_ARGUMENT and "no shard bits" in str(e.value)
            for shard in (-1, 16, True):
                with pytest.raises(FrondError) as e:
                    await c1.next_shard("orders", shard)
                assert e.value.code is ErrorCode.INVALID_ARGUMENT
            for key in ("", None):
                with pytest.raises(FrondError) as e:
                    await c1.next_for_key("orders", key)
                assert e.value.code is ErrorCode.INVALID_ARGUMENT
            for call in (lambda: c2.next_id("orders"), lambda: c2.next_ids("orders", 2)):
                with pytest.raises(FrondError) as e:
                    await call()
                assert e.value.code is ErrorCode.INVALID_ARGUMENT and "next_shard" in str(e.value)
            assert c2.tag("orders").try_next() is None
            await c1.create_tag("full", 10, max_id=2**59 - 1, mapping="shard:4")
            assert await c1.next_for_key("full", "user-42") == (2**59 - 1) << 4 | 13
            with pytest.raises(FrondError) as e:
                await c1.next_shard("full", 0)
            assert e.value.code is ErrorCode.TAG_EXHAUSTED
            await c1.create_tag("sq", 1, mode="sequence", mapping="shard:2")
            assert [await c1.next_shard("sq", i) % 4 for i in range(4)] == [0, 1, 2, 3]

    asyncio.run(main())


def _times():
    """Times to compose at and range between: RFC 3339 text the server
    reads, and the same instant as the client takes it."""
    cst = datetime.timezone(datetime.timedelta(hours=8))
    out = [
        (dt.isoformat().replace("+00:00", "Z"), dt)
        for dt in (
            datetime.datetime(2026, 11, 29, 12, 0, 0, 123000, tzinfo=UTC),
            datetime.datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC),
            datetime.datetime(2026, 11, 29, 8, 0, 0, 999999, tzinfo=cst),
            datetime.datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
            datetime.datetime(2031, 6, 15, 23, 59, 59, 990000, tzinfo=UTC),
        )
    ]
    out += [("2026-11-29", datetime.date(2026, 11, 29)), ("1764417600005", 1764417600005), ("1735689600000", 1735689600000)]
    return out


def test_compose_and_bounds_match_the_server(frond):
    s = frond()
    times = _times()
    for name in ("twitter", "sonyflake", "uid-generator", "javascript"):
        layout = preset(name)
        for text, t in times:
            node, seq = 5 % (layout.max_node + 1), 7
            st, m = get(f"{s.url}/v1/compose?time={urllib.parse.quote(text)}&node={node}&sequence={seq}&layout={name}")
            assert st == 200, m
            v = compose(layout, t, node, seq)
            assert v == m["id"], (name, text, v, m)
            p = decode(v, layout)
            assert (p.tick, p.node, p.sequence, p.shard) == (m["tick"], node, seq, None)
        for (ta, a), (tb, b) in [(x, y) for x in times for y in times]:
            st, m = get(f"{s.url}/v1/bounds?from={urllib.parse.quote(ta)}&to={urllib.parse.quote(tb)}&layout={name}")
            if st != 200:
                assert m["error"]["code"] == "invalid_argument"
                with pytest.raises(ValueError):
                    bounds(layout, a, b)
                continue
            assert bounds(layout, a, b) == (m["first"], m["last"]), (name, ta, tb, m)
        # Cut to the layout's span; wholly before its epoch or past its end,
        # or empty: refused. The edges: its epoch and its end.
        ep, end = layout.epoch_ms, (layout.epoch_ms * 1000 + (layout.max_tick + 1) * layout.unit_micros) // 1000
        edges = [(0, ep), (0, ep + 1), (ep - 1, ep + 1), (ep - 10_000, ep - 1), (end - 1, end), (end - 1, end + 5), (end, end + 1), (ep - 1, end + 1)]
        for a, b in edges + [(0, 1764417600000), (datetime.date(1999, 1, 1), datetime.date(2200, 1, 1)), (0, 1), (1764417600000, 1764417600000)]:
            st, m = get(f"{s.url}/v1/bounds?from={a if isinstance(a, int) else a.isoformat()}&to={b if isinstance(b, int) else b.isoformat()}&layout={name}")
            if st == 200:
                assert bounds(layout, a, b) == (m["first"], m["last"]), (name, a, b)
            else:
                with pytest.raises(ValueError):
                    bounds(layout, a, b)
    # Fields out of range, and times the client does not guess at.
    tw = LAYOUTS["twitter"]
    for kw in (dict(node=1024), dict(node=-1), dict(sequence=4096), dict(shard=1), dict(node=True)):
        with pytest.raises(ValueError):
            compose(tw, 1764417600000, **dict(dict(node=0), **kw))
    for t in (datetime.datetime(2026, 1, 1), "2026-01-01", 1.5e12, 0):
        with pytest.raises(ValueError):
            compose(tw, t, 0)


def test_snowflake_shard_bits(frond):
    # Offline: with_shard_bits takes the lowest sequence bits.
    tw = preset("twitter")
    l4 = tw.with_shard_bits(4)
    assert (l4.seq_bits, l4.shard_bits, l4.bits, l4.max_shard) == (8, 4, 63, 15)
    assert l4.with_shard_bits(2) == tw.with_shard_bits(2) and l4.with_shard_bits(0) == tw
    assert tw.with_shard_bits(11).seq_bits == 1 and preset("sonyflake", shard_bits=4).seq_bits == 4
    for k in (12, 17, -1, True):
        with pytest.raises(ValueError):
            tw.with_shard_bits(k)
    with pytest.raises(ValueError):
        preset("uid-generator").with_shard_bits(16)  # 13 sequence bits
    assert preset("twitter", 5, 4).datacenter_bits == 5
    t = datetime.datetime(2026, 11, 29, 12, 0, 0, 123000, tzinfo=UTC)
    v = compose(l4, t, 5, 7, 13)
    assert v == compose(tw, t, 5, 7 << 4 | 13) and v % 16 == 13
    p = decode(v, l4)
    assert (p.node, p.sequence, p.shard, p.time) == (5, 7, 13, t)
    assert decode(v).shard is None and decode(v).sequence == 7 << 4 | 13
    q = decode((1 << 22) * 7 + (3 << 17) + (9 << 12) + (5 << 4) + 2, preset("twitter", 5, 4))
    assert (q.datacenter, q.worker, q.sequence, q.shard) == (3, 9, 5, 2)
    lo, hi = bounds(l4, t, t + datetime.timedelta(milliseconds=1))
    assert lo == compose(l4, t, 0, 0, 0) and hi == compose(l4, t, 1023, 255, 15) and lo <= v <= hi
    with pytest.raises(ValueError):
        compose(l4, t, 5, 256, 0)
    with pytest.raises(ValueError):
        compose(l4, t, 5, 0, 16)

    # A server whose layout has 4 shard bits agrees.
    s = frond("sf", {"FROND_SNOWFLAKE__SHARD_BITS": "4"})
    st, info = get(s.url + "/v1/info")
    assert info["layout"]["shard_bits"] == 4 and info["layout"]["sequence_bits"] == 8
    st, m = get(s.url + "/v1/snowflake?shard_key=user-42&n=3")
    assert st == 200 and m["shard"] == shard_of("user-42", 4)
    for x in m["ids"]:
        p = decode(x, l4)
        _, d = get(f"{s.url}/v1/decode/{x}")
        assert (p.shard, p.tick, p.node, p.sequence) == (d["shard"], d["tick"], d["node"], d["sequence"]) == (13, d["tick"], d["node"], d["sequence"])
    for text, tt in _times():
        for shard in (0, 9, 15):
            st, m = get(f"{s.url}/v1/compose?time={urllib.parse.quote(text)}&node=5&sequence=200&shard={shard}")
            assert st == 200 and compose(l4, tt, 5, 200, shard) == m["id"], (text, shard, m)
        st, m = get(f"{s.url}/v1/compose?time={urllib.parse.quote(text)}&node=5&sequence=1&shard_key=user-42")
        assert compose(l4, tt, 5, 1, shard_of("user-42", 4)) == m["id"]
    st, m = get(f"{s.url}/v1/bounds?from=2026-11-01&to=2026-12-01")
    assert bounds(l4, datetime.date(2026, 11, 1), datetime.date(2026, 12, 1)) == (m["first"], m["last"])
