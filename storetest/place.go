package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
)

// RunPlacedStore checks a frond.PlacedStore: its place, the compare-and-set
// that changes it, and the fence: an allocation at any other place takes
// nothing, and none that was answered ends above the max_id read after a
// SwapPlace. The place is the whole store's, so fresh returns, for each
// test, an Opener of a backend of the test's own (a fresh database, key
// prefix or memstore) where nothing else runs: a test that places a shared
// database makes every other user of it refuse to allocate, as a node
// must.
func RunPlacedStore(t *testing.T, fresh func(t *testing.T) Opener) {
	t.Run("Place_CompareAndSet", func(t *testing.T) { testPlaceSwap(t, fresh(t)) })
	t.Run("Place_Identity", func(t *testing.T) { testPlaceIdentity(t, fresh(t)) })
	t.Run("Place_Fence", func(t *testing.T) { testPlaceFence(t, fresh(t)) })
	t.Run("Place_FenceUnderLoad", func(t *testing.T) { testPlaceFenceUnderLoad(t, fresh(t), false) })
	t.Run("Place_FenceUnderLoad_Sequence", func(t *testing.T) { testPlaceFenceUnderLoad(t, fresh(t), true) })
	t.Run("Place_TagAdministration", func(t *testing.T) { testPlaceTagAdmin(t, fresh(t)) })
	t.Run("Place_LostData", func(t *testing.T) { testPlaceLost(t, fresh(t), frond.Place{}) })
	t.Run("Place_LostData_OnlyStoreOfSet", func(t *testing.T) { testPlaceLost(t, fresh(t), frond.Place{Of: 1, Gen: 2, Change: "abcdefgh"}) })
}

// Tag administration is fenced like allocation (issue 57): a create, an
// update or a delete at any place but the store's refuses and changes
// nothing; at a fence, only the change that fenced the store (any run of
// it) changes its tags.
func testPlaceTagAdmin(t *testing.T, o Opener) {
	s, c := placed(t, o), testenv.Ctx(t)
	tag, other := uniqueTag(t)+"-a", uniqueTag(t)+"-b"
	must(s.CreateTag(c, frond.Tag{Name: tag, MaxID: 1, Step: 10}))(t)
	at := frond.Place{Residue: 1, Of: 2, Gen: 3, Change: "abcdefgh"}
	if err := s.SwapPlace(c, frond.Place{}, at); err != nil {
		t.Fatal(err)
	}
	step := int64(20)
	wrong := []frond.Place{{}, {Residue: 0, Of: 2, Gen: 3, Change: "abcdefgh"}, {Residue: 1, Of: 2, Gen: 3, Change: "bcdefghi"}, {Residue: 1, Of: 2, Gen: 2, Change: "abcdefgh"}}
	for _, p := range wrong {
		_, err := s.CreateTagAt(c, p, frond.Tag{Name: other, MaxID: 1, Step: 10, Mapping: frond.MappingMist})
		wantWrongPlace(t, "a create at "+p.Describe(), err)
		_, err = s.UpdateTagAt(c, p, tag, frond.TagUpdate{Step: &step})
		wantWrongPlace(t, "an update at "+p.Describe(), err)
		wantWrongPlace(t, "a delete at "+p.Describe(), s.DeleteTagAt(c, p, tag))
	}
	_, err := s.CreateTag(c, frond.Tag{Name: other, MaxID: 1, Step: 10})
	wantWrongPlace(t, "CreateTag of a store in a set", err)
	_, err = s.UpdateTag(c, tag, frond.TagUpdate{Step: &step})
	wantWrongPlace(t, "UpdateTag of a store in a set", err)
	wantWrongPlace(t, "DeleteTag of a store in a set", s.DeleteTag(c, tag))
	if got := must(s.Tag(c, tag))(t); got.Step != 10 {
		t.Fatalf("refused updates changed the tag: %+v", got)
	}
	if _, err := s.Tag(c, other); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a refused create made the tag: %v", err)
	}
	// At its place: done.
	if got := must(s.UpdateTagAt(c, at, tag, frond.TagUpdate{Step: &step}))(t); got.Step != 20 {
		t.Fatalf("update at its place: %+v", got)
	}
	must(s.CreateTagAt(c, at, frond.Tag{Name: other, MaxID: 1, Step: 10}))(t)
	// Fenced by a change: its place before is refused, the fence itself
	// (written by any run of the change, marked or not) is served.
	fence := at
	fence.Next, fence.Move = 4, frond.Move{Change: "cdefghij", Run: "defghijk", Set: "aaaaaaaa,bbbbbbbb"}
	if err := s.SwapPlace(c, at, fence); err != nil {
		t.Fatal(err)
	}
	_, err = s.UpdateTagAt(c, at, tag, frond.TagUpdate{Step: &step})
	wantWrongPlace(t, "an update at the place before a fence", err)
	rerun := fence
	rerun.Move.Run, rerun.Move.Raised = "efghijkl", true
	if err := s.SwapPlace(c, fence, rerun); err != nil {
		t.Fatal(err)
	}
	raise := int64(500)
	if got := must(s.UpdateTagAt(c, fence, tag, frond.TagUpdate{MaxID: &raise}))(t); got.MaxID != 500 {
		t.Fatalf("raise under the change's fence: %+v", got)
	}
	another := fence
	another.Move.Change = "ghijklmn"
	_, err = s.UpdateTagAt(c, another, tag, frond.TagUpdate{MaxID: &raise})
	wantWrongPlace(t, "an update at another change's fence", err)
	if err := s.DeleteTagAt(c, fence, other); err != nil {
		t.Fatal(err)
	}
}

