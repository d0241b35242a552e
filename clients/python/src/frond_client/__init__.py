"""frond_client: the Python client of frond, the distributed unique-ID
service (docs/clients.md). Segment IDs from leases in process, strictly
increasing per tag across fail-over, with shard bits put in in process
(next_shard, next_for_key); snowflake IDs, UUIDs, TypeIDs, serial numbers
and keyed sequence values per call; snowflake decode, compose and bounds
offline; typed errors. Standard library only. FrondClient is threaded;
AsyncFrondClient is for asyncio."""

from ._lease import Range
from .aio import AsyncFrondClient, AsyncTag
from .client import FrondClient, Tag
from .codes import ERROR_CODES, ErrorCode
from .errors import FrondError
from .shard import MAX_SHARD_BITS, key_hash, shard_of
from .snowflake import LAYOUTS, Layout, Parts, bounds, compose, decode, preset

__all__ = [
    "AsyncFrondClient", "AsyncTag", "ERROR_CODES", "ErrorCode", "FrondClient", "FrondError",
    "LAYOUTS", "Layout", "MAX_SHARD_BITS", "Parts", "Range", "Tag", "bounds", "compose", "decode",
    "key_hash", "preset", "shard_of",
]
__version__ = "0.1.0"
