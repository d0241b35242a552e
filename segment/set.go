package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/frond-id/frond"
)

// SetOptions tune ChangeSet and AbandonChange.
type SetOptions struct {
	// Margin is added to the highest max_id of each tag before the stores
	// of the new set are raised to it. Negative: the tag's step (the
	// default of frond stores set). No margin is needed for safety (every
	// store is fenced before max_id is read); it costs nothing and leaves
	// room.
	Margin int64
	// Names names the stores in messages, in the order set then retire
	// ("store i" when nil or short).
	Names []string
	// Log, when set, is told each step.
	Log func(format string, args ...any)
}

// SetChange is what ChangeSet or AbandonChange did.
type SetChange struct {
	Gen       int64         // the generation of the new set
	Change    string        // the change's identity (frond.Place.Change)
	Places    []frond.Place // the new place of each store of the set, in order
	Tags      int           // tags raised or checked in every store of the set
	Raised    int           // (store, tag) pairs whose max_id went up
	Created   int           // (store, tag) pairs created where a store lacked the tag
	Resumed   bool          // an interrupted change was found and finished
	Abandoned bool          // an interrupted change was undone (AbandonChange)
}

// ChangeSet makes set the stores that share one ID space, store i handing
// out the IDs congruent to i modulo len(set) (one store: the set's only
// store, which serves nodes that list it alone), and retires the stores of
// retire (no node allocates from them again until a change places them).
// It is the only safe way to add a store, remove one, reorder them, or go
// back to one store, and it is safe while nodes run:
//
//  1. Every store's identity and place are read. If a store is fenced by
//     a change under way (one that was interrupted, or runs now), this
//     call finishes exactly that change: the stores given must be the
//     ones its fence records, in the same order, else it is refused,
//     naming the change (AbandonChange undoes one that placed nothing).
//     Otherwise every set a given store belongs to must be given whole, in
//     set or retire: a store left out would keep IDs this change cannot
//     see.
//  2. Every store is fenced (SwapPlace to its place with Next and the
//     change's record, frond.Move): from then on no node allocates from
//     any of them (nodes serve what they hold). A store's allocations are
//     ordered against SwapPlace, so every ID handed out from it is below
//     the max_id read next.
//  3. Every tag's max_id is read in every store, and every store of the
//     new set is raised to the highest plus the margin (tags it lacks are
//     created there), so no store hands out an ID any store handed out.
//  4. The new places are written, each by compare-and-set from the fence.
//
// The change has an identity of its own (frond.NewIdentity), recorded in
// every place it writes, and a generation above every generation and
// fence of the stores given, so two changes that picked the same
// generation are never taken for one. Nodes learn the new places from the
// stores (Multi re-reads places when a store refuses an allocation). If
// ChangeSet fails midway the stores it fenced stay fenced, which is safe
// (no store serves), and calling it again with the same stores finishes
// the change.
func ChangeSet(ctx context.Context, set, retire []frond.SegmentStore, o SetOptions) (SetChange, error) {
	c, err := survey(ctx, set, retire, o)
	if err != nil {
		return SetChange{}, err
	}
	m, n, err := c.oneUnderWay()
	switch {
	case err != nil:
		return SetChange{}, err
	case m.Change != "":
		return c.resume(ctx, m, n)
	}
	if err := c.complete(c.places); err != nil {
		return SetChange{}, err
	}
	// Copies that disagree are refused before any store is fenced (and
	// again under the fence, where it counts: raise).
	if _, _, err := c.readTags(ctx); err != nil {
		return SetChange{}, err
	}
	for _, p := range c.places {
		n = max(n, p.Gen, p.Next)
	}
	n++
	m = frond.Move{Change: frond.NewIdentity(), Set: strings.Join(c.ids[:c.nset], ","), Retire: strings.Join(c.ids[c.nset:], ",")}
	c.logf("changing the set of stores: change %s to generation %d (%d stores, %d retired)", m.Change, n, c.nset, len(c.ids)-c.nset)
	if err := c.fence(ctx, n, m); err != nil {
		return SetChange{}, err
	}
	return c.finish(ctx, n, m, true)
}

