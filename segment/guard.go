package segment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// Guard is a segment store as one node uses it, checked against what the
// store answered this node before (issue 67): frond's first promise, that
// no segment ID is handed out twice, assumes the store never loses a write
// it acknowledged, and stores do lose them (a fail-over to an asynchronous
// replica behind, a database restored from a backup, a Redis restarted
// empty or from an older file). Guard notices:
//
//   - Before the IDs of an allocation are handed out, the end of its range
//     is kept as the tag's floor in the node's data directory (Floors).
//   - An allocation that starts below the floor (the tag's floors in every
//     mapping, converted to the answer's: TagFloors.Highest) means the
//     store went back: unless the store counted a deletion of the tag
//     since the floor was kept (frond.DeletionCounter: a tag deleted and
//     created again on purpose starts where it is created), nothing of it
//     is handed out, the node fences the store for every node (its place:
//     frond.Place.Lost, which every allocation checks in the same atomic
//     operation), and answers frond.ErrStoreLostData until an operator
//     re-arms the store above every node's floors (frond stores rearm).
//
// What frond does to a tag's max_id itself is no loss: a raise (a change
// of the set, frond tag set --max-id) leaves every floor below; a change
// of mapping from plain to Mist lowers max_id into another space, past
// every number of the old one (frond.MappingFloor, the conversion
// Highest makes); a tail given back lowers this node's floor first (only
// this node's last range can be given back: the compare-and-set fails
// once another node allocated); a deletion is counted.
//
// What it does not see: writes this node never heard of. A loss of only
// the last ranges another node took is below no floor of this node's (nor
// of that node's, once this one took them again): frond_wait and
// synchronous replication keep those (docs/stores.md). A node whose data
// directory is new, or that never served the tag, sees a loss only
// through the fence another node wrote. The last loads of a node whose
// machine crashed may be missing (the floors are not synced to the disk).
type Guard struct {
	s   frond.SegmentStore
	f   *Floors
	log *slog.Logger
	now func() time.Time
	// stuck is the finding of a loss this node could not write into the
	// store (a store that keeps no place, or that failed the write): the
	// node refuses the store itself until it restarts.
	stuck  atomic.Pointer[LostDataError]
	logged atomic.Bool
}

// GuardOptions are a Guard's settings; the zero value is valid.
type GuardOptions struct {
	Logger *slog.Logger // nil: slog.Default()
	Now    func() time.Time
}

// NewGuard returns s checked against the floors f.
func NewGuard(s frond.SegmentStore, f *Floors, o GuardOptions) *Guard {
	g := &Guard{s: s, f: f, log: o.Logger, now: o.Now}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g
}

var (
	_ frond.PlacedStore     = (*Guard)(nil)
	_ frond.SequenceStore   = (*Guard)(nil)
	_ frond.TailReturner    = (*Guard)(nil)
	_ frond.TagPager        = (*Guard)(nil)
	_ frond.DeletionCounter = (*Guard)(nil)
	_ frond.Pinger          = (*Guard)(nil)
	_ frond.Warner          = (*Guard)(nil)
)

// LostDataError is frond.ErrStoreLostData as a node found it: the store
// answered tag from Start, below Floor, the end of a range it gave this
// node before.
type LostDataError struct {
	Store string
	Tag   string
	Start int64 // where the store's answer began
	Floor int64 // the highest end it answered this node before
	Fence error // nil: the finding is written into the store (every node refuses it); else why not
}

func (e *LostDataError) Error() string {
	fence := "every node refuses it now (the finding is written into the store's place)"
	if e.Fence != nil {
		fence = fmt.Sprintf("this node refuses it until it restarts, but the finding could not be written into the store (%v): other nodes see the loss only through their own floors", e.Fence)
	}
	return fmt.Sprintf("%v: %s answered tag %q from %d, and it gave this node up to %d before (this node's data directory keeps it), "+
		"so IDs from %d up may have been handed out already: the store lost acknowledged writes (a fail-over to a replica behind, a restored backup, "+
		"a Redis restarted empty or from an older file); %s. Re-arm it above every node's floors: frond stores floors on each node, then frond stores rearm (docs/operations.md#a-store-that-went-back)",
		frond.ErrStoreLostData, e.Store, e.Tag, e.Start, e.Floor, e.Start, fence)
}

func (e *LostDataError) Unwrap() error { return frond.ErrStoreLostData }

// Floors returns the floors g keeps.
func (g *Guard) Floors() *Floors { return g.f }

// String names the store.
func (g *Guard) String() string { return g.f.Store() }

// seen is what a node knew of a tag when an allocation of it began: its
// floors then (the ends of allocations that had returned), or, when it
// kept none, the store's count of the tag's deletions read then.
type seen struct {
	floors    TagFloors
	had       bool
	deletions int64
}

