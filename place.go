package frond

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Place is where a store stands in a set of stores that share one ID space
// (segment.Multi, seed 000's "several instances with offset and step"): the
// store hands out only the IDs congruent to Residue modulo Of. The place is
// recorded in the store itself, written by the command that changes the set
// (frond stores set), and every allocation checks it in the same atomic
// operation that raises max_id (PlacedStore.AllocateAt): a node whose view
// of the set is another (another residue, another number of stores, an
// older set) gets nothing from the store.
//
// The zero Place is a store that stands alone: it hands out every ID.
type Place struct {
	Residue int64 // the store's IDs are those ≡ Residue (mod Of)
	Of      int64 // how many stores the set holds (1: the set's only store); 0 when the store stands alone, never placed (or is retired)
	Gen     int64 // the set's generation, raised by every change of the set
	// Next is the generation a change of the set under way will give the
	// store, 0 when none is: while it is set the store hands out no ID to
	// anyone (a fence), since no node asks at a place with Next set.
	Next int64
}

// Alone reports whether p is the place of a store that stands alone: the
// zero Place.
func (p Place) Alone() bool { return p == Place{} }

// Retired reports whether p is the place of a store a change of the set
// retired (Of 0 at a generation above 0): no node asks at it, so the store
// hands out nothing until a change places it again.
func (p Place) Retired() bool { return p.Of == 0 && p.Gen > 0 }

// Moving reports whether a change of the set is under way at p.
func (p Place) Moving() bool { return p.Next != 0 }

// Settled is p with no change under way: the place a node asks at.
func (p Place) Settled() Place { p.Next = 0; return p }

// String encodes p as it is stored: "" for a store alone, "r/K@g" for a
// member of a set, with ">n" appended while a change to generation n is
// under way ("0/0@0>n" for a store alone being moved into a set).
func (p Place) String() string {
	if p == (Place{}) {
		return ""
	}
	s := fmt.Sprintf("%d/%d@%d", p.Residue, p.Of, p.Gen)
	if p.Next != 0 {
		s += ">" + strconv.FormatInt(p.Next, 10)
	}
	return s
}

// Describe is p for people: "alone", "residue 1 of 3 (generation 4)",
// with what a change under way will do.
func (p Place) Describe() string {
	s := "alone"
	switch {
	case p.Retired():
		s = fmt.Sprintf("retired by the change to generation %d", p.Gen)
	case p.Of == 1:
		s = fmt.Sprintf("the only store of the set (generation %d)", p.Gen)
	case p.Of > 0:
		s = fmt.Sprintf("residue %d of %d (generation %d)", p.Residue, p.Of, p.Gen)
	}
	if p.Next != 0 {
		s += fmt.Sprintf(", fenced: a change of the set to generation %d is under way", p.Next)
	}
	return s
}

// Validate checks that p is a place: 0 <= Residue < Of, or a store alone
// (Of 0, Residue 0); Gen >= 0, and at least 1 in a set; Next 0 or above
// Gen.
func (p Place) Validate() error {
	switch {
	case p.Of == 0 && p.Residue != 0, p.Of < 0, p.Of > 0 && (p.Residue < 0 || p.Residue >= p.Of || p.Gen < 1):
		return fmt.Errorf("%w: place %q: residue %d of %d stores", ErrInvalidArgument, p.String(), p.Residue, p.Of)
	case p.Gen < 0, p.Next != 0 && p.Next <= p.Gen:
		return fmt.Errorf("%w: place %q: generation %d, next %d", ErrInvalidArgument, p.String(), p.Gen, p.Next)
	}
	return nil
}

// ParsePlace decodes what Place.String wrote.
func ParsePlace(s string) (Place, error) {
	if s == "" {
		return Place{}, nil
	}
	bad := fmt.Errorf("%w: place %q: want r/K@g or r/K@g>n", ErrInvalidArgument, s)
	rest, next, moving := strings.Cut(s, ">")
	rk, g, ok := strings.Cut(rest, "@")
	r, k, ok2 := strings.Cut(rk, "/")
	if !ok || !ok2 {
		return Place{}, bad
	}
	var p Place
	var errs [4]error
	p.Residue, errs[0] = strconv.ParseInt(r, 10, 64)
	p.Of, errs[1] = strconv.ParseInt(k, 10, 64)
	p.Gen, errs[2] = strconv.ParseInt(g, 10, 64)
	if moving {
		p.Next, errs[3] = strconv.ParseInt(next, 10, 64)
		if errs[3] == nil && p.Next == 0 {
			errs[3] = bad
		}
	}
	if errors.Join(errs[:]...) != nil {
		return Place{}, bad
	}
	if err := p.Validate(); err != nil {
		return Place{}, err
	}
	if p.String() != s { // one spelling per place: "+1", "01" are not it
		return Place{}, bad
	}
	return p, nil
}

