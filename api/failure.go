// Package api holds what frond's front ends (api/http, api/grpc, api/resp)
// share, so that each rule is written once: how an error is answered (its
// stable code, message, hint and retry time), the admin token check, and
// the per-protocol metrics. The rules of a request itself (validation before
// any ID is taken) live in the service layer (service.Request).
package api

import (
	"crypto/subtle"
	"errors"
	"math"
	"time"

	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// Codes of the front ends, beside the service's (service.Code*).
const (
	CodeUnauthorized     = "unauthorized"       // an admin operation without the admin token
	CodeNotFound         = "not_found"          // no such endpoint, method or command
	CodeTooLarge         = "request_too_large"  // a request over the protocol's bound
	CodeMethodNotAllowed = "method_not_allowed" // HTTP: the path exists for other methods
)

// Error is an error the front end classifies itself (an unknown endpoint, a
// missing token): its code is given, not derived from a cause.
type Error struct {
	Code string
	Msg  string
	// RetryAfter, when positive, is when a retry may succeed (CodeRateLimited).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Msg }

// Failure is an error as every protocol answers it.
type Failure struct {
	// Code is the stable error code (service.Code*, Code*).
	Code string
	// Message says what went wrong and, when there is one, what to do.
	Message string
	// RetryAfter, when positive, is how long to wait before a retry that
	// may succeed (the store or the registry back, the clock caught up).
	RetryAfter time.Duration
}

// Fail classifies err.
func Fail(err error) Failure {
	var e *Error
	if errors.As(err, &e) {
		return Failure{Code: e.Code, Message: e.Msg, RetryAfter: e.RetryAfter}
	}
	code := service.Code(err)
	f := Failure{Code: code, Message: err.Error()}
	if h := hints[code]; h != "" {
		f.Message += ": " + h
	}
	if Retryable(code) {
		f.RetryAfter = time.Second
		var ce *snowflake.ClockError
		var cbe *worker.ClockBehindError
		switch {
		case errors.As(err, &cbe):
			f.RetryAfter = cbe.Behind
		case errors.As(err, &ce):
			f.RetryAfter = ce.Offset
		}
	}
	return f
}

// RetrySeconds is RetryAfter in whole seconds, rounded up: HTTP's
// Retry-After. 0 means no retry is advised.
func (f Failure) RetrySeconds() int {
	if f.RetryAfter <= 0 {
		return 0
	}
	return max(1, int(math.Ceil(f.RetryAfter.Seconds())))
}

// Retryable reports whether an error of code may pass by itself: the
// store, the registry or the clock is expected back, or the node was
// shutting down (another node serves).
func Retryable(code string) bool {
	switch code {
	case service.CodeStoreUnavailable, service.CodeClockBackwards, service.CodeUnreserved, service.CodeNoWorkerID,
		service.CodeUnavailable, service.CodeWorkerLost, service.CodeClockSkew:
		return true
	}
	return false
}

// hints say what to do about an error, in words that fit every protocol.
var hints = map[string]string{
	service.CodeInvalidArgument:  "fix the request",
	service.CodeTagNotFound:      "create the tag first (frond tag create, or the tag administration of docs/api.md)",
	service.CodeSerialNotFound:   "configure it under serials: in the server's configuration (docs/kinds.md)",
	service.CodeTagExists:        "pick another name, or update the tag",
	service.CodeWouldReissue:     "max_id can only be raised",
	service.CodeTagExhausted:     "the tag has used up 63 bits; use a new tag",
	service.CodeStoreUnavailable: "retry later; check the segment store (see /readyz)",
	service.CodeClockBackwards:   "retry later; check the clock (NTP) if this persists (see /readyz)",
	service.CodeUnreserved:       "retry later; check the worker registry (see /readyz)",
	service.CodeLayoutExpired:    "the snowflake layout's time field has run out: configure a layout with a later epoch",
	service.CodeNoWorkerID:       "free a worker ID or configure another one",
	service.CodeUnavailable:      "retry",
	service.CodeWorkerLost:       "retry later; check the worker registry (see /readyz); segment IDs are not affected",
	service.CodeClockSkew:        "fix this node's clock (NTP); it retries by itself (see /readyz)",
	service.CodeSeqOverflow:      "the serial's sequence outgrew {seq:W} this period: widen it or reset more often",
	service.CodeNotLeasable:      "take the IDs of a sequence tag request by request (the Go client does this by itself)",
	service.CodeForbidden:        "send a token that allows the tag (token parameter, X-Frond-Token header, x-frond-token metadata, RESP TOKEN; docs/tinyid.md)",
	service.CodeInternal:         "report this: it is a bug",
}

// TokenOK reports whether got is the admin token want, in constant time. An
// empty want (no token configured) lets everyone in.
func TokenOK(want, got string) bool {
	return want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