// AbandonChange undoes the change of the set under way at the stores given,
// which must be exactly the stores its fence records (as ChangeSet's
// rerun): every store it fenced goes back to the place it had before. Only
// a change that placed no store can be undone (its stores were all fenced
// and raised before the first was placed, and a placed store serves): one
// that did is finished instead, as ChangeSet would, and the result says so
// (Resumed, not Abandoned). Raising max_id is never undone; it costs IDs,
// never uniqueness.
func AbandonChange(ctx context.Context, set, retire []frond.SegmentStore, o SetOptions) (SetChange, error) {
	c, err := survey(ctx, set, retire, o)
	if err != nil {
		return SetChange{}, err
	}
	ms, ns := c.underWay()
	if len(ms) == 0 {
		return SetChange{}, fmt.Errorf("%w: no store given is fenced by a change of the set: there is nothing to abandon", frond.ErrInvalidArgument)
	}
	// The change whose stores these are: others that fence some of them
	// (two changes over one store, begun at once) are abandoned on their
	// own, with their own stores.
	j := slices.IndexFunc(ms, func(m frond.Move) bool { return c.matches(m, 0) == nil })
	if j < 0 {
		if len(ms) == 1 {
			return SetChange{}, c.matches(ms[0], ns[0])
		}
		return SetChange{}, fmt.Errorf("%w: the stores given are not those of any change under way at them (%s): "+
			"abandon each with exactly its own stores, in its order", frond.ErrInvalidArgument, c.describe(ms, ns))
	}
	m, n := ms[j], ns[j]
	if c.placing(m, n) {
		c.logf("change %s had raised its stores and may have placed some: it cannot be undone; finishing it", m.Change)
		return c.resume(ctx, m, n)
	}
	// 1. If the first store is fenced by the change, mark its fence "being
	// abandoned": the opposite of a run's commit, on the same fence, so a
	// run and this abandon cannot both go through, and a rerun that reads
	// the mark refuses. If it is not (another change fences it, or an
	// abandon put it back), no run of the change can commit until one
	// fences it again and writes every fence of the change anew, each by
	// compare-and-set from the fence it read, which a put-back below
	// changes (or this abandon's put-back fails on the fence it wrote).
	out := SetChange{Gen: n, Change: m.Change}
	if p0 := c.places[0]; p0.Moving() && p0.Move.Change == m.Change {
		f := p0
		f.Move.Abandon, f.Move.Run = true, c.run
		if err := c.swap(ctx, 0, f); err != nil {
			return out, fmt.Errorf("mark %s for the abandon of change %s (is a rerun of it running?): %w; run the same --abandon again", c.name(0), m.Change, err)
		}
	}
	// 2. Put every store back at the place it had, the first store last.
	for _, i := range append(seq(1, len(c.places)), 0) {
		p := c.places[i]
		if !p.Moving() || p.Move.Change != m.Change {
			continue
		}
		if err := c.swap(ctx, i, p.Settled()); err != nil {
			return out, fmt.Errorf("give %s its place back: %w; run the same --abandon again", c.name(i), err)
		}
		c.logf("%s is %s again", c.name(i), c.places[i].Describe())
	}
	// 3. A run of the change may have fenced a store this abandon read
	// as not fenced: it is not done until none is.
	for i, s := range c.ps {
		p, err := s.Place(ctx)
		if err != nil {
			return out, fmt.Errorf("read the place of %s: %w", c.name(i), err)
		}
		if p.Moving() && p.Move.Change == m.Change {
			return out, fmt.Errorf("%w: a run of change %s fenced %s while the abandon ran: run the same --abandon again", frond.ErrPlaceChanged, m.Change, c.name(i))
		}
	}
	out.Abandoned = true
	return out, nil
}

// seq is from, from+1, ..., to-1.
func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// changer is one run of ChangeSet or AbandonChange over the stores given.
type changer struct {
	o      SetOptions
	ps     []frond.PlacedStore // set, then retire
	ids    []string            // each store's identity
	places []frond.Place       // each store's place, as last read or written
	nset   int                 // how many of ps are the new set
	run    string              // this run's identity (frond.Move.Run), in the fences it writes
	// done marks the stores a resumed change has nothing left to do
	// with: placed by it, and replaced since by a later change.
	done []bool
}

