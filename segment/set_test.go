package segment

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/memstore"
)

// ChangeSet refuses a change that leaves out a store of the current set:
// that store may hold IDs the change must see. Retiring it is fine.
func TestChangeSet_RefusesAnIncompleteSet(t *testing.T) {
	a, b, c := memstore.New(nil), memstore.New(nil), memstore.New(nil)
	if _, err := ChangeSet(bg, []frond.SegmentStore{a, b}, nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := ChangeSet(bg, []frond.SegmentStore{a, c}, nil, SetOptions{})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "residue 1 is not among the stores given") {
		t.Fatalf("b left out: %v", err)
	}
	if p, _ := a.Place(bg); p != (frond.Place{Residue: 0, Of: 2, Gen: 1}) {
		t.Fatalf("a refused change moved a: %s", p.Describe())
	}
	got, err := ChangeSet(bg, []frond.SegmentStore{a, c}, []frond.SegmentStore{b}, SetOptions{})
	if err != nil || got.Gen != 2 || len(got.Places) != 2 {
		t.Fatalf("b retired: %+v, %v", got, err)
	}
	if p, _ := b.Place(bg); !p.Retired() {
		t.Fatalf("b is %s, want retired", p.Describe())
	}
	if p, _ := c.Place(bg); p != (frond.Place{Residue: 1, Of: 2, Gen: 2}) {
		t.Fatalf("c is %s", p.Describe())
	}
	// Back to one store: it stands alone, the others are retired.
	if _, err := ChangeSet(bg, []frond.SegmentStore{c}, []frond.SegmentStore{a, b}, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Place(bg); p != (frond.Place{Residue: 0, Of: 1, Gen: 3}) {
		t.Fatalf("c is %s, want the only store of the set of generation 3", p.Describe())
	}
	// A set of one store is still a set: leaving it out is refused, also
	// when only stores it retired are given (they handed out IDs long ago,
	// c since: a change without c would not see them).
	fresh := memstore.New(nil)
	_, err = ChangeSet(bg, []frond.SegmentStore{b, fresh}, nil, SetOptions{})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "retired by the change to generation 3") {
		t.Fatalf("c left out, b (retired) given: %v", err)
	}
	// A node listing c alone is served, as by a store alone; a node
	// listing c with a store never placed is refused that one.
	if _, err := c.Allocate(bg, "t", 0); err != nil && !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("the only store of a set, asked alone: %v", err)
	}
	if err := listing(t, c, fresh).Ping(bg); !errors.Is(err, ErrDegraded) || !strings.Contains(err.Error(), "stands alone") {
		t.Fatalf("a store never placed listed with c: %v", err)
	}
}

