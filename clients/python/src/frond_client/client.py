"""The threaded client: FrondClient and its Tag handles."""

from __future__ import annotations

import http.client
import json
import ssl
import sys
import threading
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

from ._lease import MAX_LEASE, LeaseState, Options, Range, behind_message, count, lease_of, lease_path, ranges_of, strs, unleased_shard
from ._rotation import _Rotation, parse_server
from .errors import FrondError
from .shard import check_key, check_shard, key_hash


# The header of a keyed sequence's answer naming the key's section and
# whether the server that answered serves it (keyseq.RouteHeader).
SEQ_ROUTE_HEADER = "Frond-Seq-Section"


def _quote(s: str) -> str:
    if not isinstance(s, str) or s == "":
        raise ValueError("frond: an empty name")
    return urllib.parse.quote(s, safe="")


class Server:
    """One server, its idle keep-alive connections and its health as this
    client sees it."""

    def __init__(self, raw: str, o: Options, ctx: Optional[ssl.SSLContext]):
        self.base, _, self.host, self.port, self.https = parse_server(raw)
        self.o, self.ctx = o, ctx
        self.idle: List[http.client.HTTPConnection] = []
        self.lock = threading.Lock()
        self.down_until = 0.0
        self.fails = 0

    def conn(self) -> http.client.HTTPConnection:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.o.timeout, context=self.ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.o.timeout)

    def put(self, c: http.client.HTTPConnection) -> None:
        with self.lock:
            if len(self.idle) < 16:
                self.idle.append(c)
                return
        c.close()

    def close(self) -> None:
        with self.lock:
            for c in self.idle:
                c.close()
            self.idle.clear()


def answer(base: str, status: int, text: str, retry_after: float) -> dict:
    """A server's answer: its JSON on success, else the FrondError it says."""
    try:
        v = json.loads(text) if text else {}
    except ValueError:
        raise FrondError("", 0 if status == 200 else status, f"server {base} answered {status}: {text[:200]}", retry_after)
    if not isinstance(v, dict):
        v = {}
    if 200 <= status < 300:
        return v
    e = v.get("error") if isinstance(v.get("error"), dict) else {}
    raise FrondError(str(e.get("code") or ""), status, str(e.get("message") or f"server {base} answered {status}: {text[:200]}"), retry_after,
                     str(e.get("hint") or ""))


def shard_hint(e: FrondError) -> Optional[FrondError]:
    """A per-request call's refusal of a tag with shard bits (each of its IDs
    needs a shard), naming this client's calls that give one; None for
    another error."""
    if e.wire_code == "invalid_argument" and "shard bits" in str(e):
        return e.with_message(f"{e} (this client: next_shard or next_for_key)")
    return None


def retry_after_of(value: Optional[str]) -> float:
    try:
        return max(float(value or 0), 0.0)
    except ValueError:
        return 0.0


# Whether the interpreter has a GIL (a free-threaded build has none: there
# the range in hand is read under the lock only).
_GIL = getattr(sys, "_is_gil_enabled", lambda: True)()


