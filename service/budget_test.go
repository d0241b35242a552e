package service

import (
	"errors"
	"testing"

	"github.com/frond-id/frond"
)

// Places moved into one Hold (a pipeline's replies before one flush) are
// given back together by one Release, and only once.
func TestHold_MoveHoldTo(t *testing.T) {
	b := &budget{limit: 10_000}
	var together Hold
	for range 3 {
		h, err := b.reserve(1000)
		if err != nil {
			t.Fatal(err)
		}
		a := Answer{hold: h}
		a.MoveHoldTo(&together)
		if a.hold.Held() {
			t.Fatal("the answer still holds its place")
		}
		a.Release() // nothing left to give back
	}
	if got := b.used.Load(); got != 3000 {
		t.Fatalf("used %d after three answers, want 3000", got)
	}
	if _, err := b.reserve(7001); !errors.Is(err, frond.ErrOverloaded) {
		t.Fatalf("over the budget: %v", err)
	}
	var none Answer
	none.MoveHoldTo(&together) // an answer without a place adds nothing
	together.Release()
	together.Release()
	if got := b.used.Load(); got != 0 {
		t.Fatalf("used %d after the release, want 0", got)
	}
}