// survey reads the identity and the place of every store given, and
// refuses a store given twice.
func survey(ctx context.Context, set, retire []frond.SegmentStore, o SetOptions) (*changer, error) {
	if len(set) == 0 {
		return nil, fmt.Errorf("%w: a set of stores needs at least one store", frond.ErrInvalidArgument)
	}
	all := append(slices.Clip(set), retire...)
	c := &changer{o: o, nset: len(set), ps: make([]frond.PlacedStore, len(all)), ids: make([]string, len(all)), places: make([]frond.Place, len(all)), done: make([]bool, len(all)), run: frond.NewIdentity()}
	if len(all) > frond.MaxSetStores {
		return nil, fmt.Errorf("%w: %d stores given: a change of the set names at most %d (its set and the stores it retires)", frond.ErrInvalidArgument, len(all), frond.MaxSetStores)
	}
	for i, s := range all {
		p, ok := s.(frond.PlacedStore)
		if !ok {
			return nil, fmt.Errorf("%w: %s keeps no place: it cannot be part of a set of stores", frond.ErrInvalidArgument, c.name(i))
		}
		c.ps[i] = p
	}
	for i, s := range c.ps {
		id, err := s.Identity(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the identity of %s: %w", c.name(i), err)
		}
		if j := slices.Index(c.ids[:i], id); j >= 0 {
			return nil, fmt.Errorf("%w: %s and %s are the same store (identity %s): give each store once, in the set or to retire "+
				"(a database copied from another keeps its identity: give the copy a fresh database)", frond.ErrInvalidArgument, c.name(j), c.name(i), id)
		}
		c.ids[i] = id
		if c.places[i], err = s.Place(ctx); err != nil {
			return nil, fmt.Errorf("read the place of %s: %w", c.name(i), err)
		}
		// A store that lost writes is re-armed first: a change of the set
		// would raise its tags from values no node can trust.
		if c.places[i].Fenced() {
			return nil, fmt.Errorf("%s: %w", c.name(i), frond.WrongPlace(c.places[i], c.places[i].Rearmed()))
		}
	}
	return c, nil
}

func (c *changer) logf(format string, args ...any) {
	if c.o.Log != nil {
		c.o.Log(format, args...)
	}
}

func (c *changer) name(i int) string {
	if i < len(c.o.Names) && c.o.Names[i] != "" {
		return c.o.Names[i]
	}
	if i >= c.nset {
		return fmt.Sprintf("retired store %d", i-c.nset)
	}
	return fmt.Sprintf("store %d", i)
}

// underWay returns the changes under way at the stores given: each
// change's record (frond.Move, Raised if any of its fences is marked) and
// generation, in the order first seen.
func (c *changer) underWay() ([]frond.Move, []int64) {
	var ms []frond.Move
	var ns []int64
	for _, p := range c.places {
		if !p.Moving() {
			continue
		}
		j := slices.IndexFunc(ms, func(m frond.Move) bool { return m.Change == p.Move.Change })
		if j < 0 {
			ms, ns = append(ms, p.Move), append(ns, p.Next)
			continue
		}
		ms[j].Raised = ms[j].Raised || p.Move.Raised // one store marked is enough: every store was raised
		ms[j].Abandon = ms[j].Abandon || p.Move.Abandon
	}
	return ms, ns
}

// oneUnderWay is the change under way at the stores given (the zero Move
// when none is fenced) and its generation, or an error when they are
// fenced by more than one.
func (c *changer) oneUnderWay() (frond.Move, int64, error) {
	ms, ns := c.underWay()
	switch len(ms) {
	case 0:
		return frond.Move{}, 0, nil
	case 1:
		return ms[0], ns[0], nil
	}
	return frond.Move{}, 0, fmt.Errorf("%w: the stores given are fenced by %d changes under way (%s): "+
		"abandon all but one (--abandon, each with exactly its own stores: frond stores show lists them), then finish that one",
		frond.ErrInvalidArgument, len(ms), c.describe(ms, ns))
}

// describe lists changes under way, and the stores given each fences.
func (c *changer) describe(ms []frond.Move, ns []int64) string {
	var out []string
	for j, m := range ms {
		var at []string
		for i, p := range c.places {
			if p.Moving() && p.Move.Change == m.Change {
				at = append(at, c.name(i))
			}
		}
		set, retire := m.Stores()
		out = append(out, fmt.Sprintf("change %s to generation %d, of the stores %s retiring %s, fences %s", m.Change, ns[j], orNone(set), orNone(retire), strings.Join(at, ", ")))
	}
	return strings.Join(out, "; ")
}

