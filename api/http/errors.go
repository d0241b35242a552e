package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// statusOf maps a stable code to its HTTP status.
func statusOf(code string) int {
	switch code {
	case frond.CodeInvalidArgument:
		return http.StatusBadRequest
	case frond.CodeTagNotFound, frond.CodeSerialNotFound, frond.CodeNotFound:
		return http.StatusNotFound
	case frond.CodeTagExists, frond.CodeWouldReissue, frond.CodeTagExhausted, frond.CodeSeqOverflow, frond.CodeNotLeasable, frond.CodeFormNotCarried:
		return http.StatusConflict
	case frond.CodeUnauthorized:
		return http.StatusUnauthorized
	case frond.CodeForbidden:
		return http.StatusForbidden
	case frond.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case frond.CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case frond.CodeRateLimited:
		return http.StatusTooManyRequests
	case frond.CodeStoreLostData:
		return http.StatusServiceUnavailable // not to be retried, but the store's, not the request's
	}
	if api.Retryable(code) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// apiError is an error as HTTP answers it.
type apiError struct {
	api.Failure
	status int
	retry  int // seconds; 0: no Retry-After
}

// toAPIError classifies err (api.Fail) and gives it its status.
func toAPIError(err error) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = &api.Error{Code: frond.CodeTooLarge, Msg: "request body over " + strconv.Itoa(MaxBody) + " bytes"}
	}
	f := api.Fail(err)
	return &apiError{Failure: f, status: statusOf(f.Code), retry: f.RetrySeconds()}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Hint is what to do, when there is something: the end of
		// Message, on its own, for clients to show or pass through.
		Hint string `json:"hint,omitempty"`
	} `json:"error"`
}

// writeError answers with the JSON error body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toAPIError(err)
	s.count(w, e)
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retry))
	}
	var body errorBody
	body.Error.Code, body.Error.Message, body.Error.Hint = e.Code, e.Message, e.Hint
	writeJSON(w, e.status, body)
}

// count records a failure, and marks the request as refused for a wrong
// tag token, whichever API's shape answers it, so that the Guard counts
// it (a wrong admin token is counted by its check, Guard.AdminToken).
func (s *Server) count(w http.ResponseWriter, e *apiError) {
	if e.Code == frond.CodeForbidden {
		for w != nil {
			if sw, ok := w.(*statusWriter); ok {
				sw.authFailed = true
			}
			u, ok := w.(interface{ Unwrap() http.ResponseWriter })
			if !ok {
				break
			}
			w = u.Unwrap()
		}
	}
	s.m.Failed(api.HTTP, e.Code)
	if e.status >= 500 {
		s.opts.Logger.Warn("request failed", "code", e.Code, "err", e.Message)
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
		s.writeError(w, r, &api.Error{Code: frond.CodeMethodNotAllowed,
			Msg: fmt.Sprintf("method %s is not allowed on %s: use %s (see docs/api.md)", service.Quote(r.Method), service.Quote(r.URL.Path), strings.Join(allow, ", "))})
		return
	}
	s.writeError(w, r, &api.Error{Code: frond.CodeNotFound,
		Msg: "no such endpoint: " + service.Quote(r.Method) + " " + service.Quote(r.URL.Path) + " (see docs/api.md)"})
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
