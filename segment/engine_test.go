package segment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/memstore"
)

var bg = context.Background()

func TestEngine_Next_LeafRanges(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "leaf-segment-test", 1, 2000) // Leaf's sample row
	e := newEngine(t, s, Settings{FixedStep: true})
	for want := int64(1); want <= 5000; want++ {
		got, err := e.Next(bg, "leaf-segment-test")
		if err != nil || got != want {
			t.Fatalf("Next = %d, %v; want %d", got, err, want)
		}
	}
	// Three segments of 2,000 are used and the fourth is prefetched (10% of
	// the third is used): max_id 1 -> 8001, as Leaf leaves it.
	b, _ := e.Buffer("leaf-segment-test")
	testenv.WaitFor(t, "prefetch", nextReady(b))
	tag, _ := s.Tag(bg, "leaf-segment-test")
	if tag.MaxID != 8001 {
		t.Fatalf("max_id %d, want 8001", tag.MaxID)
	}
}

func TestEngine_ErrTagNotFound(t *testing.T) {
	s := memstore.New(nil)
	e := newEngine(t, s, Settings{})
	if _, err := e.Next(bg, "nope"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("err = %v", err)
	}
	if _, err := e.NextN(bg, "nope", 5); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("NextN err = %v", err)
	}
	if n := len(e.Stats()); n != 0 {
		t.Fatalf("an unknown tag left %d buffers behind", n)
	}
	// A tag created later is seen at once.
	mustCreate(t, s, "nope", 10, 5)
	if id, err := e.Next(bg, "nope"); err != nil || id != 10 {
		t.Fatalf("after create: %d, %v", id, err)
	}
}

func TestEngine_ErrInvalidArgument(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "a", 0, 10)
	e := newEngine(t, s, Settings{})
	for _, tag := range []string{"", "a b", "ü", string(make([]byte, 129))} {
		if _, err := e.Next(bg, tag); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Next(%q) err = %v", tag, err)
		}
	}
	for _, n := range []int64{0, -1} {
		if _, err := e.NextN(bg, "a", n); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("NextN(%d) err = %v", n, err)
		}
	}
	if id, _ := e.Next(bg, "a"); id != 0 {
		t.Fatalf("bad input consumed IDs: first ID %d", id)
	}
	for _, bad := range []Settings{{Threshold: 1.5}, {Threshold: -1}, {MaxStep: -1}, {FastSegment: time.Hour, SlowSegment: time.Minute}, {RetryMin: time.Hour, RetryMax: time.Second}} {
		if _, err := New(s, bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("New(%+v) err = %v", bad, err)
		}
	}
}

func TestBuffer_PrefetchAtThreshold(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", 0, 100)
	s.calls = make(chan string, 10)
	e := newEngine(t, s, Settings{FixedStep: true})
	b, _ := e.Buffer("t")
	for i := 0; i < 10; i++ {
		if _, err := b.Next(bg); err != nil {
			t.Fatal(err)
		}
	}
	<-s.calls // the first load
	select {
	case <-s.calls:
		t.Fatal("second segment loaded before 10% was used")
	default:
	}
	b.Next(bg) // the 11th ID: 10% used
	select {
	case <-s.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("no prefetch after 10% was used")
	}
	testenv.WaitFor(t, "next segment", nextReady(b))
	st := b.Stats()
	if st.Current != (BufferStats{Start: 0, Pos: 11, End: 100, Stride: 1, Loaded: st.Current.Loaded}) || st.Next.Start != 100 || st.Next.End != 200 {
		t.Fatalf("stats %+v", st)
	}
}