func placed(t *testing.T, o Opener) frond.PlacedStore {
	t.Helper()
	s, ok := open(t, o).(frond.PlacedStore)
	if !ok {
		t.Fatalf("%T is not a frond.PlacedStore", s)
	}
	return s
}

func testPlaceSwap(t *testing.T, o Opener) {
	s, c := placed(t, o), testenv.Ctx(t)
	if p := must(s.Place(c))(t); p != (frond.Place{}) {
		t.Fatalf("a fresh store is at %s, want alone", p.Describe())
	}
	p1 := frond.Place{Residue: 1, Of: 3, Gen: 1}
	if err := s.SwapPlace(c, frond.Place{}, p1); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a swap from a place the store is not at", s.SwapPlace(c, frond.Place{}, frond.Place{Of: 2, Gen: 1}), frond.ErrPlaceChanged)
	wantErr(t, "a swap to no place", s.SwapPlace(c, p1, frond.Place{Of: 1}), frond.ErrInvalidArgument)
	if p := must(placed(t, o).Place(c))(t); p != p1 {
		t.Fatalf("another client reads %s, want %s", p.Describe(), p1.Describe())
	}
	moving := frond.Place{Residue: 1, Of: 3, Gen: 1, Next: 2, Move: frond.Move{Change: "abcdefgh", Run: "bcdefghi", Set: "aaaaaaaa,bbbbbbbb,cccccccc", Retire: "dddddddd"}}
	if err := s.SwapPlace(c, p1, moving); err != nil {
		t.Fatal(err)
	}
	if p := must(s.Place(c))(t); p != moving {
		t.Fatalf("read %s, want %s", p.Describe(), moving.Describe())
	}
	// The longest place a change writes (frond.MaxSetStores identities,
	// the largest numbers) is kept whole.
	var ids []string
	for range frond.MaxSetStores {
		ids = append(ids, frond.NewIdentity())
	}
	longest := frond.Place{Residue: 14, Of: 15, Gen: 1<<63 - 2, Change: frond.NewIdentity(), Next: 1<<63 - 1,
		Move: frond.Move{Change: frond.NewIdentity(), Run: frond.NewIdentity(), Set: strings.Join(ids[:15], ","), Retire: ids[15], Raised: true}}
	if err := s.SwapPlace(c, moving, longest); err != nil {
		t.Fatal(err)
	}
	if p := must(placed(t, o).Place(c))(t); p != longest {
		t.Fatalf("read %q, want %q", p, longest)
	}
	if err := s.SwapPlace(c, longest, frond.Place{}); err != nil {
		t.Fatal(err)
	}
	if p := must(s.Place(c))(t); p != (frond.Place{}) {
		t.Fatalf("read %s after going back alone", p.Describe())
	}
}

