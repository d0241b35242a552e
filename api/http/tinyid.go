package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
)

// TinyID's HTTP API (Didi's tinyid-server, context path /tinyid), so that
// TinyID's clients work by changing the server address: docs/tinyid.md.
// bizType is the tag, token a tag token (service.Config.Tokens), batchSize
// the count (default 1, at most TinyIDMaxBatch: larger is cut to it, as
// TinyID does).

// TinyIDMaxBatch is TinyID's default batch.size.max.
const TinyIDMaxBatch = 100_000

// TinyID's response codes.
const (
	tinyOK       = 200
	tinyTokenErr = 5 // "token is error"
	tinySysErr   = 6
)

type tinyResponse struct {
	Data    any    `json:"data"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// tinySegment is TinyID's SegmentId: IDs currentId+delta, +2*delta, ... up
// to maxId inclusive, each congruent to remainder modulo delta; the client
// loads the next segment from loadingId on (20% in).
type tinySegment struct {
	MaxID     int64 `json:"maxId"`
	LoadingID int64 `json:"loadingId"`
	CurrentID int64 `json:"currentId"`
	Delta     int64 `json:"delta"`
	Remainder int64 `json:"remainder"`
}

// tinyParams reads bizType, token and batchSize from the query or a form
// body, as Spring binds them.
func (s *Server) tinyParams(w http.ResponseWriter, r *http.Request) (tag, token string, batch int64, err error) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		return "", "", 0, badRequest("malformed query or form: %s", brief(err.Error()))
	}
	batch = 1
	if raw := r.Form.Get("batchSize"); raw != "" {
		n, ok := service.Digits(strings.TrimPrefix(raw, "+"))
		if !ok || n < 1 {
			return "", "", 0, badRequest("batchSize=%s: a whole number from 1", service.Quote(raw))
		}
		batch = min(n, TinyIDMaxBatch)
	}
	return r.Form.Get("bizType"), tagToken(r, r.Form.Get("token")), batch, nil
}

// tinyHead answers HEAD as GET would (TinyID's routes always answer 200)
// without taking an ID: a probe or a link checker must not consume IDs.
func tinyHead(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		h(w, r)
	}
}

// tinyFail answers an error in TinyID's JSON: code 5 for a token that does
// not allow the tag, 6 for anything else, with frond's code in the message.
func (s *Server) tinyFail(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	s.count(w, e)
	out := tinyResponse{Code: tinySysErr, Message: e.Code + ": " + e.Message}
	if e.Code == frond.CodeForbidden {
		out.Code, out.Message = tinyTokenErr, "token is error"
	}
	w.Header().Set("X-Frond-Error", e.Code)
	writeJSON(w, http.StatusOK, out)
}

// tinySimpleFail answers an error on TinyID's simple routes: the error's
// status and "error: <code>: <message>" as text, its code in the
// X-Frond-Error header. TinyID answers an empty body with 200, which a
// person or a script reads as success with no ID; its client fails on
// either alike.
func (s *Server) tinySimpleFail(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	s.count(w, e)
	w.Header().Set("X-Frond-Error", e.Code)
	w.Header()["Content-Type"] = textPlain
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retry))
	}
	w.WriteHeader(e.status)
	fmt.Fprintf(w, "error: %s: %s\n", e.Code, e.Message)
}

// tinyIDs takes batch IDs of tag (as ranges: up to 100,000 in one request).
func (s *Server) tinyIDs(w http.ResponseWriter, r *http.Request) ([]int64, error) {
	tag, token, batch, err := s.tinyParams(w, r)
	if err != nil {
		return nil, err
	}
	a, err := s.takeKeyed(r, service.Request{Kind: service.KindSegment, Name: tag, Count: batch, Ranges: true, Numbers: true, Token: token})
	if err != nil {
		return nil, err
	}
	releaseAfter(r, a)
	if !a.Request.Ranges {
		return a.Nums, nil // a tag whose form is opaque: its numbers
	}
	ids := make([]int64, 0, batch)
	for _, x := range a.Ranges {
		ids = x.Append(ids)
	}
	return ids, nil
}

// tinyNextID: /tinyid/id/nextId: {"data": [ids], "code": 200, "message": ""}.
func (s *Server) tinyNextID(w http.ResponseWriter, r *http.Request) {
	ids, err := s.tinyIDs(w, r)
	if err != nil {
		s.tinyFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, tinyResponse{Data: ids, Code: tinyOK})
}

// tinyNextIDSimple: /tinyid/id/nextIdSimple: "1" or "1,2,3" as text.
func (s *Server) tinyNextIDSimple(w http.ResponseWriter, r *http.Request) {
	ids, err := s.tinyIDs(w, r)
	if err != nil {
		s.tinySimpleFail(w, err)
		return
	}
	b := make([]byte, 0, 20*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	w.Header()["Content-Type"] = textPlain
	w.Write(b)
}

// tinyLease takes one segment of the tag's step for a TinyID client: one
// run of IDs from one of frond's segments (service.Request.Run).
func (s *Server) tinyLease(w http.ResponseWriter, r *http.Request) (tinySegment, error) {
	tag, token, _, err := s.tinyParams(w, r)
	if err != nil {
		return tinySegment{}, err
	}
	a, err := s.takeKeyed(r, service.Request{Kind: service.KindSegment, Name: tag, Run: true, Token: token})
	if err != nil {
		return tinySegment{}, err
	}
	releaseAfter(r, a)
	if len(a.Ranges) != 1 || a.Ranges[0].Len() < 1 {
		return tinySegment{}, errors.New("tinyid: a run of no IDs")
	}
	x := a.Ranges[0]
	stride := max(x.Stride, 1)
	cur := x.Start - stride
	return tinySegment{
		CurrentID: cur, MaxID: x.Last(), Delta: stride, Remainder: x.Start % stride,
		LoadingID: cur + x.Len()*stride*20/100,
	}, nil
}

// tinyNextSegmentID: /tinyid/id/nextSegmentId: the segment as JSON.
func (s *Server) tinyNextSegmentID(w http.ResponseWriter, r *http.Request) {
	seg, err := s.tinyLease(w, r)
	if err != nil {
		s.tinyFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, tinyResponse{Data: seg, Code: tinyOK})
}

// tinyNextSegmentIDSimple: /tinyid/id/nextSegmentIdSimple:
// "currentId,loadingId,maxId,delta,remainder", what TinyID's client reads.
func (s *Server) tinyNextSegmentIDSimple(w http.ResponseWriter, r *http.Request) {
	seg, err := s.tinyLease(w, r)
	if err != nil {
		s.tinySimpleFail(w, err)
		return
	}
	w.Header()["Content-Type"] = textPlain
	b := strconv.AppendInt(nil, seg.CurrentID, 10)
	for _, v := range []int64{seg.LoadingID, seg.MaxID, seg.Delta, seg.Remainder} {
		b = strconv.AppendInt(append(b, ','), v, 10)
	}
	w.Write(b)
}