// Both buffers empty: the caller waits on the store, bounded by its context.
func TestBuffer_WaitsOnlyWhenEmpty(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", 0, 100)
	gate := make(chan struct{})
	s.setGate(gate)
	e := newEngine(t, s, Settings{FixedStep: true, LoadTimeout: time.Hour})
	b, _ := e.Buffer("t")

	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	_, err := b.Next(ctx)
	cancel()
	if !errors.Is(err, frond.ErrStoreUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	close(gate) // the store answers: the load in flight completes
	testenv.WaitFor(t, "first segment", func() bool { return b.Stats().Ready })
	s.setGate(make(chan struct{})) // the next load hangs
	// The whole current segment is served while the next load hangs.
	for i := int64(0); i < 100; i++ {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		id, err := b.Next(ctx)
		cancel()
		if err != nil || id != i {
			t.Fatalf("Next = %d, %v; want %d", id, err, i)
		}
	}
	ctx, cancel = context.WithTimeout(bg, 20*time.Millisecond)
	_, err = b.Next(ctx)
	cancel()
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestBuffer_StoreDown_FailFastThenRecovers(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "t", 0, 10)
	retry := make(chan time.Time, 1)
	e := newEngine(t, s, Settings{FixedStep: true, Clock: clock, After: func(time.Duration) <-chan time.Time { return retry }})
	b, _ := e.Buffer("t")
	if _, err := b.Next(bg); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "loads to settle", func() bool { return !b.Stats().Loading })
	down := errors.New("connection refused")
	s.setFail(down)
	// Every buffered ID is served while the store is down; loading the
	// segment after them fails.
	last := int64(0)
	for n := b.Stats().Remaining; n > 0; n-- {
		id, err := b.Next(bg)
		if err != nil || id != last+1 {
			t.Fatalf("Next = %d, %v; want %d", id, err, last+1)
		}
		last = id
	}
	testenv.WaitFor(t, "failed load", func() bool { return b.Stats().Failures >= 1 })
	start := time.Now()
	_, err := b.Next(bg) // both empty, last load failed just now: fail at once
	if !errors.Is(err, frond.ErrStoreUnavailable) || !errors.Is(err, down) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("fail-fast took %v", d)
	}
	st := b.Stats()
	if st.LastError == "" || st.Remaining != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The store comes back; the background retry fires and refills.
	s.setFail(nil)
	retry <- clock.Now()
	testenv.WaitFor(t, "recovery", nextReady(b))
	if id, err := b.Next(bg); err != nil || id != last+1 {
		t.Fatalf("after recovery: %d, %v; want %d", id, err, last+1)
	}
	if b.Stats().LastError != "" {
		t.Fatal("error not cleared after recovery")
	}
}

func TestBuffer_StoreDown_CallerRetriesAfterFailFast(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "t", 0, 5)
	s.setFail(errors.New("down"))
	e := newEngine(t, s, Settings{Clock: clock, After: func(time.Duration) <-chan time.Time { return nil }})
	if _, err := e.Next(bg, "t"); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("err = %v", err)
	}
	s.setFail(nil)
	if _, err := e.Next(bg, "t"); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("within fail-fast: err = %v", err)
	}
	clock.Add(DefaultFailFast)
	if id, err := e.Next(bg, "t"); err != nil || id != 0 {
		t.Fatalf("after fail-fast: %d, %v", id, err)
	}
}

func TestBuffer_ErrTagExhausted(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 1<<63-1-15, 10)
	e := newEngine(t, s, Settings{FixedStep: true})
	ids, err := e.NextN(bg, "t", 20)
	if !errors.Is(err, frond.ErrTagExhausted) || len(ids) != 1 || ids[0].Len() != 10 {
		t.Fatalf("NextN = %v, %v", ids, err)
	}
}

func TestSettings_NextStep(t *testing.T) {
	cfg, _ := Settings{MaxStep: 1000}.normalize()
	for _, tc := range []struct {
		prev, min int64
		lasted    time.Duration
		want      int64
	}{
		{100, 100, time.Minute, 200},
		{400, 100, 14 * time.Minute, 800},
		{800, 100, time.Minute, 800}, // 1600 > max: keep
		{1000, 100, time.Minute, 1000},
		{400, 100, 20 * time.Minute, 400},
		{400, 100, 30 * time.Minute, 200},
		{100, 100, time.Hour, 100}, // never below the tag's step
		{150, 100, time.Hour, 150}, // 75 < 100: keep
		{100, 5000, time.Minute, 5000},
		{100, 300, 20 * time.Minute, 300}, // the tag's step was raised
	} {
		if got := cfg.nextStep(tc.prev, tc.min, tc.lasted); got != tc.want {
			t.Errorf("nextStep(%d, %d, %v) = %d, want %d", tc.prev, tc.min, tc.lasted, got, tc.want)
		}
	}
	fixed, _ := Settings{FixedStep: true}.normalize()
	if got := fixed.nextStep(800, 100, time.Minute); got != 100 {
		t.Errorf("fixed step %d", got)
	}
}