// A change cut short while fencing is finished by running it again with
// the same stores, and refused if a store of the old set is left out on
// the rerun (the completeness check is not skipped on a resume).
func TestChangeSet_ResumeStillComplete(t *testing.T) {
	a, b, c := memstore.New(nil), memstore.New(nil), memstore.New(nil)
	if _, err := ChangeSet(bg, []frond.SegmentStore{a, b, c}, nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	// {A B} retiring C dies after fencing A.
	if err := a.SwapPlace(bg, frond.Place{Residue: 0, Of: 3, Gen: 1}, frond.Place{Residue: 0, Of: 3, Gen: 1, Next: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := ChangeSet(bg, []frond.SegmentStore{a, b}, nil, SetOptions{})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "residue 2 is not among the stores given") {
		t.Fatalf("the rerun left C out: %v", err)
	}
	got, err := ChangeSet(bg, []frond.SegmentStore{a, b}, []frond.SegmentStore{c}, SetOptions{})
	if err != nil || !got.Resumed {
		t.Fatalf("the rerun with C retired: %+v, %v", got, err)
	}
	// Cut short again, this time after writing b's new place: the rerun
	// finishes it (the old set was fenced and raised past in full).
	if err := a.SwapPlace(bg, frond.Place{Residue: 0, Of: 2, Gen: got.Gen}, frond.Place{Residue: 0, Of: 2, Gen: got.Gen, Next: got.Gen + 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.SwapPlace(bg, frond.Place{Residue: 1, Of: 2, Gen: got.Gen}, frond.Place{Residue: 0, Of: 1, Gen: got.Gen + 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ChangeSet(bg, []frond.SegmentStore{b}, []frond.SegmentStore{a}, SetOptions{}); err != nil {
		t.Fatalf("the rerun after a place was written: %v", err)
	}
}

// The new stores of a set are raised above every store's max_id (plus the
// margin: the tag's step by default), and a tag missing from a store is
// created there, so no store of the new set hands out an ID any store
// handed out.
func TestChangeSet_Raises(t *testing.T) {
	a, b := memstore.New(nil), memstore.New(nil)
	mustCreate(t, a, "t", 500, 10)
	mustCreate(t, b, "t", 120, 10)
	mustCreate(t, a, "only-a", 7, 3)
	got, err := ChangeSet(bg, []frond.SegmentStore{b, a}, nil, SetOptions{Margin: -1})
	if err != nil || got.Raised != 3 || got.Created != 1 || got.Tags != 2 {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, s := range []*memstore.Store{a, b} {
		if tg, _ := s.Tag(bg, "t"); tg.MaxID != 510 {
			t.Fatalf("t at %d, want 510", tg.MaxID)
		}
		if tg, _ := s.Tag(bg, "only-a"); tg.MaxID != 10 || tg.Step != 3 {
			t.Fatalf("only-a: %+v", tg)
		}
	}
}

// A change cut short leaves its stores fenced: no node allocates from them
// (safe), and running it again finishes it.
func TestChangeSet_Resumes(t *testing.T) {
	a, b := newFakeStore(nil), newFakeStore(nil)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	m := newMulti(t, a, b)
	// The change dies after fencing a: b's first SwapPlace fails.
	if err := a.SwapPlace(bg, frond.Place{Residue: 0, Of: 2, Gen: 1}, frond.Place{Residue: 0, Of: 2, Gen: 1, Next: 2}); err != nil {
		t.Fatal(err)
	}
	m.pref.Store(0)
	if _, err := a.AllocateAt(bg, frond.Place{Residue: 0, Of: 2, Gen: 1}, "t", 0); !errors.Is(err, frond.ErrWrongPlace) {
		t.Fatalf("a fenced store allocated: %v", err)
	}
	if r, err := m.Allocate(bg, "t", 0); err != nil || r.Start%2 != 1 {
		t.Fatalf("the node fails over to b: %+v, %v", r, err)
	}
	got, err := ChangeSet(bg, []frond.SegmentStore{b, a}, nil, SetOptions{})
	if err != nil || !got.Resumed || got.Gen != 3 {
		t.Fatalf("resumed: %+v, %v", got, err)
	}
	// The node reads the new places when the stores refuse its old ones.
	r, err := m.Allocate(bg, "t", 0)
	if err != nil || r.Start%2 != 0 || r.Start < 11 {
		t.Fatalf("after the change: %+v, %v (b is residue 0 now, above b's old max_id 11)", r, err)
	}
}

// Nodes allocate as fast as they can while the set changes under them,
// again and again: every ID once.
func TestChangeSet_UnderLoad(t *testing.T) {
	stores := []frond.SegmentStore{memstore.New(nil), memstore.New(nil), memstore.New(nil)}
	for _, s := range stores {
		mustCreate(t, s, "t", 1, 7)
	}
	if _, err := ChangeSet(bg, stores[:2], stores[2:], SetOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, list := range [][]frond.SegmentStore{stores, {stores[2], stores[1], stores[0]}, stores[1:]} {
		e := newEngine(t, listing(t, list...), Settings{FixedStep: true, FailFast: -1, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := e.Next(bg, "t")
				if err != nil {
					continue // fenced for a moment: the other stores, or none
				}
				mu.Lock()
				if seen[id] {
					mu.Unlock()
					t.Errorf("ID %d twice", id)
					return
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	orders := [][]int{{1, 0}, {0, 1, 2}, {2}, {2, 0}, {0, 2, 1}, {1}}
	for round := range 30 {
		next := orders[round%len(orders)]
		var in, out []frond.SegmentStore
		for i, s := range stores {
			if j := indexOf(next, i); j < 0 {
				out = append(out, s)
			}
		}
		for _, i := range next {
			in = append(in, stores[i])
		}
		if _, err := ChangeSet(bg, in, out, SetOptions{Margin: -1}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		before := len(seen)
		mu.Unlock()
		testenv.WaitFor(t, fmt.Sprintf("IDs handed out at the new set %v (round %d)", next, round), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) >= before+20
		})
	}
	close(stop)
	wg.Wait()
	if len(seen) == 0 {
		t.Fatal("no ID handed out")
	}
	t.Logf("%d IDs over 30 changes of the set", len(seen))
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
