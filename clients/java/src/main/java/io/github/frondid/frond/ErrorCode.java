// Code generated from frond.ErrorCodes (codes.go) by TestClientErrorCodes
// (go test -run TestClientErrorCodes -update-clients .); DO NOT EDIT.

package io.github.frondid.frond;

/**
 * frond's stable error codes, one table for every protocol and client
 * (codes.go): the code a server answers with, whether a retry may succeed,
 * and what to do.
 */
public enum ErrorCode {
    /** fix the request */
    INVALID_ARGUMENT("invalid_argument", false, "fix the request"),
    /** create the tag first (frond tag create, or the tag administration of docs/api.md) */
    TAG_NOT_FOUND("tag_not_found", false, "create the tag first (frond tag create, or the tag administration of docs/api.md)"),
    /** configure it under serials: in the server's configuration (docs/kinds.md) */
    SERIAL_NOT_FOUND("serial_not_found", false, "configure it under serials: in the server's configuration (docs/kinds.md)"),
    /** pick another name, or update the tag */
    TAG_EXISTS("tag_exists", false, "pick another name, or update the tag"),
    /** max_id can only be raised */
    WOULD_REISSUE("would_reissue", false, "max_id can only be raised"),
    /** the tag has used up 63 bits; use a new tag */
    TAG_EXHAUSTED("tag_exhausted", false, "the tag has used up 63 bits; use a new tag"),
    /** the serial's sequence outgrew {seq:W} this period: widen it or reset more often */
    SEQUENCE_OVERFLOW("sequence_overflow", false, "the serial's sequence outgrew {seq:W} this period: widen it or reset more often"),
    /** take the IDs of a sequence tag request by request (the Go client does this by itself) */
    NOT_LEASABLE("not_leasable", false, "take the IDs of a sequence tag request by request (the Go client does this by itself)"),
    /** ask for the tag's IDs where its form is answered: GET /v1/segment/{tag}, gRPC NextSegment, RESP SEGMENT, the Go client's NextStrings (docs/kinds.md#forms-across-protocols) */
    FORM_NOT_CARRIED("form_not_carried", false, "ask for the tag's IDs where its form is answered: GET /v1/segment/{tag}, gRPC NextSegment, RESP SEGMENT, the Go client's NextStrings (docs/kinds.md#forms-across-protocols)"),
    /** retry later; check the segment store (see /readyz) */
    STORE_UNAVAILABLE("store_unavailable", true, "retry later; check the segment store (see /readyz)"),
    /** the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, a Redis restarted empty): nothing is handed out from it until it is re-armed above every ID and value handed out (frond stores rearm for segment tags, frond space rearm for a keyed sequence space; docs/operations.md#a-store-that-went-back) */
    STORE_LOST_DATA("store_lost_data", false, "the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, a Redis restarted empty): nothing is handed out from it until it is re-armed above every ID and value handed out (frond stores rearm for segment tags, frond space rearm for a keyed sequence space; docs/operations.md#a-store-that-went-back)"),
    /** retry later; check the clock (NTP) if this persists (see /readyz) */
    CLOCK_BACKWARDS("clock_backwards", true, "retry later; check the clock (NTP) if this persists (see /readyz)"),
    /** fix this node's clock (NTP); it retries by itself (see /readyz) */
    CLOCK_SKEW("clock_skew", true, "fix this node's clock (NTP); it retries by itself (see /readyz)"),
    /** retry later; check the worker registry (see /readyz) */
    REGISTRY_BEHIND("registry_behind", true, "retry later; check the worker registry (see /readyz)"),
    /** retry later; check the worker registry (see /readyz); segment IDs are not affected */
    WORKER_UNAVAILABLE("worker_unavailable", true, "retry later; check the worker registry (see /readyz); segment IDs are not affected"),
    /** free a worker ID or configure another one */
    NO_WORKER_ID("no_worker_id", true, "free a worker ID or configure another one"),
    /** the snowflake layout's time field has run out: configure a layout with a later epoch */
    LAYOUT_EXPIRED("layout_expired", false, "the snowflake layout's time field has run out: configure a layout with a later epoch"),
    /** retry */
    UNAVAILABLE("unavailable", true, "retry"),
    /** send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md) */
    FORBIDDEN("forbidden", false, "send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md)"),
    /** (no hint: the message says it) */
    UNAUTHORIZED("unauthorized", false, ""),
    /** (no hint: the message says it) */
    NOT_FOUND("not_found", false, ""),
    /** (no hint: the message says it) */
    METHOD_NOT_ALLOWED("method_not_allowed", false, ""),
    /** (no hint: the message says it) */
    REQUEST_TOO_LARGE("request_too_large", false, ""),
    /** (no hint: the message says it) */
    RATE_LIMITED("rate_limited", false, ""),
    /** report this: it is a bug */
    INTERNAL("internal", false, "report this: it is a bug"),
    /** retry in a moment, with a smaller batch, or on another node: the node's answers not yet read by their clients fill its budget (limits.answer_budget) */
    OVERLOADED("overloaded", true, "retry in a moment, with a smaller batch, or on another node: the node's answers not yet read by their clients fill its budget (limits.answer_budget)"),
    /** A code this client does not know (a newer server's), or no answer of a server at all. */
    UNKNOWN("", false, "");

    private final String wire;
    private final boolean retryable;
    private final String hint;

    ErrorCode(String wire, boolean retryable, String hint) {
        this.wire = wire;
        this.retryable = retryable;
        this.hint = hint;
    }

    /** The code as servers send it ("tag_not_found"). */
    public String wire() {
        return wire;
    }

    /** Whether the error may pass by itself: retry later, or on another server. */
    public boolean retryable() {
        return retryable;
    }

    /** What to do, as frond's table says. */
    public String hint() {
        return hint;
    }

    /** The code named wire, or UNKNOWN. */
    public static ErrorCode of(String wire) {
        for (ErrorCode c : values()) {
            if (c.wire.equals(wire) && c != UNKNOWN) {
                return c;
            }
        }
        return UNKNOWN;
    }
}