// A store's identity is made once and read the same by every client, also
// when many ask for it first at once.
func testPlaceIdentity(t *testing.T, o Opener) {
	c := testenv.Ctx(t)
	clients := []frond.PlacedStore{placed(t, o), placed(t, o), placed(t, o), placed(t, o)}
	got := make([]string, 4*len(clients))
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = clients[i%len(clients)].Identity(c) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !frond.ValidIdentity(got[i]) || got[i] != got[0] {
			t.Fatalf("identities %q", got)
		}
	}
	if again := must(placed(t, o).Identity(c))(t); again != got[0] {
		t.Fatalf("read %q, then %q", got[0], again)
	}
}

// wantWrongPlace checks that err is a refusal of the place, which a
// multi-store treats as that store being unavailable.
// A store fenced for lost data (frond.Place.Lost, written by the node that
// found it) refuses every allocation, at any place and of either mode, and
// every tag administration but the re-arm's at the fence itself, until
// its place is given back without the fence (issue 67).
func testPlaceLost(t *testing.T, o Opener, p frond.Place) {
	s, c := placed(t, o), testenv.Ctx(t)
	seg, seq := uniqueTag(t)+"-seg", uniqueTag(t)+"-seq"
	must(s.CreateTag(c, frond.Tag{Name: seg, MaxID: 1, Step: 10}))(t)
	must(s.CreateTag(c, frond.Tag{Name: seq, MaxID: 1, Step: 10, Mode: frond.ModeSequence}))(t)
	if err := s.SwapPlace(c, frond.Place{}, p); err != nil && p != (frond.Place{}) {
		t.Fatal(err)
	}
	lost := p
	lost.Lost = frond.LostFinding(1764400000, seg)
	if err := s.SwapPlace(c, p, lost); err != nil {
		t.Fatal(err)
	}
	if got := must(s.Place(c))(t); got != lost {
		t.Fatalf("place %q, want %q", got, lost)
	}
	wantLost := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, frond.ErrStoreLostData) || !errors.Is(err, frond.ErrStoreUnavailable) {
			t.Fatalf("%s: %v, want ErrStoreLostData", what, err)
		}
	}
	for _, at := range []frond.Place{{}, p, lost} {
		_, err := s.AllocateAt(c, at, seg, 0)
		wantLost("a segment at "+at.String(), err)
		_, err = s.AllocateIDsAt(c, at, seq, 1)
		wantLost("sequence IDs at "+at.String(), err)
	}
	_, err := s.Allocate(c, seg, 0)
	wantLost("Allocate", err)
	_, err = s.CreateTag(c, frond.Tag{Name: seg + "-new", MaxID: 1, Step: 10})
	wantLost("a create", err)
	if tr, ok := s.(frond.TailReturner); ok {
		if done, err := tr.ReturnTail(c, seg, 1, 11, ""); done || err != nil {
			t.Fatalf("ReturnTail of a fenced store: %v, %v", done, err)
		}
	}
	if got := must(s.Tag(c, seg))(t); got.MaxID != 1 {
		t.Fatalf("refused allocations moved max_id to %d", got.MaxID)
	}
	// The re-arm: tags raised at the fence, then the fence taken off.
	above := int64(5000)
	if got := must(s.UpdateTagAt(c, lost, seg, frond.TagUpdate{MaxID: &above}))(t); got.MaxID != above {
		t.Fatalf("raise at the fence: %+v", got)
	}
	if err := s.SwapPlace(c, lost, lost.Rearmed()); err != nil {
		t.Fatal(err)
	}
	if a := must(s.AllocateAt(c, frond.Place{}, seg, 0))(t); a.Start != above {
		t.Fatalf("re-armed: %+v, want from %d", a, above)
	}
}