// matches checks that the stores given are exactly those of change m, in
// its order.
func (c *changer) matches(m frond.Move, n int64) error {
	set, retire := m.Stores()
	if slices.Equal(set, c.ids[:c.nset]) && slices.Equal(retire, c.ids[c.nset:]) {
		return nil
	}
	i := slices.IndexFunc(c.places, func(p frond.Place) bool { return p.Moving() })
	given := make([]string, len(c.ids))
	for j, id := range c.ids {
		given[j] = fmt.Sprintf("%s is %s", c.name(j), id)
	}
	return fmt.Errorf("%w: %s is fenced by change %s to generation %d, which places the stores %s and retires %s (by identity; %s): "+
		"a change is finished with exactly its stores, in its order: run it again with those (--store, --retire), "+
		"or undo it with --abandon and those stores; frond stores show prints each store's identity",
		frond.ErrInvalidArgument, c.name(i), m.Change, n, orNone(set), orNone(retire), strings.Join(given, ", "))
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// placedBy returns the index of a store that change m to generation n has
// placed already, or -1.
func (c *changer) placedBy(m frond.Move, n int64) int {
	return slices.IndexFunc(c.places, func(p frond.Place) bool { return !p.Moving() && p.Gen == n && p.Change == m.Change })
}

// placing reports whether change m to generation n may have written a new
// place: a store is placed by it, or marked raised (every store of the
// change is marked before the first place is written), and none is marked
// for an abandon (a store marked so was never marked raised, so the change
// never marked every store, nor placed one). Such a change can only be
// finished.
func (c *changer) placing(m frond.Move, n int64) bool {
	return !m.Abandon && (m.Raised || c.placedBy(m, n) >= 0)
}

// resume finishes change m to generation n, which fenced some of the
// stores given (ChangeSet's rerun).
func (c *changer) resume(ctx context.Context, m frond.Move, n int64) (SetChange, error) {
	if err := c.matches(m, n); err != nil {
		return SetChange{}, err
	}
	if m.Abandon {
		return SetChange{}, fmt.Errorf("%w: change %s to generation %d is being abandoned (an abandon stopped midway, or runs now): "+
			"run --abandon with the same stores to finish the abandon, then change the set again", frond.ErrInvalidArgument, m.Change, n)
	}
	writing := c.placing(m, n)
	// Committed but nothing placed yet: every store is still fenced (a
	// store is placed only once every fence is marked, and a marked fence
	// is never put back), so raising again is safe, and needed when a
	// store was put back by an abandon running at once, served, and was
	// fenced again by a run that then stopped before raising (a fourth
	// review of issue 42): raise again, from max_id values read now.
	reraise := writing && c.placedBy(m, n) < 0
	standing := make([]frond.Place, len(c.places)) // the places before the change
	for i, p := range c.places {
		standing[i] = p.Settled()
		switch {
		case p.Moving() && p.Move.Change == m.Change:
		case p.Gen == n && p.Change == m.Change:
			c.done[i] = true // placed by it (and maybe fenced since by a later change)
		case writing && p.Gen > n:
			// Every store of the change was fenced and marked raised
			// before the first place was written, and nothing but the
			// change takes its fence off once so marked (an abandon gives
			// way): so this one was placed by it and replaced since by a
			// later change (of a generation above; maybe fenced since by
			// another), which saw every store of the change's new set
			// placed (it had to give them all, and a fenced one would have
			// refused it). The later change is the set now, and this
			// one's part here is done.
			c.done[i] = true
			c.logf("%s is %s: placed by change %s and changed since", c.name(i), p.Describe(), m.Change)
		case p.Moving():
			return SetChange{}, fmt.Errorf("%w: %s is fenced by another change under way, %s to generation %d: "+
				"abandon that one first (--abandon, with exactly its own stores)", frond.ErrInvalidArgument, c.name(i), p.Move.Change, p.Next)
		case writing && p.Gen < n && c.placedBy(m, n) < 0:
			// Committed, but this store was put back by an abandon that ran
			// at once (it read the fence before the run marked it): the
			// run could not mark it, so no store was placed. It is fenced
			// again below and every store raised again, from max_id
			// values read with all of them fenced.
			c.logf("%s is %s: put back by an abandon while change %s committed; fencing it again", c.name(i), p.Describe(), m.Change)
		case writing:
			return SetChange{}, fmt.Errorf("%w: change %s to generation %d had raised its stores, but %s is %s, neither fenced nor placed by it nor by a later change: "+
				"the stores were changed by hand or by another tool; read docs/stores.md before going on", frond.ErrInvalidArgument, m.Change, n, c.name(i), p.Describe())
		case p.Gen >= n:
			return SetChange{}, fmt.Errorf("%w: change %s to generation %d was interrupted, and %s has been placed since by another change (%s): "+
				"undo the interrupted one (--abandon, with its stores), then change the set again", frond.ErrInvalidArgument, m.Change, n, c.name(i), p.Describe())
		}
	}
	if !writing {
		if err := c.complete(standing); err != nil {
			return SetChange{}, err
		}
	}
	c.logf("finishing the interrupted change %s to generation %d (%d stores, %d retired)", m.Change, n, c.nset, len(c.ids)-c.nset)
	fence := c.claim // before it commits: every fence anew
	if writing {
		fence = c.fence // committed: no store goes back; nothing to claim
	}
	if err := fence(ctx, n, m); err != nil {
		return SetChange{}, err
	}
	out, err := c.finish(ctx, n, m, !writing || reraise) // once committed, every store was raised (unless one was put back)
	out.Resumed = true
	return out, err
}

// swap sets the place of store i to p by compare-and-set from the place
// last read, which a concurrent run of the same change may have written
// already.
func (c *changer) swap(ctx context.Context, i int, p frond.Place) error {
	err := c.ps[i].SwapPlace(ctx, c.places[i], p)
	if errors.Is(err, frond.ErrPlaceChanged) {
		if now, rerr := c.ps[i].Place(ctx); rerr == nil && now == p {
			err = nil
		}
	}
	if err == nil {
		c.places[i] = p
	}
	return err
}

// fence fences, for change m to generation n, every store not fenced or
// placed by it yet.
func (c *changer) fence(ctx context.Context, n int64, m frond.Move) error {
	return c.fenceAll(ctx, n, m, false)
}

// claim fences, for change m to generation n, every store not fenced yet,
// and writes every fence of m anew with this run's identity, in order,
// before the run reads a max_id: each by compare-and-set from the fence
// it read, so that an abandon's put-back of a store and this run's claim
// of it exclude each other, and a store this run holds cannot be put back
// unless an abandon first marks the first store, which this run's commit
// then finds changed. Without it a run could commit over a store put back
// and serving since it read the fences (a review of issue 42).
func (c *changer) claim(ctx context.Context, n int64, m frond.Move) error {
	return c.fenceAll(ctx, n, m, true)
}

func (c *changer) fenceAll(ctx context.Context, n int64, m frond.Move, rewrite bool) error {
	for i, p := range c.places {
		if c.done[i] || p.Moving() && (!rewrite || p.Move.Change != m.Change) {
			continue
		}
		f := p
		f.Next, f.Move = n, m
		f.Move.Run, f.Move.Raised, f.Move.Abandon = c.run, false, false
		if err := c.swap(ctx, i, f); err != nil {
			return fmt.Errorf("fence %s for change %s (is another change, or an abandon, running?): %w; "+
				"run the same command again to finish this change, or --abandon with the same stores to undo it", c.name(i), m.Change, err)
		}
		if !p.Moving() {
			c.logf("fenced %s (%s)", c.name(i), p.Describe())
		}
	}
	return nil
}

// finish raises the stores of the new set (if raise) and writes the new
// places of change m to generation n: every store given is fenced by m or
// placed by it.
func (c *changer) finish(ctx context.Context, n int64, m frond.Move, raise bool) (SetChange, error) {
	out := SetChange{Gen: n, Change: m.Change}
	if raise {
		if err := c.raise(ctx, &out); err != nil {
			return out, err
		}
	}
	// Mark every fence raised, the first store's first: that mark is the
	// change's commit. From it on the change can only be finished; an
	// abandon's first write is the opposite mark on the same fence, and
	// each is a compare-and-set from the fence as this run read it, which
	// another run's fence (after an abandon put the store back) does not
	// match: if this mark lands, no store was put back since this run
	// read every max_id, and none will be.
	for i, p := range c.places {
		if !p.Moving() || p.Move.Change != m.Change || p.Move.Raised {
			continue
		}
		r := p
		r.Move.Raised = true
		err := c.swap(ctx, i, r)
		if err != nil && i > 0 {
			// Another run of the change, committed too, marked it first.
			if now, rerr := c.ps[i].Place(ctx); rerr == nil && now.Moving() && now.Move.Change == m.Change && now.Move.Raised {
				c.places[i], err = now, nil
			}
		}
		if err != nil {
			return out, fmt.Errorf("mark %s raised for change %s (is an abandon or another run of it running?): %w; run the same command again", c.name(i), m.Change, err)
		}
	}
	k := int64(c.nset)
	for i, p := range c.places {
		q := frond.Place{Residue: int64(i), Of: k, Gen: n, Change: m.Change} // Of 1: the set's only store, served to nodes alone too
		if i >= c.nset {
			q = frond.Place{Gen: n, Change: m.Change} // retired: matches no node's request
		}
		if i < c.nset {
			out.Places = append(out.Places, q)
		}
		if p == q || c.done[i] {
			continue
		}
		if err := c.swap(ctx, i, q); err != nil {
			return out, fmt.Errorf("place %s for change %s (is another change running?): %w; run the same command again to finish it", c.name(i), m.Change, err)
		}
		c.logf("%s is now %s", c.name(i), q.Describe())
	}
	return out, nil
}

// ErrTagsDisagree is ChangeSet's refusal of stores whose copies of a tag
// disagree (another mode or mapping, or a change of mapping cut short):
// before it fences a store, or under the fence, which then stays until the
// change is abandoned or run again. It wraps frond.ErrInvalidArgument.
var ErrTagsDisagree = fmt.Errorf("%w: copies of a tag disagree", frond.ErrInvalidArgument)

// seenTag is a tag as the stores given hold it: its first copy (the
// template of the copies a store lacks) and the highest max_id.
type seenTag struct {
	tag  frond.Tag
	max  int64
	from int // the store given whose copy tag is
}

// readTags reads every tag of every store given: each tag once (seenTag),
// and each store's max_id of each tag it has. Copies of one tag that
// disagree (another mode or mapping, or a change of mapping under way)
// are refused, naming them (issue 57): a set keeps one tag on every store,
// and this change would otherwise copy one of them to the stores that
// lack it. Under the fence (raise) nothing changes a tag meanwhile: tag
// administration is fenced like allocation.
func (c *changer) readTags(ctx context.Context) (map[string]*seenTag, []map[string]int64, error) {
	tags := map[string]*seenTag{}
	have := make([]map[string]int64, len(c.ps))
	var bad []string
	for i, s := range c.ps {
		list, err := s.Tags(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("read the tags of %s: %w", c.name(i), err)
		}
		have[i] = map[string]int64{}
		for _, t := range list {
			have[i][t.Name] = t.MaxID
			if from, to, moving := frond.ParseMappingChange(t.Mapping); moving && len(bad) < 8 {
				bad = append(bad, fmt.Sprintf("tag %q in %s is fenced by a change of its mapping from %s to %s, which was cut short", t.Name, c.name(i), frond.MappingName(from), frond.MappingName(to)))
			}
			v, ok := tags[t.Name]
			if !ok {
				tags[t.Name] = &seenTag{tag: t, max: t.MaxID, from: i}
				continue
			}
			v.max = max(v.max, t.MaxID)
			if err := SameTag(t, v.tag, c.name(i)); err != nil && len(bad) < 8 {
				bad = append(bad, fmt.Sprintf("%v (%s has it as a %s tag of %s numbers)", err, c.name(v.from), v.tag.ModeName(), v.tag.MappingName()))
			}
		}
	}
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("%w, and no change of the set can make them one tag: %s. "+
			"A change of mapping under way (a mapping a>b) is finished by frond tag set TAG --mapping b through a node listing every store; "+
			"copies that disagree otherwise (made before frond fenced tag changes) have handed out numbers that may meet: frond audit reports them; "+
			"move the tag's users to a new tag", ErrTagsDisagree, strings.Join(bad, "; "))
	}
	return tags, have, nil
}

