package segment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

var (
	_ frond.SegmentStore  = (*Multi)(nil)
	_ frond.SequenceStore = (*Multi)(nil)
	_ frond.Pinger        = (*Multi)(nil)
	_ frond.Warner        = (*Multi)(nil)
)

// ErrDegraded is wrapped by Multi.Ping when some of its stores are down and
// others answer: segment IDs are still served, from the stores that answer.
var ErrDegraded = errors.New("some stores are down")

// ErrResidueMismatch means a store of a multi-store carries another
// residue mark than its place in this node's list. It wraps
// frond.ErrStoreUnavailable: the other stores go on serving.
var ErrResidueMismatch = fmt.Errorf("%w: residue mark mismatch", frond.ErrStoreUnavailable)

// Multi combines K independent stores for availability (seed 000's "several
// instances with offset and step", TinyID's delta and remainder). Each store
// keeps its own max_id per tag in the shared ID space, and store i only ever
// hands out the IDs of its ranges that are congruent to i modulo K. Two
// stores therefore never issue the same ID, whatever their max_id values,
// and when one store is down the others carry on.
//
// The order of the stores is part of the ID space: every node must list the
// same stores in the same order. A segment of step s from one store holds
// about s/K IDs.
//
// Allocate sticks to the store that answered last and fails over to the next
// one on error. Segment IDs of a node therefore increase while one store
// serves, and may step back once at a fail-over when the other store's
// max_id is behind: unique always, ordered per node only between
// fail-overs.
type Multi struct {
	stores []frond.SegmentStore
	pref   atomic.Int64
	marked []atomic.Bool // store i carries this node's residue mark (checkMark)
}

// NewMulti returns a store over stores, in residue order.
func NewMulti(stores ...frond.SegmentStore) (*Multi, error) {
	if len(stores) < 1 {
		return nil, fmt.Errorf("%w: multi-store needs at least one store", frond.ErrInvalidArgument)
	}
	return &Multi{stores: stores, marked: make([]atomic.Bool, len(stores))}, nil
}

// Residue returns the IDs of r that are congruent to i modulo k, as a range
// of stride k. r must have stride 1.
func Residue(r frond.Range, i, k int64) frond.Range {
	off := ((i-r.Start%k)%k + k) % k
	if off >= r.End-r.Start { // also avoids overflowing Start+off near 2^63
		return frond.Range{Start: r.End, End: r.End, Stride: k}
	}
	first := r.Start + off
	return frond.Range{Start: first, End: r.End, Stride: k}
}

// attempt runs op on each store, starting with the preferred one, until one
// succeeds. Each store gets an equal share of the time left in ctx.
func (m *Multi) attempt(ctx context.Context, op func(ctx context.Context, i int) error) error {
	k := int64(len(m.stores))
	start := m.pref.Load()
	var errs []error
	notFound, misplaced := 0, 0
	for j := int64(0); j < k; j++ {
		i := (start + j) % k
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && j < k-1 {
			actx, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(k-j))
		}
		err := op(actx, int(i))
		cancel()
		if err == nil {
			m.pref.Store(i)
			return nil
		}
		if errors.Is(err, frond.ErrTagExhausted) || errors.Is(err, frond.ErrInvalidArgument) ||
			errors.Is(err, frond.ErrNotLeasable) || errors.Is(err, frond.ErrNotSequence) {
			return err
		}
		if errors.Is(err, frond.ErrTagNotFound) {
			notFound++
		}
		if errors.Is(err, ErrResidueMismatch) {
			misplaced++
		}
		errs = append(errs, fmt.Errorf("store %d: %w", i, err))
	}
	if notFound == int(k) {
		return errors.Join(errs...) // wraps ErrTagNotFound
	}
	if misplaced == int(k) {
		return fmt.Errorf("%w: all %d stores: %v", ErrResidueMismatch, k, errors.Join(errs...))
	}
	// Some store is down: an outage, even if others do not know the tag
	// (a partly failed CreateTag). %v, not %w: errors.Is must not find
	// ErrTagNotFound, which would drop the buffer and answer 404.
	return fmt.Errorf("%w: all %d stores failed: %v", frond.ErrStoreUnavailable, k, errors.Join(errs...))
}

