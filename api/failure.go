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

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// Error is an error the front end classifies itself (an unknown endpoint, a
// missing token): its code is given, not derived from a cause.
type Error struct {
	Code string
	Msg  string
	// RetryAfter, when positive, is when a retry may succeed (frond.CodeRateLimited).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Msg }

// Failure is an error as every protocol answers it.
type Failure struct {
	// Code is the stable error code (frond.ErrorCodes).
	Code string
	// Message says what went wrong and, when there is one, what to do.
	Message string
	// Hint is what to do, when there is something (the end of Message, on
	// its own): the error's own hint when it knows better than its code's
	// (a keyed sequence space, not a tag), else its code's (frond.ErrorCodes).
	Hint string
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
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		f.Hint = h.Hint() // an error that knows better than its code (a space, not a tag)
	} else if c, _ := frond.LookupCode(code); c.Hint != "" {
		f.Hint = c.Hint
	}
	if f.Hint != "" {
		f.Message += ": " + f.Hint
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

// Retryable reports whether an error of code may pass by itself
// (frond.ErrorCode.Retryable).
func Retryable(code string) bool {
	c, _ := frond.LookupCode(code)
	return c.Retryable
}

// TokenOK reports whether got is the admin token want, in constant time. An
// empty want (no token configured) lets everyone in.
func TokenOK(want, got string) bool {
	return want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
