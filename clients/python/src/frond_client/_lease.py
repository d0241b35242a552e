"""The bookkeeping of a tag's leases, shared by the threaded and the asyncio
clients: the ranges in hand, the next lease's size, the IDs below those
handed out that a lease after a fail-over brings (skipped), and when to
fetch the next lease (a tenth of the current one used: Leaf's double
buffer, over a client's leases). A lease of counters (next_shard,
next_for_key) is kept the same way, apart from the tag's plain leases: its
ranges are the tag's counters, and the answer says the tag's shard bits
(LeaseState.bits), which put the shard below each counter. No I/O and no
locking here: the range in hand is an iterator that threads may take from
at once (LeaseState.it)."""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from .errors import FrondError
from .shard import no_shard_bits, shard_of

MAX_LEASE = 1_000_000  # the server's largest ranges request
MAX_ID = (1 << 63) - 1


@dataclass(frozen=True)
class Range:
    """IDs start, start+stride, ... below end (exclusive): count of them."""

    start: int
    end: int
    stride: int
    count: int

    def last(self) -> int:
        return self.start + (self.count - 1) * self.stride


@dataclass
class Options:
    servers: List[str]
    timeout: float = 2.0
    attempts: int = 0
    backoff_min: float = 0.1
    backoff_max: float = 5.0
    min_lease: int = 1000
    max_lease: int = MAX_LEASE
    lease_target: float = 10.0
    unordered: bool = False
    tag_token: str = ""
    admin_token: str = ""
    ca_file: Optional[str] = None
    seq_wait: float = 10.0

    def timeout_header(self) -> str:
        """Frond-Timeout: one attempt's timeout in milliseconds (1 to
        600,000), sent with every request: a keyed sequence request that
        waits at the server (a section between owners) is answered 503
        with Retry-After before it, not left to time out."""
        return str(min(max(int(self.timeout * 1000), 1), 600_000))

    def check(self) -> None:
        if not self.servers:
            raise ValueError("frond: no servers")
        for name in ("timeout", "backoff_min", "backoff_max", "lease_target", "seq_wait"):
            if getattr(self, name) <= 0:
                raise ValueError(f"frond: {name} {getattr(self, name)}: must be positive")
        if not 1 <= self.min_lease <= self.max_lease <= MAX_LEASE:
            raise ValueError(f"frond: lease {self.min_lease}..{self.max_lease}: 1 <= min <= max <= {MAX_LEASE}")
        if self.backoff_max < self.backoff_min:
            raise ValueError("frond: backoff_max below backoff_min")


