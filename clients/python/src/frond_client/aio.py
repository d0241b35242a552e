"""The asyncio client: AsyncFrondClient and its AsyncTag handles, with the
threaded client's semantics and no thread per call (HTTP/1.1 over asyncio
streams, keep-alive)."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

from ._lease import MAX_LEASE, LeaseState, Options, Range, behind_message, count, lease_of, lease_path, ranges_of, strs, unleased_shard
from .client import SEQ_ROUTE_HEADER, _quote, answer, name_uuid_path, retry_after_of, shard_hint, snowflake_strings_path
from ._rotation import _Rotation, parse_server
from .errors import FrondError
from .shard import check_key, check_shard, key_hash


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class _AsyncServer:
    def __init__(self, raw: str, o: Options, ctx: Optional[ssl.SSLContext]):
        self.base, self.netloc, self.host, self.port, https = parse_server(raw)
        self.ctx = ctx if https else None
        self.idle: List[_Conn] = []
        self.down_until = 0.0
        self.fails = 0

    async def conn(self) -> _Conn:
        while self.idle:
            c = self.idle.pop()
            if not c.writer.is_closing() and not c.reader.at_eof():
                return c
            c.close()
        r, w = await asyncio.open_connection(self.host, self.port, ssl=self.ctx)
        return _Conn(r, w)

    def put(self, c: _Conn) -> None:
        if len(self.idle) < 16:
            self.idle.append(c)
        else:
            c.close()

    def close(self) -> None:
        for c in self.idle:
            c.close()
        self.idle.clear()


async def _read_response(r: asyncio.StreamReader) -> Tuple[int, Dict[str, str], bytes]:
    line = await r.readline()
    if not line:
        raise ConnectionError("the connection closed")
    parts = line.decode("latin-1").split(" ", 2)
    status = int(parts[1])
    headers: Dict[str, str] = {}
    while True:
        h = await r.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await r.readline()).split(b";")[0].strip(), 16)
            if size == 0:
                await r.readline()
                break
            body += await r.readexactly(size)
            await r.readline()
        return status, headers, bytes(body)
    n = int(headers.get("content-length", "0"))
    return status, headers, await r.readexactly(n) if n else b""


class _AsyncLease:
    """A tag's leases in an asyncio client (counters: of its counters, for
    next_shard)."""

    def __init__(self, c: "AsyncFrondClient", tag: str, counters: bool = False):
        self.c = c
        self.s = LeaseState(tag, c.o, counters)
        self.fetching: Optional[asyncio.Task] = None

    def try_next(self) -> Optional[int]:
        return self.try_after(next(self.s.it, None))

    def try_after(self, v: Optional[int]) -> Optional[int]:
        """try_next's rest, after the fast path's v: the next range when v is
        None, the prefetch when v is the ID that starts it."""
        if v is None:
            v = self.s.try_next()
        if v is not None and self.s.should_prefetch(v) and self.fetching is None and not self.c.closed:
            self._start(self.s.size, False)
        return v

    async def next(self) -> int:
        v = self.try_next()  # the warm lease's path, one call less
        if v is not None:
            return v
        v = await self.take()
        if v is None:
            return (await self.c._unleased_ids(self.s.tag, 1, self.s.via or ""))[0]
        return v

    async def take(self) -> Optional[int]:
        """The next ID (of a lease of counters, counter), waiting for a lease
        when none is in hand; None when the server refused to lease the tag
        (s.via says why: then ask request by request)."""
        while True:
            v = self.try_next()
            if v is not None:
                return v
            if self.s.via is not None:
                return None
            t = self.fetching
            if t is None:
                self.c.counters["waits"] += 1
                self.s.size = min(self.s.size * 2, self.c.o.max_lease)
                t = self._start(self.s.size, True)
            err = await asyncio.shield(t)
            if err is not None and self.s.via is None and self.s.empty():
                raise err.with_message(f"tag {self.s.tag}: no ID in hand and none could be leased: {err}") from err

    def _start(self, n: int, waited: bool) -> asyncio.Task:
        async def run() -> Optional[FrondError]:
            try:
                rs = await self._fetch(n)
            except FrondError as e:
                if e.wire_code in ("not_leasable", "form_not_carried"):
                    self.s.via = e.wire_code
                return e
            except Exception as e:
                return FrondError("", 0, f"tag {self.s.tag}: {e}")
            finally:
                self.fetching = None
            self.s.offer(rs)
            if waited and self.s.in_hand() == 0 and not self.s.rest and self.s.pending is not None:
                self.s.install(True)
            return None

        self.fetching = asyncio.ensure_future(run())
        return self.fetching

    async def _fetch(self, n: int) -> List[Range]:
        ask = n
        for _ in range(65):
            rs, bits = await self.c._lease(self.s.tag, ask, self.s.counters)
            if self.s.counters:
                self.s.learn_bits(bits)
            kept = self.s.keep(rs)
            if sum(r.count for r in kept) > 0:
                return kept
            ask = self.s.catch_up(n, rs)
        raise FrondError("store_unavailable", 0, behind_message(self.s.tag, ask), 1.0)


class AsyncTag:
    """A handle on one tag (AsyncFrondClient.tag)."""

    def __init__(self, lease: _AsyncLease, c: "AsyncFrondClient"):
        self._l, self._c = lease, c

    @property
    def name(self) -> str:
        return self._l.s.tag

    async def next(self) -> int:
        """The next segment ID: from memory on a warm lease."""
        return await self._l.next()

    def try_next(self) -> Optional[int]:
        """An ID from the lease in hand, synchronously, or None (then await next())."""
        s = self._l.s
        v = next(s.it, None)  # one C call on a warm lease
        if v is not None and v != s.prefetch_id:
            return v
        return self._l.try_after(v) if s.via is None else None

    async def next_n(self, n: int) -> List[int]:
        """n segment IDs, in order."""
        count(n, 10_000)
        if self._l.s.via is not None:
            return await self._c._unleased_ids(self.name, n, self._l.s.via)
        out = []
        for _ in range(n):
            v = self._l.try_next()
            out.append(v if v is not None else await self._l.next())
        return out


class AsyncFrondClient(_Rotation):
    """FrondClient for asyncio (FastAPI, aiohttp): the same options and
    methods, as coroutines; AsyncTag.try_next answers from the lease
    synchronously. Use it from one event loop."""

    def __init__(self, servers: List[str], **options):
        self.o = Options(servers=list(servers), **options)
        self.o.check()
        self._timeout_header = self.o.timeout_header()
        ctx = ssl.create_default_context(cafile=self.o.ca_file) if self.o.ca_file else ssl.create_default_context()
        self._servers = [_AsyncServer(s, self.o, ctx) for s in self.o.servers]
        self._preferred = 0
        self._leases: Dict[str, _AsyncLease] = {}
        self._counter_leases: Dict[str, _AsyncLease] = {}  # next_shard's: leases of counters
        self.counters = {"calls": 0, "failovers": 0, "waits": 0}
        self._routes = {}
        self.closed = False

    async def __aenter__(self) -> "AsyncFrondClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def tag(self, tag: str) -> AsyncTag:
        if not isinstance(tag, str) or tag == "":
            raise ValueError("frond: a tag needs a name")
        l = self._leases.get(tag)
        if l is None:
            l = self._leases[tag] = _AsyncLease(self, tag)
        return AsyncTag(l, self)

    async def next_id(self, tag: str) -> int:
        return await self.tag(tag).next()

    async def next_ids(self, tag: str, n: int) -> List[int]:
        return await self.tag(tag).next_n(n)

    async def next_shard(self, tag: str, shard: int) -> int:
        """FrondClient.next_shard: the tag's next counter from a lease of
        counters, counter << K | shard."""
        l = self._counter_leases.get(tag)
        if l is None:
            l = self._counter_lease(tag)
        else:
            s = l.s
            bits = s.bits
            if bits and type(shard) is int and 0 <= shard <= s.shard_max:
                v = l.try_next()
                if v is not None and v <= s.counter_max:
                    return v << bits | shard
                if v is not None:
                    return s.shard_id(v, shard, None)  # tag_exhausted
        return await self._sharded(l, shard, None)

    async def next_for_key(self, tag: str, key: str) -> int:
        """FrondClient.next_for_key: next_shard on shard_of(key, K)."""
        l = self._counter_leases.get(tag)
        if l is None:
            l = self._counter_lease(tag)
        else:
            s = l.s
            bits = s.bits
            if bits and type(key) is str and key:
                v = l.try_next()
                if v is not None and v <= s.counter_max:
                    return v << bits | (key_hash(key) & s.shard_max)
                if v is not None:
                    return s.shard_id(v, 0, key)
        return await self._sharded(l, 0, check_key(key))

    def _counter_lease(self, tag: str) -> _AsyncLease:
        if not isinstance(tag, str) or tag == "":
            raise ValueError("frond: a tag needs a name")
        l = self._counter_leases.get(tag)
        if l is None:
            l = self._counter_leases[tag] = _AsyncLease(self, tag, True)
        return l

    async def _sharded(self, l: _AsyncLease, shard: int, key: Optional[str]) -> int:
        if key is None:  # next_for_key checked its key
            check_shard(shard)
        err = l.s.refuses_before(shard, key)
        if err is not None:
            raise err
        v = await l.take()
        if v is None:
            q = f"shard={shard}" if key is None else "shard_key=" + urllib.parse.quote(key, safe="")
            return unleased_shard(l.s.tag, await self._call(f"/v1/segment/{_quote(l.s.tag)}?{q}"))
        return l.s.shard_id(v, shard, key)

    async def next_ranges(self, tag: str, n: int) -> List[Range]:
        return ranges_of(await self._call(f"/v1/segment/{_quote(tag)}?format=ranges&n={count(n, MAX_LEASE)}"))

    async def next_strings(self, tag: str, n: int) -> List[str]:
        return strs(await self._call(f"/v1/segment/{_quote(tag)}?n={count(n, 10_000)}"), "id_strs", "id_str")

    async def _unleased_ids(self, tag: str, n: int, via: str) -> List[int]:
        if via == "not_leasable":
            out: List[int] = []
            for r in await self.next_ranges(tag, n):
                out.extend(r.start + i * r.stride for i in range(r.count))
            return out[:n]
        try:
            m = await self._call(f"/v1/segment/{_quote(tag)}?n={n}")
        except FrondError as e:
            h = shard_hint(e)
            if h is None:
                raise
            raise h from e
        if "ids" not in m and "id" not in m:
            raise FrondError("form_not_carried", 409, f"tag {tag} hands out text IDs (its form), not numbers: use next_strings")
        return [int(s) for s in strs(m, "id_strs", "id_str")]

    async def _lease(self, tag: str, n: int, counters: bool = False) -> Tuple[List[Range], int]:
        return lease_of(await self._call(lease_path(_quote(tag), n, counters)), counters)

    async def snowflake(self, n: int = 1) -> List[int]:
        return [int(s) for s in strs(await self._call(f"/v1/snowflake?n={count(n, 10_000)}"), "id_strs", "id_str")]

    async def snowflake_strings(self, form: str, n: int = 1, prefix: str = "") -> List[str]:
        return strs(await self._call(snowflake_strings_path(form, n, prefix)), "id_strs", "id_str")

    async def uuids(self, version: int, n: int = 1) -> List[str]:
        return strs(await self._call(f"/v1/uuid?version={int(version)}&n={count(n, 10_000)}"), "uuids", "uuid")

    async def name_uuid(self, version: int, namespace: str, name: str) -> str:
        return strs(await self._call(name_uuid_path(version, namespace, name)), "uuids", "uuid")[0]

    async def type_ids(self, prefix: str, n: int = 1) -> List[str]:
        return strs(await self._call(f"/v1/uuid?version=7&form=typeid&prefix={urllib.parse.quote(prefix, safe='')}&n={count(n, 10_000)}"), "uuids", "uuid")

    async def serials(self, name: str, n: int = 1) -> List[str]:
        return strs(await self._call(f"/v1/serial/{_quote(name)}?n={count(n, 10_000)}"), "serials", "serial")

    async def seq(self, space: str, key: str, n: int = 1) -> Tuple[int, int]:
        path = self._seq_path(space, key, n)
        info: dict = {}
        m = await self._send("GET", path, None, False, self._seq_want(space, key), self.o.seq_wait, info)
        self._learn_route(space, info.get("route"), info.get("server", -1))
        return int(m["first_str"]), int(m["last_str"])

    async def create_tag(self, name: str, step: int, mode: str = "", max_id: Optional[int] = None, mapping: str = "") -> None:
        body: dict = {"name": name, "step": int(step)}
        if mode:
            body["mode"] = mode
        if max_id is not None:
            body["max_id"] = int(max_id)
        if mapping:
            body["mapping"] = mapping
        await self._send("POST", "/v1/tags", json.dumps(body), True)

    def stats(self) -> dict:
        out = dict(self.counters)
        out["leases"] = {t: {"remaining": l.s.remaining(), "size": l.s.size} for t, l in self._leases.items()}
        if self._counter_leases:
            out["counter_leases"] = {t: {"remaining": l.s.remaining(), "size": l.s.size, "shard_bits": l.s.bits} for t, l in self._counter_leases.items()}
        return out

    async def close(self) -> None:
        self.closed = True
        for l in [*self._leases.values(), *self._counter_leases.values()]:
            if l.fetching is not None:
                l.fetching.cancel()
        for s in self._servers:
            s.close()

    async def _call(self, path: str) -> dict:
        return await self._send("GET", path, None, False)

    async def _send(self, method: str, path: str, body: Optional[str], admin: bool,
                    want: int = -1, patience: float = 0.0, info: Optional[dict] = None) -> dict:
        """FrondClient._send, awaited."""
        attempts = self._attempts()
        deadline = time.monotonic() + patience if patience > 0 else 0.0
        last: Optional[FrondError] = None
        answered: Optional[FrondError] = None  # the last error a server answered with
        k = 0
        while self._more(k, attempts, deadline):
            i = self._first(want) if k == 0 else self._pick()
            s = self._servers[i]
            rest = s.down_until - time.monotonic()
            if rest > 0:
                if not self._rest_fits(k, attempts, deadline, rest):
                    break
                await asyncio.sleep(rest)
            k += 1
            try:
                self.counters["calls"] += 1
                m = await asyncio.wait_for(self._once(s, method, path, body, admin, info), self.o.timeout)
            except asyncio.TimeoutError:
                e = FrondError("", 0, f"server {s.base}: no answer within {self.o.timeout}s")
            except FrondError as fe:
                e = fe
            else:
                self._answered(s, i)
                if info is not None:
                    info["server"] = i
                return m
            self._failed(s, e)
            last = e
            if e.status:
                answered, e.server = e, s.base
        raise self._exhausted(last, k, answered)

    async def _once(self, s: _AsyncServer, method: str, path: str, body: Optional[str], admin: bool, info: Optional[dict] = None) -> dict:
        data = body.encode() if body is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: {s.netloc}", "Accept: application/json", "Connection: keep-alive",
                f"Frond-Timeout: {self._timeout_header}"]
        if self.o.tag_token:
            head.append(f"X-Frond-Token: {self.o.tag_token}")
        if admin and self.o.admin_token:
            head.append(f"Authorization: Bearer {self.o.admin_token}")
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
        c: Optional[_Conn] = None
        try:
            c = await s.conn()
            c.writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
            await c.writer.drain()
            status, headers, raw = await _read_response(c.reader)
        except (OSError, ValueError, asyncio.IncompleteReadError, ssl.SSLError) as e:
            if c is not None:
                c.close()
            raise FrondError("", 0, f"server {s.base}: {e}") from e
        except asyncio.CancelledError:
            if c is not None:
                c.close()
            raise
        if headers.get("connection", "").lower() == "close":
            c.close()
        else:
            s.put(c)
        if info is not None:
            info["route"] = headers.get(SEQ_ROUTE_HEADER.lower())
        return answer(s.base, status, raw.decode("utf-8", "replace"), retry_after_of(headers.get("retry-after")))
