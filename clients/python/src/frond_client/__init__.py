"""frond_client: the Python client of frond, the distributed unique-ID
service (docs/clients.md). Segment IDs from leases in process, strictly
increasing per tag across fail-over; snowflake IDs, UUIDs, TypeIDs, serial
numbers and keyed sequence values per call; typed errors. Standard library
only. FrondClient is threaded; AsyncFrondClient is for asyncio."""

from ._lease import Range
from .aio import AsyncFrondClient, AsyncTag
from .client import FrondClient, Tag
from .codes import ERROR_CODES, ErrorCode
from .errors import FrondError
from .snowflake import LAYOUTS, Layout, Parts, decode, preset

__all__ = [
    "AsyncFrondClient", "AsyncTag", "ERROR_CODES", "ErrorCode", "FrondClient", "FrondError",
    "LAYOUTS", "Layout", "Parts", "Range", "Tag", "decode", "preset",
]
__version__ = "0.1.0"
