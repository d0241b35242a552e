package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/frond-id/frond"
)

// Check is one part of readiness.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Info describes the worker ID of this node.
type Info struct {
	ID int64 `json:"id"` // the node field of the IDs; -1: none held
	// Datacenter and Worker split ID with a layout that has datacenter
	// bits (Datacenter is the configured one even while none is held).
	Datacenter *int64 `json:"datacenter,omitempty"`
	Worker     *int64 `json:"worker,omitempty"`
	Held       bool   `json:"held"`
	Issuing    bool   `json:"issuing"`
	FromCache  bool   `json:"from_cache,omitempty"`
	Error      string `json:"error,omitempty"`
	// ReservedAhead is how far ahead of the clock the registry has recorded
	// a time this node may issue up to (negative: behind; snowflake IDs
	// wait for it).
	ReservedAhead time.Duration `json:"reserved_ahead_ns,omitempty"`
	// PeerSkew is this node's clock minus its live peers' average, as last
	// measured (registries that see their peers), with the peers' count.
	PeerSkew  time.Duration `json:"peer_skew_ns,omitempty"`
	PeerCount int           `json:"peers,omitempty"`
}

// Info returns the state of the worker ID.
func (w *Issuer) Info() Info {
	st := w.state.Load()
	wi := Info{ID: -1, Held: st.held, Issuing: st.gen != nil}
	if st.held {
		wi.ID, wi.FromCache = st.worker.ID, st.worker.FromCache
	}
	if l := w.set.Layout; l.DatacenterBits > 0 {
		dc := w.set.Datacenter
		wi.Datacenter = &dc
		if st.held {
			wk := st.worker.ID & l.MaxWorker()
			wi.Worker = &wk
		}
	}
	if st.gen != nil {
		if limit, ok := st.gen.Limit(); ok {
			wi.ReservedAhead = limit.Sub(time.Unix(0, w.set.Now()))
		}
	}
	if p := w.peerSkew.Load(); p != nil {
		wi.PeerSkew, wi.PeerCount = p.skew, p.peers
	}
	if st.err != nil {
		wi.Error = st.err.Error()
	}
	return wi
}

// Checks are the "worker", "clock" and "layout" parts of readiness. They
// make no network call.
func (w *Issuer) Checks() []Check {
	st := w.state.Load()
	wc := Check{Name: "worker", OK: st.held && st.err == nil}
	switch {
	case st.held && st.worker.FromCache:
		wc.Detail = fmt.Sprintf("worker ID %d from the local record: the registry is unreachable", st.worker.ID)
	case st.held:
		wc.Detail = fmt.Sprintf("worker ID %d", st.worker.ID)
	default:
		wc.Detail = st.err.Error()
	}
	if perr := w.saveErr.Load(); perr != nil && st.gen != nil {
		wc.OK, wc.Detail = false, fmt.Sprintf("%s; the registry did not record the time: %v", wc.Detail, *perr)
	}
	if wr, ok := w.reg.(frond.Warner); ok {
		for _, m := range wr.Warnings() {
			wc.Detail += "; " + m
		}
	}
	return []Check{wc, w.clockCheck(st), w.layoutCheck()}
}

func (w *Issuer) clockCheck(st *state) Check {
	c := Check{Name: "clock", OK: true}
	var pse *PeerSkewError
	switch {
	case errors.As(st.err, &pse):
		c.OK, c.Detail = false, pse.Error()
	case st.gen != nil:
		now := time.Unix(0, w.set.Now())
		if behind := st.notBefore.Sub(now); behind > w.set.maxBackward() {
			c.OK, c.Detail = false, (&ClockBehindError{Behind: behind, LastIssued: st.notBefore, Worker: st.worker.ID}).Error()
		} else if behind := st.gen.Behind(); behind > w.set.maxBackward() {
			c.OK, c.Detail = false, fmt.Sprintf("the clock is %v behind the last time used for snowflake IDs; they resume when it catches up", behind.Round(time.Millisecond))
		} else if behind > 0 {
			c.Detail = fmt.Sprintf("%v behind, within the %v that is waited out", behind, w.set.maxBackward())
		}
	}
	return c
}

// layoutCheck fails when the layout runs out within ExpiryWarning.
func (w *Issuer) layoutCheck() Check {
	l := w.set.Layout
	exp := l.Expires().UTC()
	left := exp.Sub(time.Unix(0, w.set.Now()))
	c := Check{Name: "layout", OK: true, Detail: fmt.Sprintf("%s runs out on %s", l.Name, exp.Format("2006-01-02"))}
	if warn := w.set.ExpiryWarning; warn > 0 && left < warn {
		c.OK = false
		c.Detail = fmt.Sprintf("the snowflake layout %s runs out on %s, in %d days: plan a layout with a later epoch before then",
			l.Name, exp.Format("2006-01-02"), int(left.Hours()/24))
	}
	return c
}

// Ready says whether Next would issue now and, either way, why: a worker ID
// is held, the registry has recorded a time past the clock, and the clock
// is not behind the last time used. It makes no network call.
func (w *Issuer) Ready() (bool, string) {
	st := w.state.Load()
	switch {
	case st.gen == nil:
		return false, st.err.Error()
	case !st.gen.WithinLimit(time.Unix(0, w.set.Now())):
		detail := "the worker registry has not recorded a time past the clock: snowflake IDs wait for it"
		if perr := w.saveErr.Load(); perr != nil {
			detail += fmt.Sprintf(" (%v)", *perr)
		}
		return false, detail
	}
	if c := w.clockCheck(st); !c.OK {
		return false, c.Detail
	}
	detail := fmt.Sprintf("worker ID %d", st.worker.ID)
	if st.worker.FromCache {
		detail += " from the local record: the registry is unreachable"
	}
	return true, detail
}
