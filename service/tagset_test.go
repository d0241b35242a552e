package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

// Issue 57: a tag is one tag across its set of stores. These tests fail
// on the code before it (716bfda), each with the state that handed out
// numbers twice there; the segment model (segment.TestModel_SegmentSafety)
// runs the same operator actions at random beside nodes.

// setOf makes stores a set of stores (frond stores set) and returns a node
// listing every one of them.
func setOf(t *testing.T, stores ...frond.SegmentStore) *segment.Multi {
	t.Helper()
	if _, err := segment.ChangeSet(bg, stores, nil, segment.SetOptions{Margin: -1}); err != nil {
		t.Fatal(err)
	}
	return listingOf(t, stores...)
}

// setNode is a node on st that loads a segment again at once after a
// failed load (a prefetch that met a change of mapping's fence would
// otherwise fail requests for segment.Settings.FailFast).
func setNode(t *testing.T, st frond.SegmentStore) *Service {
	t.Helper()
	c := newClock()
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{PersistEvery: time.Hour},
		Segment: segment.Settings{FixedStep: true, FailFast: -1}}, st, &memRegistry{id: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s
}

func listingOf(t *testing.T, stores ...frond.SegmentStore) *segment.Multi {
	t.Helper()
	m, err := segment.NewMulti(stores...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// copiesOf reads the tag from every store.
func copiesOf(t *testing.T, name string, stores ...*memstore.Store) []frond.Tag {
	t.Helper()
	var out []frond.Tag
	for _, s := range stores {
		tg, err := s.Tag(bg, name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

func wantOneMapping(t *testing.T, name, mapping string, stores ...*memstore.Store) []frond.Tag {
	t.Helper()
	cs := copiesOf(t, name, stores...)
	for i, c := range cs {
		if frond.StoredMapping(c.Mapping) != frond.StoredMapping(mapping) {
			t.Fatalf("store %d holds %s as %s, want %s: %+v", i, name, c.MappingName(), frond.MappingName(mapping), cs)
		}
	}
	return cs
}

// Item 1: a node that lists one store of a set (docs/stores.md leaves such
// nodes running until they restart) changes nothing of a tag: the store
// refuses tag administration at any place but its own, as allocations.
func TestTagSet_NodeOnPartOfTheSet(t *testing.T) {
	a, b := memstore.New(nil), memstore.New(nil)
	full := setNode(t, setOf(t, a, b))
	if _, err := full.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	takeNums(t, full, Request{Kind: KindSegment, Name: "x"}, 50, seen, "the full node")
	plain := frond.MappingPlain
	for _, n := range []struct {
		name  string
		store frond.SegmentStore
	}{{"a node listing a alone", a}, {"a node listing a in a multi-store", listingOf(t, a)}} {
		node := setNode(t, n.store)
		_, err := node.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &plain})
		if !errors.Is(err, frond.ErrWrongPlace) {
			t.Fatalf("%s: a change of mapping answered %v, want a refusal of the place", n.name, err)
		}
		step := int64(5)
		if _, err := node.UpdateTag(bg, "x", frond.TagUpdate{Step: &step}); !errors.Is(err, frond.ErrWrongPlace) {
			t.Fatalf("%s: a step change answered %v", n.name, err)
		}
		if err := node.DeleteTag(bg, "x"); !errors.Is(err, frond.ErrWrongPlace) {
			t.Fatalf("%s: a delete answered %v", n.name, err)
		}
		if _, err := node.CreateTag(bg, frond.Tag{Name: "y", MaxID: 1, Step: 10}); !errors.Is(err, frond.ErrWrongPlace) {
			t.Fatalf("%s: a create answered %v", n.name, err)
		}
		wantOneMapping(t, "x", frond.MappingMist, a, b)
	}
	// Through the node that lists the whole set: every copy, at once.
	if _, err := full.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &plain}); err != nil {
		t.Fatal(err)
	}
	wantOneMapping(t, "x", frond.MappingPlain, a, b)
	takeNums(t, full, Request{Kind: KindSegment, Name: "x"}, 50, seen, "the full node after the change")
}

// Item 2: creating a tag again where a store lacks it never adds a copy of
// another mapping beside the others: the copies are compared first, and
// only the same tag completes the set.
func TestTagSet_CreateAgainComparesCopies(t *testing.T) {
	a, b := memstore.New(nil), memstore.New(nil)
	m := setOf(t, a, b)
	pa, _ := a.Place(bg)
	if _, err := a.CreateTagAt(bg, pa, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err) // as a create through a node listing a alone left it, or with b down
	}
	node := setNode(t, m)
	_, err := node.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100}) // plain by default
	if !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("create of a plain x beside a Mist copy: %v, want ErrTagExists", err)
	}
	if _, err := b.Tag(bg, "x"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("b got a copy of another mapping: %v", err)
	}
	seq := frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist, Mode: frond.ModeSequence}
	if _, err := node.CreateTag(bg, seq); !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("create of a sequence x beside a segment copy: %v", err)
	}
	if _, err := node.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
		t.Fatalf("the same tag completes the set: %v", err)
	}
	wantOneMapping(t, "x", frond.MappingMist, a, b)
	if _, err := node.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("created again with every copy there: %v", err)
	}
	// With a store down: nothing is created anywhere.
	c, d := memstore.New(nil), &downStore{Store: memstore.New(nil)}
	node2 := setNode(t, setOf(t, c, d))
	d.down.Store(true)
	if _, err := node2.CreateTag(bg, frond.Tag{Name: "z", MaxID: 1, Step: 100}); err == nil {
		t.Fatal("created with a store of the set down")
	}
	if _, err := c.Tag(bg, "z"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("a create refused for a store down left a copy: %v", err)
	}
}

