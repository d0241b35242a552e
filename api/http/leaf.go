package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

var textPlain = []string{"text/plain; charset=utf-8"}

// leafSegment is Leaf's GET /api/segment/get/{key}: the bare ID as text.
// A tag whose configured form is opaque answers its opaque number here too.
func (s *Server) leafSegment(w http.ResponseWriter, r *http.Request) {
	s.leafShardTake(w, r, service.Request{Kind: service.KindSegment, Name: r.PathValue("key"), Numbers: true, Token: tagToken(r, queryToken(r))})
}

// leafShardTake is leafTake after reading the shard of a tag or a layout
// with shard bits from Leaf's query: ?shard_key=user-42 or ?shard=5
// (parsed only when the query may name one: Leaf's routes allocate
// little).
func (s *Server) leafShardTake(w http.ResponseWriter, r *http.Request, req service.Request) {
	if raw := r.URL.RawQuery; strings.Contains(raw, "shard") || strings.Contains(raw, "%") {
		q := query{}
		for k, v := range r.URL.Query() {
			if k == "shard" || k == "shard_key" {
				q[k] = v
			}
		}
		if err := shardOf(q, &req); err != nil {
			s.leafError(w, err)
			return
		}
	}
	s.leafTake(w, r, req)
}

// TokenHeader carries a tag token (service.Config.Tokens) on HTTP; the
// token query parameter does too (TinyID's way).
const TokenHeader = "X-Frond-Token"

// IdempotencyKeyHeader carries a request's idempotency key
// (service.Request.IdempotencyKey) on every route that issues IDs; an
// answer given again says so in ReplayedHeader.
const (
	IdempotencyKeyHeader = "Idempotency-Key"
	ReplayedHeader       = "Idempotent-Replayed"
)

// queryToken is the token query parameter, parsed only when the query
// may name one: most requests carry none, and parsing any query makes a
// map. A name may come %-encoded (%74oken), as the handlers decode it.
func queryToken(r *http.Request) string {
	raw := r.URL.RawQuery
	if !strings.Contains(raw, "token") && !strings.Contains(raw, "%") {
		return ""
	}
	return r.URL.Query().Get("token")
}

// tagToken is the request's tag token: the header, else query.
func tagToken(r *http.Request, query string) string {
	if t := r.Header.Get(TokenHeader); t != "" {
		return t
	}
	if query != "" {
		return query
	}
	// A Bearer token (the admin's, which allows every tag): the guard
	// reads it as the request's token too, so it must be the one checked
	// (issue 59: the admin's Bearer on an ID route was refused and counted
	// as a wrong guess).
	t, _ := api.Bearer(r.Header.Get("Authorization"))
	return t
}

// leafSnowflake is Leaf's GET /api/snowflake/get/{key}; Leaf ignores the key
// and so does frond. With snowflake.shard_bits the query names the shard
// (?shard=5 or ?shard_key=user-42).
func (s *Server) leafSnowflake(w http.ResponseWriter, r *http.Request) {
	s.leafShardTake(w, r, service.Request{Kind: service.KindSnowflake, Form: service.FormNumber})
}

func (s *Server) leafTake(w http.ResponseWriter, r *http.Request, req service.Request) {
	if a, ok := s.take(w, r, req, textPlain[0], func(err error) { s.leafError(w, err) }); ok {
		defer a.Release() // written (or the write timed out) when the handler returns
		writeID(w, a.Nums[0])
	}
}

func writeID(w http.ResponseWriter, id int64) {
	w.Header()["Content-Type"] = textPlain
	var b [24]byte
	w.Write(strconv.AppendInt(b[:0], id, 10))
}

// leafError answers 500 as Leaf does, with a body that says what went wrong:
// "error: <code>: <message>".
func (s *Server) leafError(w http.ResponseWriter, err error) {
	e := toAPIError(err)
	s.count(w, e)
	w.Header()["Content-Type"] = textPlain
	if e.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retry))
	}
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "error: %s: %s\n", e.Code, e.Message)
}

// leafDecode is Leaf's GET /decodeSnowflakeId?snowflakeId=N: a JSON object of
// strings, as Leaf's controller returns, decoded with the configured layout.
// The date is in UTC (Leaf uses the server's zone).
func (s *Server) leafDecode(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "snowflakeId")
	var id int64
	if err == nil {
		raw, _ := q.get("snowflakeId")
		id, err = parseID(raw)
	}
	if err == nil {
		var d decodedJSON
		d.Decoded, err = s.svc.Decode(id, "")
		if err == nil {
			ms := d.Time.UnixMilli()
			writeJSON(w, http.StatusOK, map[string]string{
				"timestamp":  fmt.Sprintf("%d(%s)", ms, d.Time.UTC().Format("2006-01-02 15:04:05.000")),
				"workerId":   strconv.FormatInt(d.Node, 10),
				"sequenceId": strconv.FormatInt(d.Seq, 10),
			})
			return
		}
	}
	// Leaf answers 200 with errorMsg; so does frond, adding the error object.
	e := toAPIError(err)
	s.count(w, e)
	writeJSON(w, http.StatusOK, map[string]any{
		"errorMsg": "snowflake ID could not be decoded: " + e.Message,
		"error":    map[string]string{"code": e.Code, "message": e.Message},
	})
}
