package segment

import (
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
	wantAt(t, a, "0/2@1")
	got, err := ChangeSet(bg, []frond.SegmentStore{a, c}, []frond.SegmentStore{b}, SetOptions{})
	if err != nil || got.Gen != 2 || len(got.Places) != 2 {
		t.Fatalf("b retired: %+v, %v", got, err)
	}
	if p, _ := b.Place(bg); !p.Retired() {
		t.Fatalf("b is %s, want retired", p.Describe())
	}
	wantAt(t, c, "1/2@2")
	// Back to one store: it stands alone, the others are retired.
	if _, err := ChangeSet(bg, []frond.SegmentStore{c}, []frond.SegmentStore{a, b}, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAt(t, c, "0/1@3")
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

// wantAt checks that s is at place want ("r/K@g"), whatever change wrote
// it, with no change under way.
func wantAt(t *testing.T, s frond.SegmentStore, want string) {
	t.Helper()
	p, err := frond.PlaceOf(bg, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%d/%d@%d", p.Residue, p.Of, p.Gen); got != want || p.Moving() {
		t.Fatalf("%v is %s, want %s", s, p.Describe(), want)
	}
}

// wantFenced checks that s is fenced by a change under way.
func wantFenced(t *testing.T, s frond.SegmentStore) frond.Place {
	t.Helper()
	p, err := frond.PlaceOf(bg, s)
	if err != nil || !p.Moving() {
		t.Fatalf("%v is %s (%v), want fenced", s, p.Describe(), err)
	}
	return p
}

func stores(ss ...*lossyStore) []frond.SegmentStore {
	out := make([]frond.SegmentStore, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// noDuplicates runs a node over each list (a multi-store, or a store
// alone), takes up to 200 IDs of tag "t" from each in turn, and fails if
// two hand out the same ID. A node refused by its stores takes nothing.
func noDuplicates(t *testing.T, lists ...[]frond.SegmentStore) int {
	t.Helper()
	seen := map[int64]int{}
	var engines []*Engine
	for _, l := range lists {
		var s frond.SegmentStore = l[0]
		if len(l) > 1 {
			s = listing(t, l...)
		}
		engines = append(engines, newEngine(t, s, Settings{FixedStep: true, FailFast: -1}))
	}
	served := 0
	for range 200 {
		for i, e := range engines {
			id, err := e.Next(bg, "t")
			if err != nil {
				continue
			}
			if j, dup := seen[id]; dup && j != i {
				t.Fatalf("ID %d handed out by the node listing %v and by the node listing %v", id, lists[j], lists[i])
			}
			seen[id] = i
			served++
		}
	}
	return served
}

func killAfter(n int64) *atomic.Int64 {
	k := new(atomic.Int64)
	k.Store(n)
	return k
}

// Issue 42, item 1: a rerun of an interrupted change with another list is
// refused, naming the change; the rerun with its own list finishes it.
func TestChangeSet_RerunWithAnotherList(t *testing.T) {
	t.Run("B placed, A fenced to retire; rerun with A", func(t *testing.T) {
		kill := killAfter(-1)
		a, b := newLossy("a", kill), newLossy("b", kill)
		mustCreate(t, a, "t", 1000, 10) // a served alone up to 1000
		kill.Store(6)                   // fence b, a; create t in b; mark b, a raised; place b; killed placing a
		if _, err := ChangeSet(bg, stores(b), stores(a), SetOptions{}); !errors.Is(err, errKilled) {
			t.Fatalf("the change was not killed: %v", err)
		}
		kill.Store(-1)
		wantAt(t, b, "0/1@1")
		p := wantFenced(t, a)
		_, err := ChangeSet(bg, stores(a), nil, SetOptions{})
		if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "fenced by change "+p.Move.Change) {
			t.Fatalf("the rerun with a alone: %v", err)
		}
		if noDuplicates(t, stores(a), stores(b)) == 0 {
			t.Fatal("b serves nothing")
		}
		got, err := ChangeSet(bg, stores(b), stores(a), SetOptions{})
		if err != nil || !got.Resumed || got.Change != p.Move.Change {
			t.Fatalf("the rerun with the change's own stores: %+v, %v", got, err)
		}
		if p, _ := a.Place(bg); !p.Retired() {
			t.Fatalf("a is %s", p.Describe())
		}
		noDuplicates(t, stores(a), stores(b), stores(a, b))
	})
	t.Run("A placed, B fenced; rerun with B", func(t *testing.T) {
		kill := killAfter(-1)
		a, b := newLossy("a", kill), newLossy("b", kill)
		mustCreate(t, a, "t", 1000, 10)
		mustCreate(t, b, "t", 1, 10)
		kill.Store(6) // fence a, b; raise b (margin 0: a is the highest); mark a, b raised; place a; killed placing b
		if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); !errors.Is(err, errKilled) {
			t.Fatalf("the change was not killed: %v", err)
		}
		kill.Store(-1)
		wantAt(t, a, "0/2@1")
		wantFenced(t, b)
		if _, err := ChangeSet(bg, stores(b), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Fatalf("the rerun with b alone: %v", err)
		}
		if _, err := ChangeSet(bg, stores(b, a), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Fatalf("the rerun in another order: %v", err)
		}
		if _, err := ChangeSet(bg, stores(a), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "residue 1 is not among") {
			t.Fatalf("a change of a alone: %v", err)
		}
		noDuplicates(t, stores(a, b), stores(b), stores(a))
		if got, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil || !got.Resumed {
			t.Fatalf("the rerun: %+v, %v", got, err)
		}
		wantAt(t, b, "1/2@1")
		noDuplicates(t, stores(a, b), stores(b, a), stores(b), stores(a))
	})
}

// Issue 42, item 2: two changes that pick the same generation are never
// taken for one.
func TestChangeSet_SameGeneration(t *testing.T) {
	t.Run("concurrent", func(t *testing.T) {
		a, b, c := newLossy("a", nil), newLossy("b", nil), newLossy("c", nil)
		for _, s := range []*lossyStore{a, b, c} {
			mustCreate(t, s, "t", 1, 10)
		}
		// "C A" reads the places, then "A B" runs whole, then "C A"
		// fences c and is refused at a.
		ab := func() {
			if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil {
				t.Errorf("A B: %v", err)
			}
		}
		c.beforeSwap.Store(&ab)
		if _, err := ChangeSet(bg, stores(c, a), nil, SetOptions{}); !errors.Is(err, frond.ErrPlaceChanged) {
			t.Fatalf("C A beside A B: %v", err)
		}
		wantFenced(t, c)
		wantAt(t, a, "0/2@1")
		if _, err := ChangeSet(bg, stores(c, a), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "placed since by another change") {
			t.Fatalf("the rerun of C A: %v", err)
		}
		noDuplicates(t, stores(a, b), stores(c, a), stores(b, c), stores(c))
		got, err := AbandonChange(bg, stores(c, a), nil, SetOptions{})
		if err != nil || !got.Abandoned {
			t.Fatalf("abandon C A: %+v, %v", got, err)
		}
		if p, _ := c.Place(bg); !p.Alone() {
			t.Fatalf("c is %s after the abandon, want alone again", p.Describe())
		}
		if got, err := ChangeSet(bg, stores(c, a, b), nil, SetOptions{}); err != nil || got.Gen != 2 {
			t.Fatalf("C A B: %+v, %v", got, err)
		}
		noDuplicates(t, stores(a, b, c), stores(c), stores(b, a))
	})
	t.Run("a failed change, another, then the retry", func(t *testing.T) {
		kill := killAfter(-1)
		a, b, c := newLossy("a", kill), newLossy("b", kill), newLossy("c", kill)
		for _, s := range []*lossyStore{a, b, c} {
			mustCreate(t, s, "t", 1, 10)
		}
		kill.Store(1) // a unreachable: c fenced, a not
		if _, err := ChangeSet(bg, stores(c, a), nil, SetOptions{}); !errors.Is(err, errKilled) {
			t.Fatalf("C A: %v", err)
		}
		kill.Store(-1)
		if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil {
			t.Fatalf("A B instead: %v", err)
		}
		if _, err := ChangeSet(bg, stores(c, a), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Fatalf("the retry of C A: %v", err)
		}
		noDuplicates(t, stores(a, b), stores(c, a), stores(b))
		// A new change naming c is refused while c's change is recorded.
		if _, err := ChangeSet(bg, stores(a, b, c), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "is fenced by change") {
			t.Fatalf("A B C while C A is recorded: %v", err)
		}
		if _, err := AbandonChange(bg, stores(c, a), nil, SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ChangeSet(bg, stores(a, b, c), nil, SetOptions{}); err != nil {
			t.Fatal(err)
		}
		noDuplicates(t, stores(a, b, c), stores(c, b), stores(b))
	})
	t.Run("two changes under way", func(t *testing.T) {
		kill := killAfter(-1)
		a, b, c, d := newLossy("a", kill), newLossy("b", kill), newLossy("c", kill), newLossy("d", kill)
		kill.Store(1)
		ChangeSet(bg, stores(a, b), nil, SetOptions{})
		kill.Store(1)
		ChangeSet(bg, stores(c, d), nil, SetOptions{})
		kill.Store(-1)
		wantFenced(t, a)
		wantFenced(t, c)
		if _, err := ChangeSet(bg, stores(a, c), stores(b, d), SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "fenced by 2 changes under way") {
			t.Fatalf("a change over both: %v", err)
		}
		// Each is abandoned with its own stores, also while the other
		// still fences one of them.
		if _, err := AbandonChange(bg, stores(a, b), nil, SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := AbandonChange(bg, stores(c, d), nil, SetOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*lossyStore{a, b, c, d} {
			if p, _ := s.Place(bg); !p.Alone() {
				t.Fatalf("%s is %s after the abandons", s.name, p.Describe())
			}
		}
	})
	t.Run("two changes over one store, begun at once", func(t *testing.T) {
		a, b := newLossy("a", nil), newLossy("b", nil)
		// "A B" and "B A" at once: each fences its first store, waits for
		// the other to do the same, and is refused at the other's.
		var read, fenced sync.WaitGroup
		read.Add(2)
		fenced.Add(2)
		meetRead := func() { read.Done(); read.Wait() }
		meetFenced := func() { fenced.Done(); fenced.Wait() }
		a.beforeSwap.Store(&meetRead)
		b.beforeSwap.Store(&meetRead)
		a.afterSwap.Store(&meetFenced)
		b.afterSwap.Store(&meetFenced)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = ChangeSet(bg, stores(a, b), nil, SetOptions{}) })
		wg.Go(func() { _, errs[1] = ChangeSet(bg, stores(b, a), nil, SetOptions{}) })
		wg.Wait()
		for _, err := range errs {
			if !errors.Is(err, frond.ErrPlaceChanged) {
				t.Fatalf("A B and B A at once: %v", errs)
			}
		}
		wantFenced(t, a)
		wantFenced(t, b)
		for _, l := range [][]frond.SegmentStore{stores(a, b), stores(b, a)} {
			if _, err := ChangeSet(bg, l, nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "fenced by 2 changes") {
				t.Fatalf("rerun %v: %v", l, err)
			}
		}
		if _, err := AbandonChange(bg, stores(b, a), nil, SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil || !got.Resumed {
			t.Fatalf("A B, once B A is abandoned: %+v, %v", got, err)
		}
		noDuplicates(t, stores(a, b), stores(b, a))
	})
}

// AbandonChange puts every store an interrupted change fenced back at its
// place, if the change placed none; one that placed a store is finished.
func TestAbandonChange(t *testing.T) {
	kill := killAfter(-1)
	a, b, c := newLossy("a", kill), newLossy("b", kill), newLossy("c", kill)
	for _, s := range []*lossyStore{a, b, c} {
		mustCreate(t, s, "t", 1, 10)
	}
	if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := AbandonChange(bg, stores(a, b), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "nothing to abandon") {
		t.Fatalf("abandon with no change under way: %v", err)
	}
	before, _ := a.Place(bg)
	kill.Store(3) // fence b, a, c (every max_id is 1: nothing to raise); killed marking b raised
	if _, err := ChangeSet(bg, stores(b, a, c), nil, SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	if _, err := AbandonChange(bg, stores(b, a), nil, SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("abandon with other stores: %v", err)
	}
	got, err := AbandonChange(bg, stores(b, a, c), nil, SetOptions{})
	if err != nil || !got.Abandoned {
		t.Fatalf("abandon: %+v, %v", got, err)
	}
	if p, _ := a.Place(bg); p != before {
		t.Fatalf("a is %s, want %s again", p.Describe(), before.Describe())
	}
	if p, _ := c.Place(bg); !p.Alone() {
		t.Fatalf("c is %s, want alone again", p.Describe())
	}
	noDuplicates(t, stores(a, b), stores(b)) // c alone again: an ID space of its own, as before the change
	// Killed after placing c: the abandon finishes the change instead.
	kill.Store(8) // fence c, a, b; mark them raised; place c, a; killed retiring b
	if _, err := ChangeSet(bg, stores(c, a), stores(b), SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	got, err = AbandonChange(bg, stores(c, a), stores(b), SetOptions{})
	if err != nil || got.Abandoned || !got.Resumed {
		t.Fatalf("abandon after a place was written: %+v, %v", got, err)
	}
	wantAt(t, c, "0/2@2")
	if p, _ := b.Place(bg); !p.Retired() {
		t.Fatalf("b is %s", p.Describe())
	}
	noDuplicates(t, stores(a, c), stores(c), stores(b), stores(a, b, c))
}

// A change that placed a store, and whose store was placed again since by a
// later change that left out the store still fenced (it was to be retired),
// is finished by an abandon, never undone: undoing it would put the
// retired store back in the old set, beside the later one.
func TestAbandonChange_AfterALaterChange(t *testing.T) {
	kill := killAfter(-1)
	a, b := newLossy("a", kill), newLossy("b", kill)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	if _, err := ChangeSet(bg, stores(b, a), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	noDuplicates(t, stores(a, b), stores(b, a))
	kill.Store(6) // fence a, b; raise a; mark them; place a; killed retiring b
	if _, err := ChangeSet(bg, stores(a), stores(b), SetOptions{Margin: 10}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	if _, err := ChangeSet(bg, stores(a), nil, SetOptions{}); err != nil { // b left out: it was retired by the change before
		t.Fatal(err)
	}
	noDuplicates(t, stores(a), stores(b, a))
	got, err := AbandonChange(bg, stores(a), stores(b), SetOptions{})
	if err != nil || got.Abandoned {
		t.Fatalf("abandon: %+v, %v", got, err)
	}
	if p, _ := b.Place(bg); !p.Retired() {
		t.Fatalf("b is %s, want retired", p.Describe())
	}
	wantAt(t, a, "0/1@3")
	noDuplicates(t, stores(a), stores(b, a), stores(b))
}

// A change cut short while fencing is finished by running it again with
// exactly its stores, and only with them: leaving C out on the rerun is
// refused.
func TestChangeSet_ResumeStillComplete(t *testing.T) {
	kill := killAfter(-1)
	a, b, c := newLossy("a", kill), newLossy("b", kill), newLossy("c", kill)
	for _, s := range []*lossyStore{a, b, c} {
		mustCreate(t, s, "t", 1, 10)
	}
	if _, err := ChangeSet(bg, stores(a, b, c), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	kill.Store(1) // {A B} retiring C dies after fencing A
	if _, err := ChangeSet(bg, stores(a, b), stores(c), SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	_, err := ChangeSet(bg, stores(a, b), nil, SetOptions{})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "is fenced by change") {
		t.Fatalf("the rerun left C out: %v", err)
	}
	got, err := ChangeSet(bg, stores(a, b), stores(c), SetOptions{})
	if err != nil || !got.Resumed {
		t.Fatalf("the rerun with C retired: %+v, %v", got, err)
	}
	// Cut short again, this time after writing b's new place: the rerun
	// finishes it, without raising again (every store was raised before
	// the first place was written).
	kill.Store(5) // fence b, a; mark them raised (nothing to raise); place b; killed retiring a
	if _, err := ChangeSet(bg, stores(b), stores(a), SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	wantAt(t, b, "0/1@3")
	if got, err := ChangeSet(bg, stores(b), stores(a), SetOptions{}); err != nil || !got.Resumed {
		t.Fatalf("the rerun after a place was written: %+v, %v", got, err)
	}
	noDuplicates(t, stores(a), stores(b), stores(a, b), stores(c))
}

// A store given twice (or a copy of a store's database, which keeps its
// identity) is refused before anything is written.
func TestChangeSet_SameStoreTwice(t *testing.T) {
	a, b := newLossy("a", nil), newLossy("b", nil)
	for _, l := range [][2][]frond.SegmentStore{{stores(a, b, a), nil}, {stores(a, b), stores(a)}} {
		if _, err := ChangeSet(bg, l[0], l[1], SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "the same store") {
			t.Fatalf("%v: %v", l, err)
		}
	}
	if p, _ := a.Place(bg); !p.Alone() {
		t.Fatalf("a refused change wrote %s", p.Describe())
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
	kill := killAfter(-1)
	a, b := newLossy("a", kill), newLossy("b", kill)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	m := newMulti(t, a, b)
	kill.Store(1) // the change to "b a" dies after fencing b
	if _, err := ChangeSet(bg, stores(b, a), nil, SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	m.pref.Store(1)
	if r, err := m.Allocate(bg, "t", 0); err != nil || r.Start%2 != 0 {
		t.Fatalf("the node fails over to a: %+v, %v", r, err)
	}
	got, err := ChangeSet(bg, stores(b, a), nil, SetOptions{})
	if err != nil || !got.Resumed || got.Gen != 2 {
		t.Fatalf("resumed: %+v, %v", got, err)
	}
	// The node reads the new places when the stores refuse its old ones.
	m.pref.Store(1)
	r, err := m.Allocate(bg, "t", 0)
	if err != nil || r.Start%2 != 0 || r.Start < 11 {
		t.Fatalf("after the change: %+v, %v (b is residue 0 now, above a's max_id 21)", r, err)
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

// A change that placed a store which a later change then fenced is
// finished (by its abandon) without touching the later change's fence; the
// later change is then finished or abandoned as its own.
func TestChangeSet_ResumeBesideALaterFence(t *testing.T) {
	kill := killAfter(-1)
	a, b := newLossy("a", kill), newLossy("b", kill)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	kill.Store(5) // X: fence a, b; mark them; place a; killed retiring b
	if _, err := ChangeSet(bg, stores(a), stores(b), SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(1) // W: a alone (b was to be retired); killed after fencing a
	if _, err := ChangeSet(bg, stores(a), nil, SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	w := wantFenced(t, a)
	// A rerun of X is refused (two changes fence its stores); its abandon
	// finishes it, since it had placed a.
	if _, err := ChangeSet(bg, stores(a), stores(b), SetOptions{}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "fenced by 2 changes") {
		t.Fatalf("X again: %v", err)
	}
	got, err := AbandonChange(bg, stores(a), stores(b), SetOptions{})
	if err != nil || !got.Resumed || got.Abandoned {
		t.Fatalf("abandon X: %+v, %v", got, err)
	}
	if p, _ := b.Place(bg); !p.Retired() {
		t.Fatalf("b is %s", p.Describe())
	}
	if p := wantFenced(t, a); p != w {
		t.Fatalf("X changed W's fence: %s, was %s", p.Describe(), w.Describe())
	}
	if got, err := AbandonChange(bg, stores(a), nil, SetOptions{}); err != nil || !got.Abandoned {
		t.Fatalf("abandon W: %+v, %v", got, err)
	}
	wantAt(t, a, "0/1@2")
	noDuplicates(t, stores(a), stores(a, b), stores(b))
}

// killedBetweenFences leaves change "b, retiring a" of the set {a b}
// fenced at both stores, neither marked: the state in which a rerun and an
// abandon may run at once.
func killedBetweenFences(t *testing.T) (a, b *lossyStore) {
	t.Helper()
	kill := killAfter(-1)
	a, b = newLossy("a", kill), newLossy("b", kill)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b, "t", 1, 10)
	if _, err := ChangeSet(bg, stores(a, b), nil, SetOptions{}); err != nil { // a 0/2@1, b 1/2@1
		t.Fatal(err)
	}
	kill.Store(2) // fence b, fence a; killed at the first mark
	if _, err := ChangeSet(bg, stores(b), stores(a), SetOptions{}); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	kill.Store(-1)
	return a, b
}

// onSwap runs f once, before the next SwapPlace of s.
func onSwap(s *lossyStore, f func()) { s.beforeSwap.Store(&f) }

// A rerun and an abandon of one change at once (a review of issue 42): the
// abandon's first write marks the first store's fence, which a rerun reads
// as "being abandoned" and refuses; a rerun that read the fences before
// fails at its commit, the mark of the same fence.
func TestAbandonChange_BesideARerun(t *testing.T) {
	t.Run("the rerun starts while the abandon runs", func(t *testing.T) {
		a, b := killedBetweenFences(t)
		var rerun error
		onSwap(a, func() { _, rerun = ChangeSet(bg, stores(b), stores(a), SetOptions{}) }) // after b is marked, before a goes back
		got, err := AbandonChange(bg, stores(b), stores(a), SetOptions{})
		if err != nil || !got.Abandoned {
			t.Fatalf("abandon: %+v, %v", got, err)
		}
		if !errors.Is(rerun, frond.ErrInvalidArgument) || !strings.Contains(rerun.Error(), "being abandoned") {
			t.Fatalf("the rerun during the abandon: %v", rerun)
		}
		wantAt(t, a, "0/2@1")
		wantAt(t, b, "1/2@1")
		noDuplicates(t, stores(a, b), stores(a), stores(b))
	})
	t.Run("the abandon runs while the rerun is about to commit", func(t *testing.T) {
		a, b := killedBetweenFences(t)
		var abandoned SetChange
		var aerr error
		onSwap(b, func() { abandoned, aerr = AbandonChange(bg, stores(b), stores(a), SetOptions{}) }) // the rerun's first mark is b's
		_, err := ChangeSet(bg, stores(b), stores(a), SetOptions{})
		if !errors.Is(err, frond.ErrPlaceChanged) || aerr != nil || !abandoned.Abandoned {
			t.Fatalf("rerun: %v; abandon: %+v, %v", err, abandoned, aerr)
		}
		wantAt(t, a, "0/2@1")
		wantAt(t, b, "1/2@1")
		noDuplicates(t, stores(a, b), stores(a), stores(b))
	})
	t.Run("a rerun that read the fences before an abandon and a new fence", func(t *testing.T) {
		// The change "b, retiring a and c" is killed after fencing b and
		// a. A rerun R fences c, and waits to commit. Meanwhile the
		// change is abandoned (b and a go back; c, fenced by R after the
		// abandon read it, stays fenced), a serves past the max_id R
		// read, and a second rerun fences b and a anew and is killed
		// before its commit. Those fences read as the first ones but for
		// their run: R's commit must fail, or R would place b below IDs a
		// served.
		kill := killAfter(-1)
		a, b, c := newLossy("a", kill), newLossy("b", kill), newLossy("c", kill)
		for _, s := range []*lossyStore{a, b, c} {
			mustCreate(t, s, "t", 1, 10)
		}
		if _, err := ChangeSet(bg, stores(a, b), stores(c), SetOptions{}); err != nil { // a 0/2@1, b 1/2@1
			t.Fatal(err)
		}
		kill.Store(2) // fence b, fence a; killed fencing c
		if _, err := ChangeSet(bg, stores(b), stores(a, c), SetOptions{}); !errors.Is(err, errKilled) {
			t.Fatal(err)
		}
		kill.Store(-1)
		served := map[int64]bool{}
		atCommit := func() { // R is about to commit
			e := newEngine(t, listing(t, a, b), Settings{FixedStep: true, FailFast: -1})
			for range 100 {
				id, err := e.Next(bg, "t")
				if err != nil {
					t.Error(err)
					return
				}
				served[id] = true
			}
			e.Close()
			kill.Store(2) // R2: fence b, fence a; killed raising
			if _, err := ChangeSet(bg, stores(b), stores(a, c), SetOptions{}); !errors.Is(err, errKilled) {
				t.Errorf("R2: %v", err)
			}
			kill.Store(-1)
		}
		onSwap(c, func() { // R is about to fence c: the abandon runs now
			if got, err := AbandonChange(bg, stores(b), stores(a, c), SetOptions{}); err != nil || !got.Abandoned {
				t.Errorf("abandon: %+v, %v", got, err)
			}
			onSwap(b, atCommit)
		})
		if _, err := ChangeSet(bg, stores(b), stores(a, c), SetOptions{}); !errors.Is(err, frond.ErrPlaceChanged) {
			t.Fatalf("R, which read the old fences: %v", err)
		}
		if got, err := ChangeSet(bg, stores(b), stores(a, c), SetOptions{}); err != nil || !got.Resumed {
			t.Fatalf("the rerun after: %+v, %v", got, err)
		}
		if len(served) == 0 {
			t.Fatal("a served nothing while the change was undone")
		}
		e := newEngine(t, b, Settings{FixedStep: true, FailFast: -1})
		for range 300 {
			id, err := e.Next(bg, "t")
			if err != nil {
				t.Fatal(err)
			}
			if served[id] {
				t.Fatalf("ID %d served while the change was undone, and by b after it", id)
			}
		}
	})
}

// A store retired by a change is given only with the set that change made
// (or a later one): beside a set of the same generation made by another
// change (another lineage of stores), its own set's IDs would go unread (a
// review of issue 42).
func TestChangeSet_RetiredNeedsItsOwnSet(t *testing.T) {
	a, r, d, e := newLossy("a", nil), newLossy("r", nil), newLossy("d", nil), newLossy("e", nil)
	for _, s := range []*lossyStore{a, r, d, e} {
		mustCreate(t, s, "t", 1, 10)
	}
	for _, l := range [][2][]frond.SegmentStore{{stores(a, r), nil}, {stores(a), stores(r)}, {stores(d, e), nil}, {stores(d), stores(e)}} {
		if _, err := ChangeSet(bg, l[0], l[1], SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	noDuplicates(t, stores(a)) // a serves past r's max_id
	_, err := ChangeSet(bg, stores(r, d), nil, SetOptions{})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "no store of that set or a later one is given") {
		t.Fatalf("r beside another lineage's set: %v", err)
	}
	if _, err := ChangeSet(bg, stores(r, d, a), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	noDuplicates(t, stores(a, r, d), stores(r), stores(d, a))
}

// serveN takes n IDs of tag "t" from a node over s.
func serveN(t *testing.T, s frond.SegmentStore, n int) map[int64]bool {
	t.Helper()
	e := newEngine(t, s, Settings{FixedStep: true, FailFast: -1})
	defer e.Close()
	out := map[int64]bool{}
	for range n {
		id, err := e.Next(bg, "t")
		if err != nil {
			t.Fatalf("serve %v: %v", s, err)
		}
		out[id] = true
	}
	return out
}

// Leftovers of runs overtaken by abandons (a second review of issue 42).
func TestAbandonChange_Leftovers(t *testing.T) {
	// leftover: change m = {a} retiring c; its first run fences a, an
	// abandon puts a back, then the run fences c: c stays fenced by m, and
	// a later abandon or rerun must deal with that leftover.
	leftover := func(t *testing.T) (a, c *lossyStore) {
		a, c = newLossy("a", nil), newLossy("c", nil)
		mustCreate(t, a, "t", 1, 10)
		mustCreate(t, c, "t", 1000, 10)
		var aerr error
		onSwap(c, func() { _, aerr = AbandonChange(bg, stores(a), stores(c), SetOptions{}) })
		if _, err := ChangeSet(bg, stores(a), stores(c), SetOptions{}); !errors.Is(err, frond.ErrPlaceChanged) {
			t.Fatalf("first run: %v", err)
		}
		if aerr != nil {
			t.Fatalf("the abandon during the run: %v", aerr)
		}
		if p, _ := a.Place(bg); !p.Alone() {
			t.Fatalf("a is %s", p.Describe())
		}
		wantFenced(t, c)
		return a, c
	}
	t.Run("a rerun overtaken by an abandon commits nothing", func(t *testing.T) {
		a, c := leftover(t)
		// A rerun R reads a alone and c fenced; a second abandon then
		// fences a, puts c back (it serves) and puts a back; R fences a
		// (it reads as R read it) and must fail to claim c.
		onSwap(a, func() {
			if _, err := AbandonChange(bg, stores(a), stores(c), SetOptions{}); err != nil {
				t.Errorf("abandon 2: %v", err)
			}
		})
		if _, err := ChangeSet(bg, stores(a), stores(c), SetOptions{}); !errors.Is(err, frond.ErrPlaceChanged) {
			t.Fatalf("R: %v", err)
		}
		if p, _ := a.Place(bg); p.Moving() && p.Move.Raised {
			t.Fatalf("R committed: a is %s", p.Describe())
		}
		served := serveN(t, c, 100) // c alone (it was never placed), past the max_id R read
		// The change is finished (or abandoned) from here, and a never
		// hands out what c did.
		if got, err := ChangeSet(bg, stores(a), stores(c), SetOptions{}); err != nil || !got.Resumed {
			t.Fatalf("the rerun: %+v, %v", got, err)
		}
		for id := range serveN(t, a, 100) {
			if served[id] {
				t.Fatalf("ID %d handed out by c, then by a", id)
			}
		}
	})
	t.Run("crossed first stores", func(t *testing.T) {
		// m = {a b} fences a; an abandon puts a back; m2 = {b a} fences b;
		// an abandon of m2 puts b back; m2's run fences a and fails; m's
		// run fences b and fails: a is fenced by m2, b by m, each the
		// other's first store. Each abandon goes through.
		a, b := newLossy("a", nil), newLossy("b", nil)
		mustCreate(t, a, "t", 1, 10)
		mustCreate(t, b, "t", 1, 10)
		onSwap(b, func() {
			AbandonChange(bg, stores(a, b), nil, SetOptions{})
			onSwap(a, func() { AbandonChange(bg, stores(b, a), nil, SetOptions{}) })
			ChangeSet(bg, stores(b, a), nil, SetOptions{})
		})
		ChangeSet(bg, stores(a, b), nil, SetOptions{})
		pa, pb := wantFenced(t, a), wantFenced(t, b)
		if pa.Move.Change == pb.Move.Change {
			t.Fatalf("a and b fenced by one change: %s, %s", pa.Describe(), pb.Describe())
		}
		if _, err := AbandonChange(bg, stores(a, b), nil, SetOptions{}); err != nil {
			t.Fatalf("abandon {a b}: %v", err)
		}
		if _, err := AbandonChange(bg, stores(b, a), nil, SetOptions{}); err != nil {
			t.Fatalf("abandon {b a}: %v", err)
		}
		for _, s := range []*lossyStore{a, b} {
			if p, _ := s.Place(bg); !p.Alone() {
				t.Fatalf("%s is %s", s.name, p.Describe())
			}
		}
	})
}
