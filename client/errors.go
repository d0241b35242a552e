package client

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond"
)

// Error is a server's error: frond's stable code (as HTTP and RESP give
// it), the gRPC code and the message. It unwraps to frond's sentinel
// errors, so errors.Is(err, frond.ErrTagNotFound) works.
type Error struct {
	// Code is frond's stable code ("tag_not_found"); for an error without
	// frond's details (a connection refused), the gRPC code in snake case
	// ("unavailable").
	Code string
	// GRPC is the status code.
	GRPC codes.Code
	// Message is the server's message, with its hint.
	Message string
	// RetryAfter is the retry time the server gave, if any.
	RetryAfter time.Duration

	fromServer bool // the status carried frond's code
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// FromServer reports whether a frond server answered the error (its status
// carries frond's code), rather than the connection failing or a proxy
// answering: "unavailable" from a server that is up but cut off from its
// store, against a connection refused.
func (e *Error) FromServer() bool { return e.fromServer }

// Unwrap returns the sentinel of Code (frond.ErrorCode.Err); for a code
// without one, or an error without frond's details, ErrForbidden for an
// access refused and ErrStoreUnavailable for one another server, or the
// same later, may answer.
func (e *Error) Unwrap() error {
	if c, ok := frond.LookupCode(e.Code); ok && c.Err != nil {
		return c.Err
	}
	if e.GRPC == codes.PermissionDenied || e.GRPC == codes.Unauthenticated {
		return frond.ErrForbidden
	}
	if e.retryable() {
		// The segment engine retries an outage and fails fast on it.
		return frond.ErrStoreUnavailable
	}
	return nil
}

// retryable reports whether another server, or the same one later, may
// answer: it is down, cut off from its store or registry, or its clock is
// behind. RESOURCE_EXHAUSTED is frond's answer for a tag at the top of its
// range or a request too large: no other server answers differently.
func (e *Error) retryable() bool {
	switch e.GRPC {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	case codes.FailedPrecondition:
		return e.Code == frond.CodeClockBackwards || e.Code == frond.CodeClockSkew
	case codes.Unknown, codes.Internal:
		return e.Code != frond.CodeInternal // a proxy's or transport's error, not frond's answer
	}
	return false
}

// fromStatus converts a call's error.
func fromStatus(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	st := status.Convert(err)
	if errors.Is(err, context.DeadlineExceeded) {
		st = status.New(codes.DeadlineExceeded, err.Error())
	}
	out := &Error{GRPC: st.Code(), Message: st.Message(), Code: snake(st.Code())}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if c := d.GetMetadata()["code"]; c != "" {
				out.Code, out.fromServer = c, true
			}
		case *errdetails.RetryInfo:
			out.RetryAfter = d.GetRetryDelay().AsDuration()
		}
	}
	return out
}

// snake writes a gRPC code as frond writes codes: DeadlineExceeded is
// deadline_exceeded.
func snake(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
