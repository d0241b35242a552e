# Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
# (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.
"""frond's stable error codes, one table for every protocol and client
(codes.go): the code a server answers with, whether a retry may succeed,
and what to do."""

import enum


class ErrorCode(str, enum.Enum):
    """One of frond's stable error codes; UNKNOWN is one this client does not
    know (a newer server's), or no answer of a server at all."""

    INVALID_ARGUMENT = "invalid_argument"
    TAG_NOT_FOUND = "tag_not_found"
    SERIAL_NOT_FOUND = "serial_not_found"
    TAG_EXISTS = "tag_exists"
    WOULD_REISSUE = "would_reissue"
    TAG_EXHAUSTED = "tag_exhausted"
    SEQUENCE_OVERFLOW = "sequence_overflow"
    NOT_LEASABLE = "not_leasable"
    FORM_NOT_CARRIED = "form_not_carried"
    STORE_UNAVAILABLE = "store_unavailable"
    STORE_LOST_DATA = "store_lost_data"
    CLOCK_BACKWARDS = "clock_backwards"
    CLOCK_SKEW = "clock_skew"
    REGISTRY_BEHIND = "registry_behind"
    WORKER_UNAVAILABLE = "worker_unavailable"
    NO_WORKER_ID = "no_worker_id"
    LAYOUT_EXPIRED = "layout_expired"
    UNAVAILABLE = "unavailable"
    FORBIDDEN = "forbidden"
    UNAUTHORIZED = "unauthorized"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    REQUEST_TOO_LARGE = "request_too_large"
    RATE_LIMITED = "rate_limited"
    INTERNAL = "internal"
    OVERLOADED = "overloaded"
    UNKNOWN = ""

    @classmethod
    def of(cls, wire: str) -> "ErrorCode":
        """The code named wire, or UNKNOWN."""
        try:
            return cls(wire) if wire else cls.UNKNOWN
        except ValueError:
            return cls.UNKNOWN


# By code: whether a retry may succeed, and what to do.
ERROR_CODES = {
    "invalid_argument": (False, "fix the request"),
    "tag_not_found": (False, "create the tag first (frond tag create, or the tag administration of docs/api.md)"),
    "serial_not_found": (False, "configure it under serials: in the server's configuration (docs/kinds.md)"),
    "tag_exists": (False, "pick another name, or update the tag"),
    "would_reissue": (False, "max_id can only be raised"),
    "tag_exhausted": (False, "the tag has used up 63 bits; use a new tag"),
    "sequence_overflow": (False, "the serial's sequence outgrew {seq:W} this period: widen it or reset more often"),
    "not_leasable": (False, "take the IDs of a sequence tag request by request (the Go client does this by itself)"),
    "form_not_carried": (False, "ask for the tag's IDs where its form is answered: GET /v1/segment/{tag}, gRPC NextSegment, RESP SEGMENT, the Go client's NextStrings (docs/kinds.md#forms-across-protocols)"),
    "store_unavailable": (True, "retry later; check the segment store (see /readyz)"),
    "store_lost_data": (False, "the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, a Redis restarted empty): nothing is handed out from it until it is re-armed above every ID and value handed out (frond stores rearm for segment tags, frond space rearm for a keyed sequence space; docs/operations.md#a-store-that-went-back)"),
    "clock_backwards": (True, "retry later; check the clock (NTP) if this persists (see /readyz)"),
    "clock_skew": (True, "fix this node's clock (NTP); it retries by itself (see /readyz)"),
    "registry_behind": (True, "retry later; check the worker registry (see /readyz)"),
    "worker_unavailable": (True, "retry later; check the worker registry (see /readyz); segment IDs are not affected"),
    "no_worker_id": (True, "free a worker ID or configure another one"),
    "layout_expired": (False, "the snowflake layout's time field has run out: configure a layout with a later epoch"),
    "unavailable": (True, "retry"),
    "forbidden": (False, "send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md)"),
    "unauthorized": (False, ""),
    "not_found": (False, ""),
    "method_not_allowed": (False, ""),
    "request_too_large": (False, ""),
    "rate_limited": (False, ""),
    "internal": (False, "report this: it is a bug"),
    "overloaded": (True, "retry in a moment, with a smaller batch, or on another node: the node's answers not yet read by their clients fill its budget (limits.answer_budget)"),
}
