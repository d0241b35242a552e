"""Shard bits ("gene IDs", docs/kinds.md#shard-bits-gene-ids): the shard of
a key, as every frond server and client computes it (frond.KeyHash and
frond.ShardOf in Go), and the checks of a shard or a key given to
next_shard and next_for_key."""

from __future__ import annotations

from typing import Union

from .errors import FrondError

MAX_SHARD_BITS = 16  # a tag's or a snowflake layout's most shard bits (frond.MaxShardBits)

_M64 = (1 << 64) - 1
_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211


# The hashes of keys seen lately (a str key of at most _CACHE_KEY_CHARS
# characters): FNV-1a costs about 130 ns a byte in pure Python (a new int
# object per step), a dict lookup about 40 ns, and a user's rows mostly
# follow one another. Emptied when full, so it holds at most _CACHE_KEYS
# keys (measured: 1 MB of dict and ints, and the keys it keeps alive: 1 to
# 1.8 MB of 11- to 64-character keys); a dict's get and set are atomic
# (the GIL, or a free-threaded Python's per-dict lock), and a lost entry
# only costs its hash again.
_CACHE_KEYS = 16384
_CACHE_KEY_CHARS = 64
_cache: dict = {}


def key_hash(key: Union[str, bytes]) -> int:
    """The 64-bit hash of key (a str is hashed as its UTF-8 bytes): FNV-1a,
    then MurmurHash3's finaliser fmix64; an unsigned int below 2**64."""
    if type(key) is str:
        h = _cache.get(key)
        if h is None:
            h = _hash(key.encode())
            if len(key) <= _CACHE_KEY_CHARS:
                if len(_cache) >= _CACHE_KEYS:
                    _cache.clear()
                _cache[key] = h
        return h
    return _hash(_bytes(key))


def _hash(data: bytes) -> int:
    h, p, m = _FNV_OFFSET, _FNV_PRIME, _M64
    for b in data:
        h = (h ^ b) * p & m
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & m
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & m
    return h ^ h >> 33


def _bytes(key: object) -> bytes:
    if isinstance(key, str):
        return key.encode()
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"frond: a key is a str or bytes, not {type(key).__name__}")


def shard_of(key: Union[str, bytes], bits: int) -> int:
    """The shard of key under bits shard bits: the low bits of key_hash(key),
    0 to 2**bits - 1."""
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits <= 64:
        raise ValueError(f"frond: shard bits {bits!r}: 0 to 64")
    return key_hash(key) & ((1 << bits) - 1)


def invalid(message: str) -> FrondError:
    return FrondError("invalid_argument", 400, message)


def check_shard(shard: object) -> int:
    """shard, if it may be a shard of some tag (0 to 2**16 - 1)."""
    if not isinstance(shard, int) or isinstance(shard, bool) or not 0 <= shard < 1 << MAX_SHARD_BITS:
        raise invalid(f"invalid argument: shard {shard!r}: from 0 to 2^K-1 (K the tag's shard bits, at most {MAX_SHARD_BITS})")
    return shard


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise invalid(f"invalid argument: shard key {key!r}: a str")
    if key == "":
        raise invalid("invalid argument: an empty shard key")
    return key


def no_shard_bits(tag: str) -> FrondError:
    return invalid(f"invalid argument: tag {tag!r} has no shard bits (its lease of counters said none): ask with next_id")
