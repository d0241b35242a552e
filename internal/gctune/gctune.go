// Package gctune keeps the garbage collector's heap goal a fixed headroom
// above the live heap while the live heap is small.
//
// With GOGC=100 the runtime starts a collection when the heap has grown by
// the live heap since the last one (at least to 4 MB). frond's live heap is a
// few megabytes (buffers, metrics, the dashboard's history), so a node
// serving tens of thousands of requests a second collected every 2 MB of
// garbage and marked its 2 MB live heap each time: on the HTTP request path
// that was a quarter of the CPU frond spent above a trivial net/http server
// (issue 47). A collection's cost is its live heap; how often it runs is the
// garbage made per headroom. Raising GOGC so that the goal is at least the
// live heap plus Headroom makes collections of a small heap rare, costs at
// most Headroom of memory, and leaves a large live heap (millions of keyed
// sequences) at GOGC=100: the percent falls back as the live heap grows.
//
// An operator's GOGC (the environment variable) is never overridden;
// GOMEMLIMIT still bounds the heap as the runtime documents.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Headroom is the default: the heap may grow by this much garbage between
// collections, whatever its live size.
const Headroom = 32 << 20

// Base is the percent below which the tuner never goes (GOGC's default).
const Base = 100

// Max bounds the percent: a live heap of a few hundred kilobytes must not
// make the goal a multiple of the headroom.
const Max = 2000

// Percent returns the GOGC that makes the heap goal at least live+headroom:
// never below Base, never above Max.
func Percent(live, headroom uint64) int {
	if live == 0 {
		return Max
	}
	p := headroom * 100 / live
	return int(min(max(p, Base), Max))
}

// Tuner adjusts GOGC after every collection.
type Tuner struct {
	headroom uint64
	live     func() uint64
	set      func(int) int

	mu      sync.Mutex
	stopped bool
	percent int
}

// Start tunes GOGC from now on, unless the environment sets GOGC (the
// operator decides then); it returns nil in that case. headroom 0 means
// Headroom.
func Start(headroom uint64) *Tuner {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return nil
	}
	t := newTuner(headroom, liveHeap, debug.SetGCPercent)
	t.Tune()
	t.arm()
	return t
}

func newTuner(headroom uint64, live func() uint64, set func(int) int) *Tuner {
	if headroom == 0 {
		headroom = Headroom
	}
	return &Tuner{headroom: headroom, live: live, set: set, percent: Base}
}

// Tune sets GOGC for the live heap now. It returns the percent in force.
func (t *Tuner) Tune() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return t.percent
	}
	p := Percent(t.live(), t.headroom)
	// Small changes are not worth a call into the runtime (each takes the
	// heap lock): only a change of an eighth or more.
	if d := p - t.percent; d*8 >= t.percent || -d*8 >= t.percent {
		t.set(p)
		t.percent = p
	}
	return t.percent
}

// Stop ends the tuning and restores GOGC=100.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.set(Base)
		t.percent = Base
	}
}

func (t *Tuner) done() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// arm runs Tune after the next collection: a cleanup of an object nothing
// refers to runs once a collection has found it unreachable, and re-arms.
func (t *Tuner) arm() {
	s := new(sentinel)
	runtime.AddCleanup(s, func(t *Tuner) {
		if t.done() {
			return
		}
		t.Tune()
		t.arm()
	}, t)
}

// sentinel is big enough not to be a tiny allocation, whose cleanup may
// wait for its neighbours.
type sentinel struct{ _ [32]byte }

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
var liveMu sync.Mutex

// liveHeap is the heap marked live by the last collection.
func liveHeap() uint64 {
	liveMu.Lock()
	defer liveMu.Unlock()
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return liveSample[0].Value.Uint64()
}
