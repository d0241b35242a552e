package worker

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
)

// counter is a count that every core adds to: each add goes to one of
// several slots, each on its own cache line, picked at random, and a read
// sums them. One shared atomic add per snowflake ID was the second line
// every core wrote on the hot path, beside the generator's own word.
type counter struct {
	slots []counterSlot
}

type counterSlot struct {
	n atomic.Uint64
	_ [56]byte
}

// newCounter returns a counter with twice as many slots as cores (at least
// 4, a power of two).
func newCounter() *counter {
	n := 4
	for n < 2*runtime.GOMAXPROCS(0) && n < 128 {
		n *= 2
	}
	return &counter{slots: make([]counterSlot, n)}
}

func (c *counter) Add(d uint64) {
	c.slots[rand.Uint32()&uint32(len(c.slots)-1)].n.Add(d)
}

// Load sums the slots: exact when no add runs at the same time, and never
// more than the adds that have returned plus those running.
func (c *counter) Load() uint64 {
	var sum uint64
	for i := range c.slots {
		sum += c.slots[i].n.Load()
	}
	return sum
}
