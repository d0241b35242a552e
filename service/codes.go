package service

import (
	"context"
	"errors"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// Stable error codes, shared by every front end. Each maps to one HTTP
// status (see api/http) and, later, one gRPC code and one RESP error.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeTagNotFound      = "tag_not_found"
	CodeSerialNotFound   = "serial_not_found" // no serial of that name is configured
	CodeTagExists        = "tag_exists"
	CodeWouldReissue     = "would_reissue"
	CodeTagExhausted     = "tag_exhausted"
	CodeStoreUnavailable = "store_unavailable"
	CodeClockBackwards   = "clock_backwards"
	CodeUnreserved       = "registry_behind"
	CodeLayoutExpired    = "layout_expired"
	CodeNoWorkerID       = "no_worker_id"
	CodeWorkerLost       = "worker_unavailable" // no worker ID held now: registry unreachable, lease lost
	CodeClockSkew        = "clock_skew"         // the clock is far from the live peers' average
	CodeUnavailable      = "unavailable"        // shutting down, or a deadline ran out
	CodeSeqOverflow      = "sequence_overflow"  // a serial's sequence outgrew {seq:W}
	CodeForbidden        = "forbidden"          // the tag token does not allow the tag (Config.Tokens)
	CodeNotLeasable      = "not_leasable"       // a sequence tag's IDs cannot be leased (TinyID segments, client leases)
	CodeInternal         = "internal"
)

// Code returns the stable code of err.
func Code(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, idfmt.ErrSeqOverflow):
		return CodeSeqOverflow
	case errors.Is(err, frond.ErrWorkerLost):
		return CodeWorkerLost
	case errors.Is(err, frond.ErrInvalidArgument), errors.Is(err, snowflake.ErrInvalidID), errors.Is(err, snowflake.ErrInvalidLayout),
		errors.Is(err, idfmt.ErrInvalid):
		return CodeInvalidArgument
	case errors.Is(err, ErrForbidden):
		return CodeForbidden
	case errors.Is(err, frond.ErrNotLeasable):
		return CodeNotLeasable
	case errors.Is(err, ErrSerialNotFound):
		return CodeSerialNotFound
	case errors.Is(err, frond.ErrTagNotFound):
		return CodeTagNotFound
	case errors.Is(err, frond.ErrTagExists):
		return CodeTagExists
	case errors.Is(err, frond.ErrWouldReissue):
		return CodeWouldReissue
	case errors.Is(err, frond.ErrTagExhausted):
		return CodeTagExhausted
	case errors.Is(err, frond.ErrStoreUnavailable):
		return CodeStoreUnavailable
	case errors.Is(err, snowflake.ErrClockBackwards):
		return CodeClockBackwards
	case errors.Is(err, worker.ErrClockSkew):
		return CodeClockSkew
	case errors.Is(err, snowflake.ErrUnreserved):
		return CodeUnreserved
	case errors.Is(err, snowflake.ErrLayoutExpired):
		return CodeLayoutExpired
	case errors.Is(err, frond.ErrNoWorkerID):
		return CodeNoWorkerID
	case errors.Is(err, frond.ErrClosed), errors.Is(err, snowflake.ErrSealed), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return CodeUnavailable
	}
	return CodeInternal
}
