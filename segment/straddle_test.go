package segment

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/frond-id/frond"
)

// placeHooked runs beforePlace once, before the next Place read.
type placeHooked struct {
	*lossyStore
	beforePlace atomic.Pointer[func()]
}

func (s *placeHooked) Place(ctx context.Context) (frond.Place, error) {
	if f := s.beforePlace.Swap(nil); f != nil {
		(*f)()
	}
	return s.lossyStore.Place(ctx)
}

// An abandon whose survey reads the first store before a run fences it and
// the other store after (a third review of issue 42): it skips the mark,
// puts the other back, and the run then commits on the first store and
// fails to mark the other. A rerun (or an abandon, which finishes a
// committed change) fences the store put back again, raises every store
// again and finishes the change.
func TestAbandonChange_StraddlesAFreshRun(t *testing.T) {
	a, b0 := newLossy("a", nil), newLossy("b", nil)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b0, "t", 1, 10)
	b := &placeHooked{lossyStore: b0}
	if _, err := ChangeSet(bg, stores(a, b0), nil, SetOptions{}); err != nil { // a 0/2@1, b 1/2@1
		t.Fatal(err)
	}
	readA, proceed, abDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	hook := func() { close(readA); <-proceed }
	b.beforePlace.Store(&hook) // the abandon's survey: a read, b not yet
	var abErr error
	var abGot SetChange
	go func() {
		defer close(abDone)
		abGot, abErr = AbandonChange(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
	}()
	<-readA
	// R1 fences a then b; before its commit (the next swap of a) the
	// abandon goes on.
	onSwap(b0, func() {
		onSwap(a, func() { close(proceed); <-abDone })
	})
	_, r1 := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
	t.Logf("abandon: %+v, %v", abGot, abErr)
	t.Logf("run R1: %v", r1)
	pa, _ := a.Place(bg)
	pb, _ := b.Place(bg)
	t.Logf("a: %s\nb: %s", pa.Describe(), pb.Describe())
	_, e1 := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
	_, e2 := AbandonChange(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
	_, e3 := ChangeSet(bg, []frond.SegmentStore{a, b}, nil, SetOptions{})
	_, e4 := AbandonChange(bg, []frond.SegmentStore{a, b}, nil, SetOptions{})
	t.Logf("rerun: %v\nabandon: %v\nother list: %v\nabandon other: %v", e1, e2, e3, e4)
	if e1 != nil && e2 != nil {
		t.Fatalf("neither a rerun nor an abandon clears the change")
	}
	for _, s := range []frond.SegmentStore{a, b} {
		if p, _ := frond.PlaceOf(bg, s); p.Moving() {
			t.Fatalf("%v is %s", s, p.Describe())
		}
	}
	noDuplicates(t, stores(a), stores(b0), stores(a, b0))
	_ = errors.Is
}
