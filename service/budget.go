package service

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/stripes"
)

// DefaultAnswerBudget is the default bound on the bytes of answers a node
// has built and its clients have not read yet, all protocols and clients
// together (Config.AnswerBudget, limits.answer_budget).
const DefaultAnswerBudget = 128 << 20

// budget is the node's one answer budget (issue 43): every request for
// IDs reserves the most its answer can take before any ID is taken
// (answerBound), and the front door that writes the answer releases it
// once the bytes have left (Answer.Release): a client that never reads
// holds its answers' places, and when they fill the budget every new
// request is refused with frond.ErrOverloaded (retryable), instead of the
// node's memory filling up.
//
// One counter that every request adds to and takes from is a cache line
// every core writes on the hot path (issue 47). So small answers take
// their places from stripes, each on its own line, that hold credit taken
// from the counter a chunk at a time and give it back when they hold more
// than two chunks: used counts the places of answers plus the credit the
// stripes hold, and the bytes the answers hold are used less the credit.
// Idle credit is at most an eighth of the limit, and a request about to be
// refused takes it back first (reclaim), so the budget refuses when the
// answers hold the limit less what requests running at that moment have
// in hand. A place may be given back to any stripe: only the sums count.
type budget struct {
	limit   int64 // <= 0: no bound
	used    atomic.Int64
	refused atomic.Uint64

	once    sync.Once
	chunk   int64 // the credit a stripe takes at a time; 0: no stripes
	stripes []budgetStripe
}

type budgetStripe struct {
	credit atomic.Int64
	_      [56]byte
}

// minChunk is the smallest chunk worth a stripe: a budget so small that
// its chunks would be smaller takes every place from the counter.
const minChunk = 8 << 10

func (b *budget) init() {
	n := stripes.Count(4)
	// n stripes of at most two chunks each hold at most an eighth.
	if chunk := b.limit / int64(16*n); chunk >= minChunk {
		b.chunk = chunk
		b.stripes = make([]budgetStripe, n)
	}
}

// Hold is an answer's place in the node's answer budget: a value (an
// answer's costs no allocation), owned by one front door at a time.
// Release gives it back; later calls on the same Hold do nothing. The zero
// Hold is a place in no budget.
type Hold struct {
	b *budget
	n int64
	s *budgetStripe // the stripe it goes back to; nil: the counter
}

// Release gives the place back, once. It is not safe for concurrent use
// of one Hold: its owner calls it.
func (h *Hold) Release() {
	if h == nil || h.b == nil {
		return
	}
	if s := h.s; s != nil {
		if c := s.credit.Add(h.n); c > 2*h.b.chunk {
			// More than two chunks idle here: one goes back, unless other
			// answers took it meanwhile.
			if s.credit.Add(-h.b.chunk) >= 0 {
				h.b.used.Add(-h.b.chunk)
			} else {
				s.credit.Add(h.b.chunk)
			}
		}
	} else {
		h.b.used.Add(-h.n)
	}
	h.b = nil
}

// add moves o's place into h. Both are places in the same budget (or in
// none).
func (h *Hold) add(o *Hold) {
	switch {
	case o.b == nil:
		return
	case h.b == nil:
		*h = *o
	case h.b != o.b:
		panic("service: holds of two answer budgets merged")
	default:
		h.n += o.n // given back to h's stripe (or the counter): only the sums count
	}
	o.b = nil
}

// Held reports whether h is a place not yet given back.
func (h *Hold) Held() bool { return h != nil && h.b != nil }

// reserve takes n bytes of the budget, or refuses.
func (b *budget) reserve(n int64) (Hold, error) {
	if b.limit <= 0 {
		return Hold{}, nil
	}
	if n > b.limit {
		return Hold{}, fmt.Errorf("%w: this answer may take up to %d bytes, more than the node's whole answer budget of %d (limits.answer_budget): ask for fewer IDs", frond.ErrInvalidArgument, n, b.limit)
	}
	b.once.Do(b.init)
	if b.chunk > 0 && n <= b.chunk {
		s := &b.stripes[stripes.Pick(len(b.stripes))]
		if s.credit.Add(-n) >= 0 {
			return Hold{b: b, n: n, s: s}, nil
		}
		s.credit.Add(n)
		if b.used.Add(b.chunk) <= b.limit {
			s.credit.Add(b.chunk - n)
			return Hold{b: b, n: n, s: s}, nil
		}
		b.used.Add(-b.chunk) // no chunk left: perhaps room for this answer alone
	}
	used := b.used.Add(n)
	if used > b.limit && b.chunk > 0 {
		// Before refusing, the stripes' idle credit comes back.
		b.used.Add(-n)
		b.reclaim()
		used = b.used.Add(n)
	}
	if used > b.limit {
		b.used.Add(-n)
		b.refused.Add(1)
		return Hold{}, fmt.Errorf("%w: the node's answers not yet read by their clients hold %d of its %d bytes (limits.answer_budget); this one may take up to %d", frond.ErrOverloaded, b.held(), b.limit, n)
	}
	return Hold{b: b, n: n}, nil
}

// reclaim gives the stripes' credit back to the counter. A stripe caught
// below zero (a reserve that will undo its take) keeps its debt.
func (b *budget) reclaim() {
	for i := range b.stripes {
		if c := b.stripes[i].credit.Swap(0); c > 0 {
			b.used.Add(-c)
		} else if c < 0 {
			b.stripes[i].credit.Add(c)
		}
	}
}

// held is the bytes the answers hold: the counter less the stripes' idle
// credit (exact when no request runs at the same time).
func (b *budget) held() int64 {
	b.once.Do(b.init)
	h := b.used.Load()
	for i := range b.stripes {
		h -= b.stripes[i].credit.Load()
	}
	return max(h, 0)
}

// answerBound is the most bytes the answer of r (checked) can take on any
// protocol: JSON's numbers and their text side by side, the longest text
// of an ID (a UUID, a TypeID, a serial) and its prefix; ranges are a few
// numbers each.
func answerBound(r *Request) int64 {
	const fixed = 512
	if r.Ranges || r.Run {
		return fixed + 64*96 // a batch of ranges crosses few segments
	}
	return fixed + max(r.Count, 1)*(96+int64(len(r.Prefix)))
}

// AnswerBudget reports the node's answer budget: the bytes held by answers
// not yet read, the bound (0: none), and how many requests it refused.
func (s *Service) AnswerBudget() (used, limit int64, refused uint64) {
	return s.budget.held(), max(s.budget.limit, 0), s.budget.refused.Load()
}
