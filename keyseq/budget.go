package keyseq

import (
	"fmt"
	"sync/atomic"

	"github.com/frond-id/frond"
)

// Defaults of a node's keyed sequence memory (issue 59): a space's table
// (TableBytes: counters and sections' state) at most DefaultMaxSpaceMemory, every
// section a node serves at most DefaultMemory together. A default space
// (1,024 × 16,384 counters) is 64 MiB.
const (
	DefaultMemory         = 512 << 20
	DefaultMaxSpaceMemory = 256 << 20
)

// SectionOverhead is a section's memory on a node that started its space,
// beside its counters: its state, its floor, its row of the table read
// each round (owner, lease end, holder, maximum) and what the node
// remembers of its lease. Measured: 464 bytes a section of one slot with
// the memory store's own maps, about 250 without (issue 69: a space of
// 1,048,576 sections of one slot counted as 4 MiB and took 250 MB).
const SectionOverhead = 256

// TableBytes is the memory of sp's whole table (its defaults filled): 4
// bytes a counter and SectionOverhead a section.
func TableBytes(sp Space) int64 {
	sp = sp.WithDefaults()
	return int64(sp.Sections) * (int64(sp.Slots)*4 + SectionOverhead)
}

// SectionBytes is the memory of one section of sp when served.
func SectionBytes(sp Space) int64 { return int64(sp.WithDefaults().Slots) * 4 }

// ErrMemoryBudget is the refusal of a section or a space the node's memory
// for keyed sequences cannot hold: the node stays up and serves the rest.
// It wraps frond.ErrStoreUnavailable (503, retryable: another node may hold
// the section, or memory frees).
var ErrMemoryBudget = fmt.Errorf("%w: keyed sequence memory budget", frond.ErrStoreUnavailable)

// Budget is the memory a node gives keyed sequences: every section it
// serves reserves its counters (SectionBytes) before they are allocated,
// and gives them back when it stops serving it.
type Budget struct {
	limit int64 // bytes; negative: no bound
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes (0: DefaultMemory; negative:
// no bound).
func NewBudget(limit int64) *Budget {
	if limit == 0 {
		limit = DefaultMemory
	}
	return &Budget{limit: limit}
}

// Reserve takes n bytes, or reports false when they would pass the limit.
func (b *Budget) Reserve(n int64) bool {
	if b == nil || b.limit < 0 {
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Free gives n bytes back.
func (b *Budget) Free(n int64) {
	if b != nil && b.limit >= 0 {
		b.used.Add(-n)
	}
}

// Left is how many bytes are free (a large number without a bound).
func (b *Budget) Left() int64 {
	if b == nil || b.limit < 0 {
		return 1 << 62
	}
	return b.limit - b.used.Load()
}

// Used is how many bytes are reserved.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's limit (negative: none).
func (b *Budget) Limit() int64 {
	if b == nil {
		return -1
	}
	return b.limit
}
