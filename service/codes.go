package service

import (
	"context"
	"errors"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// Code returns the stable code of err (frond.ErrorCodes): the engines'
// errors, classified in this order.
func Code(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, idfmt.ErrSeqOverflow):
		return frond.CodeSeqOverflow
	case errors.Is(err, frond.ErrWorkerLost):
		return frond.CodeWorkerLost
	case errors.Is(err, frond.ErrOverloaded):
		return frond.CodeOverloaded
	case errors.Is(err, frond.ErrInvalidArgument), errors.Is(err, snowflake.ErrInvalidID), errors.Is(err, snowflake.ErrInvalidLayout),
		errors.Is(err, idfmt.ErrInvalid):
		return frond.CodeInvalidArgument
	case errors.Is(err, ErrForbidden):
		return frond.CodeForbidden
	case errors.Is(err, frond.ErrNotLeasable):
		return frond.CodeNotLeasable
	case errors.Is(err, frond.ErrFormNotCarried):
		return frond.CodeFormNotCarried
	case errors.Is(err, ErrSerialNotFound):
		return frond.CodeSerialNotFound
	case errors.Is(err, frond.ErrTagNotFound):
		return frond.CodeTagNotFound
	case errors.Is(err, frond.ErrTagExists):
		return frond.CodeTagExists
	case errors.Is(err, frond.ErrWouldReissue):
		return frond.CodeWouldReissue
	case errors.Is(err, frond.ErrTagExhausted):
		return frond.CodeTagExhausted
	case errors.Is(err, frond.ErrStoreLostData):
		return frond.CodeStoreLostData
	case errors.Is(err, frond.ErrStoreUnavailable):
		return frond.CodeStoreUnavailable
	case errors.Is(err, snowflake.ErrClockBackwards):
		return frond.CodeClockBackwards
	case errors.Is(err, worker.ErrClockSkew):
		return frond.CodeClockSkew
	case errors.Is(err, snowflake.ErrUnreserved):
		return frond.CodeUnreserved
	case errors.Is(err, snowflake.ErrLayoutExpired):
		return frond.CodeLayoutExpired
	case errors.Is(err, frond.ErrNoWorkerID):
		return frond.CodeNoWorkerID
	case errors.Is(err, frond.ErrClosed), errors.Is(err, snowflake.ErrSealed), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return frond.CodeUnavailable
	}
	return frond.CodeInternal
}