// The adaptive step end to end, with an injected clock: quick segments double
// the step up to MaxStep, slow ones halve it down to the tag's step.
func TestBuffer_AdaptiveStep(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "t", 0, 100)
	e := newEngine(t, s, Settings{Clock: clock, MaxStep: 1000, Threshold: 1})
	b, _ := e.Buffer("t")
	// With Threshold 1 the next load starts at the last ID of a segment, so
	// the time between loads is the time a segment lasted.
	consumeSegment := func(after time.Duration) {
		t.Helper()
		clock.Add(after)
		if _, err := b.NextN(bg, b.Stats().Remaining); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, "load", nextReady(b))
	}
	if _, err := b.NextN(bg, 100); err != nil { // the first segment, whole: the second load starts at once
		t.Fatal(err)
	}
	testenv.WaitFor(t, "load", nextReady(b))
	for _, d := range []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute, 20 * time.Minute, 40 * time.Minute, 40 * time.Minute, 40 * time.Minute, 40 * time.Minute} {
		consumeSegment(d)
	}
	want := []int64{0, 0, 200, 400, 800, 800, 800, 400, 200, 100, 100}
	if got := s.stepsAsked(); !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	// The buffer's history of the step (the dashboard's): each change once.
	var hist []int64
	for _, c := range b.Stats().Steps {
		hist = append(hist, c.Step)
	}
	if !slices.Equal(hist, []int64{100, 200, 400, 800, 400, 200, 100}) {
		t.Fatalf("step history %v", hist)
	}
}

// Hunger: when callers find both segments empty (the prefetch came too
// late), the next load asks for twice the step, even when the time since
// the last load alone would keep it.
func TestBuffer_HungerGrowsStep(t *testing.T) {
	clock := newFakeClock()
	s := newFakeStore(clock)
	mustCreate(t, s, "t", 0, 100)
	e := newEngine(t, s, Settings{Clock: clock, MaxStep: 1000, Threshold: 1})
	b, _ := e.Buffer("t")
	if _, err := b.NextN(bg, 100); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "load", nextReady(b))
	clock.Add(20 * time.Minute) // between FastSegment and SlowSegment: the step stays
	gate := make(chan struct{})
	s.setGate(gate)
	if _, err := b.NextN(bg, 100); err != nil { // the second segment; the third load waits at the gate
		t.Fatal(err)
	}
	// The third load has asked for its step before anyone waits.
	testenv.WaitFor(t, "the third load", func() bool { return len(s.stepsAsked()) == 3 })
	got := make(chan error, 1)
	go func() { _, err := b.Next(bg); got <- err }()
	testenv.WaitFor(t, "a waiting caller", func() bool { return b.Stats().Waits == 1 })
	s.setGate(nil)
	close(gate)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, err := b.NextN(bg, b.Stats().Remaining); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "load", nextReady(b))
	if got, want := s.stepsAsked(), []int64{0, 0, 100, 200}; !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
}

func TestBuffer_NextN(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 5, 10)
	e := newEngine(t, s, Settings{FixedStep: true})
	rs, err := e.NextN(bg, "t", 25) // crosses two segment boundaries
	if err != nil || len(rs) != 1 || rs[0] != (frond.Range{Start: 5, End: 30, Stride: 1}) {
		t.Fatalf("NextN = %v, %v", rs, err)
	}
	if id, _ := e.Next(bg, "t"); id != 30 {
		t.Fatalf("after the batch: %d", id)
	}
}

func TestBuffer_Stats_RateAndHorizon(t *testing.T) {
	clock := newFakeClock()
	s := memstore.New(clock)
	mustCreate(t, s, "t", 0, 1000)
	e := newEngine(t, s, Settings{Clock: clock, FixedStep: true})
	b, _ := e.Buffer("t")
	b.NextN(bg, 150)
	testenv.WaitFor(t, "prefetch", nextReady(b))
	if st := b.Stats(); st.Horizon != -1 || st.Rate != 0 || st.Issued != 150 || st.Remaining != 1850 {
		t.Fatalf("first stats %+v", st)
	}
	clock.Add(10 * time.Second)
	e.Sample() // 150 IDs since the buffer was made
	if st := b.Stats(); st.Rate != 15 {
		t.Fatalf("rate after the first window %+v", st)
	}
	clock.Add(10 * time.Second)
	b.NextN(bg, 100) // 10 IDs/s
	if st := b.Stats(); st.Rate != 15 {
		t.Fatalf("a look between samples changed the rate: %+v", st)
	}
	e.Sample()
	st := b.Stats()
	if st.Rate != 10 || st.Remaining != 1750 || st.Horizon != 175*time.Second || st.Step != 1000 || st.MinStep != 1000 || st.Loads != 2 {
		t.Fatalf("stats %+v", st)
	}
	if !st.Low { // 175 s of IDs, under the default runway of 5 minutes
		t.Fatalf("175 s of IDs are not low: %+v", st)
	}
	// A window with no ID: the rate falls to 0, whoever looked in between.
	clock.Add(RateWindow)
	b.Stats()
	e.Sample()
	if st := b.Stats(); st.Rate != 0 || st.Horizon != -1 || st.Low {
		t.Fatalf("idle window %+v", st)
	}
	if es := e.Stats(); len(es) != 1 || es[0].Tag != "t" {
		t.Fatalf("engine stats %+v", es)
	}
}

