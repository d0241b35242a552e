package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/service"
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", frond.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// query is a request's query string, parsed strictly: a malformed query (a
// stray ';', a bad %-escape) is refused rather than read in part, and so are
// a parameter given twice and one the route does not know (a typo would
// otherwise be ignored: "fomr=base62" answering plain numbers).
type query url.Values

func parseQuery(r *http.Request, known ...string) (query, error) {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: %v", err)
	}
	for k, vs := range v {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return nil, badRequest("parameter %s: this route takes none", service.Quote(k))
			}
			return nil, badRequest("parameter %s: this route takes %s", service.Quote(k), strings.Join(known, ", "))
		}
		if len(vs) > 1 {
			return nil, badRequest("parameter %s given %d times", service.Quote(k), len(vs))
		}
	}
	return query(v), nil
}

// get returns a parameter and whether it was given (perhaps empty).
func (q query) get(name string) (string, bool) {
	vs, ok := q[name]
	if !ok {
		return "", false
	}
	return vs[0], true
}

// int reads a whole-number parameter from lo to hi, def when absent.
func (q query) int(name string, def, lo, hi int64) (int64, error) {
	raw, ok := q.get(name)
	if !ok {
		return def, nil
	}
	n, ok := service.Digits(raw)
	if !ok || n < lo || n > hi {
		return 0, badRequest("%s=%s: must be a whole number from %d to %d", name, service.Quote(raw), lo, hi)
	}
	return n, nil
}

// flag reads a parameter of 1 or true, 0 or false; false when absent.
func (q query) flag(name string) (bool, error) {
	v, ok := q.get(name)
	switch {
	case !ok || v == "0" || v == "false":
		return false, nil
	case v == "1" || v == "true":
		return true, nil
	}
	return false, badRequest("%s=%s: 1 or 0", name, service.Quote(v))
}

// parseCount reads the n parameter: absent means 0 (one ID, answered alone);
// given, it is a whole number from 1 to limit written in digits only ("",
// "+5", " 5" and "5;x" are refused, not read as a default).
func parseCount(q query, limit int64) (int64, error) {
	raw, ok := q.get("n")
	if !ok {
		return 0, nil
	}
	n, ok := service.Digits(raw)
	if !ok || n < 1 || n > limit {
		return 0, badRequest("n=%s: must be a whole number from 1 to %d", service.Quote(raw), limit)
	}
	return n, nil
}

// parseID reads a decimal, non-negative 64-bit ID.
func parseID(raw string) (int64, error) {
	id, ok := service.Digits(raw)
	if !ok {
		return 0, badRequest("ID %s: must be a decimal number from 0 to %d", service.Quote(raw), int64(1<<63-1))
	}
	return id, nil
}

type idsJSON struct {
	Tag    string   `json:"tag,omitempty"`
	Form   string   `json:"form,omitempty"`
	Shard  *int64   `json:"shard,omitempty"` // of a tag with shard bits
	ID     *int64   `json:"id,omitempty"`
	IDStr  string   `json:"id_str,omitempty"`
	IDs    []int64  `json:"ids,omitempty"`
	IDStrs []string `json:"id_strs,omitempty"`
}

type rangeJSON struct {
	Start    int64  `json:"start"`
	End      int64  `json:"end"` // exclusive
	Stride   int64  `json:"stride"`
	Count    int64  `json:"count"`
	StartStr string `json:"start_str"`
	EndStr   string `json:"end_str"`
}

const contentJSON = "application/json; charset=utf-8"

