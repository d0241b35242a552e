package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/segment"
)

// The dashboard's plots: the last hour of the node and of the tags, one
// point a minute, kept by the server so that a page opened now draws the
// past hour too.

// historyEvery is the interval of the points; historyLen how many are kept.
const (
	historyEvery = time.Minute
	historyLen   = 60
)

// historyTags bounds the tags with a history: the uiMaxTags the dashboard
// lists (they change as tags go in and out of trouble) and the tags picked
// on the page, up to this many in all; past it the tags not listed or
// picked for the longest are forgotten.
const historyTags = 200

// point is one minute of the node or of a tag.
type point struct {
	At time.Time `json:"at"`
	// Rate is the IDs handed out per second over the minute (segment,
	// sequence and snowflake IDs for the node).
	Rate float64 `json:"rate"`
	// Horizon is the tag's horizon, or the shortest of any tag for the
	// node, in seconds (-1: none measured).
	Horizon float64 `json:"horizon_seconds"`
	// StoreDown: the segment store failed its check (node), or the tag's
	// last load failed (tag), at the minute's sample.
	StoreDown bool `json:"store_down,omitempty"`
	// Step is the tag's step, and StepChanges the tags whose step changed
	// in the minute (node).
	Step        int64 `json:"step,omitempty"`
	StepChanges int   `json:"step_changes,omitempty"`
}

type series struct {
	points  []point // oldest first, at most historyLen
	last    int64   // IDs handed out at the last sample (-1: none yet)
	lastAt  time.Time
	touched time.Time // listed or picked
}

func (s *series) add(p point, issued int64, at time.Time) {
	if s.last >= 0 && issued >= s.last {
		if dt := at.Sub(s.lastAt).Seconds(); dt > 0 {
			p.Rate = float64(issued-s.last) / dt
		}
	}
	s.last, s.lastAt = issued, at
	if len(s.points) == historyLen {
		s.points = append(s.points[:0], s.points[1:]...)
	}
	s.points = append(s.points, p)
}

type history struct {
	mu   sync.Mutex
	node series
	tags map[string]*series
}

func newHistory() *history {
	return &history{node: series{last: -1}, tags: map[string]*series{}}
}

// sample adds a point at now for the node and for the tags with a history.
func (s *Server) sample(now time.Time) {
	h := s.hist
	seg := s.svc.SegmentOverview()
	sum, shown := api.RankTags(seg.Tags, uiMaxTags, nil)
	var issued int64 = seg.Issued + int64(s.svc.SequenceOverview().IDs) + int64(s.svc.SnowflakeIssued())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	storeUp := true
	for _, c := range s.svc.Readiness(ctx).Checks {
		if c.Name == "store" {
			storeUp = c.OK
		}
	}
	cancel()
	changes := 0
	for i := range seg.Tags {
		if st := seg.Tags[i].Steps; len(st) > 1 && now.Sub(st[len(st)-1].At) < historyEvery {
			changes++
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.node.add(point{At: now, Horizon: seconds(sum.MinHorizon), StoreDown: !storeUp, StepChanges: changes}, issued, now)
	for _, i := range shown {
		h.track(seg.Tags[i].Tag, now)
	}
	byTag := make(map[string]*segment.Stats, len(h.tags))
	for i := range seg.Tags {
		if _, ok := h.tags[seg.Tags[i].Tag]; ok {
			byTag[seg.Tags[i].Tag] = &seg.Tags[i]
		}
	}
	for name, ts := range h.tags {
		b, ok := byTag[name]
		if !ok {
			continue // not in use now: no point, its history kept
		}
		ts.add(point{At: now, Horizon: seconds(b.Horizon), StoreDown: b.LastError != "", Step: b.Step}, b.Issued, now)
	}
}

// track gives tag a history (or keeps it), forgetting the least recently
// touched past historyTags. The caller holds h.mu.
func (h *history) track(tag string, now time.Time) *series {
	ts := h.tags[tag]
	if ts == nil {
		if len(h.tags) >= historyTags {
			var oldest string
			for name, x := range h.tags {
				if oldest == "" || x.touched.Before(h.tags[oldest].touched) {
					oldest = name
				}
			}
			delete(h.tags, oldest)
		}
		ts = &series{last: -1}
		h.tags[tag] = ts
	}
	ts.touched = now
	return ts
}

func seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
}

// sampler samples every historyEvery, and the counters of the rates every
// rateEvery, until the server stops.
func (s *Server) sampler() {
	defer close(s.samplerDone)
	s.sample(time.Now())
	t := time.NewTicker(historyEvery)
	defer t.Stop()
	r := time.NewTicker(rateEvery) // the dashboard's rates (rates.go)
	defer r.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case now := <-t.C:
			s.sample(now)
		case now := <-r.C:
			s.rates.add(s.counters(now, s.svc.SequenceOverview().Tags))
		}
	}
}

// uiHistory is GET /ui/history[?tag=]: the node's last hour, one point a
// minute, and with tag (for whoever may read tags) the tag's; a tag asked
// for gets a history from then on if it had none.
func (s *Server) uiHistory(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "tag", "token")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tag, withTag := q.get("tag")
	if withTag {
		err = frond.ValidateTagName(tag)
	}
	if withTag && err == nil {
		err = s.mayReadTagsQuery(r, q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := map[string]any{"every_seconds": historyEvery.Seconds()}
	s.hist.mu.Lock()
	out["node"] = append([]point{}, s.hist.node.points...)
	if withTag {
		ts := s.hist.track(tag, time.Now())
		out["tag"] = map[string]any{"name": tag, "points": append([]point{}, ts.points...)}
	}
	s.hist.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
