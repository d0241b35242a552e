"""Snowflake layouts: decoding, composing and the bounds of a range of time,
offline, with the server's arithmetic (snowflake/layout.go, bounds.go)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from typing import Optional, Tuple, Union

from .shard import MAX_SHARD_BITS

Time = Union[datetime.datetime, datetime.date, int]  # an aware datetime, a date (midnight UTC) or Unix milliseconds


@dataclass(frozen=True)
class Layout:
    """A snowflake bit layout, as the server's layout setting names it:

        | 0 | time (time_bits) | node (node_bits) | sequence (seq_bits) | shard (shard_bits) |
    """

    name: str
    time_bits: int
    node_bits: int
    seq_bits: int
    unit_micros: int  # the time unit in microseconds
    epoch_ms: int  # the epoch in milliseconds since 1970
    datacenter_bits: int = 0  # of the node bits, from the top (snowflake.datacenter_bits)
    shard_bits: int = 0  # the lowest bits, below the sequence (snowflake.shard_bits)

    @property
    def bits(self) -> int:
        return self.time_bits + self.node_bits + self.seq_bits + self.shard_bits

    @property
    def max_tick(self) -> int:
        return (1 << self.time_bits) - 1

    @property
    def max_node(self) -> int:
        return (1 << self.node_bits) - 1

    @property
    def max_seq(self) -> int:
        return (1 << self.seq_bits) - 1

    @property
    def max_shard(self) -> int:
        """The largest shard; 0 without shard bits."""
        return (1 << self.shard_bits) - 1

    def with_shard_bits(self, k: int) -> "Layout":
        """The layout with k of its sequence bits, the lowest, made shard bits
        (snowflake.shard_bits; shard bits it had go back to the sequence
        first): the IDs keep their width and time, and a node issues 2^k
        times fewer a tick. 0 to 16, and at least one sequence bit is left."""
        seq = self.seq_bits + self.shard_bits
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= MAX_SHARD_BITS or k >= seq:
            raise ValueError(f"layout {self.name}: shard bits {k!r}: 0 to {min(MAX_SHARD_BITS, seq - 1)}, fewer than its {seq} sequence bits (at least one is left to the sequence)")
        return replace(self, seq_bits=seq - k, shard_bits=k)


def _utc_ms(y: int, m: int, d: int) -> int:
    return int(datetime.datetime(y, m, d, tzinfo=datetime.timezone.utc).timestamp() * 1000)


LAYOUTS = {
    "twitter": Layout("twitter", 41, 10, 12, 1_000, 1288834974657),
    "sonyflake": Layout("sonyflake", 39, 16, 8, 10_000, _utc_ms(2014, 9, 1)),
    "uid-generator": Layout("uid-generator", 28, 22, 13, 1_000_000, _utc_ms(2025, 1, 1)),
    "javascript": Layout("javascript", 38, 6, 9, 10_000, _utc_ms(2025, 1, 1)),
}

_ALIASES = {
    "": "twitter", "leaf": "twitter", "twitter": "twitter", "sonyflake": "sonyflake",
    "uid-generator": "uid-generator", "uidgenerator": "uid-generator", "baidu": "uid-generator",
    "javascript": "javascript", "js": "javascript", "js53": "javascript",
}


def preset(name: str, datacenter_bits: int = 0, shard_bits: int = 0) -> Layout:
    """The preset named name ("leaf" is twitter, "js" javascript, "baidu"
    uid-generator), with datacenter bits and shard bits (Layout.with_shard_bits)."""
    key = _ALIASES.get(name.strip().lower())
    if key is None:
        raise ValueError(f'no preset layout "{name}" (have javascript, sonyflake, twitter, uid-generator)')
    layout = LAYOUTS[key]
    if datacenter_bits < 0 or (datacenter_bits > 0 and datacenter_bits >= layout.node_bits):
        raise ValueError(f"layout {layout.name}: {datacenter_bits} datacenter bits: fewer than the {layout.node_bits} node bits")
    return replace(layout, datacenter_bits=datacenter_bits).with_shard_bits(shard_bits)


@dataclass(frozen=True)
class Parts:
    """What a snowflake ID holds; without datacenter bits, datacenter and
    worker are None, without shard bits shard is."""

    id: int
    layout: str
    time: datetime.datetime
    tick: int
    node: int
    sequence: int
    datacenter: Optional[int] = None
    worker: Optional[int] = None
    shard: Optional[int] = None


def decode(id: Union[int, str], layout: Layout = LAYOUTS["twitter"]) -> Parts:
    """Decodes a snowflake ID (an int, or its decimal string)."""
    v = int(id)
    top = (1 << layout.bits) - 1
    if v < 0 or v > top:
        raise ValueError(f"{v} is not between 0 and {top} for layout {layout.name}")
    shard = v & layout.max_shard if layout.shard_bits > 0 else None
    w = v >> layout.shard_bits
    tick = w >> (layout.node_bits + layout.seq_bits)
    node = (w >> layout.seq_bits) & layout.max_node
    seq = w & layout.max_seq
    micros = layout.epoch_ms * 1000 + tick * layout.unit_micros
    t = datetime.datetime.fromtimestamp(micros // 1_000_000, tz=datetime.timezone.utc) + datetime.timedelta(microseconds=micros % 1_000_000)
    dc = worker = None
    if layout.datacenter_bits > 0:
        wb = layout.node_bits - layout.datacenter_bits
        dc, worker = node >> wb, node & ((1 << wb) - 1)
    return Parts(v, layout.name, t, tick, node, seq, dc, worker, shard)


_UNIX = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICRO = datetime.timedelta(microseconds=1)


def _micros(t: Time, what: str) -> int:
    """t in microseconds since 1970: an aware datetime, a date (its midnight
    UTC) or an int of Unix milliseconds, as the server reads a time."""
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(f"{what} {t.isoformat()}: a datetime with a time zone (datetime.timezone.utc or an offset), as RFC 3339 has")
        return (t - _UNIX) // _MICRO  # exact: timedelta arithmetic in whole microseconds
    if isinstance(t, datetime.date):
        return (datetime.datetime(t.year, t.month, t.day, tzinfo=datetime.timezone.utc) - _UNIX) // _MICRO
    if isinstance(t, int) and not isinstance(t, bool):
        return t * 1000
    raise ValueError(f"{what} {t!r}: a datetime with a time zone, a date, or an int of Unix milliseconds")


def _tick(layout: Layout, micros: int) -> int:
    """floor((t - epoch) / unit): the tick that holds t (may lie outside the layout)."""
    return (micros - layout.epoch_ms * 1000) // layout.unit_micros


def _compose(layout: Layout, tick: int, node: int, seq: int, shard: int) -> int:
    return (tick << (layout.node_bits + layout.seq_bits) | node << layout.seq_bits | seq) << layout.shard_bits | shard


def _span(layout: Layout) -> str:
    end = layout.epoch_ms * 1000 + (layout.max_tick + 1) * layout.unit_micros
    return f"{_iso(layout.epoch_ms * 1000)} to {_iso(end)}"


def _iso(micros: int) -> str:
    try:
        return (_UNIX + datetime.timedelta(microseconds=micros)).isoformat().replace("+00:00", "Z")
    except OverflowError:
        return f"{micros} µs since 1970"


def compose(layout: Layout, time: Time, node: int, sequence: int = 0, shard: int = 0) -> int:
    """The snowflake ID of time (the tick that holds it: floor((time -
    epoch) / unit)), node, sequence and shard, as /v1/compose composes it.
    time is an aware datetime, a date (midnight UTC) or Unix milliseconds.
    ValueError: a time outside the layout's span, a field out of its range."""
    tick = _tick(layout, _micros(time, "time"))
    for what, v, top in (("tick", tick, layout.max_tick), ("node", node, layout.max_node),
                         ("sequence", sequence, layout.max_seq), ("shard", shard, layout.max_shard)):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= top:
            if what == "tick":
                raise ValueError(f"time {_iso(_micros(time, 'time'))} is not between the epoch and the end of layout {layout.name}: its IDs span {_span(layout)}")
            raise ValueError(f"{what} {v!r} out of 0..{top} for layout {layout.name}")
    return _compose(layout, tick, node, sequence, shard)


def bounds(layout: Layout, from_: Time, to: Time) -> Tuple[int, int]:
    """The first and the last ID of layout issued at an instant in
    [from_, to), as /v1/bounds answers: the first the ID of from_'s tick
    with node, sequence and shard 0, the last that of the tick holding the
    last instant before to (a microsecond before it) with every node,
    sequence and shard bit set. `WHERE id BETWEEN first AND last` holds
    every ID issued in the range (and may hold some of the same first and
    last ticks issued just outside it). A range that begins before the
    epoch or ends past the layout's end is cut to the layout's; an empty
    one, or one with none of its ticks, is ValueError."""
    a, b = _micros(from_, "from"), _micros(to, "to")
    if a >= b:
        raise ValueError(f"the range [{_iso(a)}, {_iso(b)}) is empty: from must be before to")
    first, last = _tick(layout, a), _tick(layout, b - 1)
    if last < 0 or first > layout.max_tick:
        raise ValueError(f"no ID of layout {layout.name} has a time in [{_iso(a)}, {_iso(b)}): its IDs span {_span(layout)}")
    first, last = max(first, 0), min(last, layout.max_tick)
    return _compose(layout, first, 0, 0, 0), _compose(layout, last, layout.max_node, layout.max_seq, layout.max_shard)
