package segment

import (
	"testing"

	"github.com/frond-id/frond"
)

// The straddle (a fourth review of issue 42), then: b (put back) serves; a rerun re-fences b for the
// re-raise and is killed before raising; the next rerun finds b fenced by
// the change (not put back), so it does not raise, and places a.
func TestAbandonChange_ReraiseKilledAfterFence(t *testing.T) {
	a, b0 := newLossy("a", nil), newLossy("b", nil)
	mustCreate(t, a, "t", 1, 10)
	mustCreate(t, b0, "t", 1, 10)
	b := &placeHooked{lossyStore: b0}
	if _, err := ChangeSet(bg, stores(a, b0), nil, SetOptions{}); err != nil {
		t.Fatal(err)
	}
	readA, proceed, abDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	hook := func() { close(readA); <-proceed }
	b.beforePlace.Store(&hook)
	go func() {
		defer close(abDone)
		_, err := AbandonChange(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
		t.Logf("abandon: %v", err)
	}()
	<-readA
	onSwap(b0, func() {
		onSwap(a, func() { close(proceed); <-abDone })
	})
	_, r1 := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b}, SetOptions{})
	t.Logf("R1: %v", r1)
	for _, s := range []frond.SegmentStore{a, b0} {
		p, _ := frond.PlaceOf(bg, s)
		t.Logf("after R1 %v: %s", s, p.Describe())
	}
	// b, put back at 1/2@1, serves (a node listing a and b).
	before := serveN(t, listing(t, a, b0), 100)
	// A rerun: re-fences b, killed at its next write (raising a).
	k := killAfter(1)
	a.kill, b0.kill = k, k
	_, r2 := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b0}, SetOptions{})
	t.Logf("R2 (killed): %v", r2)
	a.kill, b0.kill = nil, nil
	wantFenced(t, b0)
	// The next rerun finishes without raising.
	got, r3 := ChangeSet(bg, []frond.SegmentStore{a}, []frond.SegmentStore{b0}, SetOptions{})
	t.Logf("R3: %+v %v", got, r3)
	after := serveN(t, a, 200)
	for id := range after {
		if before[id] {
			t.Fatalf("ID %d handed out by b (put back) and again by a, placed by the change", id)
		}
	}
}