class _Lease:
    """A tag's leases in a threaded client: IDs from memory under a lock, the
    next lease fetched in the background. counters: leases of the tag's
    counters (next_shard), apart from its plain leases."""

    def __init__(self, c: "FrondClient", tag: str, counters: bool = False):
        self.c = c
        self.s = LeaseState(tag, c.o, counters)
        self.lock = threading.Lock()
        self.fetching: Optional[threading.Event] = None
        self.err: Optional[FrondError] = None

    def try_next(self) -> Optional[int]:
        # From the range in hand with no lock: one C call, atomic under the
        # GIL (threads waiting for one lock queued behind each other: 15 µs
        # an ID with 8 threads). The lock only to move to the next range.
        return self.try_after(next(self.s.it, None) if _GIL else None)

    def try_after(self, v: Optional[int]) -> Optional[int]:
        """try_next's rest, after the fast path's v: the next range under
        the lock when v is None, the prefetch when v is the ID that starts
        it."""
        if v is None:
            with self.lock:
                v = self.s.try_next()
        if v is not None and v == self.s.prefetch_id:
            self.prefetch(v)
        return v

    def prefetch(self, v: int) -> None:
        """Starts the next lease's fetch if handing out v does."""
        with self.lock:
            if self.s.should_prefetch(v) and self.fetching is None and not self.c.closed:
                self._start(self.s.size, False)

    def next(self, taken: Optional[int] = None) -> int:
        """The next ID; taken: one Tag.next took from the range in hand
        already (the prefetch's ID), None: none."""
        if taken is None:
            v = self.try_next()  # the warm lease's path, one call less
            if v is not None:
                return v
        v = self.take(taken)
        if v is None:
            return self.c._unleased_ids(self.s.tag, 1, self.s.via or "")[0]
        return v

    def take(self, taken: Optional[int] = None) -> Optional[int]:
        """The next ID (of a lease of counters, counter) from the leases,
        waiting for one when none is in hand; None when the server refused
        to lease the tag (s.via says why: then ask request by request)."""
        if taken is not None:
            self.prefetch(taken)
            return taken
        while True:
            v = self.try_next()
            if v is not None:
                return v
            if self.s.via is not None:
                return None
            with self.lock:
                ev = self.fetching
                if ev is None:
                    self.c.counters["waits"] += 1
                    self.s.size = min(self.s.size * 2, self.c.o.max_lease)  # a lease that came too late doubles
                    ev = self._start(self.s.size, True)
            ev.wait()
            with self.lock:
                err = self.err
                if err is not None and self.s.via is None and self.s.empty():
                    raise err.with_message(f"tag {self.s.tag}: no ID in hand and none could be leased: {err}") from err

    def _start(self, n: int, waited: bool) -> threading.Event:
        # Called with the lock held.
        ev = threading.Event()
        self.fetching, self.err = ev, None

        def run() -> None:
            err: Optional[FrondError] = None
            try:
                rs = self._fetch(n)
            except FrondError as e:
                err, rs = e, None
            except Exception as e:  # a transport error not classified: no answer
                err, rs = FrondError("", 0, f"tag {self.s.tag}: {e}"), None
            with self.lock:
                if rs is not None:
                    self.s.offer(rs)
                    if waited and self.s.in_hand() == 0 and not self.s.rest and self.s.pending is not None:
                        self.s.install(True)
                if err is not None and err.wire_code in ("not_leasable", "form_not_carried"):
                    self.s.via = err.wire_code
                self.err = err
                self.fetching = None
            ev.set()

        threading.Thread(target=run, daemon=True, name=f"frond-lease-{self.s.tag}").start()
        return ev

    def _fetch(self, n: int) -> List[Range]:
        ask = n
        for tries in range(65):
            rs, bits = self.c._lease(self.s.tag, ask, self.s.counters)
            with self.lock:
                if self.s.counters:
                    self.s.learn_bits(bits)  # before its counters are in hand
                kept = self.s.keep(rs)
                if sum(r.count for r in kept) > 0:
                    return kept
                ask = self.s.catch_up(n, rs)
        raise FrondError("store_unavailable", 0, behind_message(self.s.tag, ask), 1.0)


class Tag:
    """A handle on one tag (FrondClient.tag): next() serves from the lease
    with no I/O while it lasts. Handles of one tag share one lease."""

    def __init__(self, lease: _Lease, c: "FrondClient"):
        self._l, self._c = lease, c

    @property
    def name(self) -> str:
        return self._l.s.tag

    def next(self) -> int:
        """The next segment ID: from memory on a warm lease."""
        s = self._l.s
        v = next(s.it, None) if _GIL else None  # _Lease.try_next's fast path, one call less
        if v is None or v == s.prefetch_id:
            return self._l.next(v)
        return v

    def try_next(self) -> Optional[int]:
        """An ID from the lease in hand, or None when it is used up (then next())."""
        s = self._l.s
        v = next(s.it, None) if _GIL else None  # next()'s fast path: as fast as next() on a warm lease
        if v is not None and v != s.prefetch_id:
            return v
        return self._l.try_after(v) if s.via is None else None

    def next_n(self, n: int) -> List[int]:
        """n segment IDs, in order."""
        count(n, 10_000)
        if self._l.s.via is not None:
            return self._c._unleased_ids(self.name, n, self._l.s.via)
        return [self._l.next() for _ in range(n)]


def snowflake_strings_path(form: str, n: int, prefix: str) -> str:
    """The request of snowflake_strings (both clients)."""
    q = f"/v1/snowflake?n={count(n, 10_000)}&form={urllib.parse.quote(form, safe='')}"
    if prefix:
        q += "&prefix=" + urllib.parse.quote(prefix, safe="")
    return q


