package service

import (
	"errors"
	"sync"
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

// A budget large enough for stripes: small answers take their places from
// the stripes' credit, and the budget still refuses before the answers
// hold more than the limit, and not before they hold seven eighths of it
// (the credit of the stripes where the refused requests did not look).
// Every place given back, from any goroutine and merged or not, leaves
// nothing held.
func TestBudget_Stripes(t *testing.T) {
	const limit = 64 << 20
	b := &budget{limit: limit}
	if _, err := b.reserve(600); err != nil {
		t.Fatal(err)
	}
	if b.chunk == 0 || len(b.stripes) < 4 {
		t.Fatalf("chunk %d, %d stripes: a budget of 64 MB has stripes", b.chunk, len(b.stripes))
	}
	var mu sync.Mutex
	var holds []Hold
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []Hold
			for {
				h, err := b.reserve(600)
				if err != nil {
					if !errors.Is(err, frond.ErrOverloaded) {
						t.Error(err)
					}
					break
				}
				mine = append(mine, h)
			}
			mu.Lock()
			holds = append(holds, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	held := b.held()
	if held > limit || held < limit*7/8-600 {
		t.Fatalf("refused with %d of %d bytes held", held, limit)
	}
	if want := int64(600 * (len(holds) + 1)); held != want {
		t.Fatalf("held %d, the holds %d", held, want)
	}
	// Give back: half one by one from other goroutines, half merged.
	var merged Hold
	for i := range holds[len(holds)/2:] {
		merged.add(&holds[len(holds)/2+i])
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(holds)/2; i += 4 {
				holds[i].Release()
			}
		}()
	}
	wg.Wait()
	merged.Release()
	if got := b.held(); got != 600 {
		t.Fatalf("held %d after the releases, want the first hold's 600", got)
	}
	if _, err := b.reserve(limit - 600); err != nil {
		t.Fatalf("the whole budget less the first hold: %v", err)
	}
}