func wantWrongPlace(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, frond.ErrWrongPlace) || !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("%s: %v, want ErrWrongPlace (an ErrStoreUnavailable)", what, err)
	}
}

func testPlaceFence(t *testing.T, o Opener) {
	s, c := placed(t, o), testenv.Ctx(t)
	seg, seq := uniqueTag(t)+"-seg", uniqueTag(t)+"-seq"
	must(s.CreateTag(c, frond.Tag{Name: seg, MaxID: 1, Step: 10}))(t)
	must(s.CreateTag(c, frond.Tag{Name: seq, MaxID: 1, Step: 10, Mode: frond.ModeSequence}))(t)
	a := must(s.Allocate(c, seg, 0))(t)
	if a.Start != 1 || a.End != 11 {
		t.Fatalf("alone: %+v", a)
	}
	at := frond.Place{Residue: 0, Of: 2, Gen: 1}
	wantWrongPlace(t, "a store alone asked as a member of a set", func() error { _, err := s.AllocateAt(c, at, seg, 0); return err }())
	if err := s.SwapPlace(c, frond.Place{}, at); err != nil {
		t.Fatal(err)
	}
	// Alone, at another residue, of another set size, of an older or a
	// newer set: refused, and nothing is taken.
	for _, p := range []frond.Place{{}, {Residue: 1, Of: 2, Gen: 1}, {Residue: 0, Of: 3, Gen: 1}, {Residue: 0, Of: 2, Gen: 0}, {Residue: 0, Of: 2, Gen: 2}} {
		_, err := s.AllocateAt(c, p, seg, 0)
		wantWrongPlace(t, "a segment at "+p.Describe(), err)
		_, err = s.AllocateIDsAt(c, p, seq, 2)
		wantWrongPlace(t, "sequence IDs at "+p.Describe(), err)
	}
	_, err := s.Allocate(c, seg, 0)
	wantWrongPlace(t, "Allocate of a store in a set", err)
	if ss, ok := s.(frond.SequenceStore); ok {
		_, err = ss.AllocateIDs(c, seq, 1)
		wantWrongPlace(t, "AllocateIDs of a store in a set", err)
	}
	if tr, ok := s.(frond.TailReturner); ok {
		if done, err := tr.ReturnTail(c, seg, 5, 11, ""); done || err != nil {
			t.Fatalf("ReturnTail of a store in a set: %v, %v; want nothing given back", done, err)
		}
	}
	if got := must(s.Tag(c, seg))(t); got.MaxID != 11 {
		t.Fatalf("refused allocations moved max_id to %d", got.MaxID)
	}
	// At its place: served.
	if a := must(s.AllocateAt(c, at, seg, 0))(t); a.Start != 11 || a.End != 21 {
		t.Fatalf("at its place: %+v", a)
	}
	if rs := must(s.AllocateIDsAt(c, at, seq, 2))(t); len(rs) != 1 || rs[0].Len() != 2 || rs[0].Start < 1 {
		t.Fatalf("sequence IDs at its place: %+v", rs)
	}
	// The mode is checked with the place: a segment of a sequence tag is
	// refused by every store, and sequence IDs of a segment tag.
	_, err = s.AllocateAt(c, at, seq, 0)
	wantErr(t, "a segment of a sequence tag", err, frond.ErrNotLeasable)
	_, err = s.AllocateIDsAt(c, at, seg, 1)
	wantErr(t, "sequence IDs of a segment tag", err, frond.ErrNotSequence)
	// While a change is under way: nothing, to anyone.
	moving := at
	moving.Next, moving.Move = 2, frond.Move{Change: "abcdefgh", Run: "bcdefghi", Set: "aaaaaaaa,bbbbbbbb"}
	if err := s.SwapPlace(c, at, moving); err != nil {
		t.Fatal(err)
	}
	for _, p := range []frond.Place{{}, at, {Residue: 0, Of: 2, Gen: 2}} {
		_, err := s.AllocateAt(c, p, seg, 0)
		wantWrongPlace(t, "during a change, at "+p.Describe(), err)
	}
	_, err = s.AllocateAt(c, moving, seg, 0)
	wantErr(t, "an allocation at a place being changed", err, frond.ErrInvalidArgument)
	if err := s.SwapPlace(c, moving, frond.Place{}); err != nil {
		t.Fatal(err)
	}
	if a := must(s.Allocate(c, seg, 0))(t); a.Start != 21 {
		t.Fatalf("alone again: %+v", a)
	}
}