// take answers a request for IDs: the service checks the whole request
// before it takes any ID. HEAD only peeks (service.Peek): it answers the
// status a GET would, and takes no ID. fail writes an error in the route's
// shape.
func (s *Server) take(w http.ResponseWriter, r *http.Request, req service.Request, contentType string, fail func(error)) (service.Answer, bool) {
	if r.Method == http.MethodHead {
		if err := s.svc.Peek(r.Context(), &req); err != nil {
			fail(err)
			return service.Answer{}, false
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		return service.Answer{}, false
	}
	a, err := s.takeKeyed(r, req)
	if err != nil {
		fail(err)
		return service.Answer{}, false
	}
	if a.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	return a, true
}

// takeKeyed takes req's IDs with the request's idempotency key. The
// caller releases the answer's place in the node's answer budget
// (service.Answer.Release) once it is written.
func (s *Server) takeKeyed(r *http.Request, req service.Request) (service.Answer, error) {
	req.IdempotencyKey = r.Header.Get(IdempotencyKeyHeader)
	return s.svc.Take(r.Context(), req)
}

// releaseAfter releases a's place in the answer budget when the request's
// handler has returned (its answer written, or its write timed out): for
// the routes that build their answer away from where they take it.
func releaseAfter(r *http.Request, a service.Answer) {
	if h := a.TakeHold(); h != nil {
		context.AfterFunc(r.Context(), h.Release)
	}
}

// v1Take decodes the query of a /v1 ID route with parse and answers with
// encode.
func (s *Server) v1Take(w http.ResponseWriter, r *http.Request, known []string, parse func(q query, req *service.Request) error, encode func(a service.Answer) any) {
	fail := func(err error) { s.writeError(w, r, err) }
	q, err := parseQuery(r, known...)
	if err != nil {
		fail(err)
		return
	}
	var req service.Request
	if err := parse(q, &req); err != nil {
		fail(err)
		return
	}
	if a, ok := s.take(w, r, req, contentJSON, fail); ok {
		defer a.Release() // written (or the write timed out) when the handler returns
		writeJSON(w, http.StatusOK, encode(a))
	}
}

// idsAnswer is the JSON of IDs: one ({"id", "id_str"}) or a batch ({"ids",
// "id_strs"}); string forms have no numbers.
func idsAnswer(a service.Answer) any {
	req := a.Request
	out := idsJSON{Tag: req.Name}
	if a.Form != service.FormNumber {
		out.Form = a.Form
	}
	if req.HasShard {
		out.Shard = &req.Shard
	}
	if req.Count > 0 {
		out.IDs, out.IDStrs = a.Nums, a.Texts()
	} else {
		out.IDStr = a.Texts()[0]
		if a.Nums != nil {
			out.ID = &a.Nums[0]
		}
	}
	return out
}

// shardOf reads the shard parameters of a request for a tag or a layout
// with shard bits into req: shard (a whole number) or shard_key (the shard is then
// the key's, frond.ShardOf); the service checks them against the tag.
func shardOf(q query, req *service.Request) error {
	if _, ok := q.get("shard"); ok {
		n, err := q.int("shard", 0, 0, 1<<frond.MaxShardBits-1)
		if err != nil {
			return err
		}
		req.Shard, req.HasShard = n, true
	}
	if k, ok := q.get("shard_key"); ok {
		if k == "" {
			return badRequest("shard_key: an empty key (1 to %d bytes)", service.MaxShardKey)
		}
		req.ShardKey = k
	}
	return nil
}

// v1Segment: GET|POST /v1/segment/{tag}[?n=N][&format=ids|ranges][&form=F][&prefix=P][&shard=S|&shard_key=K].
func (s *Server) v1Segment(w http.ResponseWriter, r *http.Request) {
	s.v1Take(w, r, []string{"n", "format", "form", "prefix", "token", "lease", "counters", "shard", "shard_key"}, func(q query, req *service.Request) error {
		format, _ := q.get("format")
		if format != "" && format != "ids" && format != "ranges" {
			return badRequest("format=%s: must be ids or ranges", service.Quote(format))
		}
		// lease=1: the caller hands the IDs out later (a client library's
		// lease, as gRPC's LeaseRanges): a sequence tag refuses it
		// (not_leasable), and a tag whose IDs are not plain numbers too
		// (form_not_carried).
		lease, err := q.flag("lease")
		if err != nil {
			return err
		}
		if lease && format != "ranges" {
			return badRequest("lease=1 needs format=ranges: a lease is ranges the client hands out itself")
		}
		// counters=1 (with lease=1): the client applies a tag's shard bits
		// itself; the answer's shard_bits says how many.
		counters, err := q.flag("counters")
		if err != nil {
			return err
		}
		limit := int64(service.MaxBatch)
		if format == "ranges" {
			limit = service.MaxRangesBatch
		}
		form, _ := q.get("form")
		prefix, _ := q.get("prefix")
		n, err := parseCount(q, limit)
		token, _ := q.get("token")
		*req = service.Request{Kind: service.KindSegment, Name: r.PathValue("tag"), Count: n, Form: form, Prefix: prefix, Ranges: format == "ranges", Lease: lease, Counters: counters, Token: tagToken(r, token)}
		if err != nil {
			return err
		}
		return shardOf(q, req)
	}, func(a service.Answer) any {
		req := a.Request
		if !req.Ranges {
			return idsAnswer(a)
		}
		out := make([]rangeJSON, len(a.Ranges))
		for i, x := range a.Ranges {
			out[i] = rangeJSON{Start: x.Start, End: x.End, Stride: x.Stride, Count: x.Len(),
				StartStr: strconv.FormatInt(x.Start, 10), EndStr: strconv.FormatInt(x.End, 10)}
		}
		if req.ShardBits > 0 {
			return map[string]any{"tag": req.Name, "count": max(req.Count, 1), "ranges": out, "shard_bits": req.ShardBits}
		}
		return map[string]any{"tag": req.Name, "count": max(req.Count, 1), "ranges": out}
	})
}

// v1Snowflake: GET|POST /v1/snowflake[?n=N][&form=F][&prefix=P][&shard=S|&shard_key=K].
func (s *Server) v1Snowflake(w http.ResponseWriter, r *http.Request) {
	s.v1Take(w, r, []string{"n", "form", "prefix", "shard", "shard_key"}, func(q query, req *service.Request) error {
		form, _ := q.get("form")
		prefix, _ := q.get("prefix")
		n, err := parseCount(q, service.MaxBatch)
		*req = service.Request{Kind: service.KindSnowflake, Count: n, Form: form, Prefix: prefix}
		if err != nil {
			return err
		}
		return shardOf(q, req)
	}, idsAnswer)
}

// v1UUID: GET|POST /v1/uuid[?version=1|3|4|5|6|7][&n=N][&namespace=NS&name=X]
// [&form=typeid&prefix=P]: {"uuid"} or {"uuids"}.
func (s *Server) v1UUID(w http.ResponseWriter, r *http.Request) {
	s.v1Take(w, r, []string{"n", "version", "namespace", "name", "form", "prefix"}, func(q query, req *service.Request) error {
		*req = service.Request{Kind: service.KindUUID}
		if v, ok := q.get("version"); ok {
			n, ok := service.Digits(v)
			if !ok || n < 1 || n > 9 {
				return badRequest("version=%s: 1, 3, 4, 5, 6 or 7", service.Quote(v))
			}
			req.Version = int(n)
		}
		req.Namespace, _ = q.get("namespace")
		req.Form, _ = q.get("form")
		req.Prefix, _ = q.get("prefix")
		if name, ok := q.get("name"); ok {
			if name == "" {
				return badRequest("name=: a name-based UUID needs a name")
			}
			req.Name = name
		}
		var err error
		req.Count, err = parseCount(q, service.MaxBatch)
		return err
	}, func(a service.Answer) any {
		out := map[string]any{"version": a.Request.Version}
		if a.Request.Form != "" {
			out["form"] = a.Request.Form
		}
		if a.Request.Count > 0 {
			out["uuids"] = a.Strs
		} else {
			out["uuid"] = a.Strs[0]
		}
		return out
	})
}

// v1Serial: GET|POST /v1/serial/{name}[?n=N]: {"serial"} or {"serials"}.
func (s *Server) v1Serial(w http.ResponseWriter, r *http.Request) {
	s.v1Take(w, r, []string{"n"}, func(q query, req *service.Request) error {
		n, err := parseCount(q, service.MaxBatch)
		*req = service.Request{Kind: service.KindSerial, Name: r.PathValue("name"), Count: n}
		return err
	}, func(a service.Answer) any {
		if a.Request.Count > 0 {
			return map[string]any{"name": a.Request.Name, "serials": a.Strs}
		}
		return map[string]any{"name": a.Request.Name, "serial": a.Strs[0]}
	})
}

type revealJSON struct {
	Kind  string `json:"kind"`
	Form  string `json:"form"`
	Value string `json:"value"`
	// KeyVersion is the version of the obfuscation key that gave an opaque
	// value; 0 or absent: the current key.
	KeyVersion int `json:"key_version"`
	// Prefix the value must carry; absent: the tag's configured prefix,
	// when tag is given, else any.
	Prefix string `json:"prefix"`
	Tag    string `json:"tag"`
}

// v1Reveal: POST /v1/reveal {"kind": "segment"|"snowflake"|"uuid", "form",
// "value", "key_version", "prefix", "tag"}: the ID behind a formatted one
// (admin: it undoes the opaque forms), or the UUID behind a TypeID.
func (s *Server) v1Reveal(w http.ResponseWriter, r *http.Request) {
	var in revealJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.Reveal(service.RevealRequest{Kind: in.Kind, Form: in.Form, Value: in.Value, KeyVersion: in.KeyVersion, Prefix: in.Prefix, Tag: in.Tag})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	js := map[string]any{"kind": out.Kind}
	if out.UUID != "" {
		js["uuid"] = out.UUID
	} else {
		js["id"], js["id_str"] = out.ID, strconv.FormatInt(out.ID, 10)
	}
	if out.Prefix != "" {
		js["prefix"] = out.Prefix
	}
	if out.Salts != nil {
		js["salts"] = out.Salts
	}
	writeJSON(w, http.StatusOK, js)
}

type decodedJSON struct {
	service.Decoded
	IDStr string `json:"id_str"`
}

// v1Decode: GET /v1/decode/{id}[?layout=NAME].
func (s *Server) v1Decode(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "layout")
	var id int64
	if err == nil {
		id, err = parseID(r.PathValue("id"))
	}
	if err == nil {
		layout, _ := q.get("layout")
		var d service.Decoded
		d, err = s.svc.Decode(id, layout)
		if err == nil {
			writeJSON(w, http.StatusOK, decodedJSON{Decoded: d, IDStr: strconv.FormatInt(id, 10)})
			return
		}
	}
	s.writeError(w, r, err)
}

