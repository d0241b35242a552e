package httpapi

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/worker"
)

// The dashboard (docs/dashboard.md): plain HTML, CSS and JavaScript
// embedded in the binary (no CDN, no build step), fed by server-sent events.

//go:embed ui
var uiFiles embed.FS

// uiEvery is how often the dashboard's event stream sends a snapshot.
const uiEvery = time.Second

// uiMaxTags bounds the tags (and the sequence tags) of a snapshot: the
// ones that need attention first, then the busiest (api.RankTags); the
// page finds any other by name through /ui/tags.
const uiMaxTags = 50

// uiHeaders keep the dashboard's page to its own origin: scripts and
// connections only from frond itself, no framing.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

// uiHandler serves the embedded files under /ui/.
func uiHandler() http.HandlerFunc {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return func(w http.ResponseWriter, r *http.Request) {
		uiHeaders(w)
		files.ServeHTTP(w, r)
	}
}

// uiRoot is GET /: the dashboard is frond's front page.
func uiRoot(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/ui/", http.StatusFound)
}

// snapshot is what the dashboard shows, sent every uiEvery.
type snapshot struct {
	Now       time.Time               `json:"now"`
	Started   time.Time               `json:"started"`
	Worker    worker.Info             `json:"worker"`
	Layout    layoutJSON              `json:"layout"`
	Readiness service.Readiness       `json:"readiness"`
	Tags      []tagStats              `json:"tags"`      // at most uiMaxTags, worst first
	Sequences []service.SequenceStats `json:"sequences"` // sequence tags served on this node, at most uiMaxTags, most IDs first
	// TagCounts count every tag in use, shown or not.
	TagCounts *tagCounts `json:"tag_counts,omitempty"`
	// TagsHidden: the tags are not shown to this page (tag details are
	// shown to whoever may list tags: Server.mayReadTags).
	TagsHidden bool          `json:"tags_hidden,omitempty"`
	Snowflake  snowflakeJSON `json:"snowflake"`
	// Spaces are the keyed sequence spaces this node serves, with its view
	// of their sections (docs/sequences.md#operations); named as tags are,
	// so shown with them.
	Spaces []spaceView `json:"spaces,omitempty"`
	Counts api.Counts  `json:"counts"`
	// Rates are measured by the server over the last seconds (rates.go).
	Rates rates `json:"rates"`
}

type spaceView struct {
	Name             string  `json:"name"`
	Sections         int     `json:"sections"`
	Held             int     `json:"held"`
	Unowned          int     `json:"unowned"`
	Members          int     `json:"members"`
	LeaseLeftSeconds float64 `json:"lease_left_seconds"`
	Values           uint64  `json:"values"`
	Forwarded        uint64  `json:"forwarded"`
	Raises           uint64  `json:"raises"`
	Taken            uint64  `json:"taken"`
	Given            uint64  `json:"given"`
	Lost             uint64  `json:"lost"`
	RoundFailures    uint64  `json:"round_failures"`
}

type tagCounts struct {
	Total          int `json:"total"`
	Failing        int `json:"failing"`
	Low            int `json:"low"`
	Shown          int `json:"shown"`
	Sequences      int `json:"sequences"`
	SequencesShown int `json:"sequences_shown"`
}

type layoutJSON struct {
	Name    string    `json:"name"`
	Expires time.Time `json:"expires"`
}

type tagStats struct {
	Tag          string  `json:"tag"`
	Start        int64   `json:"start"`
	Pos          int64   `json:"pos"`
	End          int64   `json:"end"`
	NextReady    bool    `json:"next_ready"`
	NextStart    int64   `json:"next_start"`
	NextEnd      int64   `json:"next_end"`
	Step         int64   `json:"step"`
	MinStep      int64   `json:"min_step"`
	Loads        uint64  `json:"loads"`
	Waits        uint64  `json:"waits"`
	Issued       int64   `json:"issued"`
	Remaining    int64   `json:"remaining"`
	Rate         float64 `json:"rate"`
	Horizon      float64 `json:"horizon_seconds"` // -1: no consumption measured
	Low          bool    `json:"low"`             // Horizon is under segment.runway
	LastLoad     string  `json:"last_load"`
	LastLoadSecs float64 `json:"last_load_seconds"`
	LastError    string  `json:"last_error,omitempty"`
	Loading      bool    `json:"loading"`
	// StepHistory is the buffer's last steps, oldest first (the engine
	// keeps 8 changes).
	StepHistory []int64 `json:"step_history"`
}