// Allocate implements frond.SegmentStore: it takes a segment from the
// preferred store and keeps the IDs of that store's residue class.
func (m *Multi) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	k := int64(len(m.stores))
	var out frond.Allocation
	err := m.attempt(ctx, func(ctx context.Context, i int) error {
		if err := m.checkMark(ctx, i); err != nil {
			return err
		}
		a, err := m.stores[i].Allocate(ctx, tag, step)
		if err != nil {
			return err
		}
		if a.Stride > 1 {
			return fmt.Errorf("%w: store %d returned a range of stride %d; multi-stores do not nest", frond.ErrInvalidArgument, i, a.Stride)
		}
		r := Residue(a.Range, int64(i), k)
		if r.Len() == 0 {
			return fmt.Errorf("%w: step %d of tag %q holds no ID of residue %d mod %d; use steps of at least %d", frond.ErrInvalidArgument, a.Len(), tag, i, k, k)
		}
		out = frond.Allocation{Range: r, Step: a.Step}
		return nil
	})
	return out, err
}

// AllocateIDs implements frond.SequenceStore: a sequence tag's IDs from
// one store, those of its residue among the n*K it is asked for (each
// store's own mechanism: frond.SequenceIDs). Each store's IDs increase, but
// nothing orders those of two stores: a sequence tag of a multi-store is
// unique, not linearizable. It may return fewer than n IDs.
func (m *Multi) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	k := int64(len(m.stores))
	var out []frond.Range
	err := m.attempt(ctx, func(ctx context.Context, i int) error {
		if err := m.checkMark(ctx, i); err != nil {
			return err
		}
		rs, err := frond.SequenceIDs(ctx, m.stores[i], tag, n*k)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, r := range rs {
			if r.Stride > 1 {
				return fmt.Errorf("%w: store %d returned a range of stride %d; multi-stores do not nest", frond.ErrInvalidArgument, i, r.Stride)
			}
			if r := Residue(r, int64(i), k); r.Len() > 0 {
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return fmt.Errorf("%w: tag %q: store %d handed out no ID of residue %d mod %d", frond.ErrStoreUnavailable, tag, i, i, k)
		}
		return nil
	})
	return out, err
}

// Residues is how many stores (residue classes) m combines: an Allocate of
// step s hands out about s/Residues IDs.
func (m *Multi) Residues() int { return len(m.stores) }

// ResidueMark is the name of a store's residue mark (frond.MarkStore).
const ResidueMark = "residue"

// ResidueOf is the residue mark of store i of k: "i/k".
func ResidueOf(i, k int) string { return fmt.Sprintf("%d/%d", i, k) }

// ResidueMarkOf reads the residue mark of s: "" when it has none, or keeps
// no marks.
func ResidueMarkOf(ctx context.Context, s frond.SegmentStore) (string, error) {
	if m, ok := s.(frond.MarkStore); ok {
		return m.Mark(ctx, ResidueMark, "")
	}
	return "", nil
}

// ClearResidueMark removes the residue mark of s and returns what it was
// (an operator changing the stores of a multi-store).
func ClearResidueMark(ctx context.Context, s frond.SegmentStore) (string, error) {
	m, ok := s.(frond.MarkStore)
	if !ok {
		return "", nil
	}
	old, err := m.Mark(ctx, ResidueMark, "")
	if err == nil {
		err = m.Unmark(ctx, ResidueMark)
	}
	return old, err
}

// checkMark makes sure, once per store, that store i carries the residue
// mark of its place here (i/K), setting it if it has none: a store marked
// with another place by another node (the stores listed in another order,
// or another number of them) hands out no ID here, since the two nodes
// would hand out the same ones. A store that keeps no marks is not checked.
func (m *Multi) checkMark(ctx context.Context, i int) error {
	if m.marked[i].Load() {
		return nil
	}
	mk, ok := m.stores[i].(frond.MarkStore)
	if !ok {
		m.marked[i].Store(true)
		return nil
	}
	want := ResidueOf(i, len(m.stores))
	got, err := mk.Mark(ctx, ResidueMark, want)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: %s is marked as residue %s by another node, but is residue %s here: "+
			"every node must list the same stores in the same order (docs/stores.md); this node takes no ID from it", ErrResidueMismatch, m.name(i), got, want)
	}
	m.marked[i].Store(true)
	return nil
}