// v1Compose: GET /v1/compose?time=T[&node=N|&datacenter=D&worker=W][&sequence=S][&shard=S|&shard_key=K][&layout=NAME]:
// the snowflake ID of those fields, decoded again (as /v1/decode answers).
func (s *Server) v1Compose(w http.ResponseWriter, r *http.Request) {
	d, err := func() (service.Decoded, error) {
		q, err := parseQuery(r, "time", "node", "datacenter", "worker", "sequence", "layout", "shard", "shard_key")
		if err != nil {
			return service.Decoded{}, err
		}
		raw, _ := q.get("time")
		var c service.ComposeRequest
		if c.Time, err = service.ParseTime("time", raw); err != nil {
			return service.Decoded{}, err
		}
		c.Layout, _ = q.get("layout")
		if c.Node, err = q.int("node", 0, 0, math.MaxInt64); err != nil {
			return service.Decoded{}, err
		}
		if c.Seq, err = q.int("sequence", 0, 0, math.MaxInt64); err != nil {
			return service.Decoded{}, err
		}
		if c.Shard, err = q.int("shard", 0, 0, math.MaxInt64); err != nil {
			return service.Decoded{}, err
		}
		c.ShardKey, _ = q.get("shard_key")
		for name, field := range map[string]**int64{"datacenter": &c.Datacenter, "worker": &c.Worker} {
			if _, ok := q.get(name); ok {
				v, err := q.int(name, 0, 0, math.MaxInt64)
				if err != nil {
					return service.Decoded{}, err
				}
				*field = &v
			}
		}
		return s.svc.Compose(c)
	}()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, decodedJSON{Decoded: d, IDStr: strconv.FormatInt(d.ID, 10)})
}

