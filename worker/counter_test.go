package worker

import (
	"sync"
	"testing"
)

// Adds from many goroutines all count.
func TestCounter(t *testing.T) {
	c := newCounter()
	if len(c.slots)&(len(c.slots)-1) != 0 || len(c.slots) < 4 {
		t.Fatalf("%d slots: a power of two from 4", len(c.slots))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10_000 {
				c.Add(uint64(g%2 + 1))
			}
		}()
	}
	wg.Wait()
	if got := c.Load(); got != 4*10_000*1+4*10_000*2 {
		t.Fatalf("counted %d", got)
	}
}
