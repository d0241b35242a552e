package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/memstore"
)

// pendingCount is the number of tags loading their first segment.
func (e *Engine) pendingCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending)
}

// Requests for made-up tags leave nothing behind: not while the store is
// down (each made-up tag used to keep a buffer and a fill goroutine retrying
// forever), not when the caller gives up before the store answers, and not
// in Stats (the metrics' labels).
func TestEngine_UnknownTagsLeaveNothing(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "real", 0, 10)
	e := newEngine(t, s, Settings{Clock: clock, FailFast: -1})
	if _, err := e.Next(bg, "real"); err != nil {
		t.Fatal(err)
	}

	// Store down.
	s.setFail(fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable))
	for i := range 50 {
		if _, err := e.Next(bg, fmt.Sprintf("made-up-%d", i)); !errors.Is(err, frond.ErrStoreUnavailable) {
			t.Fatalf("store down: %v", err)
		}
	}
	// Store hanging, callers giving up; then it answers "not found".
	gate := make(chan struct{})
	s.setFail(nil)
	s.setGate(gate)
	for i := range 50 {
		ctx, cancel := context.WithTimeout(bg, time.Millisecond)
		if _, err := e.NextN(ctx, fmt.Sprintf("gave-up-%d", i), 3); !errors.Is(err, frond.ErrStoreUnavailable) {
			t.Fatalf("caller gave up: %v", err)
		}
		cancel()
	}
	close(gate)
	testenv.WaitFor(t, "the loads in flight to end", func() bool { return e.pendingCount() == 0 })
	if st := e.Stats(); len(st) != 1 || st[0].Tag != "real" {
		t.Fatalf("buffers left behind: %+v", st)
	}
	// The goroutines are gone too: Close returns (it waits for them).
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("fill goroutines of made-up tags still running")
	}
}

// At most MaxPending tags load their first segment at once; past it a new
// tag is refused at once, without a store call.
func TestEngine_MaxPending(t *testing.T) {
	s := newFakeStore(nil)
	gate := make(chan struct{})
	s.setGate(gate)
	s.calls = make(chan string, 10)
	e := newEngine(t, s, Settings{MaxPending: 3, LoadTimeout: time.Hour})
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Next(bg, fmt.Sprintf("slow-%d", i))
		}()
	}
	for range 3 {
		<-s.calls
	}
	if _, err := e.Next(bg, "one-more"); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("past MaxPending: %v", err)
	}
	select {
	case tag := <-s.calls:
		t.Fatalf("store called for %q past MaxPending", tag)
	default:
	}
	close(gate)
	wg.Wait()
	testenv.WaitFor(t, "pending loads", func() bool { return e.pendingCount() == 0 })
}

// Idle buffers are dropped by Sweep; a later request loads a new segment
// (the dropped IDs are skipped) and a handle held on the dropped buffer goes
// on through the engine, its IDs still increasing.
func TestEngine_SweepDropsIdleBuffers(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "busy", 0, 100)
	mustCreate(t, s, "quiet", 0, 100)
	var evicted []string
	e := newEngine(t, s, Settings{Clock: clock, FixedStep: true, IdleAfter: time.Minute, OnEvict: func(tag string) { evicted = append(evicted, tag) }})
	quiet, _ := e.Buffer("quiet")
	last, err := quiet.Next(bg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.Next(bg, "busy"); err != nil {
			t.Fatal(err)
		}
		e.Sweep()
		clock.Add(40 * time.Second)
	}
	e.Sweep()
	if st := e.Stats(); len(st) != 1 || st[0].Tag != "busy" {
		t.Fatalf("after the sweep: %+v", st)
	}
	if len(evicted) != 1 || evicted[0] != "quiet" {
		t.Fatalf("OnEvict got %v", evicted)
	}
	for range 3 { // through the dropped handle, then the engine
		id, err := quiet.Next(bg)
		if err != nil || id <= last {
			t.Fatalf("after the drop: %d, %v; last %d", id, err, last)
		}
		last = id
	}
	if last < 100 {
		t.Fatalf("ID %d: the dropped segment's IDs were handed out again", last)
	}
	if rs, err := quiet.NextN(bg, 2); err != nil || rs[0].Start <= last {
		t.Fatalf("NextN after the drop: %v, %v", rs, err)
	}
}

