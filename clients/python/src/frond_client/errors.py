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

    def __init__(self, wire_code: str, status: int, message: str, retry_after: float = 0.0, hint: str = ""):
        super().__init__(message)
        self.wire_code = wire_code or ""
        self.code = ErrorCode.of(self.wire_code)
        self.status = status
        self.retry_after = retry_after
        self._hint = hint or ""
        self.server = ""  # the server that answered, once a call knows it

    def with_message(self, message: str) -> "FrondError":
        """The same error (code, status, Retry-After, hint) said otherwise."""
        return FrondError(self.wire_code, self.status, message, self.retry_after, self._hint)

    @property
    def retryable(self) -> bool:
        """Whether the error may pass by itself: retry later, or on another server."""
        if self.code is ErrorCode.UNKNOWN:
            return self.status == 0 or self.status >= 500
        return ERROR_CODES[self.code.value][0]

    @property
    def hint(self) -> str:
        """What to do: the server's hint when it sent one (an unknown keyed
        sequence space: "create the space first ..."), else frond's table's
        for the code ("" for an unknown code)."""
        if self._hint:
            return self._hint
        if self.code is ErrorCode.UNKNOWN:
            return ""
        return ERROR_CODES[self.code.value][1]
