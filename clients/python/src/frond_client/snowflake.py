"""Snowflake layouts and decoding, as the server decodes (snowflake/layout.go)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace
from typing import Optional, Union


@dataclass(frozen=True)
class Layout:
    """A snowflake bit layout, as the server's layout setting names it."""

    name: str
    time_bits: int
    node_bits: int
    seq_bits: int
    unit_micros: int  # the time unit in microseconds
    epoch_ms: int  # the epoch in milliseconds since 1970
    datacenter_bits: int = 0  # of the node bits, from the top (snowflake.datacenter_bits)


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


def preset(name: str, datacenter_bits: int = 0) -> Layout:
    """The preset named name ("leaf" is twitter, "js" javascript, "baidu"
    uid-generator), with datacenter bits."""
    key = _ALIASES.get(name.strip().lower())
    if key is None:
        raise ValueError(f'no preset layout "{name}" (have javascript, sonyflake, twitter, uid-generator)')
    layout = LAYOUTS[key]
    if datacenter_bits < 0 or (datacenter_bits > 0 and datacenter_bits >= layout.node_bits):
        raise ValueError(f"layout {layout.name}: {datacenter_bits} datacenter bits: fewer than the {layout.node_bits} node bits")
    return replace(layout, datacenter_bits=datacenter_bits)


@dataclass(frozen=True)
class Parts:
    """What a snowflake ID holds; without datacenter bits, datacenter and worker are None."""

    id: int
    layout: str
    time: datetime.datetime
    tick: int
    node: int
    sequence: int
    datacenter: Optional[int] = None
    worker: Optional[int] = None


def decode(id: Union[int, str], layout: Layout = LAYOUTS["twitter"]) -> Parts:
    """Decodes a snowflake ID (an int, or its decimal string)."""
    v = int(id)
    top = (1 << (layout.time_bits + layout.node_bits + layout.seq_bits)) - 1
    if v < 0 or v > top:
        raise ValueError(f"{v} is not between 0 and {top} for layout {layout.name}")
    tick = v >> (layout.node_bits + layout.seq_bits)
    node = (v >> layout.seq_bits) & ((1 << layout.node_bits) - 1)
    seq = v & ((1 << layout.seq_bits) - 1)
    micros = layout.epoch_ms * 1000 + tick * layout.unit_micros
    t = datetime.datetime.fromtimestamp(micros // 1_000_000, tz=datetime.timezone.utc) + datetime.timedelta(microseconds=micros % 1_000_000)
    if layout.datacenter_bits > 0:
        wb = layout.node_bits - layout.datacenter_bits
        return Parts(v, layout.name, t, tick, node, seq, node >> wb, node & ((1 << wb) - 1))
    return Parts(v, layout.name, t, tick, node, seq)
