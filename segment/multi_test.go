package segment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/memstore"
)

func TestResidue_Exhaustive(t *testing.T) {
	for k := int64(1); k <= 7; k++ {
		for start := int64(0); start < 30; start++ {
			for end := start; end < 45; end++ {
				for i := int64(0); i < k; i++ {
					r := Residue(frond.Range{Start: start, End: end, Stride: 1}, i, k)
					var want []int64
					for id := start; id < end; id++ {
						if id%k == i {
							want = append(want, id)
						}
					}
					got := r.Append(nil)
					if len(got) != len(want) || int64(len(want)) != r.Len() {
						t.Fatalf("Residue([%d,%d), %d, %d) = %v (len %d), want %v", start, end, i, k, got, r.Len(), want)
					}
					for j := range got {
						if got[j] != want[j] || !r.Contains(got[j]) {
							t.Fatalf("Residue([%d,%d), %d, %d) = %v, want %v", start, end, i, k, got, want)
						}
					}
				}
			}
		}
	}
}

func TestResidue_NearMax(t *testing.T) {
	r := Residue(frond.Range{Start: 1<<63 - 3, End: 1<<63 - 1, Stride: 1}, 2, 5)
	if r.Len() != 0 || r.Start < 0 {
		t.Fatalf("near 2^63: %+v", r)
	}
	r = Residue(frond.Range{Start: 1<<63 - 10, End: 1<<63 - 1, Stride: 1}, 2, 5)
	if ids := r.Append(nil); len(ids) != 1 || ids[0] != 1<<63-6 || r.Len() != 1 { // 2^63-1 is excluded
		t.Fatalf("near 2^63: %v", ids)
	}
}

// newMulti places stores as a set, in this order (ChangeSet, no margin),
// and returns a node's multi-store over them.
func newMulti(t *testing.T, stores ...frond.SegmentStore) *Multi {
	t.Helper()
	if _, err := ChangeSet(t.Context(), stores, nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	return listing(t, stores...)
}

// listing is a node's multi-store over stores placed already, listed in
// this order.
func listing(t *testing.T, stores ...frond.SegmentStore) *Multi {
	t.Helper()
	m, err := NewMulti(stores...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Two nodes share two stores; one store goes down midway. Every ID is
// unique, each store's IDs keep their residue, and the nodes never stop.
func TestMulti_TwoNodes_OneStoreDown(t *testing.T) {
	a, b := newFakeStore(nil), newFakeStore(nil)
	for _, s := range []frond.SegmentStore{a, b} {
		mustCreate(t, s, "t", 0, 20)
	}
	nodes := []*Engine{
		newEngine(t, newMulti(t, a, b), Settings{FixedStep: true, FailFast: -1}),
		newEngine(t, newMulti(t, a, b), Settings{FixedStep: true, FailFast: -1}),
	}
	const per = 4000
	var wg sync.WaitGroup
	results := make(chan []int64, 4)
	errs := make(chan error, 4)
	half := make(chan struct{})
	var once sync.Once
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := nodes[w%2]
			ids := make([]int64, 0, per)
			for i := 0; i < per; i++ {
				if w == 0 && i == per/2 {
					once.Do(func() { a.setFail(errors.New("store a is down")); close(half) })
				}
				id, err := e.Next(bg, "t")
				if err != nil {
					errs <- err
					return
				}
				ids = append(ids, id)
			}
			results <- ids
		}()
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	<-half
	seen := map[int64]bool{}
	for ids := range results {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 4*per {
		t.Fatalf("%d IDs", len(seen))
	}
	// Store b (residue 1) carries on alone: once the segments a node loaded
	// from store a before it went down (the current one and a prefetched
	// one, 10 IDs each) are used up, every ID is odd.
	for _, e := range nodes {
		for i := range 30 {
			id, err := e.Next(bg, "t")
			if err != nil || (i >= 20 && id%2 != 1) {
				t.Fatalf("ID %d after store a went down: %d, %v", i, id, err)
			}
		}
	}
}

func TestMulti_Errors(t *testing.T) {
	a, b := newFakeStore(nil), newFakeStore(nil)
	m := newMulti(t, a, b)
	if _, err := m.Allocate(bg, "t", 10); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("unknown everywhere: %v", err)
	}
	if _, err := m.CreateTag(bg, frond.Tag{Name: "t", MaxID: 0, Step: 1}); err != nil {
		t.Fatal(err)
	}
	a.setFail(errors.New("a down"))
	b.setFail(errors.New("b down"))
	_, err := m.Allocate(bg, "t", 10)
	if !errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("both down: %v", err)
	}
	// One store does not know the tag, the other is down: an outage, not 404.
	b.setFail(nil)
	mustCreate(t, b.Store, "only-b", 0, 10)
	a.setFail(nil) // a answers: "only-b" does not exist there
	b.setFail(errors.New("b down"))
	_, err = m.Allocate(bg, "only-b", 10)
	if !errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("not found on a, b down: %v", err)
	}
	a.setFail(errors.New("a down"))
	b.setFail(nil)
	// Step 1 from store b (residue 1) at max_id 0 holds no odd ID.
	if _, err := m.Allocate(bg, "t", 0); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("step below store count: %v", err)
	}
	if _, err := NewMulti(); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("no stores: %v", err)
	}
}