type snowflakeJSON struct {
	Issued    uint64  `json:"issued"`
	Lead      float64 `json:"lead_seconds"`
	Behind    float64 `json:"behind_seconds"`
	Borrows   uint64  `json:"borrows"`
	Waits     uint64  `json:"waits"`
	Refusals  uint64  `json:"refusals"`
	Backwards uint64  `json:"backward_steps"`
}

func (s *Server) snapshot(ctx context.Context, tags bool) snapshot {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l := s.svc.Layout()
	st := s.svc.SnowflakeStats()
	out := snapshot{
		Now: time.Now().UTC(), Started: s.started.UTC(), Worker: s.svc.WorkerInfo(),
		Layout:    layoutJSON{Name: l.Name, Expires: l.Expires().UTC()},
		Readiness: s.svc.Readiness(rctx),
		Snowflake: snowflakeJSON{Issued: s.svc.SnowflakeIssued(), Lead: st.Lead.Seconds(), Behind: st.Behind.Seconds(),
			Borrows: st.Borrows, Waits: st.Waits, Refusals: st.Refusals, Backwards: st.BackwardSteps},
	}
	seq := s.svc.SequenceOverview().Tags // read once: the rates and the list
	now := s.counters(out.Now, seq)
	out.Counts, out.Rates = now.counts, s.rates.measure(now)
	if !tags {
		out.TagsHidden = true
		out.Rates.Sequences = nil // tag names
		return out
	}
	seg := s.svc.SegmentOverview()
	sum, shown := api.RankTags(seg.Tags, uiMaxTags, nil)
	out.Tags = make([]tagStats, 0, len(shown))
	for _, i := range shown {
		out.Tags = append(out.Tags, toTagStats(&seg.Tags[i]))
	}
	slices.SortFunc(seq, func(a, b service.SequenceStats) int {
		return cmp.Or(cmp.Compare(b.IDs, a.IDs), strings.Compare(a.Tag, b.Tag))
	})
	out.Sequences = seq[:min(len(seq), uiMaxTags)]
	if sp := s.svc.Spaces(); sp != nil {
		for _, st := range sp.Stats() {
			out.Spaces = append(out.Spaces, spaceView{Name: st.Name, Sections: st.Sections, Held: st.Held, Unowned: st.Unowned,
				Members: st.Members, LeaseLeftSeconds: st.LeaseLeft.Seconds(), Values: st.Served, Forwarded: st.Forwarded,
				Raises: st.Raises, Taken: st.Takes, Given: st.Releases, Lost: st.Lapses, RoundFailures: st.RoundFailures})
		}
	}
	out.TagCounts = &tagCounts{Total: sum.Total, Failing: sum.Failing, Low: sum.Low, Shown: len(out.Tags),
		Sequences: len(seq), SequencesShown: len(out.Sequences)}
	return out
}

func toTagStats(b *segment.Stats) tagStats {
	t := tagStats{Tag: b.Tag, Start: b.Current.Start, Pos: b.Current.Pos, End: b.Current.End, NextReady: b.NextReady,
		Step: b.Step, MinStep: b.MinStep, Loads: b.Loads, Waits: b.Waits, Issued: b.Issued, Remaining: b.Remaining,
		Rate: b.Rate, Horizon: -1, Low: b.Low, LastLoadSecs: b.LastLoadDuration.Seconds(), LastError: b.LastError, Loading: b.Loading,
		StepHistory: []int64{}}
	if b.NextReady {
		t.NextStart, t.NextEnd = b.Next.Start, b.Next.End
	}
	for _, c := range b.Steps {
		t.StepHistory = append(t.StepHistory, c.Step)
	}
	if b.Horizon >= 0 {
		t.Horizon = b.Horizon.Seconds()
	}
	if !b.LastLoad.IsZero() {
		t.LastLoad = b.LastLoad.UTC().Format(time.RFC3339)
	}
	return t
}

// uiTagsMax bounds a page of /ui/tags.
const uiTagsMax = 200

