package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

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
	case service.CodeTagNotFound, service.CodeSerialNotFound, codeNotFound:
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
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	}
	return http.StatusInternalServerError
}

// hints say what to do about an error.
var hints = map[string]string{
	service.CodeInvalidArgument:  "fix the request",
	service.CodeTagNotFound:      "create the tag first (POST /v1/tags, or frond tag create)",
	service.CodeSerialNotFound:   "configure it under serials: in the server's configuration (docs/kinds.md)",
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

// methods are the methods a route may answer, for Allow.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// notFound answers every request no route takes: 405 with Allow when the
// path has routes for other methods, else 404.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range methods {
		probe := *r
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			msg: fmt.Sprintf("method %s is not allowed on %s: use %s (see docs/api.md)", service.Quote(r.Method), service.Quote(r.URL.Path), strings.Join(allow, ", "))})
		return
	}
	s.writeError(w, r, &apiError{status: http.StatusNotFound, code: codeNotFound,
		msg: "no such endpoint: " + service.Quote(r.Method) + " " + service.Quote(r.URL.Path) + " (see docs/api.md)"})
}

// brief cuts a message that may repeat a caller's input (a decoder's error)
// to a length worth reading.
func brief(msg string) string {
	const most = 120
	if len(msg) <= most {
		return msg
	}
	return msg[:most] + "..."
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }
