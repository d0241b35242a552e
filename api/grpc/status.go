package grpcapi

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
)

// Domain is the domain of the google.rpc.ErrorInfo in frond's errors.
const Domain = "frond.id"

// codeOf maps a stable code to its canonical gRPC code.
func codeOf(code string) codes.Code {
	switch code {
	case frond.CodeInvalidArgument:
		return codes.InvalidArgument
	case frond.CodeTagNotFound, frond.CodeSerialNotFound, frond.CodeNotFound:
		return codes.NotFound
	case frond.CodeTagExists:
		return codes.AlreadyExists
	case frond.CodeTagExhausted, frond.CodeSeqOverflow, frond.CodeTooLarge, frond.CodeRateLimited:
		return codes.ResourceExhausted
	case frond.CodeWouldReissue, frond.CodeStoreLostData, frond.CodeClockBackwards, frond.CodeClockSkew, frond.CodeLayoutExpired, frond.CodeNotLeasable, frond.CodeFormNotCarried:
		// The system is not in a state to serve the call: the clock is
		// behind or skewed, max_id cannot go down, the layout has run out.
		return codes.FailedPrecondition
	case frond.CodeUnauthorized:
		return codes.Unauthenticated
	case frond.CodeForbidden:
		return codes.PermissionDenied
	case frond.CodeInternal:
		return codes.Internal
	}
	if api.Retryable(code) {
		return codes.Unavailable
	}
	return codes.Unknown
}

// toStatus converts err to a status with frond's details, and reports its
// stable code. A call whose own deadline passed, or that its caller
// cancelled, gets DEADLINE_EXCEEDED or CANCELLED; a status error (from grpc
// itself) passes as it is.
func toStatus(ctx context.Context, err error) (*status.Status, string) {
	if g, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		st := g.GRPCStatus()
		return st, strings.ToLower(st.Code().String())
	}
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The caller's own deadline or cancellation: counted as such, not
		// as the server being unavailable.
		st := status.FromContextError(cerr)
		if errors.Is(cerr, context.Canceled) {
			return st, "cancelled"
		}
		return st, "deadline_exceeded"
	}
	f := api.Fail(err)
	st := status.New(codeOf(f.Code), f.Message)
	info := &errdetails.ErrorInfo{Reason: strings.ToUpper(f.Code), Domain: Domain, Metadata: map[string]string{"code": f.Code}}
	if f.RetryAfter > 0 {
		if d, derr := st.WithDetails(info, &errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryAfter)}); derr == nil {
			return d, f.Code
		}
	} else if d, derr := st.WithDetails(info); derr == nil {
		return d, f.Code
	}
	return st, f.Code
}