// uiTags is GET /ui/tags?q=&offset=&limit=: the tags in use whose name
// contains q, by name, a page at a time (limit 50 by default, at most
// uiTagsMax): how the dashboard finds a tag among more than a snapshot
// shows. Shown to whoever may read tags, as the stream's details.
func (s *Server) uiTags(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "q", "offset", "limit", "token")
	var offset, limit int64 = 0, 50
	if err == nil {
		offset, err = q.int("offset", 0, 0, math.MaxInt32)
	}
	if err == nil {
		limit, err = q.int("limit", 50, 1, uiTagsMax)
	}
	if err == nil {
		err = s.mayReadTagsQuery(r, q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	match, _ := q.get("q")
	page := tagPage{Tags: []tagStats{}, Offset: offset}
	all := s.svc.SegmentStats() // by tag
	page.Total = len(all)
	for i := range all {
		if !strings.Contains(all[i].Tag, match) {
			continue
		}
		if int64(page.Matched) >= offset && int64(len(page.Tags)) < limit {
			page.Tags = append(page.Tags, toTagStats(&all[i]))
		}
		page.Matched++
	}
	writeJSON(w, http.StatusOK, page)
}

// mayReadTagsQuery is mayReadTags for the dashboard's own requests: the
// admin token as a bearer header, else as ?token= (the page's stream
// cannot set a header, and its other requests go the same way).
func (s *Server) mayReadTagsQuery(r *http.Request, q query) error {
	token, _ := api.Bearer(r.Header.Get("Authorization"))
	if token == "" {
		token, _ = q.get("token")
	}
	return s.mayReadTags(r, token)
}

type tagPage struct {
	Total   int        `json:"total"`   // tags in use
	Matched int        `json:"matched"` // of those, with q in their name
	Offset  int64      `json:"offset"`
	Tags    []tagStats `json:"tags"`
}

// maxStreamsPerAddress bounds the dashboard's event streams open from one
// address (a few pages of a few operators).
const maxStreamsPerAddress = 8

// eventStreams is what the dashboard's event streams share (issue 43,
// item 7: 1,000 streams from one address cost 36% of a core, each reading
// the node's readiness, a store ping, every second): one snapshot a second
// for all of them (of each kind, with tags or without), and the count of
// streams of each address.
type eventStreams struct {
	mu     sync.Mutex
	at     [2]time.Time
	json   [2][]byte
	byAddr api.PerAddress // Max: maxStreamsPerAddress
}

// sharedSnapshot is the snapshot of this second, made once for every
// stream (the first to ask makes it, the others wait for it).
func (s *Server) sharedSnapshot(ctx context.Context, tags bool) ([]byte, error) {
	i := 0
	if tags {
		i = 1
	}
	e := &s.events
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.json[i] != nil && time.Since(e.at[i]) < uiEvery*9/10 {
		return e.json[i], nil
	}
	// Not ended by the stream that asked first: the others use it too.
	b, err := json.Marshal(s.snapshot(context.WithoutCancel(ctx), tags))
	if err != nil {
		return nil, err
	}
	e.at[i], e.json[i] = time.Now(), b
	return b, nil
}

// uiEvents is GET /ui/events: server-sent events, one snapshot a second. A
// stream is one connection the server pushes on (no request per update,
// as polling would need); the browser's EventSource reconnects by itself.
// Every stream sends the one snapshot of the second (sharedSnapshot); one
// address may hold maxStreamsPerAddress; each event must be written
// within the write timeout, so that a stream no one reads ends.
func (s *Server) uiEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		s.writeError(w, r, fmt.Errorf("streaming is not supported on this connection"))
		return
	}
	if !s.events.byAddr.Acquire(r.RemoteAddr) {
		s.writeError(w, r, &api.Error{Code: frond.CodeRateLimited, RetryAfter: time.Second,
			Msg: fmt.Sprintf("this address has %d dashboard event streams open already: close a page", maxStreamsPerAddress)})
		return
	}
	defer s.events.byAddr.Release(r.RemoteAddr)
	// Tag details go to whoever may list tags; the page sends the admin
	// token it was given as ?token= (EventSource cannot set a header).
	token, _ := api.Bearer(r.Header.Get("Authorization"))
	if token == "" {
		token = r.URL.Query().Get("token")
	}
	tags := s.mayReadTags(r, token) == nil
	// The server's WriteTimeout would end the stream: this one is open for
	// as long as the page is, and each event has a write timeout of its
	// own.
	rc := http.NewResponseController(w)
	timeout := s.opts.Conn.WithDefaults().WriteTimeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(uiEvery)
	defer t.Stop()
	for {
		b, err := s.sharedSnapshot(r.Context(), tags)
		if err != nil {
			return
		}
		rc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.stopping:
			return
		case <-t.C:
		}
	}
}