// boundsJSON is service.Bounds as the JSON API answers it: a snowflake
// range's first and last IDs as numbers (and as text in first_str and
// last_str, for JavaScript), a UUID range's as text.
type boundsJSON struct {
	service.Bounds
	First    any    `json:"first"`
	Last     any    `json:"last"`
	FirstStr string `json:"first_str,omitempty"`
	LastStr  string `json:"last_str,omitempty"`
}

// v1Bounds: GET /v1/bounds?kind=snowflake|uuid&from=T1&to=T2[&layout=NAME][&version=V][&form=typeid&prefix=P]:
// the first and the last ID issued at an instant in [from, to).
func (s *Server) v1Bounds(w http.ResponseWriter, r *http.Request) {
	b, err := func() (service.Bounds, error) {
		q, err := parseQuery(r, "kind", "from", "to", "layout", "version", "form", "prefix")
		if err != nil {
			return service.Bounds{}, err
		}
		var br service.BoundsRequest
		br.Kind, _ = q.get("kind")
		if br.Kind == "" {
			br.Kind = service.KindSnowflake
		}
		from, _ := q.get("from")
		to, _ := q.get("to")
		if br.From, err = service.ParseTime("from", from); err != nil {
			return service.Bounds{}, err
		}
		if br.To, err = service.ParseTime("to", to); err != nil {
			return service.Bounds{}, err
		}
		v, err := q.int("version", 0, 1, 8)
		if err != nil {
			return service.Bounds{}, err
		}
		br.Version = int(v)
		br.Layout, _ = q.get("layout")
		br.Form, _ = q.get("form")
		br.Prefix, _ = q.get("prefix")
		return s.svc.IDBounds(br)
	}()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := boundsJSON{Bounds: b, First: b.First, Last: b.Last}
	if b.Kind == service.KindSnowflake {
		out.First, out.Last, out.FirstStr, out.LastStr = b.FirstID, b.LastID, b.First, b.Last
	}
	writeJSON(w, http.StatusOK, out)
}