// raise reads every tag's max_id in every store (all fenced) and raises
// every store of the new set to the highest plus the margin.
func (c *changer) raise(ctx context.Context, out *SetChange) error {
	tags, have, err := c.readTags(ctx)
	if err != nil {
		return fmt.Errorf("%w; the stores stay fenced: undo this change (--abandon, with the same stores), mend the tag, then change the set again", err)
	}
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	slices.Sort(names)
	out.Tags = len(names)
	for i := range c.nset {
		for _, n := range names {
			v := tags[n]
			margin := c.o.Margin
			if margin < 0 {
				margin = v.tag.Step
			}
			target := v.max
			if target > math.MaxInt64-margin {
				target = math.MaxInt64
			} else {
				target += margin
			}
			cur, ok := have[i][n]
			err := c.raiseOne(ctx, i, n, cur, ok, target, v.tag, out)
			if errors.Is(err, frond.ErrWrongPlace) {
				// The store's fence is not this change's any more: an
				// abandon put it back, or another change fenced it, at once.
				return fmt.Errorf("%w: %v; run the same command again", frond.ErrPlaceChanged, err)
			}
			if err != nil {
				return err
			}
		}
		c.logf("raised %s: every tag above the highest max_id of every store", c.name(i))
	}
	return nil
}

// raiseOne raises tag n of store i (max_id cur, if ok: it has the tag) to
// target, or creates it there from the template t, under the change's
// fence of the store (tag administration at c.places[i]).
func (c *changer) raiseOne(ctx context.Context, i int, n string, cur int64, ok bool, target int64, t frond.Tag, out *SetChange) error {
	switch {
	case !ok:
		t.MaxID = target
		if _, err := c.ps[i].CreateTagAt(ctx, c.places[i], t); err != nil && !errors.Is(err, frond.ErrTagExists) {
			return fmt.Errorf("create tag %q in %s at max_id %d: %w", n, c.name(i), target, err)
		} else if err != nil {
			// Created meanwhile (a concurrent run of the same change): raise it.
			if _, err := c.ps[i].UpdateTagAt(ctx, c.places[i], n, frond.TagUpdate{MaxID: &target}); err != nil && !errors.Is(err, frond.ErrWouldReissue) {
				return fmt.Errorf("raise tag %q in %s to %d: %w", n, c.name(i), target, err)
			}
		}
		out.Created++
	case cur < target:
		// ErrWouldReissue: above the target already (a concurrent run).
		if _, err := c.ps[i].UpdateTagAt(ctx, c.places[i], n, frond.TagUpdate{MaxID: &target}); err != nil && !errors.Is(err, frond.ErrWouldReissue) {
			return fmt.Errorf("raise tag %q in %s from max_id %d to %d: %w", n, c.name(i), cur, target, err)
		}
		out.Raised++
	}
	return nil
}