// Overview's count of IDs never goes down: a dropped buffer's IDs stay in
// it (the metrics' frond_ids_issued_total is a counter).
func TestEngine_Overview_IssuedSurvivesDrops(t *testing.T) {
	clock := newFakeClock()
	s := memstore.New(clock)
	mustCreate(t, s, "a", 0, 100)
	mustCreate(t, s, "b", 0, 100)
	e := newEngine(t, s, Settings{Clock: clock, FixedStep: true, IdleAfter: time.Minute})
	e.NextN(bg, "a", 30)
	e.NextN(bg, "b", 250) // crosses segments
	if o := e.Overview(); o.Issued != 280 || len(o.Tags) != 2 {
		t.Fatalf("overview %+v", o)
	}
	e.Forget("a")
	if o := e.Overview(); o.Issued != 280 || len(o.Tags) != 1 {
		t.Fatalf("after a forget %+v", o)
	}
	e.Sweep()
	clock.Add(time.Minute)
	e.Sweep() // b idle: dropped
	if o := e.Overview(); o.Issued != 280 || len(o.Tags) != 0 {
		t.Fatalf("after the sweep %+v", o)
	}
	e.Next(bg, "a")
	if o := e.Overview(); o.Issued != 281 || len(o.Tags) != 1 {
		t.Fatalf("a reloaded %+v", o)
	}
}

// Overview's count never goes down, even read while buffers are dropped
// (a drop leaves the maps before its IDs are retired, and a buffer listed
// before its drop reads 0): Prometheus reads a lower count as a reset.
func TestEngine_Overview_MonotonicUnderDrops(t *testing.T) {
	s := memstore.New(nil)
	for i := range 8 {
		mustCreate(t, s, fmt.Sprintf("t%d", i), 0, 5)
	}
	e := newEngine(t, s, Settings{FixedStep: true})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tag := fmt.Sprintf("t%d", i%8)
			e.NextN(bg, tag, 3)
			if i%3 == 0 {
				e.Forget(tag)
			}
		}
	})
	var last int64
	for range 20000 {
		o := e.Overview()
		if o.Issued < last {
			close(stop)
			wg.Wait()
			t.Fatalf("the count went down: %d after %d", o.Issued, last)
		}
		last = o.Issued
	}
	close(stop)
	wg.Wait()
}

