package segment

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/memstore"
)

// Leaf #15: at a clean shutdown the unused IDs of the last segments go back
// to the store, so the next node starts where this one stopped; the
// prefetched next segment goes back whole with the rest of the current one.
func TestCloseReturning(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "a", 1, 100)
	mustCreate(t, s, "b", 1, 100)
	mustCreate(t, s, "c", 1, 100)
	e, err := New(s, Settings{FixedStep: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.Next(bg, "a") // 1..5 of [1, 101): no prefetch yet
	}
	for range 20 {
		e.Next(bg, "b") // 1..20: [101, 201) prefetched
	}
	bb, _ := e.Buffer("b")
	testenv.WaitFor(t, "prefetch", nextReady(bb))
	e.Next(bg, "c")
	// Another node takes a segment of c: c's tail is not this node's to
	// give back any more.
	if _, err := s.Allocate(bg, "c", 0); err != nil {
		t.Fatal(err)
	}
	got, err := e.CloseReturning(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags != 2 || got.IDs != 95+180 {
		t.Fatalf("returned %+v, want 2 tags and %d IDs", got, 95+180)
	}
	for tag, want := range map[string]int64{"a": 6, "b": 21, "c": 201} {
		if tg, _ := s.Tag(bg, tag); tg.MaxID != want {
			t.Errorf("max_id of %s: %d, want %d", tag, tg.MaxID, want)
		}
	}
	if _, err := e.Next(bg, "a"); err == nil {
		t.Fatal("an ID after CloseReturning")
	}
}

// While callers take IDs as fast as they can, CloseReturning seals the
// buffers: every ID a caller got is below the max_id given back, so the
// next node hands none of them out again.
func TestCloseReturning_UnderLoad(t *testing.T) {
	for round := range 20 {
		s := memstore.New(nil)
		mustCreate(t, s, "t", 1, 1000)
		e, err := New(s, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		var highest atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 4 {
			wg.Go(func() {
				<-start
				for {
					var id int64
					if w%2 == 0 {
						v, err := e.Next(bg, "t")
						if err != nil {
							return
						}
						id = v
					} else {
						rs, err := e.NextN(bg, "t", 7)
						if len(rs) == 0 {
							return
						}
						id = rs[len(rs)-1].Last()
						if err != nil {
							highest.Store(max(highest.Load(), id))
							return
						}
					}
					for {
						h := highest.Load()
						if id <= h || highest.CompareAndSwap(h, id) {
							break
						}
					}
				}
			})
		}
		close(start)
		for st := e.Stats(); len(st) == 0 || st[0].Loads < 2; st = e.Stats() {
			e.Next(bg, "t")
		}
		if _, err := e.CloseReturning(bg); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		tg, _ := s.Tag(bg, "t")
		if h := highest.Load(); h >= tg.MaxID {
			t.Fatalf("round %d: ID %d was handed out, but max_id went back to %d", round, h, tg.MaxID)
		}
	}
}

// A store that cannot take IDs back (here: a multi-store's residues, whose
// segments have a stride) keeps max_id as it is.
func TestCloseReturning_NotForResidues(t *testing.T) {
	a, b := memstore.New(nil), memstore.New(nil)
	mustCreate(t, a, "t", 0, 100)
	mustCreate(t, b, "t", 0, 100)
	m, _ := NewMulti(a, b)
	e, err := New(m, Settings{FixedStep: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Next(bg, "t")
	if got, err := e.CloseReturning(bg); err != nil || got.Tags != 0 {
		t.Fatalf("returned %+v, %v", got, err)
	}
	var _ frond.SegmentStore = m
}

// Forget drops a buffer that is still loading its first segment too (it
// used to stay, and be promoted when its load came back).
func TestForget_Pending(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 1, 100)
	e := newEngine(t, s, Settings{})
	if _, err := e.Buffer("t"); err != nil { // pending, no load yet
		t.Fatal(err)
	}
	e.Forget("t")
	e.mu.Lock()
	n := len(e.pending)
	e.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d pending buffers after Forget", n)
	}
}

// The seal itself: a caller that loaded the current segment before the
// seal and takes from it afterwards finds it used up, so nothing it could
// get lies in the tail given back.
func TestSeal_LateCaller(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "t", 1, 100)
	e := newEngine(t, s, Settings{FixedStep: true})
	if id, err := e.Next(bg, "t"); err != nil || id != 1 {
		t.Fatalf("first ID: %d, %v", id, err)
	}
	b, _ := e.Buffer("t")
	cur := b.cur.Load() // what a caller inside Next holds
	from, to, _, ok := b.seal()
	if !ok || from != 2 || to != 101 {
		t.Fatalf("tail [%d, %d), %v; want [2, 101)", from, to, ok)
	}
	if v := cur.pos.Add(cur.stride) - cur.stride; uint64(v-cur.start) < uint64(cur.end-cur.start) {
		t.Fatalf("a caller that held the segment got %d after the seal", v)
	}
}

// A tag whose last segment ends at the top of the ID space: callers that
// keep asking after it is used up move pos past 2^63-1, where it wraps
// negative. The seal must still read the segment as used up and give
// nothing back (it read the wrapped pos as "nothing handed out" and gave
// the whole segment back, to be issued again after a restart).
func TestCloseReturning_TopOfIDSpace(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "top", math.MaxInt64-10, 10)
	e, err := New(s, Settings{FixedStep: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := e.Next(bg, "top"); err != nil {
			t.Fatalf("ID %d: %v", i, err)
		}
	}
	for range 3 { // past the end: the store has nothing more
		if _, err := e.Next(bg, "top"); !errors.Is(err, frond.ErrTagExhausted) {
			t.Fatalf("after the top: %v, want ErrTagExhausted", err)
		}
	}
	got, err := e.CloseReturning(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags != 0 || got.IDs != 0 {
		t.Fatalf("gave back %+v after handing out the whole last segment", got)
	}
	if tg, _ := s.Tag(bg, "top"); tg.MaxID != math.MaxInt64 {
		t.Fatalf("max_id %d, want %d", tg.MaxID, int64(math.MaxInt64))
	}
}

// The seal reads a partly used segment near the top right too.
func TestCloseReturning_NearTop(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "top", math.MaxInt64-10, 10)
	e := newEngine(t, s, Settings{FixedStep: true})
	for range 4 {
		if _, err := e.Next(bg, "top"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.CloseReturning(bg)
	if err != nil || got.IDs != 6 {
		t.Fatalf("gave back %+v, %v; want the 6 unused IDs", got, err)
	}
	if tg, _ := s.Tag(bg, "top"); tg.MaxID != math.MaxInt64-6 {
		t.Fatalf("max_id %d, want %d", tg.MaxID, int64(math.MaxInt64-6))
	}
}

// A clean stop never gives a plain tail back across a change of mapping
// from plain to Mist (issue 67): the change lowers max_id to about
// (top+headroom)>>16, the Mist counter climbs back to the end of the
// plain segment this node still holds, and a compare-and-set on max_id
// alone set it back to the segment's start: the Mist counters handed out
// since were handed out again.
func TestCloseReturning_NotAcrossMappingChange(t *testing.T) {
	s := memstore.New(nil)
	const start, end = 1 << 20, 1<<20 + 1000
	mustCreate(t, s, "m", start, 1000)
	e := newEngine(t, s, Settings{FixedStep: true})
	if id, err := e.Next(bg, "m"); err != nil || id != start {
		t.Fatalf("first ID: %d, %v", id, err)
	}
	// Another node changes the mapping: max_id goes down from end to the
	// headroom.
	mist := frond.MappingMist
	changed, err := ChangeMapping(bg, s, "m", frond.TagUpdate{Mapping: &mist}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if changed.MaxID >= end {
		t.Fatalf("the change did not lower max_id: %d", changed.MaxID)
	}
	// The Mist counter climbs to end, the end of the plain segment held
	// here: counters [changed.MaxID, end) are handed out by other nodes.
	a, err := s.Allocate(bg, "m", end-changed.MaxID)
	if err != nil || a.End != end || a.Mapping != frond.MappingMist {
		t.Fatalf("Mist counters up to %d: %+v, %v", end, a, err)
	}
	got, err := e.CloseReturning(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tags != 0 {
		t.Fatalf("gave back %+v across the change of mapping", got)
	}
	if tg, _ := s.Tag(bg, "m"); tg.MaxID != end {
		t.Fatalf("max_id %d after the stop, want %d: the Mist counters from %d would be handed out again", tg.MaxID, end, tg.MaxID)
	}
}
