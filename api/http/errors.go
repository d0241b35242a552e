package httpapi

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
)

// Codes of the HTTP layer itself, beside service's.
const (
	codeUnauthorized     = "unauthorized"
	codeNotFound         = "not_found"
	codeTooLarge         = "request_too_large"
	codeMethodNotAllowed = "method_not_allowed"
)

// statusOf maps a stable code to its HTTP status.
func statusOf(code string) int {
	switch code {
	case service.CodeInvalidArgument:
		return http.StatusBadRequest
	case service.CodeTagNotFound, codeNotFound:
		return http.StatusNotFound
	case service.CodeTagExists, service.CodeWouldReissue, service.CodeTagExhausted, service.CodeSeqOverflow:
		return http.StatusConflict
	case service.CodeStoreUnavailable, service.CodeClockBackwards, service.CodeUnreserved, service.CodeNoWorkerID, service.CodeUnavailable,
		service.CodeWorkerLost, service.CodeClockSkew:
		return http.StatusServiceUnavailable
	case codeUnauthorized:
		return http.StatusUnauthorized
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// hints say what to do about an error.
var hints = map[string]string{
	service.CodeInvalidArgument:  "fix the request",
	service.CodeTagNotFound:      "create the tag first (POST /v1/tags, or frond tag create)",
	service.CodeTagExists:        "pick another name, or change the tag with PATCH /v1/tags/{tag}",
	service.CodeWouldReissue:     "max_id can only be raised",
	service.CodeTagExhausted:     "the tag has used up 63 bits; use a new tag",
	service.CodeStoreUnavailable: "retry after Retry-After seconds; check the segment store (see /readyz)",
	service.CodeClockBackwards:   "retry after Retry-After seconds; check the clock (NTP) if this persists (see /readyz)",
	service.CodeUnreserved:       "retry after Retry-After seconds; check the worker registry (see /readyz)",
	service.CodeLayoutExpired:    "the snowflake layout's time field has run out: configure a layout with a later epoch",
	service.CodeNoWorkerID:       "free a worker ID or configure another one",
	service.CodeUnavailable:      "retry",
	service.CodeWorkerLost:       "retry after Retry-After seconds; check the worker registry (see /readyz); segment IDs are not affected",
	service.CodeClockSkew:        "fix this node's clock (NTP); it retries by itself (see /readyz)",
	service.CodeSeqOverflow:      "the serial's sequence outgrew {seq:W} this period: widen it or reset more often",
	service.CodeInternal:         "report this: it is a bug",
}

type apiError struct {
	status int
	code   string
	msg    string
	retry  int // seconds; 0: no Retry-After
}

// toAPIError classifies err.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge, msg: "request body over " + strconv.Itoa(MaxBody) + " bytes"}
	}
	code := service.Code(err)
	e := &apiError{status: statusOf(code), code: code, msg: err.Error()}
	if h := hints[code]; h != "" {
		e.msg += ": " + h
	}
	if e.status == http.StatusServiceUnavailable {
		e.retry = 1
		var ce *snowflake.ClockError
		var cbe *service.ClockBehindError
		switch {
		case errors.As(err, &cbe):
			e.retry = max(1, int(math.Ceil(cbe.Behind.Seconds())))
		case errors.As(err, &ce):
			e.retry = max(1, int(math.Ceil(ce.Offset.Seconds())))
		}
	}
	return e
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers with the JSON error body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toAPIError(err)
	s.count(e)
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retry))
	}
	var body errorBody
	body.Error.Code, body.Error.Message = e.code, e.msg
	writeJSON(w, e.status, body)
}

func (s *Server) count(e *apiError) {
	if s.m != nil {
		s.m.errors.WithLabelValues(e.code).Inc()
	}
	if e.status >= 500 {
		s.opts.Logger.Warn("request failed", "code", e.code, "err", e.msg)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: "no such endpoint: " + r.Method + " " + r.URL.Path + " (see docs/api.md)"})
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }
