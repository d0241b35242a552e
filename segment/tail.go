package segment

import (
	"context"
	"errors"
	"fmt"

	"github.com/frond-id/frond"
)

// Returned is what CloseReturning gave back to the store.
type Returned struct {
	Tags int   // tags whose max_id went back
	IDs  int64 // IDs given back, over all tags
}

// CloseReturning closes the engine, as Close does, and then gives back to
// the store the unused end of each tag's last segment (Leaf #15: a restart
// need not burn a segment per node), where the store can
// (frond.TailReturner). Every buffer is sealed first: no ID is handed out
// from it afterwards, so what is given back was never handed out. The
// store lowers max_id only if it is still the end of this node's last
// segment (a compare-and-set): if another node allocated since, or an
// allocation of this node is in doubt (its answer was lost), max_id has
// moved on and nothing is given back; nor if the tag's mapping is no
// longer the segment's (a change of mapping from plain to Mist lowers
// max_id, and the Mist counter may stand at the segment's end again). A
// failed call gives nothing back;
// the IDs are skipped, as before. Segments of several stores (stride > 1)
// are never given back.
func (e *Engine) CloseReturning(ctx context.Context) (Returned, error) {
	e.Close()
	var out Returned
	tr, ok := e.store.(frond.TailReturner)
	var errs []error
	for _, b := range e.buffers() {
		from, to, mapping, ok2 := b.seal()
		if !ok || !ok2 {
			continue
		}
		done, err := tr.ReturnTail(ctx, b.tag, from, to, mapping)
		if err != nil {
			errs = append(errs, fmt.Errorf("tag %q: %w", b.tag, err))
			continue
		}
		if done {
			out.Tags++
			out.IDs += to - from
		}
	}
	return out, errors.Join(errs...)
}

// seal stops b for good and returns its unused tail [from, to): the
// unused IDs of its segments that end at the end of its last allocation,
// with nothing handed out in between, and their mapping (one: segments
// of two mappings are never one tail). ok is false when there is none.
func (b *Buffer) seal() (from, to int64, mapping string, ok bool) {
	b.mu.Lock()
	cur, next := b.cur.Load(), b.next
	b.dropLocked()
	b.mu.Unlock()
	if cur == emptySegment {
		cur = nil
	}
	// Moving pos to the end is the seal: a caller that loaded cur before
	// dropLocked and adds to pos afterwards finds it used up.
	first := int64(0)
	if cur != nil {
		first = cur.firstUnused(cur.pos.Swap(cur.end))
	}
	switch {
	case next != nil && next.stride == 1:
		from, to, mapping = next.start, next.end, next.mapping
		if cur != nil && cur.stride == 1 && cur.end == next.start && cur.mapping == next.mapping {
			from = first
		}
	case next == nil && cur != nil && cur.stride == 1:
		from, to, mapping = first, cur.end, cur.mapping
	default:
		return 0, 0, "", false
	}
	return from, to, mapping, from < to
}
