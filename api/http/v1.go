package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", frond.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// parseCount reads the n parameter: absent means 1.
func parseCount(raw string, limit int64) (n int64, given bool, err error) {
	if raw == "" {
		return 1, false, nil
	}
	n, err = strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 || n > limit {
		return 0, true, badRequest("n=%.40q: must be a whole number from 1 to %d", raw, limit)
	}
	return n, true, nil
}

// parseID reads a decimal, non-negative 64-bit ID.
func parseID(raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 0 {
		return 0, badRequest("ID %.40q: must be a decimal number from 0 to %d", raw, int64(1<<63-1))
	}
	return id, nil
}

type idsJSON struct {
	Tag    string   `json:"tag,omitempty"`
	Form   string   `json:"form,omitempty"`
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

// v1Segment: GET|POST /v1/segment/{tag}[?n=N][&format=ids|ranges][&form=F].
func (s *Server) v1Segment(w http.ResponseWriter, r *http.Request) {
	tag := r.PathValue("tag")
	q := r.URL.Query()
	format := q.Get("format")
	if format != "" && format != "ids" && format != "ranges" {
		s.writeError(w, r, badRequest("format=%.20q: must be ids or ranges", format))
		return
	}
	form := q.Get("form")
	if form == "" {
		form = s.svc.SegmentForm(tag)
	}
	if format == "ranges" && form != "" && form != service.FormNumber {
		s.writeError(w, r, badRequest("format=ranges gives plain numbers: it cannot be combined with form %q", form))
		return
	}
	limit := int64(service.MaxBatch)
	if format == "ranges" {
		limit = service.MaxRangesBatch
	}
	n, given, err := parseCount(q.Get("n"), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if format == "ranges" {
		rs, err := s.svc.SegmentIDs(r.Context(), tag, n)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out := make([]rangeJSON, len(rs))
		for i, x := range rs {
			out[i] = rangeJSON{Start: x.Start, End: x.End, Stride: x.Stride, Count: x.Len(),
				StartStr: strconv.FormatInt(x.Start, 10), EndStr: strconv.FormatInt(x.End, 10)}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tag": tag, "count": n, "ranges": out})
		return
	}
	var ids []int64
	if !given {
		id, err := s.svc.SegmentID(r.Context(), tag)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ids = []int64{id}
	} else {
		// IDs of a batch that fails part-way are valid and unique, but a
		// client that gets an error would not use them: they are skipped.
		rs, err := s.svc.SegmentIDs(r.Context(), tag, n)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ids = make([]int64, 0, n)
		for _, x := range rs {
			ids = x.Append(ids)
		}
	}
	s.writeIDs(w, r, service.KindSegment, tag, form, ids, given)
}

// writeIDs answers IDs in a form: one ({"id", "id_str"}) or several
// ({"ids", "id_strs"}); string forms have no numbers.
func (s *Server) writeIDs(w http.ResponseWriter, r *http.Request, kind, tag, form string, ids []int64, batch bool) {
	strs, nums, err := s.svc.Format(kind, form, ids)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := idsJSON{Tag: tag}
	if form != "" && form != service.FormNumber {
		out.Form = form
	}
	if batch {
		out.IDs, out.IDStrs = nums, strs
	} else {
		out.IDStr = strs[0]
		if nums != nil {
			out.ID = &nums[0]
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// v1Snowflake: GET|POST /v1/snowflake[?n=N][&form=F].
func (s *Server) v1Snowflake(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, given, err := parseCount(q.Get("n"), service.MaxBatch)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ids, err := s.svc.SnowflakeIDs(int(n))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeIDs(w, r, service.KindSnowflake, "", q.Get("form"), ids, given)
}

// v1UUID: GET|POST /v1/uuid[?version=4|7][&n=N]: {"uuid"} or {"uuids"}.
func (s *Server) v1UUID(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	version := 4
	if v := q.Get("version"); v != "" {
		var err error
		if version, err = strconv.Atoi(v); err != nil {
			s.writeError(w, r, badRequest("version=%.20q: 4 or 7", v))
			return
		}
	}
	n, given, err := parseCount(q.Get("n"), service.MaxBatch)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ids, err := service.UUIDs(version, int(n))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if given {
		writeJSON(w, http.StatusOK, map[string]any{"version": version, "uuids": ids})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"version": version, "uuid": ids[0]})
}

// v1Serial: GET|POST /v1/serial/{name}[?n=N]: {"serial"} or {"serials"}.
func (s *Server) v1Serial(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	n, given, err := parseCount(r.URL.Query().Get("n"), service.MaxBatch)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.Serials(r.Context(), name, int(n))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if given {
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "serials": out})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "serial": out[0]})
}

type revealJSON struct {
	Kind  string `json:"kind"`
	Form  string `json:"form"`
	Value string `json:"value"`
}

// v1Reveal: POST /v1/reveal {"kind": "segment"|"snowflake", "form", "value"}:
// the ID behind a formatted one (admin: it undoes the opaque forms).
func (s *Server) v1Reveal(w http.ResponseWriter, r *http.Request) {
	var in revealJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := s.svc.Reveal(in.Kind, in.Form, in.Value)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": in.Kind, "id": id, "id_str": strconv.FormatInt(id, 10)})
}

type decodedJSON struct {
	service.Decoded
	IDStr string `json:"id_str"`
}

// v1Decode: GET /v1/decode/{id}[?layout=NAME].
func (s *Server) v1Decode(w http.ResponseWriter, r *http.Request) {
	id, err := parseID(r.PathValue("id"))
	if err == nil {
		var d service.Decoded
		d, err = s.svc.Decode(id, r.URL.Query().Get("layout"))
		if err == nil {
			writeJSON(w, http.StatusOK, decodedJSON{Decoded: d, IDStr: strconv.FormatInt(id, 10)})
			return
		}
	}
	s.writeError(w, r, err)
}

// v1Info: GET /v1/info: worker ID and layout.
func (s *Server) v1Info(w http.ResponseWriter, r *http.Request) {
	l := s.svc.Layout()
	writeJSON(w, http.StatusOK, map[string]any{
		"worker_id": s.svc.Worker(),
		"worker":    s.svc.WorkerInfo(),
		"layout": map[string]any{
			"name": l.Name, "unit": l.Unit.String(), "time_bits": l.TimeBits, "node_bits": l.NodeBits,
			"sequence_bits": l.SeqBits, "epoch": l.Epoch, "expires": l.Expires(), "max_id": l.MaxID(),
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
}

func toTagJSON(t frond.Tag) tagJSON {
	return tagJSON{Name: t.Name, MaxID: t.MaxID, MaxIDStr: strconv.FormatInt(t.MaxID, 10), Step: t.Step, Description: t.Description, UpdatedAt: t.UpdatedAt}
}

func (s *Server) v1ListTags(w http.ResponseWriter, r *http.Request) {
	tags, err := s.svc.Tags(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]tagJSON, len(tags))
	for i, t := range tags {
		out[i] = toTagJSON(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"tags": out})
}

// decodeBody reads a JSON body into v: bounded, no unknown fields, one value.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body: one JSON object expected")
	}
	return nil
}

type createTagJSON struct {
	Name        string  `json:"name"`
	MaxID       *int64  `json:"max_id"`
	Step        *int64  `json:"step"`
	Description *string `json:"description"`
}

// v1CreateTag: POST /v1/tags {"name", "step", "max_id" (default 1, as Leaf's table), "description"}.
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
	t := frond.Tag{Name: in.Name, MaxID: 1, Step: *in.Step}
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
}

// v1UpdateTag: PATCH /v1/tags/{tag} {"step", "description", "max_id" (raise only)}.
func (s *Server) v1UpdateTag(w http.ResponseWriter, r *http.Request) {
	var in updateTagJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, err := s.svc.UpdateTag(r.Context(), r.PathValue("tag"), frond.TagUpdate{Step: in.Step, Description: in.Description, MaxID: in.MaxID})
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
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 "ready" when the store answers, the worker ID is held
// and the clock is fine; 200 "degraded" when a part fails but IDs can still
// be served (the store is down but the buffers hold IDs, or snowflake IDs
// wait for the clock while segment IDs work); 503 "not ready" when the store
// is down and no buffered IDs are left. Each check says what is wrong, and
// each tag its remaining IDs and horizon.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := s.svc.Ready(r.Context())
	segments := s.horizons()
	status, word := http.StatusOK, "ready"
	for _, c := range checks {
		if c.OK {
			continue
		}
		word = "degraded"
		if c.Name == "store" && !anyRemaining(segments) {
			status, word = http.StatusServiceUnavailable, "not ready"
			break
		}
	}
	writeJSON(w, status, map[string]any{"status": word, "checks": checks, "segments": segments})
}

func anyRemaining(hs []horizonJSON) bool {
	for _, h := range hs {
		if h.Remaining > 0 {
			return true
		}
	}
	return false
}

type horizonJSON struct {
	Tag       string  `json:"tag"`
	Remaining int64   `json:"remaining"`
	Horizon   float64 `json:"horizon_seconds"` // -1: no consumption measured
	LastError string  `json:"last_error,omitempty"`
}

func (s *Server) horizons() []horizonJSON {
	st := s.svc.SegmentStats()
	out := make([]horizonJSON, len(st))
	for i, b := range st {
		h := -1.0
		if b.Horizon >= 0 {
			h = b.Horizon.Seconds()
		}
		out[i] = horizonJSON{Tag: b.Tag, Remaining: b.Remaining, Horizon: h, LastError: b.LastError}
	}
	return out
}