class LeaseState:
    """One tag's leases: the range in hand, the rest of the segment, the next
    segment once fetched. counters: leases of the tag's counters (counters=1),
    to which the tag's shard bits are applied in process."""

    def __init__(self, tag: str, o: Options, counters: bool = False):
        self.tag = tag
        self.o = o
        self.counters = counters
        # Of a lease of counters: the tag's shard bits as its leases said
        # (None until the first answer; 0: the tag has none), the largest
        # shard, and the largest counter that fits below them in 63 bits.
        self.bits: Optional[int] = None
        self.shard_max = 0
        self.counter_max = MAX_ID
        # The range in hand, as a range iterator: next() on it is one C call,
        # one atomic step under the GIL, so threads take IDs from it without
        # a lock (FrondClient); it is replaced only once used up, so an ID
        # taken later is always larger.
        self.it: Iterator[int] = iter(())
        self.rest: List[Range] = []
        self.prefetch_id: Optional[int] = None  # the ID whose handing out starts the next lease's fetch
        self.prefetch_at = 0
        self.cur_loaded = 0.0  # when the segment in hand was loaded (monotonic)
        self.have_cur = False
        self.pending: Optional[List[Range]] = None
        self.pending_count = 0
        self.pending_loaded = 0.0
        self.floor = -1  # the highest ID leased: IDs increase strictly
        self.size = o.min_lease
        self.via: Optional[str] = None  # the code with which the server refused to lease the tag

    def learn_bits(self, bits: int) -> None:
        """The shard bits a lease of counters said (a tag's never change)."""
        self.shard_max, self.counter_max = (1 << bits) - 1, MAX_ID >> bits
        self.bits = bits

    def shard_id(self, counter: int, shard: int, key: Optional[str]) -> int:
        """counter << K | shard, K the tag's shard bits (the shard of key
        when a key is given); checked: the tag has shard bits, shard is
        below 2^K and the counter fits below them."""
        bits = self.bits
        if not bits:
            raise no_shard_bits(self.tag)
        if key is not None:
            shard = shard_of(key, bits)
        elif shard > self.shard_max:
            raise FrondError("invalid_argument", 400, f"invalid argument: shard {shard}: tag {self.tag!r} has {bits} shard bits (0 to {self.shard_max})")
        if counter > self.counter_max:
            raise FrondError("tag_exhausted", 409, f"tag {self.tag!r}: counter {counter} does not fit below its {bits} shard bits: use a new tag")
        return counter << bits | shard

    def refuses_before(self, shard: int, key: Optional[str]) -> Optional[FrondError]:
        """The error a request for shard (or key) gets before a counter is
        taken for it, when the answers so far tell: a tag without shard bits,
        a shard past them."""
        if self.bits is None or self.via is not None:
            return None
        if self.bits == 0:
            return no_shard_bits(self.tag)
        if key is None and shard > self.shard_max:
            return FrondError("invalid_argument", 400, f"invalid argument: shard {shard}: tag {self.tag!r} has {self.bits} shard bits (0 to {self.shard_max})")
        return None

    def try_next(self) -> Optional[int]:
        """An ID from the lease in hand, or None."""
        while True:
            v = next(self.it, None)
            if v is not None:
                return v
            if not self.advance():
                return None

    def should_prefetch(self, v: int) -> bool:
        """Whether handing out v starts the next lease's fetch."""
        return v == self.prefetch_id and self.pending is None

    def in_hand(self) -> int:
        """The IDs left in the range in hand."""
        return operator.length_hint(self.it)

    def advance(self) -> bool:
        while True:
            if self.rest:
                r = self.rest.pop(0)
                if r.count == 0:
                    continue
                if 0 <= self.prefetch_at < r.count:
                    self.prefetch_id = r.start + self.prefetch_at * r.stride
                    self.prefetch_at = -1
                else:
                    self.prefetch_id = None
                    if self.prefetch_at >= 0:
                        self.prefetch_at -= r.count
                self.it = iter(range(r.start, r.start + r.count * r.stride, r.stride))
                return True
            if self.pending is None:
                return False
            self.install(False)

    def install(self, waited: bool) -> None:
        self.resize(waited)
        ranges, count, loaded = self.pending or [], self.pending_count, self.pending_loaded
        self.pending = None
        self.rest = list(ranges)
        self.it = iter(())
        self.prefetch_id = None
        self.prefetch_at = count // 10
        self.cur_loaded, self.have_cur = loaded, True

    def resize(self, waited: bool) -> None:
        if not self.have_cur:
            return
        lasted = time.monotonic() - self.cur_loaded
        if waited or lasted < self.o.lease_target / 2:
            self.size = min(self.size * 2, self.o.max_lease)
        elif lasted > 2 * self.o.lease_target:
            self.size = max(self.size // 2, self.o.min_lease)

    def empty(self) -> bool:
        return self.in_hand() == 0 and not self.rest and self.pending is None

    def remaining(self) -> int:
        return self.in_hand() + sum(r.count for r in self.rest) + (self.pending_count if self.pending is not None else 0)

    def keep(self, ranges: List[Range]) -> List[Range]:
        """The ranges of a lease above the IDs leased before (unless
        unordered), the floor raised to their top."""
        kept = []
        for r in ranges:
            if self.o.unordered or r.count == 0 or r.start > self.floor:
                kept.append(r)
                continue
            if r.last() <= self.floor:
                continue  # wholly below: a server that had it buffered before another served us
            skip = (self.floor - r.start) // r.stride + 1
            kept.append(Range(r.start + skip * r.stride, r.end, r.stride, r.count - skip))
        for r in kept:
            if r.count > 0:
                self.floor = max(self.floor, r.last())
        return kept

    def catch_up(self, n: int, ranges: List[Range]) -> int:
        """The size of the next lease after one that lay wholly below the IDs
        handed out: n and what lies between, so that it passes a server's
        buffer however far behind it lies (issue 60)."""
        top = max((r.last() for r in ranges if r.count > 0), default=0)
        return min(n + max(self.floor - top, 0), MAX_LEASE)

    def offer(self, ranges: List[Range]) -> None:
        """A fetched lease: the next segment."""
        if self.pending is None:
            self.pending = ranges
            self.pending_count = sum(r.count for r in ranges)
            self.pending_loaded = time.monotonic()


def ranges_of(m: dict) -> List[Range]:
    rs = m.get("ranges")
    if not isinstance(rs, list):
        raise FrondError("", 0, "frond's answer has no ranges")
    return [Range(int(r["start_str"]), int(r["end_str"]), int(r["stride"]), int(r["count"])) for r in rs]


def lease_path(tag_path: str, n: int, counters: bool) -> str:
    """The request of a lease of n IDs (or, with counters, of n counters) of a tag."""
    return f"/v1/segment/{tag_path}?format=ranges&lease=1{'&counters=1' if counters else ''}&n={n}"


def lease_of(m: dict, counters: bool) -> Tuple[List[Range], int]:
    """A lease's ranges, and (of a lease of counters) the tag's shard bits:
    0 when the answer names none (a tag without them, whose counters are
    its plain IDs)."""
    bits = m.get("shard_bits", 0) if counters else 0
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits <= 16:
        raise FrondError("", 0, f"frond's answer has shard_bits {bits!r}: 0 to 16")
    return ranges_of(m), bits


def unleased_shard(tag: str, m: dict) -> int:
    """The ID of a request of one ID on a shard (a tag whose counters are not
    leased: a sequence tag)."""
    if "id" not in m and "ids" not in m:
        raise FrondError("form_not_carried", 409, f"tag {tag} hands out text IDs (its form), not numbers: use next_strings")
    return int(strs(m, "id_strs", "id_str")[0])


def strs(m: dict, many: str, one: str) -> List[str]:
    if isinstance(m.get(one), str):
        return [m[one]]
    v = m.get(many)
    if not isinstance(v, list):
        raise FrondError("", 0, f"frond's answer has no {many}")
    return [str(x) for x in v]


def count(n: int, top: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > top:
        raise ValueError(f"frond: n {n}: 1 to {top}")
    return n


def behind_message(tag: str, ask: int) -> str:
    return (f"tag {tag}: 64 leases in a row, the last of {ask} IDs, lay below the IDs this client handed out: "
            "the servers' stores interleave (a set of stores, whose IDs do not increase across stores); "
            "set unordered=True if IDs need not increase per client")