func TestEngine_Close(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", 0, 10)
	gate := make(chan struct{})
	s.setGate(gate)
	e, _ := New(s, Settings{})
	errc := make(chan error, 1)
	go func() {
		_, err := e.Next(bg, "t")
		errc <- err
	}()
	testenv.WaitFor(t, "load in flight", func() bool { return len(s.stepsAsked()) == 1 })
	e.Close() // cancels the load in flight and waits for it
	if err := <-errc; err == nil {
		t.Fatal("Next succeeded after Close")
	}
	if _, err := e.Next(bg, "t"); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestEngine_Forget(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 0, 10)
	e := newEngine(t, s, Settings{FixedStep: true})
	e.Next(bg, "t")
	if err := s.DeleteTag(bg, "t"); err != nil {
		t.Fatal(err)
	}
	e.Forget("t")
	if _, err := e.Next(bg, "t"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// Many goroutines on several tags, small steps so segments switch often:
// every ID unique, each goroutine's IDs of a tag increase, and per tag the
// IDs handed out are exactly 0..N-1 (nothing lost, nothing skipped).
func TestEngine_Concurrent(t *testing.T) {
	s := newFakeStore(nil)
	tags := []string{"a", "b", "c"}
	for _, tag := range tags {
		mustCreate(t, s, tag, 0, 37)
	}
	e := newEngine(t, s, Settings{MaxStep: 300})
	const workers, per = 8, 3000
	type result struct {
		tag string
		ids []int64
	}
	results := make(chan result, workers*len(tags))
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			got := map[string][]int64{}
			for i := 0; i < per; i++ {
				tag := tags[(w+i)%len(tags)]
				if i%5 == 0 {
					rs, err := e.NextN(bg, tag, int64(i%7+1))
					if err != nil {
						errs <- err
						return
					}
					for _, r := range rs {
						got[tag] = r.Append(got[tag])
					}
					continue
				}
				id, err := e.Next(bg, tag)
				if err != nil {
					errs <- err
					return
				}
				got[tag] = append(got[tag], id)
			}
			for tag, ids := range got {
				results <- result{tag, ids}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(results)
	all := map[string][]int64{}
	for r := range results {
		if !slices.IsSorted(r.ids) {
			t.Fatalf("tag %s: a goroutine's IDs do not increase", r.tag)
		}
		all[r.tag] = append(all[r.tag], r.ids...)
	}
	for tag, ids := range all {
		slices.Sort(ids)
		for i, id := range ids {
			if id != int64(i) {
				t.Fatalf("tag %s: ID #%d is %d: duplicate or gap", tag, i, id)
			}
		}
	}
}

// Segments of one ID are used up as soon as they arrive, so callers often
// find both buffers empty just as a load completes. Every call must finish
// (with no deadline): a lost wake-up would hang here.
func TestBuffer_TinySegments_NoLostWakeup(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 0, 1)
	e := newEngine(t, s, Settings{FixedStep: true})
	const workers, per = 8, 300
	done := make(chan []int64, workers)
	for w := 0; w < workers; w++ {
		go func() {
			var ids []int64
			for i := 0; i < per; i++ {
				rs, err := e.NextN(bg, "t", int64(1+i%3))
				if err != nil {
					t.Error(err)
					break
				}
				for _, r := range rs {
					ids = r.Append(ids)
				}
			}
			done <- ids
		}()
	}
	seen := map[int64]bool{}
	timeout := time.After(60 * time.Second)
	for w := 0; w < workers; w++ {
		select {
		case ids := <-done:
			for _, id := range ids {
				if seen[id] {
					t.Fatalf("duplicate %d", id)
				}
				seen[id] = true
			}
		case <-timeout:
			t.Fatal("callers hung: a wake-up was lost")
		}
	}
}

// Close while the store is down and a caller waits without a deadline: the
// caller is woken and told the engine is closed.
func TestEngine_Close_WakesWaiters(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", 0, 10)
	s.setFail(errors.New("down"))
	e, _ := New(s, Settings{FailFast: -1, After: func(time.Duration) <-chan time.Time { return nil }})
	errc := make(chan error, 1)
	go func() {
		b, _ := e.Buffer("t")
		for {
			_, err := b.Next(bg)
			if errors.Is(err, frond.ErrClosed) {
				errc <- err
				return
			}
		}
	}()
	testenv.WaitFor(t, "a failed load", func() bool { return len(s.stepsAsked()) >= 2 })
	e.Close()
	select {
	case <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("a waiting caller was not woken by Close")
	}
}

// NextRun takes one range from one segment: short at a segment's end, and
// the next call goes on in the next segment.
func TestBuffer_NextRun(t *testing.T) {
	s := newFakeStore(nil)
	mustCreate(t, s, "t", 0, 100)
	e := newEngine(t, s, Settings{FixedStep: true})
	r, err := e.NextRun(bg, "t", 70)
	if err != nil || r != (frond.Range{Start: 0, End: 70, Stride: 1}) {
		t.Fatalf("first run %+v, %v", r, err)
	}
	r, err = e.NextRun(bg, "t", 70)
	if err != nil || r != (frond.Range{Start: 70, End: 100, Stride: 1}) {
		t.Fatalf("run to the segment's end %+v, %v", r, err)
	}
	r, err = e.NextRun(bg, "t", 70)
	if err != nil || r != (frond.Range{Start: 100, End: 170, Stride: 1}) {
		t.Fatalf("run in the next segment %+v, %v", r, err)
	}
	if _, err := e.NextRun(bg, "t", 0); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("NextRun(0): %v", err)
	}
}

// TestEngine_MappingOfEachSegment: a change of the tag's mapping reaches a
// node that has segments buffered with its next segment: each ID comes with
// its own segment's mapping, and a batch that crosses into the new mapping
// ends with ErrMappingChanged instead of answering both.
func TestEngine_MappingOfEachSegment(t *testing.T) {
	s := memstore.New(nil)
	if _, err := s.CreateTag(bg, frond.Tag{Name: "m", MaxID: 1, Step: 10, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, s, Settings{FixedStep: true, Threshold: 0.99})
	for i := 0; i < 5; i++ {
		if id, m, err := e.NextMapped(bg, "m"); err != nil || m != frond.MappingMist || id != int64(1+i) {
			t.Fatalf("NextMapped = %d, %q, %v", id, m, err)
		}
	}
	// Another node changes the mapping, past every Mist number.
	plain := frond.MappingPlain
	top, _ := s.Tag(bg, "m")
	floor, _ := frond.MappingFloor(frond.MappingMist, plain, top.MaxID)
	if _, err := s.UpdateTag(bg, "m", frond.TagUpdate{Mapping: &plain, MaxID: &floor}); err != nil {
		t.Fatal(err)
	}
	// The rest of the Mist segment comes as Mist; the batch that reaches
	// the next segment ends there.
	rs, m, err := e.NextNMapped(bg, "m", 5)
	if err != nil || m != frond.MappingMist || len(rs) != 1 || rs[0].Start != 6 || rs[0].End != 11 {
		t.Fatalf("NextNMapped = %v, %q, %v", rs, m, err)
	}
	rs, m, err = e.NextNMapped(bg, "m", 1)
	if err != nil || m != "" || rs[0].Start != floor {
		t.Fatalf("first batch of the new mapping = %v, %q, %v; want %d plain", rs, m, err, floor)
	}
	if id, m, err := e.NextMapped(bg, "m"); err != nil || m != "" || id != floor+1 {
		t.Fatalf("NextMapped after the change = %d, %q, %v", id, m, err)
	}
	// A batch across the change: a node whose buffer holds Mist IDs and
	// then plain ones.
	if _, err := s.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	if _, m, err := e.NextMapped(bg, "x"); err != nil || m != "" {
		t.Fatal(m, err)
	}
	mist := frond.MappingMist
	cur, _ := s.Tag(bg, "x")
	floor, _ = frond.MappingFloor("", mist, cur.MaxID)
	floor = max(floor, cur.MaxID)
	if _, err := s.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &mist, MaxID: &floor}); err != nil {
		t.Fatal(err)
	}
	rs, m, err = e.NextNMapped(bg, "x", 30)
	if !errors.Is(err, ErrMappingChanged) || m != "" || len(rs) == 0 || rs[len(rs)-1].End > cur.MaxID {
		t.Fatalf("a batch across the change = %v, %q, %v; want the plain IDs and ErrMappingChanged", rs, m, err)
	}
	if r, m, err := e.NextRunMapped(bg, "x", 3); err != nil || m != frond.MappingMist || r.Start < floor {
		t.Fatalf("NextRunMapped after the change = %v, %q, %v", r, m, err)
	}
}