// before runs ahead of an allocation of tag: the node's own refusal, and
// what the node knows of the tag now. An allocation is checked against the
// floors as they were when it began, not as they are when it returns:
// allocations of one tag by one node may run at once (a sequence tag's
// requests, a lease beside a prefetch) and return in any order, but each
// raise of max_id comes after every allocation that returned before it
// began. The deletions are read before the allocation, so that a deletion
// between the two can only make a later check accept, never refuse.
func (g *Guard) before(ctx context.Context, tag string) (seen, error) {
	if e := g.stuck.Load(); e != nil {
		return seen{}, e
	}
	if t, ok := g.f.Tag(tag); ok {
		return seen{floors: t, had: true, deletions: t.Deletions}, nil
	}
	n, _, err := frond.DeletionsOf(ctx, g.s, tag)
	return seen{deletions: n}, err
}

// after checks an allocation of tag that answered [start, end) in mapping
// (or of a sequence tag) against the tag's floors when it began, those of
// every mapping converted to this one (TagFloors.Highest: a change of
// mapping moves max_id past every number of the old one, so only a store
// that went back answers below), and keeps end as the floor before it is
// handed out.
func (g *Guard) after(ctx context.Context, tag, mapping string, seq bool, start, end int64, was seen) error {
	class := classOf(mapping)
	if seq {
		class = classSeq
	}
	deletions := was.deletions
	if floor := was.floors.Highest(mapping, seq); was.had && start < floor {
		n, counted, err := frond.DeletionsOf(ctx, g.s, tag)
		if err != nil {
			return fmt.Errorf("%w: %s answered tag %q below this node's floor, and its count of deletions cannot be read to tell a tag created again from lost writes: %v",
				frond.ErrStoreUnavailable, g, tag, err)
		}
		if !counted || n <= was.floors.Deletions {
			return g.lost(ctx, tag, start, floor)
		}
		// Deleted and created again since the floor was kept.
		g.log.Info("tag created again below this node's floor after a deletion: its floors are forgotten", "store", g.String(), "tag", tag, "floor", floor, "start", start)
		if err := g.f.forget(tag, n); err != nil {
			return fmt.Errorf("%w: %v", frond.ErrStoreUnavailable, err)
		}
		deletions = n
	}
	if err := g.f.raise(tag, class, end, deletions); err != nil {
		return fmt.Errorf("%w: %v (no ID of the range is handed out)", frond.ErrStoreUnavailable, err)
	}
	return nil
}

// lost refuses an answer below the floor: the store is fenced for every
// node (its place), or for this one when that fails.
func (g *Guard) lost(ctx context.Context, tag string, start, floor int64) error {
	e := &LostDataError{Store: g.String(), Tag: tag, Start: start, Floor: floor}
	e.Fence = g.fence(ctx, tag)
	if e.Fence != nil {
		g.stuck.CompareAndSwap(nil, e)
	}
	if !g.logged.Swap(true) {
		g.log.Error("segment store lost acknowledged writes: refused", "store", g.String(), "tag", tag, "start", start, "floor", floor, "err", e)
	} else {
		g.log.Warn("segment store lost acknowledged writes", "store", g.String(), "tag", tag, "start", start, "floor", floor)
	}
	return e
}

// fence writes the finding into the store's place (frond.FenceLost).
func (g *Guard) fence(ctx context.Context, tag string) error {
	ps, ok := g.s.(frond.PlacedStore)
	if !ok {
		return fmt.Errorf("%w: the store keeps no place", frond.ErrInvalidArgument)
	}
	return frond.FenceLost(ctx, ps, frond.LostFinding(g.now().Unix(), tag))
}

// refused logs, once, an error of the store that is a loss (the fence
// another node wrote).
func (g *Guard) refused(tag string, err error) error {
	if errors.Is(err, frond.ErrStoreLostData) {
		if !g.logged.Swap(true) {
			g.log.Error("segment store fenced for lost data: refused", "store", g.String(), "tag", tag, "err", err)
		}
	}
	return err
}

// AllocateAt implements frond.PlacedStore.
func (g *Guard) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	was, err := g.before(ctx, tag)
	if err != nil {
		return frond.Allocation{}, err
	}
	a, err := frond.AllocateAt(ctx, g.s, at, tag, step)
	if err != nil {
		return a, g.refused(tag, err)
	}
	if MappingChanging(a.Mapping) != nil {
		return a, nil // never handed out (the engine skips it)
	}
	if err := g.after(ctx, tag, a.Mapping, false, a.Start, a.End, was); err != nil {
		return frond.Allocation{}, err
	}
	return a, nil
}

// Allocate implements frond.SegmentStore.
func (g *Guard) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return g.AllocateAt(ctx, frond.Place{}, tag, step)
}