// downStore is a memstore that can be down.
type downStore struct {
	*memstore.Store
	down atomic.Bool
}

var errDown = errors.New("down")

func (s *downStore) Place(ctx context.Context) (frond.Place, error) {
	if s.down.Load() {
		return frond.Place{}, errors.Join(frond.ErrStoreUnavailable, errDown)
	}
	return s.Store.Place(ctx)
}

func (s *downStore) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if s.down.Load() {
		return frond.Tag{}, errors.Join(frond.ErrStoreUnavailable, errDown)
	}
	return s.Store.Tag(ctx, name)
}

// Item 4: Mist to plain shifts once, from every copy at once: on two
// stores max_id goes to (top+h)<<16, not (top+h)<<32, and on three stores
// it is not refused; no number is handed out twice across the change.
func TestTagSet_MistToPlainShiftsOnce(t *testing.T) {
	for _, k := range []int{1, 2, 3, 4} {
		stores := make([]*memstore.Store, k)
		list := make([]frond.SegmentStore, k)
		for i := range stores {
			stores[i] = memstore.New(nil)
			list[i] = stores[i]
		}
		var st frond.SegmentStore = stores[0]
		if k > 1 {
			st = setOf(t, list...)
		}
		node := setNode(t, st)
		if _, err := node.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]string{}
		takeNums(t, node, Request{Kind: KindSegment, Name: "x"}, 300, seen, "before")
		top := int64(0)
		for _, c := range copiesOf(t, "x", stores...) {
			top = max(top, c.MaxID)
		}
		plain := frond.MappingPlain
		if _, err := node.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &plain}); err != nil {
			t.Fatalf("%d stores: %v", k, err)
		}
		// top as read before the change; a prefetch may have taken a
		// segment or two since.
		h := max(node.seg.Settings().MaxStep, 1<<16)
		for i, c := range wantOneMapping(t, "x", frond.MappingPlain, stores...) {
			if low, high := top<<frond.MistShift, (top+h+1000)<<frond.MistShift; c.MaxID < low || c.MaxID > high {
				t.Fatalf("%d stores: store %d raised to %d, want between top %d <<16 = %d and (top + headroom %d)<<16 = %d (and a few segments): one shift", k, i, c.MaxID, top, low, h, high)
			}
		}
		takeNums(t, node, Request{Kind: KindSegment, Name: "x"}, 300, seen, "after")
		// And back: plain to Mist, one floor.
		mist := frond.MappingMist
		if _, err := node.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &mist}); err != nil {
			t.Fatalf("%d stores, back to Mist: %v", k, err)
		}
		wantOneMapping(t, "x", frond.MappingMist, stores...)
		takeNums(t, node, Request{Kind: KindSegment, Name: "x"}, 300, seen, "back in Mist")
	}
}

// hookStore is a memstore that runs a function once, before its next tag
// creation (frond stores set creating the copy a new store lacks).
type hookStore struct {
	*memstore.Store
	before atomic.Pointer[func()]
}

func (s *hookStore) hook() {
	if f := s.before.Swap(nil); f != nil {
		(*f)()
	}
}

func (s *hookStore) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	s.hook()
	return s.Store.CreateTag(ctx, t)
}

func (s *hookStore) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	s.hook()
	return s.Store.CreateTagAt(ctx, at, t)
}

// Item 3: a change of mapping that lands while frond stores set runs (after
// it read the tags, before it created the new store's copy) is refused:
// tag administration is fenced like allocation, and stores set reads its
// template under the fence. The copies agree afterwards, and numbers
// taken through the new set are unique.
func TestTagSet_MappingChangeDuringStoresSet(t *testing.T) {
	a, b := memstore.New(nil), memstore.New(nil)
	c := &hookStore{Store: memstore.New(nil)}
	old := setNode(t, setOf(t, a, b))
	if _, err := old.CreateTag(bg, frond.Tag{Name: "x", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	takeNums(t, old, Request{Kind: KindSegment, Name: "x"}, 50, seen, "the old set")
	plain := frond.MappingPlain
	var changed error
	f := func() { _, changed = old.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &plain}) }
	c.before.Store(&f)
	if _, err := segment.ChangeSet(bg, []frond.SegmentStore{a, b, c}, nil, segment.SetOptions{Margin: -1}); err != nil {
		t.Fatal(err)
	}
	if c.before.Load() != nil {
		t.Fatal("stores set created no copy in c")
	}
	if changed == nil {
		t.Fatal("a change of mapping went through while stores set had fenced every store")
	}
	if !errors.Is(changed, frond.ErrWrongPlace) {
		t.Fatalf("the change of mapping during stores set: %v, want a refusal of the place", changed)
	}
	wantOneMapping(t, "x", frond.MappingMist, a, b, c.Store)
	node := setNode(t, listingOf(t, a, b, c))
	takeNums(t, node, Request{Kind: KindSegment, Name: "x"}, 50, seen, "the new set")
	// Once the set is changed, through a node listing it all: every copy.
	if _, err := node.UpdateTag(bg, "x", frond.TagUpdate{Mapping: &plain}); err != nil {
		t.Fatal(err)
	}
	wantOneMapping(t, "x", frond.MappingPlain, a, b, c.Store)
	takeNums(t, node, Request{Kind: KindSegment, Name: "x"}, 50, seen, "the new set in plain")
}
