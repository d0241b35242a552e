package httpapi

import (
	"sync"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// The dashboard's rates are measured here, over the last rateWindow,
// rather than by the page between two snapshots: the first snapshot a
// page gets is right (it showed 0 requests/s under load, and an idle
// tag's rate averaged since the page last looked).

const (
	rateEvery  = time.Second
	rateWindow = 10 * time.Second
)

// counters are the counts the rates are made of, at one time.
type counters struct {
	at        time.Time
	counts    api.Counts
	snowflake uint64
	sequences map[string]uint64 // IDs per sequence tag
}

// rateRing keeps counters a second apart over the window.
type rateRing struct {
	mu      sync.Mutex
	samples []counters // oldest first
}

// add keeps c, dropping the samples older than the window before it.
func (r *rateRing) add(c counters) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.samples)-1 && c.at.Sub(r.samples[i+1].at) >= rateWindow {
		i++
	}
	r.samples = append(r.samples[i:], c)
}

// base is the sample to measure now against: the oldest within the window
// (the oldest kept, just after start), or none.
func (r *rateRing) base(now time.Time) (counters, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.samples {
		if d := now.Sub(c.at); d > 0 && d <= rateWindow {
			return c, true
		}
	}
	return counters{}, false
}

// rates are the snapshot's rates, per second over Window.
type rates struct {
	// Window is the span measured: rateWindow, or less just after start
	// (0: nothing measured yet).
	Window   float64            `json:"window_seconds"`
	Requests map[string]float64 `json:"requests"` // per protocol
	// Errors per protocol and code: only the codes that occurred in the
	// window.
	Errors    map[string]map[string]float64 `json:"errors"`
	Snowflake float64                       `json:"snowflake"`
	Sequences map[string]float64            `json:"sequences"` // per sequence tag
}

// measure compares now's counters with the window's oldest.
func (r *rateRing) measure(now counters) rates {
	out := rates{Requests: map[string]float64{}, Errors: map[string]map[string]float64{}, Sequences: map[string]float64{}}
	old, ok := r.base(now.at)
	if !ok {
		return out
	}
	dt := now.at.Sub(old.at).Seconds()
	out.Window = dt
	per := func(cur, before float64) float64 { return max(0, cur-before) / dt }
	for p, n := range now.counts.Requests {
		out.Requests[p] = per(n, old.counts.Requests[p])
	}
	for p, codes := range now.counts.Errors {
		for code, n := range codes {
			if v := per(n, old.counts.Errors[p][code]); v > 0 {
				if out.Errors[p] == nil {
					out.Errors[p] = map[string]float64{}
				}
				out.Errors[p][code] = v
			}
		}
	}
	if now.snowflake >= old.snowflake {
		out.Snowflake = float64(now.snowflake-old.snowflake) / dt
	}
	for tag, n := range now.sequences {
		if b, ok := old.sequences[tag]; ok && n >= b {
			out.Sequences[tag] = float64(n-b) / dt
		}
	}
	return out
}

// counters reads the counts the rates are made of; seq is the sequence
// tags' overview, read by the caller.
func (s *Server) counters(now time.Time, seq []service.SequenceStats) counters {
	c := counters{at: now, counts: s.m.Counts(), snowflake: s.svc.SnowflakeIssued(), sequences: make(map[string]uint64, len(seq))}
	for _, q := range seq {
		c.sequences[q.Tag] = q.IDs
	}
	return c
}
