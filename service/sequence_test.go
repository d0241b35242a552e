package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/worker"
)

// sharedStore is one store under several services (nodes): Close leaves it
// open, and Allocate can be held at a gate.
type sharedStore struct {
	frond.SegmentStore
	mu     sync.Mutex
	gate   chan struct{} // when set, Allocate waits for it
	calls  int
	steps  []int64 // the step of every Allocate call
	closed bool
}

func (s *sharedStore) Close() error { return nil }

// AllocateIDs is the store call of a sequence tag, held and counted as
// Allocate is.
func (s *sharedStore) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	if err := s.enter(ctx, n); err != nil {
		return nil, err
	}
	return frond.SequenceIDs(ctx, s.SegmentStore, tag, n)
}

func (s *sharedStore) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	if err := s.enter(ctx, step); err != nil {
		return frond.Allocation{}, err
	}
	return s.SegmentStore.Allocate(ctx, tag, step)
}

// enter counts a store call of step IDs and waits at the gate if one is set.
func (s *sharedStore) enter(ctx context.Context, step int64) error {
	s.mu.Lock()
	s.calls++
	s.steps = append(s.steps, step)
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// hold makes Allocate wait until the returned channel is closed.
func (s *sharedStore) hold() chan struct{} {
	g := make(chan struct{})
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
	return g
}

func (s *sharedStore) allocs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func seqNodes(t *testing.T, n int) ([]*Service, *sharedStore) {
	t.Helper()
	st := &sharedStore{SegmentStore: memstore.New(nil)}
	var out []*Service
	for i := range n {
		s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}, Segment: segment.Settings{FixedStep: true}}, st, &memRegistry{id: int64(i + 1)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(bg) })
		out = append(out, s)
	}
	if _, err := out[0].CreateTag(bg, frond.Tag{Name: "ticket", MaxID: 1, Step: 1000, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	return out, st
}

// One request after another, to alternating nodes: every ID is the next
// one, with no gap (nothing is buffered), and the IDs of a batch are
// consecutive.
func TestSequence_AcrossNodes(t *testing.T) {
	nodes, st := seqNodes(t, 2)
	want := int64(1)
	for i := range 20 {
		a, err := nodes[i%2].Take(bg, Request{Kind: KindSegment, Name: "ticket"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Nums[0] != want {
			t.Fatalf("request %d on node %d: %d, want %d", i, i%2, a.Nums[0], want)
		}
		want++
	}
	a, err := nodes[1].Take(bg, Request{Kind: KindSegment, Name: "ticket", Count: 5})
	if err != nil || !slices.Equal(a.Nums, []int64{21, 22, 23, 24, 25}) {
		t.Fatalf("a batch of 5: %v, %v", a.Nums, err)
	}
	r, err := nodes[0].Take(bg, Request{Kind: KindSegment, Name: "ticket", Count: 3, Ranges: true})
	if err != nil || len(r.Ranges) != 1 || r.Ranges[0] != (frond.Range{Start: 26, End: 29, Stride: 1}) {
		t.Fatalf("ranges: %v, %v", r.Ranges, err)
	}
	if got := st.allocs(); got != 22 {
		t.Fatalf("%d store calls for 22 requests", got)
	}
	if tag, _ := nodes[1].Tag(bg, "ticket"); tag.Mode != frond.ModeSequence || tag.MaxID != 29 {
		t.Fatalf("tag %+v", tag)
	}
	for _, s := range nodes {
		if len(s.SegmentStats()) != 0 {
			t.Fatalf("a sequence tag has segment buffers: %+v", s.SegmentStats())
		}
	}
}

// Group commit: callers that arrive while a store call is in flight wait
// for the next one, which serves them all at once, in arrival order; none
// joins the call in flight.
func TestSequence_GroupCommit(t *testing.T) {
	nodes, st := seqNodes(t, 1)
	s := nodes[0]
	gate := st.hold()
	first := make(chan int64, 1)
	go func() {
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"})
		if err != nil {
			t.Error(err)
		}
		first <- a.Nums[0]
	}()
	testenv.WaitFor(t, "the first store call", func() bool { return st.allocs() == 1 }) // the first call is in flight
	const callers = 50
	var wg sync.WaitGroup
	got := make([]int64, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket", Count: 2})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = a.Nums[0]
			if a.Nums[1] != a.Nums[0]+1 {
				t.Errorf("a batch of 2: %v", a.Nums)
			}
		}()
	}
	testenv.WaitFor(t, "the callers queued", func() bool {
		s.seq.mu.Lock()
		defer s.seq.mu.Unlock()
		q := s.seq.tags["ticket"]
		return q != nil && len(q.waiting) == callers
	})
	close(gate)
	wg.Wait()
	if f := <-first; f != 1 {
		t.Fatalf("the first caller got %d", f)
	}
	if calls := st.allocs(); calls != 2 {
		t.Fatalf("%d store calls for 1 + %d callers: want 2 (one group)", calls, callers)
	}
	slices.Sort(got)
	for i, id := range got {
		if id != int64(2+2*i) {
			t.Fatalf("IDs of the group: %v", got)
		}
	}
	stats := s.SequenceStats()
	if len(stats) != 1 || stats[0].Trips != 2 || stats[0].IDs != 1+2*callers || stats[0].Max != callers {
		t.Fatalf("stats %+v", stats)
	}
}

// A group commit is capped: callers queued behind a store call are served
// by calls of at most MaxSequenceGroup IDs each, in arrival order (one
// store call served them all, however many IDs they asked for); a single
// request larger than the cap is a call of its own.
func TestSequence_GroupCapped(t *testing.T) {
	nodes, st := seqNodes(t, 1)
	s := nodes[0]
	gate := st.hold()
	go s.Take(bg, Request{Kind: KindSegment, Name: "ticket"})
	testenv.WaitFor(t, "the first store call", func() bool { return st.allocs() == 1 })
	const callers, each = 25, 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []frond.Range
	take := func(n int64) {
		defer wg.Done()
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket", Count: n, Ranges: true})
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		got = append(got, a.Ranges...)
		mu.Unlock()
	}
	for i := range callers + 1 {
		wg.Add(1)
		if i == callers/2 {
			go take(3 * MaxSequenceGroup) // larger than a group: alone
		} else {
			go take(each)
		}
		testenv.WaitFor(t, "the caller queued", func() bool {
			s.seq.mu.Lock()
			defer s.seq.mu.Unlock()
			q := s.seq.tags["ticket"]
			return q != nil && len(q.waiting) == i+1
		})
	}
	close(gate)
	wg.Wait()
	st.mu.Lock()
	steps := slices.Clone(st.steps[1:])
	st.mu.Unlock()
	var total int64
	for _, n := range steps {
		if n > MaxSequenceGroup && n != 3*MaxSequenceGroup {
			t.Errorf("a store call of %d IDs: the cap is %d (calls %v)", n, MaxSequenceGroup, steps)
		}
		total += n
	}
	want := int64((callers)*each + 3*MaxSequenceGroup)
	if total != want || len(steps) < 4 {
		t.Fatalf("store calls %v: %d IDs, want %d in at least 4 calls", steps, total, want)
	}
	// Every ID once, all of them from 2 on.
	slices.SortFunc(got, func(a, b frond.Range) int { return int(a.Start - b.Start) })
	next := int64(2)
	for _, r := range got {
		if r.Start != next {
			t.Fatalf("ranges %v: a gap or an overlap at %d", got, next)
		}
		next = r.End
	}
	if next != 2+want {
		t.Fatalf("IDs up to %d, want %d", next, 2+want)
	}
}

// Under load on two nodes, every pair of requests where one was answered
// before the other was sent is in order; no ID is given twice.
func TestSequence_Linearizable(t *testing.T) {
	nodes, _ := seqNodes(t, 2)
	type op struct {
		start, end time.Time
		id         int64
	}
	const workers, per = 8, 60
	ops := make([][]op, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				start := time.Now()
				a, err := nodes[(w+i)%2].Take(bg, Request{Kind: KindSegment, Name: "ticket"})
				end := time.Now()
				if err != nil {
					t.Error(err)
					return
				}
				ops[w] = append(ops[w], op{start, end, a.Nums[0]})
			}
		}()
	}
	wg.Wait()
	var all []op
	for _, o := range ops {
		all = append(all, o...)
	}
	seen := map[int64]bool{}
	for _, o := range all {
		if seen[o.id] {
			t.Fatalf("ID %d twice", o.id)
		}
		seen[o.id] = true
	}
	// Sweep by start: the largest ID answered before each start.
	byEnd := slices.Clone(all)
	sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].end.Before(byEnd[j].end) })
	sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	j, maxDone := 0, int64(0)
	for _, o := range all {
		for j < len(byEnd) && byEnd[j].end.Before(o.start) {
			maxDone = max(maxDone, byEnd[j].id)
			j++
		}
		if o.id <= maxDone {
			t.Fatalf("ID %d was answered after %d had been answered before it was asked for", o.id, maxDone)
		}
	}
}