// ErrWrongPlace means a store refused an allocation because its recorded
// place is not the one the node asked at (PlacedStore.AllocateAt): the set
// of stores changed, or the node lists the store in a set it is not part
// of, or the store is fenced by a change under way. It wraps
// ErrStoreUnavailable: the node's other stores carry on.
var ErrWrongPlace = fmt.Errorf("%w: the store is not at the place this node asked at", ErrStoreUnavailable)

// ErrPlaceChanged means a compare-and-set of a store's place found another
// place (PlacedStore.SwapPlace): another change of the set ran at once.
var ErrPlaceChanged = errors.New("the store's place changed meanwhile")

// WrongPlace is the error of an allocation refused at place want by a store
// whose place is got.
func WrongPlace(got, want Place) error {
	return fmt.Errorf("%w: the store is %s, this node asked as %s: "+
		"every node reads the set from the stores (docs/stores.md); a change of the set fences the stores until it is done",
		ErrWrongPlace, got.Describe(), want.Describe())
}

// PlacedStore is a store that records its place in a set of stores and
// checks it on every allocation. Every store of frond's is one; a
// segment.Multi uses only stores that are.
//
// The check and the raise of max_id are one atomic operation, and a
// SwapPlace waits for allocations in flight (or they for it): an
// allocation either ends before the swap, and a reader of max_id after the
// swap sees it, or it sees the new place and is refused. This is what
// makes a change of the set safe (frond stores set): fence every store,
// then read every max_id, raise them, and write the new places.
//
// Allocate, and AllocateIDs where the store has it, are AllocateAt and
// AllocateIDsAt at the zero Place: a store that is part of a set refuses
// them.
type PlacedStore interface {
	SegmentStore
	// Place reads the store's place (the zero Place when none is recorded).
	Place(ctx context.Context) (Place, error)
	// SwapPlace sets the store's place to p if it is old now, else returns
	// an error wrapping ErrPlaceChanged.
	SwapPlace(ctx context.Context, old, p Place) error
	// AllocateAt is Allocate, done only if the store's place is at (with
	// no change under way), checked in the same atomic operation; else an
	// error wrapping ErrWrongPlace and nothing is taken. At the zero Place
	// (a store alone) it is also done by the only store of a set (Of 1):
	// CheckPlace is the rule.
	AllocateAt(ctx context.Context, at Place, tag string, step int64) (Allocation, error)
	// AllocateIDsAt is SequenceStore.AllocateIDs at a place, as AllocateAt.
	AllocateIDsAt(ctx context.Context, at Place, tag string, n int64) ([]Range, error)
}

// CheckPlace is AllocateAt's check, for a store whose place reads got
// (Place.String): nil if it is at, else why not.
func CheckPlace(got string, at Place) error {
	if at.Next != 0 {
		return fmt.Errorf("%w: an allocation at place %q, during a change of the set", ErrInvalidArgument, at.String())
	}
	if got == at.String() {
		return nil
	}
	p, err := ParsePlace(got)
	if err != nil {
		return fmt.Errorf("%w: the store's place reads %q: %v", ErrWrongPlace, got, err)
	}
	if at.Alone() && p.Of == 1 && !p.Moving() {
		return nil // the only store of its set: every ID is its, as for a store alone
	}
	return WrongPlace(p, at)
}

// AllocateAt is s.AllocateAt where s is a PlacedStore. A store that keeps
// no place stands alone: at the zero Place it is s.Allocate, at any other
// it refuses with ErrWrongPlace. Wrappers of stores forward through it.
func AllocateAt(ctx context.Context, s SegmentStore, at Place, tag string, step int64) (Allocation, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.AllocateAt(ctx, at, tag, step)
	}
	if err := CheckPlace("", at); err != nil {
		return Allocation{}, err
	}
	return s.Allocate(ctx, tag, step)
}

// SequenceIDsAt is SequenceIDs at a place, as AllocateAt.
func SequenceIDsAt(ctx context.Context, s SegmentStore, at Place, tag string, n int64) ([]Range, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.AllocateIDsAt(ctx, at, tag, n)
	}
	if err := CheckPlace("", at); err != nil {
		return nil, err
	}
	return SequenceIDs(ctx, s, tag, n)
}

// PlaceOf reads the place of s: the zero Place (alone) when s keeps none.
func PlaceOf(ctx context.Context, s SegmentStore) (Place, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.Place(ctx)
	}
	return Place{}, nil
}
