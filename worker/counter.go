package worker

import (
	"sync/atomic"

	"github.com/frond-id/frond/internal/stripes"
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

// newCounter returns a counter with stripes.Count(4) slots.
func newCounter() *counter {
	return &counter{slots: make([]counterSlot, stripes.Count(4))}
}

func (c *counter) Add(d uint64) {
	c.slots[stripes.Pick(len(c.slots))].n.Add(d)
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