// Tag implements frond.SegmentStore: the tag as the first store that answers has it.
func (m *Multi) Tag(ctx context.Context, name string) (frond.Tag, error) {
	var out frond.Tag
	err := m.attempt(ctx, func(ctx context.Context, i int) (err error) {
		out, err = m.stores[i].Tag(ctx, name)
		return err
	})
	return out, err
}

// Tags implements frond.SegmentStore: the tags of the first store that answers.
func (m *Multi) Tags(ctx context.Context) ([]frond.Tag, error) {
	var out []frond.Tag
	err := m.attempt(ctx, func(ctx context.Context, i int) (err error) {
		out, err = m.stores[i].Tags(ctx)
		return err
	})
	return out, err
}

// each runs op on every store and joins the errors.
func (m *Multi) each(op func(i int, s frond.SegmentStore) error) error {
	var errs []error
	for i, s := range m.stores {
		if err := op(i, s); err != nil {
			errs = append(errs, fmt.Errorf("store %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// CreateTag implements frond.SegmentStore: it creates the tag in every
// store. If some stores fail, the tag exists in the others; the error names
// the failed ones, and creating again reports ErrTagExists for those that
// have it.
func (m *Multi) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	var out frond.Tag
	err := m.each(func(i int, s frond.SegmentStore) error {
		got, err := s.CreateTag(ctx, t)
		if err == nil && out.Name == "" {
			out = got
		}
		return err
	})
	return out, err
}

// UpdateTag implements frond.SegmentStore: it updates every store.
func (m *Multi) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	var out frond.Tag
	err := m.each(func(i int, s frond.SegmentStore) error {
		got, err := s.UpdateTag(ctx, name, u)
		if err == nil && out.Name == "" {
			out = got
		}
		return err
	})
	return out, err
}

// DeleteTag implements frond.SegmentStore: it deletes the tag from every store.
func (m *Multi) DeleteTag(ctx context.Context, name string) error {
	return m.each(func(i int, s frond.SegmentStore) error { return s.DeleteTag(ctx, name) })
}

// name names store i in messages: "store i (what its String says)" when it
// is a fmt.Stringer (the URL without the password), else "store i".
func (m *Multi) name(i int) string {
	if s, ok := m.stores[i].(fmt.Stringer); ok {
		return fmt.Sprintf("store %d (%s)", i, s.String())
	}
	return fmt.Sprintf("store %d", i)
}

// Ping implements frond.Pinger. It pings every store at once (a store
// without Ping is asked for its tags): nil when all answer; when some do
// not, an error wrapping ErrDegraded that names each store down and says
// why; when none answers, an error wrapping frond.ErrStoreUnavailable.
func (m *Multi) Ping(ctx context.Context) error {
	errs := make([]error, len(m.stores))
	var wg sync.WaitGroup
	for i, s := range m.stores {
		wg.Go(func() {
			if p, ok := s.(frond.Pinger); ok {
				errs[i] = p.Ping(ctx)
			} else {
				_, errs[i] = s.Tags(ctx)
			}
			if errs[i] == nil {
				errs[i] = m.checkMark(ctx, i) // a misplaced store shows in readiness
			}
		})
	}
	wg.Wait()
	var down []string
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", m.name(i), err))
		}
	}
	// %v for the stores' errors: a store's answer must not make the whole
	// look like something else (a 404, a 400).
	switch len(down) {
	case 0:
		return nil
	case len(m.stores):
		return fmt.Errorf("%w: all %d stores are down: %s", frond.ErrStoreUnavailable, len(down), strings.Join(down, "; "))
	}
	return fmt.Errorf("%w: %d of %d down, serving from the others: %s", ErrDegraded, len(down), len(m.stores), strings.Join(down, "; "))
}

// Warnings implements frond.Warner: the warnings of the stores, each
// prefixed with the store's name.
func (m *Multi) Warnings() []string {
	var out []string
	for i, s := range m.stores {
		if w, ok := s.(frond.Warner); ok {
			for _, x := range w.Warnings() {
				out = append(out, m.name(i)+": "+x)
			}
		}
	}
	return out
}

// Close implements frond.SegmentStore: it closes every store.
func (m *Multi) Close() error {
	return m.each(func(i int, s frond.SegmentStore) error { return s.Close() })
}