func TestMulti_TagAdmin(t *testing.T) {
	a, b := newFakeStore(nil), newFakeStore(nil)
	m := newMulti(t, a, b)
	if _, err := m.CreateTag(bg, frond.Tag{Name: "t", MaxID: 100, Step: 10, Description: "orders"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTag(bg, frond.Tag{Name: "t", MaxID: 100, Step: 10}); !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("second create: %v", err)
	}
	step := int64(50)
	if got, err := m.UpdateTag(bg, "t", frond.TagUpdate{Step: &step}); err != nil || got.Step != 50 {
		t.Fatalf("update: %+v, %v", got, err)
	}
	for _, s := range []*fakeStore{a, b} {
		if tag, _ := s.Tag(bg, "t"); tag.Step != 50 || tag.Description != "orders" {
			t.Fatalf("store has %+v", tag)
		}
	}
	a.setFail(errors.New("down")) // reads do not need store a; Allocate does not either
	if tags, err := m.Tags(bg); err != nil || len(tags) != 1 {
		t.Fatalf("tags %v, %v", tags, err)
	}
	if err := m.DeleteTag(bg, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Tag(bg, "t"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// After a fail-over the next segment comes from another residue class and
// may abut the previous range: the batch must not merge them into one
// range that covers the other store's IDs.
func TestMulti_NextNDoesNotMergeAcrossResidues(t *testing.T) {
	a, b := newFakeStore(nil), newFakeStore(nil)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	m := newMulti(t, a, b)
	at, _ := b.Place(bg)
	if _, err := b.AllocateAt(bg, at, "t", 0); err != nil { // another node took store b's first segment: b is at 11
		t.Fatal(err)
	}
	e := newEngine(t, m, Settings{FixedStep: true, Threshold: 1})
	if _, err := e.Next(bg, "t"); err != nil { // store a: [1,11) residue 0: 2,4,...,10
		t.Fatal(err)
	}
	a.setFail(errors.New("store a down"))
	rs, err := e.NextN(bg, "t", 8) // 4,6,8,10 from a, then 11..21 residue 1 from b: 11,13,15,17
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range rs {
		ids = r.Append(ids)
	}
	want := []int64{4, 6, 8, 10, 11, 13, 15, 17}
	if len(ids) != len(want) {
		t.Fatalf("ids %v (ranges %+v), want %v", ids, rs, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("ids %v (ranges %+v), want %v", ids, rs, want)
		}
	}
}

// pingStore is a store with a name, a Ping that fails with err, and warnings.
type pingStore struct {
	*memstore.Store
	name     string
	err      error
	warnings []string
}

func (s *pingStore) Ping(context.Context) error { return s.err }
func (s *pingStore) String() string             { return s.name }
func (s *pingStore) Warnings() []string         { return s.warnings }

func TestMulti_Ping(t *testing.T) {
	down := fmt.Errorf("dial: %w: connection refused", frond.ErrStoreUnavailable)
	a := &pingStore{Store: memstore.New(nil), name: "mysql://frond@db-a:3306/ids"}
	b := &pingStore{Store: memstore.New(nil), name: "postgres://frond@db-b:5432/ids"}
	c := memstore.New(nil) // no Ping, no name: asked for its tags
	m := newMulti(t, a, b, c)
	if err := m.Ping(t.Context()); err != nil {
		t.Fatalf("all up: %v", err)
	}

	b.err = down
	err := m.Ping(t.Context())
	if !errors.Is(err, ErrDegraded) || errors.Is(err, frond.ErrStoreUnavailable) ||
		!strings.Contains(err.Error(), "store 1 (postgres://frond@db-b:5432/ids): dial") || strings.Contains(err.Error(), "store 0") {
		t.Fatalf("one down: %v", err)
	}

	a.err = fmt.Errorf("ping: %w", frond.ErrTagNotFound) // an odd answer is still "down", and not a 404
	c.Close()
	err = m.Ping(t.Context())
	if !errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, ErrDegraded) || errors.Is(err, frond.ErrTagNotFound) ||
		!strings.Contains(err.Error(), "store 0 (mysql://frond@db-a:3306/ids)") || !strings.Contains(err.Error(), "store 2: ") {
		t.Fatalf("all down: %v", err)
	}
}

func TestMulti_Warnings(t *testing.T) {
	a := &pingStore{Store: memstore.New(nil), name: "redis://r/0", warnings: []string{"volatile"}}
	m := newMulti(t, memstore.New(nil), a)
	if w := m.Warnings(); len(w) != 1 || w[0] != "store 1 (redis://r/0): volatile" {
		t.Fatalf("warnings %q", w)
	}
}

// A store's residue is the store's (its place), not a line of a node's
// list: nodes listing the stores in another order, or only some of them,
// hand out the same residue from each store, and never the same IDs (the
// residue marks gave a store the residue of its line in the first node's
// list, and nodes listing A B and B A handed out the same even IDs).
func TestMulti_ResidueIsTheStores(t *testing.T) {
	a, b, c := memstore.New(nil), memstore.New(nil), memstore.New(nil)
	for _, s := range []*memstore.Store{a, b, c} {
		mustCreate(t, s, "t", 0, 10)
	}
	if _, err := ChangeSet(bg, []frond.SegmentStore{a, b}, nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := []*Multi{listing(t, a, b), listing(t, b, a), listing(t, b), listing(t, a)}
	seen := map[int64]int{}
	for round := range 20 {
		for n, m := range nodes {
			if n < 2 && round%3 == 2 {
				m.pref.Store(1 - m.pref.Load()) // fail over now and then
			}
			r, err := m.Allocate(bg, "t", 0)
			if err != nil {
				t.Fatalf("node %d: %v", n, err)
			}
			for _, id := range r.Append(nil) {
				if seen[id]++; seen[id] > 1 {
					t.Fatalf("ID %d handed out twice (node %d)", id, n)
				}
			}
		}
	}
	// A store that is not part of the set is not used with it, however it
	// is listed; a node listing it alone is refused by the placed stores.
	withC := listing(t, c, a, b)
	withC.pref.Store(0)
	if r, err := withC.Allocate(bg, "t", 0); err != nil || r.Stride != 2 {
		t.Fatalf("a set of two listed with a third store: %+v, %v", r, err)
	}
	if err := withC.Ping(bg); !errors.Is(err, ErrDegraded) || !strings.Contains(err.Error(), "stands alone") {
		t.Fatalf("Ping with a store outside the set: %v", err)
	}
	if _, err := a.Allocate(bg, "t", 0); !errors.Is(err, frond.ErrWrongPlace) {
		t.Fatalf("a placed store used alone: %v", err)
	}
	if _, err := listing(t, c, memstore.New(nil)).Allocate(bg, "t", 0); !errors.Is(err, frond.ErrWrongPlace) && !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("two stores never placed: %v", err)
	}
}

// placeCounter counts the reads of a store's place.
type placeCounter struct {
	*memstore.Store
	reads atomic.Int64
}

func (s *placeCounter) Place(ctx context.Context) (frond.Place, error) {
	s.reads.Add(1)
	return s.Store.Place(ctx)
}

// placeGate is a store whose next reading of its place, once armed, reads
// the place and then waits for release before it answers: a reading that
// began before a change of the set and ends after it.
type placeGate struct {
	*memstore.Store
	armed   atomic.Bool
	holding chan struct{} // closed when a reading is held
	release chan struct{}
}

func (s *placeGate) arm() {
	s.holding, s.release = make(chan struct{}), make(chan struct{})
	s.armed.Store(true)
}

func (s *placeGate) Place(ctx context.Context) (frond.Place, error) {
	p, err := s.Store.Place(ctx)
	if s.armed.CompareAndSwap(true, false) {
		close(s.holding)
		<-s.release
	}
	return p, err
}

// Issue 42, item 3: a node learns a change of the set by itself, without
// readiness probes or the dashboard: when a store refuses it, every
// store's place is read again, and so is it every refresh interval.
//
// Issue 57, item 5: also when a reading of every place that began before
// the change is still under way when the store refuses (it used to be the
// last, and its places from before the change stood until the next
// refresh): a reading asked for meanwhile runs when it ends, and a reading
// never overwrites one begun after it. Deterministic: the old reading is
// held at b until the refusal has been seen.
func TestMulti_LearnsChangeWithoutProbes(t *testing.T) {
	a, b, c := memstore.New(nil), &placeGate{Store: memstore.New(nil)}, memstore.New(nil)
	for _, s := range []frond.SegmentStore{a, b, c} {
		mustCreate(t, s, "t", 1, 30)
	}
	m := newMulti(t, a, b, c)
	clock := newFakeClock()
	m.RefreshPlaces(time.Minute, clock)
	for i := range 3 { // the node has read every place
		m.pref.Store(int64(i))
		if _, err := m.Allocate(bg, "t", 0); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, "the first reading of every place done", func() bool { return !m.busy.Load() })
	if m.Residues() != 3 {
		t.Fatalf("residues %d, want 3", m.Residues())
	}
	// A refresh begins and reads b's place before the change, then waits.
	b.arm()
	clock.Add(time.Minute)
	m.pref.Store(0)
	if _, err := m.Allocate(bg, "t", 0); err != nil {
		t.Fatal(err)
	}
	<-b.holding
	if _, err := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b, c}, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	m.pref.Store(0)
	if r, err := m.Allocate(bg, "t", 0); err != nil || r.Stride != 1 {
		t.Fatalf("after the change: %+v, %v", r, err)
	}
	close(b.release) // the old reading ends, after the refusal asked for a new one
	testenv.WaitFor(t, "the readings done", func() bool { return !m.busy.Load() })
	// b and c were not asked: their places are read again all the same,
	// and the node's segments are sized for one store, not three.
	if k := m.Residues(); k != 1 {
		t.Fatalf("residues %d after every reading ended, want 1: a reading begun before the change was the last", k)
	}
}

func TestMulti_RefreshesPlaces(t *testing.T) {
	a, b := memstore.New(nil), &placeCounter{Store: memstore.New(nil)}
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	m := newMulti(t, a, b)
	b.reads.Store(0) // the change read it
	clock := newFakeClock()
	m.RefreshPlaces(time.Minute, clock)
	m.pref.Store(0)
	if _, err := m.Allocate(bg, "t", 0); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "b's place read at the first allocation", func() bool { return b.reads.Load() == 1 && !m.busy.Load() })
	for range 3 {
		if _, err := m.Allocate(bg, "t", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.reads.Load(); n != 1 {
		t.Fatalf("b's place read %d times within the minute", n)
	}
	clock.Add(time.Minute)
	if _, err := m.Allocate(bg, "t", 0); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "b's place read again after a minute", func() bool { return b.reads.Load() == 2 })
}