def name_uuid_path(version: int, namespace: str, name: str) -> str:
    """The request of name_uuid (both clients)."""
    return f"/v1/uuid?version={int(version)}&namespace={urllib.parse.quote(namespace, safe='')}&name={urllib.parse.quote(name, safe='')}"


class FrondClient(_Rotation):
    """A client of frond servers over their HTTP API, with the Go client's
    semantics: segment IDs from leases in process (strictly increasing per
    tag, fail-over across servers), per-call snowflake IDs, UUIDs, TypeIDs,
    serials and keyed sequence values, typed errors (FrondError). IDs are
    Python ints, exact at any size. Safe for use by many threads.

    Options (docs/clients.md): servers (their HTTP addresses, sharing one
    store), timeout (one attempt, seconds), attempts (of one call across
    all servers: 3 per server), backoff_min/backoff_max (a failed server
    rests, doubling with ±20% jitter, at least its Retry-After),
    min_lease/max_lease/lease_target (a lease used up in less than half the
    target doubles, one lasting more than twice it halves), unordered
    (accept leases below IDs handed out: servers combining several stores),
    tag_token, admin_token, ca_file (PEM to trust for https://; else the
    system's store).
    """

    def __init__(self, servers: List[str], **options):
        self.o = Options(servers=list(servers), **options)
        self.o.check()
        self._timeout_header = self.o.timeout_header()
        ctx = ssl.create_default_context(cafile=self.o.ca_file) if self.o.ca_file else ssl.create_default_context()
        self._servers = [Server(s, self.o, ctx) for s in self.o.servers]
        self._preferred = 0
        self._leases: Dict[str, _Lease] = {}
        self._counter_leases: Dict[str, _Lease] = {}  # next_shard's: leases of counters
        self._mu = threading.Lock()
        self.counters = {"calls": 0, "failovers": 0, "waits": 0}
        self.closed = False
        self._routes = {}

    def __enter__(self) -> "FrondClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- Segment IDs ----

    def tag(self, tag: str) -> Tag:
        """A handle on tag; handles of one tag share one lease."""
        if not isinstance(tag, str) or tag == "":
            raise ValueError("frond: a tag needs a name")
        with self._mu:
            l = self._leases.get(tag)
            if l is None:
                l = self._leases[tag] = _Lease(self, tag)
        return Tag(l, self)

    def next_id(self, tag: str) -> int:
        """The next segment ID of tag, from the lease."""
        l = self._leases.get(tag)
        return l.next() if l is not None else self.tag(tag).next()

    def next_ids(self, tag: str, n: int) -> List[int]:
        """n segment IDs of tag, in order."""
        return self.tag(tag).next_n(n)

    # ---- Segment IDs with shard bits (gene IDs) ----

    def next_shard(self, tag: str, shard: int) -> int:
        """The next ID of tag, a tag with shard bits ("mapping": "shard:K"),
        on shard (0 to 2^K-1): the tag's next counter, from a lease of its
        counters kept apart from next_id's leases (no I/O while it lasts),
        with the shard below it: counter << K | shard, so id % 2^K is shard
        and the IDs of every shard are unique across clients and servers
        (the counter's uniqueness). FrondError invalid_argument: a tag
        without shard bits, a shard past 2^K-1; tag_exhausted: a counter
        that does not fit below K bits within 63. A sequence tag is asked
        request by request."""
        l = self._counter_leases.get(tag)
        if l is not None:
            s = l.s
            bits = s.bits
            if bits and type(shard) is int and 0 <= shard <= s.shard_max:
                v = next(s.it, None) if _GIL else None  # _Lease.try_next's fast path, as Tag.next
                if v is not None and v != s.prefetch_id and v <= s.counter_max:
                    return v << bits | shard
                return self._sharded(l, shard, None, v)
        else:
            l = self._counter_lease(tag)
        return self._sharded(l, shard, None, None)

    def next_for_key(self, tag: str, key: str) -> int:
        """next_shard on the shard of key (a user, a tenant, a shop):
        shard_of(key, K), the hash every frond server and client computes
        alike, so that the rows of one key and the rows whose IDs carry it
        land on one shard. An empty key is invalid_argument."""
        l = self._counter_leases.get(tag)
        if l is not None:
            s = l.s
            bits = s.bits
            if bits and type(key) is str and key:
                v = next(s.it, None) if _GIL else None
                if v is not None and v != s.prefetch_id and v <= s.counter_max:
                    return v << bits | (key_hash(key) & s.shard_max)
                return self._sharded(l, 0, check_key(key), v)
        else:
            l = self._counter_lease(tag)
        return self._sharded(l, 0, check_key(key), None)

    def _counter_lease(self, tag: str) -> _Lease:
        if not isinstance(tag, str) or tag == "":
            raise ValueError("frond: a tag needs a name")
        with self._mu:
            l = self._counter_leases.get(tag)
            if l is None:
                l = self._counter_leases[tag] = _Lease(self, tag, True)
        return l

    def _sharded(self, l: _Lease, shard: int, key: Optional[str], taken: Optional[int]) -> int:
        """next_shard's and next_for_key's checks and waits; taken: a
        counter the caller took from the range in hand already."""
        if key is None:  # next_for_key checked its key
            check_shard(shard)
        if taken is None:
            err = l.s.refuses_before(shard, key)
            if err is not None:
                raise err  # no counter taken for it
        v = l.take(taken)
        if v is None:
            return self._unleased_shard(l.s.tag, shard, key)
        return l.s.shard_id(v, shard, key)

    def _unleased_shard(self, tag: str, shard: int, key: Optional[str]) -> int:
        # A tag whose counters are not leased (a sequence tag): the server
        # puts the shard in, request by request.
        q = f"shard={shard}" if key is None else "shard_key=" + urllib.parse.quote(key, safe="")
        return unleased_shard(tag, self._call(f"/v1/segment/{_quote(tag)}?{q}"))

    def next_ranges(self, tag: str, n: int) -> List[Range]:
        """n segment IDs of tag as ranges, straight from a server."""
        return ranges_of(self._call(f"/v1/segment/{_quote(tag)}?format=ranges&n={count(n, MAX_LEASE)}"))

    def next_strings(self, tag: str, n: int) -> List[str]:
        """n segment IDs of tag in its form (a text form: base62, opaque62, ...)."""
        return strs(self._call(f"/v1/segment/{_quote(tag)}?n={count(n, 10_000)}"), "id_strs", "id_str")

    def _unleased_ids(self, tag: str, n: int, via: str) -> List[int]:
        if via == "not_leasable":  # a sequence tag: request by request
            out: List[int] = []
            for r in self.next_ranges(tag, n):
                out.extend(r.start + i * r.stride for i in range(r.count))
            return out[:n]
        try:
            m = self._call(f"/v1/segment/{_quote(tag)}?n={n}")
        except FrondError as e:
            h = shard_hint(e)
            if h is None:
                raise
            raise h from e
        if "ids" not in m and "id" not in m:
            raise FrondError("form_not_carried", 409, f"tag {tag} hands out text IDs (its form), not numbers: use next_strings")
        return [int(s) for s in strs(m, "id_strs", "id_str")]

    def _lease(self, tag: str, n: int, counters: bool = False) -> Tuple[List[Range], int]:
        return lease_of(self._call(lease_path(_quote(tag), n, counters)), counters)

    # ---- Per call ----

    def snowflake(self, n: int = 1) -> List[int]:
        """n snowflake IDs (1 to 10,000)."""
        return [int(s) for s in strs(self._call(f"/v1/snowflake?n={count(n, 10_000)}"), "id_strs", "id_str")]

    def snowflake_strings(self, form: str, n: int = 1, prefix: str = "") -> List[str]:
        """n snowflake IDs in a text form (base62, base32, friendly, ...), with an optional prefix."""
        return strs(self._call(snowflake_strings_path(form, n, prefix)), "id_strs", "id_str")

    def uuids(self, version: int, n: int = 1) -> List[str]:
        """n UUIDs of version 1, 4, 6 or 7."""
        return strs(self._call(f"/v1/uuid?version={int(version)}&n={count(n, 10_000)}"), "uuids", "uuid")

    def name_uuid(self, version: int, namespace: str, name: str) -> str:
        """The name-based UUID (version 3 or 5) of name in namespace (dns, url, oid, x500 or a UUID)."""
        return strs(self._call(name_uuid_path(version, namespace, name)), "uuids", "uuid")[0]

    def type_ids(self, prefix: str, n: int = 1) -> List[str]:
        """n TypeIDs (UUID version 7) with the prefix: user_01h455vb4pex5vsknk084sn02q."""
        return strs(self._call(f"/v1/uuid?version=7&form=typeid&prefix={urllib.parse.quote(prefix, safe='')}&n={count(n, 10_000)}"), "uuids", "uuid")

    def serials(self, name: str, n: int = 1) -> List[str]:
        """n serial numbers of the serial configured as name (serials: on the servers)."""
        return strs(self._call(f"/v1/serial/{_quote(name)}?n={count(n, 10_000)}"), "serials", "serial")

    def seq(self, space: str, key: str, n: int = 1) -> Tuple[int, int]:
        """The next n values (1 to 10,000) of key in a keyed sequence space:
        (first, last), each above every value key was given before. Sent to
        the key's section's owner once an answer named it (one hop); a
        section between owners (its owner killed) is asked again, on any
        server, for up to seq_wait seconds before the error is raised."""
        path = self._seq_path(space, key, n)
        info: dict = {}
        m = self._send("GET", path, None, False, self._seq_want(space, key), self.o.seq_wait, info)
        self._learn_route(space, info.get("route"), info.get("server", -1))
        return int(m["first_str"]), int(m["last_str"])

    def create_tag(self, name: str, step: int, mode: str = "", max_id: Optional[int] = None, mapping: str = "") -> None:
        """Creates a tag (tag administration, with the admin token)."""
        body: dict = {"name": name, "step": int(step)}
        if mode:
            body["mode"] = mode
        if max_id is not None:
            body["max_id"] = int(max_id)  # json writes every digit of an int
        if mapping:
            body["mapping"] = mapping
        self._send("POST", "/v1/tags", json.dumps(body), True)

    def stats(self) -> dict:
        """The client's counters, and per tag the IDs in hand and the size of the last lease."""
        out = dict(self.counters)
        out["leases"] = {t: {"remaining": l.s.remaining(), "size": l.s.size} for t, l in list(self._leases.items())}
        if self._counter_leases:
            out["counter_leases"] = {t: {"remaining": l.s.remaining(), "size": l.s.size, "shard_bits": l.s.bits} for t, l in list(self._counter_leases.items())}
        return out

    def close(self) -> None:
        """Closes the connections. frond has no call to give a lease's tail
        back: it is skipped (a gap), never reused."""
        self.closed = True
        for s in self._servers:
            s.close()

    # ---- Transport ----

    def _call(self, path: str) -> dict:
        return self._send("GET", path, None, False)

    def _send(self, method: str, path: str, body: Optional[str], admin: bool,
              want: int = -1, patience: float = 0.0, info: Optional[dict] = None) -> dict:
        """One call: attempts on the servers in turn (the first on want when
        it is one), then, with patience (a keyed sequence's seq_wait), more
        until that long has passed; info gets the server that answered and
        its Frond-Seq-Section header."""
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
                time.sleep(rest)
            k += 1
            try:
                self.counters["calls"] += 1
                m = self._once(s, method, path, body, admin, info)
            except FrondError as e:
                self._failed(s, e)
                last = e
                if e.status:
                    answered, e.server = e, s.base
                continue
            self._answered(s, i)
            if info is not None:
                info["server"] = i
            return m
        raise self._exhausted(last, k, answered)

    def _headers(self, body: Optional[str], admin: bool) -> dict:
        h = {"Accept": "application/json", "Frond-Timeout": self._timeout_header}
        if self.o.tag_token:
            h["X-Frond-Token"] = self.o.tag_token
        if admin and self.o.admin_token:
            h["Authorization"] = "Bearer " + self.o.admin_token
        if body is not None:
            h["Content-Type"] = "application/json"
        return h

    def _once(self, s: Server, method: str, path: str, body: Optional[str], admin: bool, info: Optional[dict] = None) -> dict:
        c = s.conn()
        try:
            c.request(method, path, body=body, headers=self._headers(body, admin))
            resp = c.getresponse()
            text = resp.read().decode("utf-8", "replace")
            status, ra = resp.status, retry_after_of(resp.getheader("Retry-After"))
            if info is not None:
                info["route"] = resp.getheader(SEQ_ROUTE_HEADER)
        except (OSError, http.client.HTTPException) as e:
            c.close()
            raise FrondError("", 0, f"server {s.base}: {e}") from e
        if resp.will_close:
            c.close()
        else:
            s.put(c)
        return answer(s.base, status, text, ra)