// complete checks that the stores given, at places standing (before any
// change under way), hold every store that may hand out IDs of a set one
// of them belongs to, so that the change sees every max_id:
//
//   - every set among them (a generation and the change that made it) is
//     given whole: each residue once, all of one size;
//   - a store retired at generation g means the set of generation g, or a
//     later one, exists: one of its stores must be given.
func (c *changer) complete(standing []frond.Place) error {
	type set struct {
		gen    int64
		change string
	}
	sets := map[set][]int{} // the stores of each set among those given
	var order []set
	var retired []set // the changes that retired a store given
	for i, p := range standing {
		switch {
		case p.Retired():
			retired = append(retired, set{p.Gen, p.Change})
		case p.Of > 0:
			k := set{p.Gen, p.Change}
			if _, ok := sets[k]; !ok {
				order = append(order, k)
			}
			sets[k] = append(sets[k], i)
		}
	}
	for _, r := range retired {
		// The set that change made, or a later one (of a generation
		// above), must be among the stores given.
		if !slices.ContainsFunc(order, func(k set) bool { return k == r || k.gen > r.gen }) {
			return fmt.Errorf("%w: a store given was retired by the change to %s, but no store of that set or a later one is given: "+
				"give every store of the current set (in the new set, or to retire), since each may hold IDs this change must see",
				frond.ErrInvalidArgument, frond.Place{Gen: r.gen, Change: r.change}.Set())
		}
	}
	var errs []error
	for _, k := range order {
		members := sets[k]
		of := standing[members[0]].Of
		got := make([]int, of)
		for _, i := range members {
			p := standing[i]
			if p.Of != of {
				errs = append(errs, fmt.Errorf("%s is %s, and %s %s: one set, two sizes", c.name(i), p.Describe(), c.name(members[0]), standing[members[0]].Describe()))
				continue
			}
			got[p.Residue]++
		}
		var missing []string
		for r, n := range got {
			if n == 0 {
				missing = append(missing, fmt.Sprint(r))
			}
			if n > 1 {
				errs = append(errs, fmt.Errorf("%d stores given are residue %d of the set of %s: two stores with one place", n, r, standing[members[0]].Set()))
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("the set of %s has %d stores, and residue %s %s not among the stores given: "+
				"give every store of the current set (in the new set, or to retire), since each may hold IDs this change must see",
				standing[members[0]].Set(), of, strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	return nil
}
