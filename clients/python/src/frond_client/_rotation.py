"""The servers' rotation both clients share: which server to ask next,
a server's rest after a retryable failure (backoff with jitter, at least
the server's Retry-After), and the error once every attempt failed. The
threaded and the asyncio client differ only in how they wait and call."""

from __future__ import annotations

import random
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from .errors import FrondError


def parse_server(raw: str) -> Tuple[str, str, str, int, bool]:
    """A server as given (host:port, http://host:port or https://host:port):
    its base URL, its netloc, host, port, and whether it is https."""
    u = raw.strip()
    if "://" not in u:
        u = "http://" + u
    p = urllib.parse.urlsplit(u)
    if p.scheme not in ("http", "https") or not p.hostname:
        raise ValueError(f"frond: server {raw}: want http://host:port or https://host:port")
    https = p.scheme == "https"
    return f"{p.scheme}://{p.netloc}", p.netloc, p.hostname, p.port or (443 if https else 80), https


class _Rotation:
    _servers: List[Any]  # each with fails and down_until
    _preferred: int
    o: Any  # Options
    counters: Dict[str, int]
    closed: bool

    def _attempts(self) -> int:
        if self.closed:
            raise FrondError("", 0, "frond: the client is closed")
        return self.o.attempts if self.o.attempts > 0 else 3 * len(self._servers)

    def _pick(self) -> int:
        """The preferred server if it is not resting, else the next one
        that is not, else the one whose rest ends first."""
        now, best, best_rest = time.monotonic(), self._preferred, float("inf")
        n = len(self._servers)
        for k in range(n):
            i = (self._preferred + k) % n
            r = self._servers[i].down_until - now
            if r <= 0:
                return i
            if r < best_rest:
                best, best_rest = i, r
        return best

    def _failed(self, s: Any, e: FrondError) -> None:
        """Raises e if it is final; else rests the server."""
        if not e.retryable:
            raise e
        s.fails = min(s.fails + 1, 30)
        wait = min(self.o.backoff_max, self.o.backoff_min * 2 ** min(s.fails - 1, 20))
        s.down_until = time.monotonic() + max(wait * (0.8 + 0.4 * random.random()), e.retry_after)
        if len(self._servers) > 1:
            self.counters["failovers"] += 1

    def _answered(self, s: Any, i: int) -> None:
        s.fails, s.down_until, self._preferred = 0, 0.0, i

    def _exhausted(self, last: Optional[FrondError], attempts: int) -> FrondError:
        assert last is not None
        err = FrondError(last.wire_code, last.status, f"no server could answer ({attempts} attempts on {len(self._servers)} servers); the last: {last}", last.retry_after)
        err.__cause__ = last
        return err
