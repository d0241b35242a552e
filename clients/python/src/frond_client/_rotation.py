"""The servers' rotation both clients share: which server to ask next,
a server's rest after a retryable failure (backoff with jitter, at least
the server's Retry-After), and the error once every attempt failed. The
threaded and the asyncio client differ only in how they wait and call."""

from __future__ import annotations

import random
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from ._lease import count
from .errors import FrondError
from .shard import key_hash

# The most sections a route is kept for (keyseq.MaxRouteSections): a
# header naming more is ignored.
MAX_ROUTE_SECTIONS = 1 << 16


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
    # By keyed sequence space, by section: the server that last said it
    # serves the section (its index + 1), or the last that said it sent
    # the request on (-(index + 1): the next one is asked), or 0.
    _routes: Dict[str, List[int]]

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
        """Raises e if it is final; else rests the server: for its
        Retry-After when it answered with one (it is up, and said when to
        come back: no longer, or a live server rests past the time it named
        while the others are down), else for a backoff doubling with each
        failure."""
        if not e.retryable:
            raise e
        if e.status and e.retry_after > 0:
            # It is up: no failure in a row of a server that does not
            # answer (a timeout after a run of such answers rested it long).
            s.fails = 0
            s.down_until = time.monotonic() + e.retry_after
        else:
            s.fails = min(s.fails + 1, 30)
            wait = min(self.o.backoff_max, self.o.backoff_min * 2 ** min(s.fails - 1, 20))
            s.down_until = time.monotonic() + max(wait * (0.8 + 0.4 * random.random()), e.retry_after)
        if len(self._servers) > 1:
            self.counters["failovers"] += 1

    def _first(self, want: int) -> int:
        """The server of a call's first attempt: want (a keyed sequence's
        section owner) when it is one and not resting, else _pick's."""
        if 0 <= want < len(self._servers) and self._servers[want].down_until <= time.monotonic():
            return want
        return self._pick()

    def _more(self, k: int, attempts: int, deadline: float) -> bool:
        """Whether a call makes a (k+1)-th attempt: its attempts, then, for a
        keyed sequence (deadline > 0), until its seq_wait runs out."""
        return k < attempts or (deadline > 0 and time.monotonic() < deadline)

    def _rest_fits(self, k: int, attempts: int, deadline: float, rest: float) -> bool:
        """Whether a rest before attempt k ends in time for it."""
        return k < attempts or time.monotonic() + rest < deadline

    def _seq_path(self, space: str, key: str, n: int) -> str:
        if not isinstance(space, str) or space == "":
            raise ValueError("frond: a keyed sequence space needs a name")
        if not isinstance(key, str) or key == "":
            raise ValueError("frond: a keyed sequence needs a key")
        key_path = "%2E" * len(key) if key in (".", "..") else urllib.parse.quote(key, safe="")
        return f"/v1/seq/{urllib.parse.quote(space, safe='')}/{key_path}?n={count(n, 10_000)}"

    def _seq_want(self, space: str, key: str) -> int:
        """The server to ask first for key: its section's owner as the
        answers said, the server after one that sent it on, or -1."""
        r = self._routes.get(space)
        if not r:
            return -1
        v = r[key_hash(key) % len(r)]
        if v > 0:
            return v - 1
        if v < 0:
            return (-v) % len(self._servers)
        return -1

    def _learn_route(self, space: str, header: Optional[str], i: int) -> None:
        """Keeps what server i said of the key's section (Frond-Seq-Section:
        "5/1024 self", or "other": it sent the request on)."""
        if not header or i < 0:
            return
        pos, _, owner = header.strip().partition(" ")
        sec, _, n = pos.partition("/")
        if owner not in ("self", "other") or not sec.isdigit() or not n.isdigit():
            return
        section, sections = int(sec), int(n)
        if not (0 < sections <= MAX_ROUTE_SECTIONS and section < sections):
            return
        r = self._routes.get(space)
        if r is None or len(r) != sections:
            r = self._routes[space] = [0] * sections
        r[section] = i + 1 if owner == "self" else -(i + 1)

    def _answered(self, s: Any, i: int) -> None:
        s.fails, s.down_until, self._preferred = 0, 0.0, i

    def _exhausted(self, last: Optional[FrondError], attempts: int, answered: Optional[FrondError] = None) -> FrondError:
        """The error of a call whose attempts ran out: the last a server
        answered (its code, status, Retry-After and hint) when one did,
        else the last attempt's; the message names both. A server that
        answered 503 store_unavailable while the other was down reads as
        that, not as the dead one's refused connection."""
        assert last is not None
        first = answered if answered is not None else last
        msg = f"no server could answer ({attempts} attempts on {len(self._servers)} servers); "
        if answered is not None:
            msg += f"the last answer, from {answered.server or 'a server'}: {answered.status} {answered.wire_code}: {answered}"
            if answered is not last:
                msg += f"; the last attempt: {last}"
        else:
            msg += f"the last: {last}"
        err = first.with_message(msg)
        err.__cause__ = first
        return err
