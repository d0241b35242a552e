"""frond's errors: a server's answer (its stable code, the HTTP status, the
message, the retry time it gave), or no answer at all."""

from __future__ import annotations

from .codes import ERROR_CODES, ErrorCode


class FrondError(Exception):
    """An error of frond.

    ``code`` is an :class:`ErrorCode` (``ErrorCode.UNKNOWN`` for a code this
    client does not know, or when no server answered), ``wire_code`` the code
    as the server sent it, ``status`` the HTTP status (0: no answer),
    ``retry_after`` the server's Retry-After in seconds (0: none).
    """

    def __init__(self, wire_code: str, status: int, message: str, retry_after: float = 0.0):
        super().__init__(message)
        self.wire_code = wire_code or ""
        self.code = ErrorCode.of(self.wire_code)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether the error may pass by itself: retry later, or on another server."""
        if self.code is ErrorCode.UNKNOWN:
            return self.status == 0 or self.status >= 500
        return ERROR_CODES[self.code.value][0]

    @property
    def hint(self) -> str:
        """What to do, as frond's table says ("" for an unknown code)."""
        if self.code is ErrorCode.UNKNOWN:
            return ""
        return ERROR_CODES[self.code.value][1]