// A sequence tag cannot be leased (TinyID's segments, the Go client's
// leases); HEAD (Peek) says the same.
func TestSequence_NotLeasable(t *testing.T) {
	nodes, _ := seqNodes(t, 1)
	for _, r := range []Request{
		{Kind: KindSegment, Name: "ticket", Run: true},
		{Kind: KindSegment, Name: "ticket", Count: 10, Ranges: true, Lease: true},
	} {
		if _, err := nodes[0].Take(bg, r); !errors.Is(err, frond.ErrNotLeasable) || Code(err) != frond.CodeNotLeasable {
			t.Errorf("%+v: %v", r, err)
		}
		if err := nodes[0].Peek(bg, &r); !errors.Is(err, frond.ErrNotLeasable) {
			t.Errorf("Peek %+v: %v", r, err)
		}
	}
	if err := nodes[0].Peek(bg, &Request{Kind: KindSegment, Name: "ticket"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[0].Take(bg, Request{Kind: KindSegment, Name: "nope"}); Code(err) != frond.CodeTagNotFound {
		t.Fatalf("unknown tag: %v", err)
	}
}

// A tag deleted and created again under the other mode by another node is
// seen by this node once its cached mode is older than modeTTL, and the
// segment buffers it held for the tag are dropped.
func TestSequence_ModeChangeSeen(t *testing.T) {
	nodes, _ := seqNodes(t, 2)
	a, b := nodes[0], nodes[1]
	if _, err := a.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	if r, err := a.Take(bg, Request{Kind: KindSegment, Name: "order"}); err != nil || r.Nums[0] != 1 {
		t.Fatalf("segment ID: %v, %v", r.Nums, err)
	}
	if err := b.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1000, Step: 100, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	// Age node a's cached modes, as modeTTL passing does.
	a.modes.epoch.Add(1)
	a.Take(bg, Request{Kind: KindSegment, Name: "order"}) // served from the old mode; starts the refresh
	testenv.WaitFor(t, "the mode refreshed", func() bool {
		v, _ := a.modes.m.Load("order")
		return v != nil && v.(*modeEntry).mode == frond.ModeSequence
	})
	r, err := a.Take(bg, Request{Kind: KindSegment, Name: "order"})
	if err != nil || r.Nums[0] < 1000 {
		t.Fatalf("after the change: %v, %v", r.Nums, err)
	}
	if len(a.SegmentStats()) != 0 {
		t.Fatalf("buffers kept: %+v", a.SegmentStats())
	}
}

// downTagStore fails Tag as a store that is down does, and counts the calls.
type downTagStore struct {
	*sharedStore
	tagCalls atomic.Int64
}

func (s *downTagStore) Tag(ctx context.Context, name string) (frond.Tag, error) {
	s.tagCalls.Add(1)
	return frond.Tag{}, fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable)
}

// While the store is down, a tag whose mode is not known yet fails at once
// after the first failed read, as the segment engine's first loads do: no
// request waits for the store again within FailFast.
func TestSequence_ModeReadFailsFast(t *testing.T) {
	st := &downTagStore{sharedStore: &sharedStore{SegmentStore: memstore.New(nil)}}
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}, Segment: segment.Settings{FailFast: time.Hour}}, st, &memRegistry{id: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	for i := range 5 {
		_, err := s.Take(bg, Request{Kind: KindSegment, Name: fmt.Sprintf("t%d", i)})
		if Code(err) != frond.CodeStoreUnavailable {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := st.tagCalls.Load(); n != 1 {
		t.Fatalf("%d store reads for 5 requests within FailFast", n)
	}
}

// downAllocStore fails Allocate as a store that is down does.
type downAllocStore struct {
	*sharedStore
	down atomic.Bool
}

func (s *downAllocStore) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	if err := s.fail(ctx, step); err != nil {
		return frond.Allocation{}, err
	}
	return s.sharedStore.SegmentStore.Allocate(ctx, tag, step)
}

func (s *downAllocStore) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	if err := s.fail(ctx, n); err != nil {
		return nil, err
	}
	return frond.SequenceIDs(ctx, s.sharedStore.SegmentStore, tag, n)
}

