package service

import (
	"fmt"
	"sync/atomic"

	"github.com/frond-id/frond"
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
type budget struct {
	limit   int64 // <= 0: no bound
	used    atomic.Int64
	refused atomic.Uint64
}

// Hold is an answer's place in the node's answer budget: a value (an
// answer's costs no allocation), owned by one front door at a time.
// Release gives it back; later calls on the same Hold do nothing. The zero
// Hold is a place in no budget.
type Hold struct {
	b *budget
	n int64
}

// Release gives the place back, once. It is not safe for concurrent use
// of one Hold: its owner calls it.
func (h *Hold) Release() {
	if h != nil && h.b != nil {
		h.b.used.Add(-h.n)
		h.b = nil
	}
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
		h.n += o.n
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
	if used := b.used.Add(n); used > b.limit {
		b.used.Add(-n)
		b.refused.Add(1)
		return Hold{}, fmt.Errorf("%w: the node's answers not yet read by their clients hold %d of its %d bytes (limits.answer_budget); this one may take up to %d", frond.ErrOverloaded, used-n, b.limit, n)
	}
	return Hold{b: b, n: n}, nil
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
	return s.budget.used.Load(), max(s.budget.limit, 0), s.budget.refused.Load()
}