// An adaptive step too large for the top of a tag's range falls back to the
// tag's own step, which still fits (the error used to stick to the buffer
// until restart).
func TestBuffer_ExhaustedAdaptiveStepFallsBack(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", math.MaxInt64-35, 10)
	e := newEngine(t, s, Settings{})
	ids, err := e.NextN(bg, "t", 30)
	if err != nil {
		t.Fatalf("30 IDs below the top: %v", err)
	}
	var n int64
	for _, r := range ids {
		n += r.Len()
	}
	if n != 30 {
		t.Fatalf("got %d IDs", n)
	}
	steps := s.stepsAsked()
	if len(steps) < 4 || steps[2] != 20 || steps[3] != 0 {
		t.Fatalf("steps asked %v: want the doubled step, then the tag's own", steps)
	}
}

// An error that retrying at once does not change is not kept past FailFast:
// once the store answers again, IDs flow without a restart.
func TestBuffer_DefinitiveErrorsDoNotStick(t *testing.T) {
	for _, cause := range []error{frond.ErrInvalidArgument, frond.ErrClosed, frond.ErrTagExhausted} {
		clock := newFakeClock()
		s := newFakeStore(clock)
		mustCreate(t, s, "t", 0, 5)
		e := newEngine(t, s, Settings{Clock: clock, FixedStep: true})
		for range 5 {
			if _, err := e.Next(bg, "t"); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := e.Buffer("t")
		testenv.WaitFor(t, "prefetch to settle", func() bool { return !b.Stats().Loading })
		s.setFail(fmt.Errorf("pool: %w", cause))
		for range 5 { // the prefetched segment
			if _, err := e.Next(bg, "t"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Next(bg, "t"); !errors.Is(err, cause) {
			t.Fatalf("%v: err = %v", cause, err)
		}
		s.setFail(nil)
		clock.Add(DefaultFailFast)
		if _, err := e.Next(bg, "t"); err != nil {
			t.Fatalf("%v: the error stuck: %v", cause, err)
		}
	}
}

// Many tags arriving one by one, each used at once: every one is served,
// and the lock-free map is rebuilt far fewer times than tags arrive.
func TestEngine_ManyTagsAmortized(t *testing.T) {
	s := newFakeStore(nil)
	const tags = 3000
	for i := range tags {
		mustCreate(t, s, fmt.Sprintf("t%d", i), 0, 10)
	}
	e := newEngine(t, s, Settings{FixedStep: true})
	builds := 0
	last := e.read.Load()
	for i := range tags {
		for range 3 {
			if _, err := e.Next(bg, fmt.Sprintf("t%d", i)); err != nil {
				t.Fatal(err)
			}
			if p := e.read.Load(); p != last {
				builds, last = builds+1, p
			}
		}
	}
	if n := len(e.Stats()); n != tags {
		t.Fatalf("%d buffers", n)
	}
	if builds > tags/10 {
		t.Fatalf("the read map was rebuilt %d times for %d tags", builds, tags)
	}
	e.Forget("t7")
	if _, ok := (*e.read.Load())["t7"]; ok {
		t.Fatal("a forgotten buffer is still on the fast path")
	}
}

// Many buffers going idle together (per-period serial tags at midnight) are
// taken out of the lookup map with one copy of it, not one copy each (which
// was quadratic in the number of tags); the busy ones stay.
func TestEngine_SweepManyIdleOneCopy(t *testing.T) {
	clock := newFakeClock()
	s := memstore.New(clock)
	const n = 2000
	e := newEngine(t, s, Settings{Clock: clock, FixedStep: true, IdleAfter: time.Minute})
	for i := range n {
		tag := fmt.Sprintf("t%d", i)
		mustCreate(t, s, tag, 0, 10)
		if _, err := e.Next(bg, tag); err != nil {
			t.Fatal(err)
		}
	}
	e.Buffer("t0") // enough misses fold dirty into read; make sure all are in read
	e.mu.Lock()
	e.rebuildLocked("")
	e.mu.Unlock()
	e.Sweep() // marks
	clock.Add(2 * time.Minute)
	e.Next(bg, "t7") // one stays busy
	before := e.rebuilds.Load()
	e.Sweep()
	if got := e.rebuilds.Load() - before; got > 1 {
		t.Fatalf("%d copies of the lookup map to drop %d buffers", got, n-1)
	}
	if st := e.Stats(); len(st) != 1 || st[0].Tag != "t7" {
		t.Fatalf("%d buffers left, want t7 only", len(st))
	}
	if id, err := e.Next(bg, "t3"); err != nil || id < 10 {
		t.Fatalf("a dropped tag again: %d, %v", id, err)
	}
}