// A tag is low when its horizon is under the engine's runway
// (segment.runway), whatever it is; a negative runway is refused.
func TestBuffer_Stats_LowFollowsRunway(t *testing.T) {
	for _, tc := range []struct {
		runway time.Duration
		low    bool
	}{{0, true}, {2 * time.Minute, false}, {124 * time.Second, true}, {123 * time.Second, false}} {
		clock := newFakeClock()
		s := memstore.New(clock)
		mustCreate(t, s, "t", 0, 1000)
		e := newEngine(t, s, Settings{Clock: clock, FixedStep: true, Runway: tc.runway})
		b, _ := e.Buffer("t")
		b.NextN(bg, 150)
		testenv.WaitFor(t, "prefetch", nextReady(b))
		clock.Add(10 * time.Second)
		e.Sample() // 15 IDs/s; 1850 left: 123 s
		if st := b.Stats(); st.Low != tc.low || st.Horizon/time.Second != 123 {
			t.Fatalf("runway %v: %+v", tc.runway, st)
		}
		want := tc.runway
		if want == 0 {
			want = DefaultRunway
		}
		if o := e.Overview(); o.Runway != want {
			t.Fatalf("runway %v: the overview says %v", tc.runway, o.Runway)
		}
	}
	if err := (Settings{Runway: -time.Second}).Validate(); err == nil {
		t.Fatal("a negative runway passed")
	}
}