// AllocateIDsAt implements frond.PlacedStore.
func (g *Guard) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	was, err := g.before(ctx, tag)
	if err != nil {
		return nil, err
	}
	rs, err := frond.SequenceIDsAt(ctx, g.s, at, tag, n)
	if err != nil {
		return nil, g.refused(tag, err)
	}
	if len(rs) == 0 {
		return rs, nil
	}
	if err := g.after(ctx, tag, "", true, rs[0].Start, rs[len(rs)-1].End, was); err != nil {
		return nil, err
	}
	return rs, nil
}

// AllocateIDs implements frond.SequenceStore.
func (g *Guard) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return g.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

// ReturnTail implements frond.TailReturner where the store does: this
// node's floor goes down to from first (the tail was never handed out,
// and no other node allocated above it, or the store's compare-and-set
// fails), so the next allocation from from is no loss.
func (g *Guard) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	tr, ok := g.s.(frond.TailReturner)
	if !ok || from >= to {
		return false, nil
	}
	class := classOf(mapping)
	if t, ok := g.f.Tag(tag); ok && t.Ends[class] == to {
		if err := g.f.set(tag, class, from, t.Deletions); err != nil {
			return false, nil // skipped, as after a kill -9
		}
	}
	return tr.ReturnTail(ctx, tag, from, to, mapping)
}

// Deletions implements frond.DeletionCounter: 0 where the store counts
// none.
func (g *Guard) Deletions(ctx context.Context, tag string) (int64, error) {
	n, _, err := frond.DeletionsOf(ctx, g.s, tag)
	return n, err
}

// RaiseDeletions implements frond.DeletionCounter where the store does.
func (g *Guard) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	if d, ok := g.s.(frond.DeletionCounter); ok {
		return d.RaiseDeletions(ctx, tag, n)
	}
	return nil
}

// Place implements frond.PlacedStore.
func (g *Guard) Place(ctx context.Context) (frond.Place, error) { return frond.PlaceOf(ctx, g.s) }

// SwapPlace implements frond.PlacedStore.
func (g *Guard) SwapPlace(ctx context.Context, old, p frond.Place) error {
	ps, ok := g.s.(frond.PlacedStore)
	if !ok {
		return fmt.Errorf("%w: store %s keeps no place: it cannot be part of a set of stores", frond.ErrInvalidArgument, g)
	}
	return ps.SwapPlace(ctx, old, p)
}

// Identity implements frond.PlacedStore.
func (g *Guard) Identity(ctx context.Context) (string, error) { return frond.IdentityOf(ctx, g.s) }

// Tag implements frond.SegmentStore.
func (g *Guard) Tag(ctx context.Context, name string) (frond.Tag, error) { return g.s.Tag(ctx, name) }

// Tags implements frond.SegmentStore.
func (g *Guard) Tags(ctx context.Context) ([]frond.Tag, error) { return g.s.Tags(ctx) }

// TagsAfter implements frond.TagPager.
func (g *Guard) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	return frond.TagsAfter(ctx, g.s, after, limit)
}

// CreateTag implements frond.SegmentStore.
func (g *Guard) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return frond.CreateTagAt(ctx, g.s, frond.Place{}, t)
}

// UpdateTag implements frond.SegmentStore.
func (g *Guard) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return frond.UpdateTagAt(ctx, g.s, frond.Place{}, name, u)
}

// DeleteTag implements frond.SegmentStore.
func (g *Guard) DeleteTag(ctx context.Context, name string) error {
	return frond.DeleteTagAt(ctx, g.s, frond.Place{}, name)
}

// CreateTagAt implements frond.PlacedStore.
func (g *Guard) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	return frond.CreateTagAt(ctx, g.s, at, t)
}

// UpdateTagAt implements frond.PlacedStore.
func (g *Guard) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	return frond.UpdateTagAt(ctx, g.s, at, name, u)
}

// DeleteTagAt implements frond.PlacedStore.
func (g *Guard) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	return frond.DeleteTagAt(ctx, g.s, at, name)
}

// Ping implements frond.Pinger: the store's own (or a read of a tag),
// and a lost-data finding, this node's or the one another node wrote into
// the store's place, so that readiness fails with it.
func (g *Guard) Ping(ctx context.Context) error {
	if e := g.stuck.Load(); e != nil {
		return e
	}
	var err error
	if p, ok := g.s.(frond.Pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = frond.TagsAfter(ctx, g.s, "", 1)
	}
	if err != nil {
		return err
	}
	p, err := frond.PlaceOf(ctx, g.s)
	if err != nil {
		return err
	}
	if p.Fenced() {
		return fmt.Errorf("%s: %w", g, frond.WrongPlace(p, p.Rearmed()))
	}
	return nil
}

// Warnings implements frond.Warner where the store does.
func (g *Guard) Warnings() []string {
	if w, ok := g.s.(frond.Warner); ok {
		return w.Warnings()
	}
	return nil
}

// Close closes the store and the floors file.
func (g *Guard) Close() error { return errors.Join(g.s.Close(), g.f.Close()) }
