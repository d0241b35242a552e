package frond

// Stable error codes: the name every protocol answers an error with (HTTP's
// {"error": {"code"}}, gRPC's ErrorInfo metadata "code", the first word of
// a RESP error in capitals, the Go client's Error.Code). A code never
// changes its meaning. Each is described once, in the table below; the
// front ends keep only their own status for it.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeTagNotFound      = "tag_not_found"
	CodeSerialNotFound   = "serial_not_found"
	CodeTagExists        = "tag_exists"
	CodeWouldReissue     = "would_reissue"
	CodeTagExhausted     = "tag_exhausted"
	CodeSeqOverflow      = "sequence_overflow"
	CodeNotLeasable      = "not_leasable"
	CodeFormNotCarried   = "form_not_carried"
	CodeStoreUnavailable = "store_unavailable"
	CodeStoreLostData    = "store_lost_data"
	CodeClockBackwards   = "clock_backwards"
	CodeClockSkew        = "clock_skew"
	CodeUnreserved       = "registry_behind"
	CodeWorkerLost       = "worker_unavailable"
	CodeNoWorkerID       = "no_worker_id"
	CodeLayoutExpired    = "layout_expired"
	CodeUnavailable      = "unavailable"
	CodeForbidden        = "forbidden"
	CodeUnauthorized     = "unauthorized"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeTooLarge         = "request_too_large"
	CodeRateLimited      = "rate_limited"
	CodeInternal         = "internal"
	CodeOverloaded       = "overloaded"
)

// ErrorCode describes a stable error code.
type ErrorCode struct {
	Name string
	// Err is the sentinel error of the code: a client's error of this code
	// unwraps to it. Nil: none of its own (a retryable code then unwraps to
	// ErrStoreUnavailable).
	Err error
	// Retryable: the error may pass by itself (the store, the registry or
	// the clock is expected back, the node was stopping): retry later, or
	// on another node.
	Retryable bool
	// Hint says what to do, in words that fit every protocol.
	Hint string
}

var errorCodes = [...]ErrorCode{
	{CodeInvalidArgument, ErrInvalidArgument, false, "fix the request"},
	{CodeTagNotFound, ErrTagNotFound, false, "create the tag first (frond tag create, or the tag administration of docs/api.md)"},
	{CodeSerialNotFound, ErrTagNotFound, false, "configure it under serials: in the server's configuration (docs/kinds.md)"},
	{CodeTagExists, ErrTagExists, false, "pick another name, or update the tag"},
	{CodeWouldReissue, ErrWouldReissue, false, "max_id can only be raised"},
	{CodeTagExhausted, ErrTagExhausted, false, "the tag has used up 63 bits; use a new tag"},
	{CodeSeqOverflow, nil, false, "the serial's sequence outgrew {seq:W} this period: widen it or reset more often"},
	{CodeNotLeasable, ErrNotLeasable, false, "take the IDs of a sequence tag request by request (the Go client does this by itself)"},
	{CodeFormNotCarried, ErrFormNotCarried, false, "ask for the tag's IDs where its form is answered: GET /v1/segment/{tag}, gRPC NextSegment, RESP SEGMENT, the Go client's NextStrings (docs/kinds.md#forms-across-protocols)"},
	{CodeStoreUnavailable, ErrStoreUnavailable, true, "retry later; check the segment store (see /readyz)"},
	{CodeStoreLostData, ErrStoreLostData, false, "the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, a Redis restarted empty): nothing is handed out from it until it is re-armed above every ID and value handed out (frond stores rearm for segment tags, frond space rearm for a keyed sequence space; docs/operations.md#a-store-that-went-back)"},
	{CodeClockBackwards, nil, true, "retry later; check the clock (NTP) if this persists (see /readyz)"},
	{CodeClockSkew, nil, true, "fix this node's clock (NTP); it retries by itself (see /readyz)"},
	{CodeUnreserved, nil, true, "retry later; check the worker registry (see /readyz)"},
	{CodeWorkerLost, ErrWorkerLost, true, "retry later; check the worker registry (see /readyz); segment IDs are not affected"},
	{CodeNoWorkerID, ErrNoWorkerID, true, "free a worker ID or configure another one"},
	{CodeLayoutExpired, nil, false, "the snowflake layout's time field has run out: configure a layout with a later epoch"},
	{CodeUnavailable, nil, true, "retry"},
	{CodeForbidden, ErrForbidden, false, "send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md)"},
	{CodeUnauthorized, ErrForbidden, false, ""},
	{CodeNotFound, nil, false, ""},
	{CodeMethodNotAllowed, nil, false, ""},
	{CodeTooLarge, nil, false, ""},
	{CodeRateLimited, nil, false, ""},
	{CodeInternal, nil, false, "report this: it is a bug"},
	{CodeOverloaded, ErrOverloaded, true, "retry in a moment, with a smaller batch, or on another node: the node's answers not yet read by their clients fill its budget (limits.answer_budget)"},
}

// ErrorCodes returns every stable error code.
func ErrorCodes() []ErrorCode { return errorCodes[:] }

// LookupCode returns the code named name.
func LookupCode(name string) (ErrorCode, bool) {
	for _, c := range errorCodes {
		if c.Name == name {
			return c, true
		}
	}
	return ErrorCode{}, false
}