// v1Info: GET /v1/info: worker ID and layout.
func (s *Server) v1Info(w http.ResponseWriter, r *http.Request) {
	l := s.svc.Layout()
	writeJSON(w, http.StatusOK, map[string]any{
		"worker_id": s.svc.Worker(),
		"worker":    s.svc.WorkerInfo(),
		"layout": map[string]any{
			"name": l.Name, "unit": l.Unit.String(), "time_bits": l.TimeBits, "node_bits": l.NodeBits,
			"sequence_bits": l.SeqBits, "epoch": l.Epoch, "expires": l.Expires(), "max_id": l.MaxID(), "datacenter_bits": l.DatacenterBits, "shard_bits": l.ShardBits,
		},
		"limits":     map[string]any{"max_batch": service.MaxBatch, "max_ranges_batch": service.MaxRangesBatch},
		"started_at": s.started.UTC(),
	})
}

type tagJSON struct {
	Name        string    `json:"name"`
	MaxID       int64     `json:"max_id"`
	MaxIDStr    string    `json:"max_id_str"`
	Step        int64     `json:"step"`
	Description string    `json:"description"`
	UpdatedAt   time.Time `json:"updated_at"`
	Mode        string    `json:"mode"`    // segment or sequence
	Mapping     string    `json:"mapping"` // plain, mist or opaque
}

func toTagJSON(t frond.Tag) tagJSON {
	return tagJSON{Name: t.Name, MaxID: t.MaxID, MaxIDStr: strconv.FormatInt(t.MaxID, 10), Step: t.Step, Description: t.Description, UpdatedAt: t.UpdatedAt,
		Mode: t.ModeName(), Mapping: t.MappingName()}
}

// v1ListTags is GET /v1/tags?limit=&after=: a page of the store's tags by
// name (service.TagPage), and next, the after of the next page.
func (s *Server) v1ListTags(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "limit", "after")
	var limit int64
	if err == nil {
		limit, err = q.int("limit", service.DefaultTagPage, 1, service.MaxTagPage)
	}
	var tags []frond.Tag
	var next string
	if err == nil {
		after, _ := q.get("after")
		tags, next, err = s.svc.TagPage(r.Context(), after, int(limit))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]tagJSON, len(tags))
	for i, t := range tags {
		out[i] = toTagJSON(t)
	}
	page := map[string]any{"tags": out}
	if next != "" {
		page["next"] = next
	}
	writeJSON(w, http.StatusOK, page)
}

// decodeBody reads a JSON body into v: bounded, no unknown fields, no key
// given twice, one value.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("request body: %s", brief(err.Error()))
	}
	if k, ok := duplicateKey(body); ok {
		// encoding/json would keep the last (and match keys in any case):
		// {"step":1,"STEP":1000000} is refused, not read as either.
		return badRequest("request body: key %s given twice", service.Quote(k))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("request body: %s", brief(err.Error()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: one JSON object expected")
	}
	return nil
}

// duplicateKey finds a key given twice in one object of a JSON text,
// comparing keys as encoding/json matches them to fields (ignoring case).
// A text that does not parse has none: Decode reports it.
func duplicateKey(b []byte) (string, bool) {
	type level struct {
		keys   map[string]bool // nil: an array
		expect bool            // the next string is a key
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &level{keys: map[string]bool{}, expect: true})
			case '[':
				stack = append(stack, &level{})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].keys != nil {
					stack[len(stack)-1].expect = true
				}
			}
			continue
		}
		if top == nil || top.keys == nil {
			continue
		}
		if top.expect {
			k := strings.ToLower(tok.(string))
			if top.keys[k] {
				return tok.(string), true
			}
			top.keys[k], top.expect = true, false
			continue
		}
		top.expect = true // a scalar value
	}
}

type createTagJSON struct {
	Name        string  `json:"name"`
	MaxID       *int64  `json:"max_id"`
	Step        *int64  `json:"step"`
	Description *string `json:"description"`
	Mode        string  `json:"mode"`
	Mapping     string  `json:"mapping"`
}