// fail counts and holds a store call as sharedStore does, and fails it
// while the store is down.
func (s *downAllocStore) fail(ctx context.Context, n int64) error {
	if err := s.enter(ctx, n); err != nil {
		return err
	}
	if s.down.Load() {
		return fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable)
	}
	return nil
}

// After a store call of a sequence tag fails on an outage, callers get the
// error at once for FailFast instead of queueing for the store; once the
// store answers again the tag is served again.
func TestSequence_FailsFastOnOutage(t *testing.T) {
	st := &downAllocStore{sharedStore: &sharedStore{SegmentStore: memstore.New(nil)}}
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}, Segment: segment.Settings{FailFast: 50 * time.Millisecond}}, st, &memRegistry{id: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	if _, err := s.CreateTag(bg, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	for i := range 5 {
		if _, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"}); Code(err) != frond.CodeStoreUnavailable {
			t.Fatalf("request %d during the outage: %v", i, err)
		}
	}
	if n := st.allocs(); n != 1 {
		t.Fatalf("%d store calls for 5 requests within FailFast", n)
	}
	st.down.Store(false)
	testenv.WaitFor(t, "the tag served again", func() bool {
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"})
		return err == nil && a.Nums[0] == 1
	})
}

// A sequence tag over a multi-store of two stores (Flickr's odd and even
// ticket servers): every request gets its IDs, one store's IDs increase,
// and none repeats. (Found by the chaos suite: a group of one asked the
// multi-store for one ID, whose residue held none.)
func TestSequence_MultiStore(t *testing.T) {
	stores := []frond.SegmentStore{memstore.New(nil), memstore.New(nil)}
	if _, err := segment.ChangeSet(bg, stores, nil, segment.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := segment.NewMulti(stores...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}}, m, &memRegistry{id: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	if _, err := s.CreateTag(bg, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	last := int64(0)
	for i := range 50 {
		a, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket", Count: int64(1 + i%3)})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		for _, id := range a.Nums {
			if seen[id] || id <= last {
				t.Fatalf("request %d: ID %d after %d (seen before: %v)", i, id, last, seen[id])
			}
			seen[id] = true
			last = id
		}
	}
}

// Callers queued behind a store call that fails on an outage get its error
// without a second store call.
func TestSequence_QueuedBehindAFailure(t *testing.T) {
	st := &downAllocStore{sharedStore: &sharedStore{SegmentStore: memstore.New(nil)}}
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}, Segment: segment.Settings{FailFast: time.Hour}}, st, &memRegistry{id: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	if _, err := s.CreateTag(bg, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	gate := st.hold()
	errs := make(chan error, 11)
	go func() {
		_, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"})
		errs <- err
	}()
	testenv.WaitFor(t, "the first store call", func() bool { return st.allocs() == 1 })
	for range 10 {
		go func() {
			_, err := s.Take(bg, Request{Kind: KindSegment, Name: "ticket"})
			errs <- err
		}()
	}
	testenv.WaitFor(t, "the callers queued", func() bool {
		s.seq.mu.Lock()
		defer s.seq.mu.Unlock()
		q := s.seq.tags["ticket"]
		return q != nil && len(q.waiting) == 10
	})
	close(gate)
	for range 11 {
		if err := <-errs; Code(err) != frond.CodeStoreUnavailable {
			t.Fatalf("during the outage: %v", err)
		}
	}
	if n := st.allocs(); n != 1 {
		t.Fatalf("%d store calls: the queued callers waited for the store again", n)
	}
}

// A node whose cached mode of a tag is out of date (another node deleted
// the tag and created it again with the other mode, within modeTTL) is
// told so by the store, which refuses the wrong kind of allocation (SQL
// stores: a sequence tag's IDs may come from a sequence object): the node
// learns the mode and serves the request by it, with no error and no ID
// from the wrong source.
func TestSequence_StaleModeRefusedByStore(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "frond.db")
	var nodes []*Service
	for i := range 2 {
		st, err := sqlstore.Open(bg, url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}, Segment: segment.Settings{FixedStep: true}}, st, &memRegistry{id: int64(i + 1)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(bg) })
		nodes = append(nodes, s)
	}
	a, b := nodes[0], nodes[1]
	take := func() int64 {
		t.Helper()
		r, err := a.Take(bg, Request{Kind: KindSegment, Name: "order"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Nums[0]
	}
	// A step of 100, so that one ID starts no preload, which could take a
	// segment later on (wasted, but the IDs below would not be exact).
	if _, err := a.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	take()
	a.seg.Forget("order") // as if used up: the next ID needs a segment
	if err := b.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1000, Step: 100, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	if id := take(); id != 1000 {
		t.Fatalf("segment mode cached, sequence tag in the store: ID %d, want 1000", id)
	}
	if m, _ := a.modeOf(bg, "order"); m != frond.ModeSequence {
		t.Fatalf("mode learnt: %q", m)
	}
	if err := b.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTag(bg, frond.Tag{Name: "order", MaxID: 5000, Step: 100}); err != nil {
		t.Fatal(err)
	}
	if id := take(); id != 5000 {
		t.Fatalf("sequence mode cached, segment tag in the store: ID %d, want 5000; %+v", id, a.SegmentStats())
	}
	if m, _ := a.modeOf(bg, "order"); m != "" {
		t.Fatalf("mode learnt: %q", m)
	}
}

// A request that read a tag's mode just before this node learnt it is a
// sequence tag cannot load a segment of it: the engine asks the service
// before it makes a buffer (TestSequence_ModeChangeSeen failed now and
// then on this race: a segment of the sequence tag, loaded by such a
// request, stayed in a buffer).
func TestSequence_NoBufferForAKnownSequenceTag(t *testing.T) {
	nodes, _ := seqNodes(t, 1)
	s := nodes[0]
	if _, err := s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	s.setMode("order", frond.ModeSequence) // learnt, while a request still holds the old mode
	if _, err := s.seg.Next(bg, "order"); !errors.Is(err, frond.ErrNotLeasable) {
		t.Fatalf("a segment of a known sequence tag: %v", err)
	}
	if st := s.SegmentStats(); len(st) != 0 {
		t.Fatalf("buffers: %+v", st)
	}
}

// A whole segment (CosId proxy's nextMaxId) is contiguous; a set of stores
// hands out strided ones: the request is refused before any store is
// asked, so it takes no ID.
func TestWhole_MultiStoreTakesNothing(t *testing.T) {
	stores := []frond.SegmentStore{memstore.New(nil), memstore.New(nil)}
	if _, err := segment.ChangeSet(bg, stores, nil, segment.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := segment.NewMulti(stores...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(bg, Config{Snowflake: worker.Settings{PersistEvery: time.Hour}}, m, &memRegistry{id: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	if _, err := s.CreateTag(bg, frond.Tag{Name: "cosid.order", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	before, err := frond.TagCopies(bg, m, "cosid.order")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(bg, Request{Kind: KindSegment, Name: "cosid.order", Count: 10, Whole: true}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("a whole segment on a set of stores: %v", err)
	}
	after, err := frond.TagCopies(bg, m, "cosid.order")
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if after[i].MaxID != before[i].MaxID {
			t.Fatalf("store %d: max_id %d -> %d: the refused request took IDs", i, before[i].MaxID, after[i].MaxID)
		}
	}
}