// Clients allocate at the store's place as fast as they can while the
// place is swapped: every allocation answered ends at or below the max_id
// read after the swap returned, so a change of the set that reads max_id
// after fencing the stores sees every ID handed out at the old place.
//
// With sequence set, the same for a sequence tag's store calls (a
// database's own sequence object where it has one).
func testPlaceFenceUnderLoad(t *testing.T, o Opener, sequence bool) {
	s, c := placed(t, o), testenv.Ctx(t)
	tag := uniqueTag(t)
	mode := ""
	if sequence {
		mode = frond.ModeSequence
	}
	must(s.CreateTag(c, frond.Tag{Name: tag, MaxID: 1, Step: 10, Mode: mode}))(t)
	at := frond.Place{Residue: 1, Of: 2, Gen: 1}
	if err := s.SwapPlace(c, frond.Place{}, at); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var highest int64
	var served int
	var wg sync.WaitGroup
	// The clients end before the test does, however it ends: a client's
	// t.Error after the test had failed (the store's context then
	// cancelled) panicked the whole binary and hid the first failure.
	stop := make(chan struct{})
	defer func() {
		close(stop)
		wg.Wait()
	}()
	// Every client opened before any runs: opening one (it writes the
	// store's record) behind 7 clients allocating flat out on SQLite timed
	// out on a busy machine (issue 44, item 3).
	var clients []frond.PlacedStore
	for range 8 { // issue 42: a change of the set under the load of 8 callers finishes in bounded time
		clients = append(clients, placed(t, o))
	}
	for _, cl := range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var a frond.Range
				var err error
				if sequence {
					var rs []frond.Range
					if rs, err = cl.AllocateIDsAt(c, at, tag, 10); err == nil {
						a = rs[len(rs)-1]
					}
				} else {
					var al frond.Allocation
					al, err = cl.AllocateAt(c, at, tag, 10)
					a = al.Range
				}
				if errors.Is(err, frond.ErrWrongPlace) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				highest = max(highest, a.End)
				served++
				mu.Unlock()
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // let the clients run
		mu.Lock()
		n := served
		mu.Unlock()
		if n >= 50 || time.Now().After(deadline) {
			break
		}
	}
	moving := at
	moving.Next, moving.Move = 2, frond.Move{Change: "abcdefgh", Run: "bcdefghi", Set: "aaaaaaaa,bbbbbbbb"}
	began := time.Now()
	err := s.SwapPlace(c, at, moving)
	took := time.Since(began)
	if err != nil {
		wg.Wait() // the clients stop at the fence, or at their first error
		t.Fatal(err)
	}
	read := must(s.Tag(c, tag))(t).MaxID
	wg.Wait()
	if highest > read {
		t.Fatalf("an allocation answered up to %d, above the max_id %d read after the swap", highest, read)
	}
	if served == 0 {
		t.Fatal("no allocation was served before the swap")
	}
	t.Logf("%d allocations before the swap, which took %v under the load of 8 callers; max_id %d read after it", served, took, read)
}