// v1CreateTag: POST /v1/tags {"name", "step", "max_id" (default 1, as Leaf's table), "description", "mode" (segment or sequence), "mapping" (plain, mist or opaque)}.
func (s *Server) v1CreateTag(w http.ResponseWriter, r *http.Request) {
	var in createTagJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Step == nil {
		s.writeError(w, r, badRequest("step is required"))
		return
	}
	t := frond.Tag{Name: in.Name, MaxID: 1, Step: *in.Step, Mode: in.Mode, Mapping: in.Mapping}
	if in.MaxID != nil {
		t.MaxID = *in.MaxID
	}
	if in.Description != nil {
		t.Description = *in.Description
	}
	out, err := s.svc.CreateTag(r.Context(), t)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/tags/"+out.Name)
	writeJSON(w, http.StatusCreated, toTagJSON(out))
}

func (s *Server) v1GetTag(w http.ResponseWriter, r *http.Request) {
	t, err := s.svc.Tag(r.Context(), r.PathValue("tag"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toTagJSON(t))
}

type updateTagJSON struct {
	MaxID       *int64  `json:"max_id"`
	Step        *int64  `json:"step"`
	Description *string `json:"description"`
	Mapping     *string `json:"mapping"`
	Adopt       bool    `json:"adopt"`
}

// v1UpdateTag: PATCH /v1/tags/{tag} {"step", "description", "max_id" (raise only), "mapping" (plain or mist, with its raise), "adopt"}.
func (s *Server) v1UpdateTag(w http.ResponseWriter, r *http.Request) {
	var in updateTagJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.svc.UpdateTag(r.Context(), r.PathValue("tag"), frond.TagUpdate{Step: in.Step, Description: in.Description, MaxID: in.MaxID, Mapping: in.Mapping, Adopt: in.Adopt})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toTagJSON(t))
}

func (s *Server) v1DeleteTag(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.DeleteTag(r.Context(), r.PathValue("tag")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if sp := s.svc.Spaces(); sp != nil {
		w.Header().Set(keyseq.ProbeHeader, sp.ProbeID())
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 "ready" when every check passes; 200 "degraded" when
// a check fails but some kind of ID can still be served; 503 "not ready"
// when neither segment nor snowflake IDs can be served. Each check says what
// is wrong, "kinds" says per kind whether it can be served now (as
// /readyz/segment and /readyz/snowflake), and each tag its remaining IDs and
// horizon.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd := s.svc.Readiness(r.Context())
	segs, total := s.horizons()
	status, word := http.StatusOK, "ready"
	for _, c := range rd.Checks {
		if !c.OK {
			word = "degraded"
		}
	}
	if !rd.Segment.Ready && !rd.Snowflake.Ready {
		status, word = http.StatusServiceUnavailable, "not ready"
	}
	writeJSON(w, status, map[string]any{"status": word, "checks": rd.Checks,
		"kinds":    map[string]service.KindCheck{service.KindSegment: rd.Segment, service.KindSnowflake: rd.Snowflake},
		"segments": segs, "segments_total": total})
}

// readyKind answers /readyz/segment and /readyz/snowflake: 200 when that
// kind can be served now, 503 with the reason when it cannot. A load
// balancer that sends one kind probes its page (docs/api.md).
func (s *Server) readyKind(check func(r *http.Request) service.KindCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k := check(r)
		status := http.StatusOK
		if !k.Ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, k)
	}
}

type horizonJSON struct {
	Tag       string  `json:"tag"`
	Remaining int64   `json:"remaining"`
	Horizon   float64 `json:"horizon_seconds"` // -1: no consumption measured
	LastError string  `json:"last_error,omitempty"`
}

// readyTags bounds the tags /readyz lists: a probe reads it every few
// seconds, whatever the number of tags.
const readyTags = 20

// horizons are the readyTags tags that need attention first (api.RankTags)
// and the number of tags in use.
func (s *Server) horizons() ([]horizonJSON, int) {
	st := s.svc.SegmentOverview().Tags
	sum, shown := api.RankTags(st, readyTags, nil)
	out := make([]horizonJSON, len(shown))
	for i, j := range shown {
		b := &st[j]
		h := -1.0
		if b.Horizon >= 0 {
			h = b.Horizon.Seconds()
		}
		out[i] = horizonJSON{Tag: b.Tag, Remaining: b.Remaining, Horizon: h, LastError: b.LastError}
	}
	return out, sum.Total
}
