package segment

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// ErrNotPlaced means a store this node lists with others stands alone: it
// was never made a member of a set of stores (frond stores set). No ID is
// taken from it and no tag created through it (issue 44, item 5). It wraps
// frond.ErrWrongPlace.
var ErrNotPlaced = fmt.Errorf("%w: stores never made a set", frond.ErrWrongPlace)

// notPlaced is ErrNotPlaced for the stores named alone of total, with what
// to do: the same words at start, in /readyz, and for every refusal.
func notPlaced(alone []string, total int) error {
	verb := "stands"
	if len(alone) > 1 {
		verb = "stand"
	}
	return fmt.Errorf("%w: this node lists %d stores, and %s %s alone, never made a set: "+
		"run frond stores set once with this node's store setting (its store: key, FROND_STORE or --store; docs/stores.md), "+
		"then every node listing them serves them", ErrNotPlaced, total, strings.Join(alone, ", "), verb)
}

// Multi combines K independent stores for availability (seed 000's "several
// instances with offset and step", TinyID's delta and remainder). Each store
// keeps its own max_id per tag in the shared ID space, and a store whose
// place is residue i of K (frond.Place, recorded in the store by ChangeSet)
// only ever hands out the IDs of its ranges that are congruent to i modulo
// K. Two stores therefore never issue the same ID, whatever their max_id
// values, and when one store is down the others carry on.
//
// A node never decides a residue: it reads each store's place from the
// store when it first uses it and allocates at that place, and the store
// checks the place in the same atomic operation that raises max_id, so a
// node whose view is stale gets nothing (and reads the place again). The
// order of a node's list does not matter, nor must it hold every store of
// the set. A segment of step s from a store holds about s/K IDs.
//
// Allocate sticks to the store that answered last and fails over to the next
// one on error. Segment IDs of a node therefore increase while one store
// serves, and may step back once at a fail-over when the other store's
// max_id is behind: unique always, ordered per node only between
// fail-overs.
type Multi struct {
	stores []frond.SegmentStore
	pref   atomic.Int64
	places []atomic.Pointer[frond.Place] // each store's place as last read; nil: not read yet
	clock  frond.Clock
	every  time.Duration
	read   atomic.Int64 // when every place was last read (unix ns)
	busy   atomic.Bool  // a reading of every place is under way
	again  atomic.Bool  // another reading was asked for while one ran: it reads once more
	// ticks orders the readings of places: each reading of a store's place
	// takes a tick before it asks the store, and stores what it read only
	// if no reading begun after it stored first (at[i], under mu), so a
	// slow reading begun before a change of the set never overwrites what a
	// later one read after it.
	ticks atomic.Uint64
	mu    sync.Mutex
	at    []uint64 // the tick of the reading places[i] holds
}

// DefaultPlaceRefresh is how often a Multi reads the place of every store
// again, besides whenever a store refuses it.
const DefaultPlaceRefresh = 10 * time.Second

// NewMulti returns a store over stores, in any order.
func NewMulti(stores ...frond.SegmentStore) (*Multi, error) {
	if len(stores) < 1 {
		return nil, fmt.Errorf("%w: multi-store needs at least one store", frond.ErrInvalidArgument)
	}
	return &Multi{stores: stores, places: make([]atomic.Pointer[frond.Place], len(stores)), at: make([]uint64, len(stores)), clock: frond.SystemClock{}, every: DefaultPlaceRefresh}, nil
}

// RefreshPlaces sets how often m reads the place of every store again
// (DefaultPlaceRefresh by default; at least a millisecond), by clock: on
// the first allocation after that long, before it.
func (m *Multi) RefreshPlaces(every time.Duration, clock frond.Clock) {
	m.every, m.clock = max(every, time.Millisecond), clock
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
		if errors.Is(err, frond.ErrWrongPlace) {
			misplaced++
		}
		errs = append(errs, fmt.Errorf("store %d: %w", i, err))
	}
	if notFound == int(k) {
		return errors.Join(errs...) // wraps ErrTagNotFound
	}
	if misplaced == int(k) {
		return fmt.Errorf("%w: all %d stores: %v", frond.ErrWrongPlace, k, errors.Join(errs...))
	}
	// Some store is down: an outage, even if others do not know the tag
	// (a partly failed CreateTag). %v, not %w: errors.Is must not find
	// ErrTagNotFound, which would drop the buffer and answer 404.
	return fmt.Errorf("%w: all %d stores failed: %v", frond.ErrStoreUnavailable, k, errors.Join(errs...))
}

// Allocate implements frond.SegmentStore: it takes a segment from the
// preferred store, at the store's place, and keeps the IDs of its residue.
func (m *Multi) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	var out frond.Allocation
	err := m.attempt(ctx, func(ctx context.Context, i int) error {
		return m.atPlace(ctx, i, func(p frond.Place) error {
			a, err := frond.AllocateAt(ctx, m.stores[i], p, tag, step)
			if err != nil {
				return err
			}
			if a.Stride > 1 {
				return fmt.Errorf("%w: store %d returned a range of stride %d; multi-stores do not nest", frond.ErrInvalidArgument, i, a.Stride)
			}
			k := max(p.Of, 1)
			r := Residue(a.Range, p.Residue, k)
			if r.Len() == 0 {
				return fmt.Errorf("%w: step %d of tag %q holds no ID of residue %d mod %d; use steps of at least %d", frond.ErrInvalidArgument, a.Len(), tag, p.Residue, k, k)
			}
			out = frond.Allocation{Range: r, Step: a.Step, Mapping: a.Mapping}
			return nil
		})
	})
	return out, err
}

// AllocateIDs implements frond.SequenceStore: a sequence tag's IDs from
// one store, those of its residue among the n*K it is asked for (each
// store's own mechanism: frond.SequenceIDsAt). Each store's IDs increase,
// but nothing orders those of two stores: a sequence tag of a multi-store
// is unique, not linearizable. It may return fewer than n IDs.
func (m *Multi) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	var out []frond.Range
	err := m.attempt(ctx, func(ctx context.Context, i int) error {
		return m.atPlace(ctx, i, func(p frond.Place) error {
			k := max(p.Of, 1)
			rs, err := frond.SequenceIDsAt(ctx, m.stores[i], p, tag, n*k)
			if err != nil {
				return err
			}
			out = out[:0]
			for _, r := range rs {
				if r.Stride > 1 {
					return fmt.Errorf("%w: store %d returned a range of stride %d; multi-stores do not nest", frond.ErrInvalidArgument, i, r.Stride)
				}
				if r := Residue(r, p.Residue, k); r.Len() > 0 {
					out = append(out, r)
				}
			}
			if len(out) == 0 {
				return fmt.Errorf("%w: tag %q: store %d handed out no ID of residue %d mod %d", frond.ErrStoreUnavailable, tag, i, p.Residue, k)
			}
			return nil
		})
	})
	return out, err
}

// atPlace runs op at the place of store i: as last read, or read now. When
// the store refuses op's place (frond.ErrWrongPlace: the set changed since
// it was read), its place is read again and op tried once more, and the
// places of the other stores are read again in the background; so are
// they when they were last read longer ago than the refresh interval
// (RefreshPlaces). A node so learns a change of the set by itself, without
// readiness probes.
func (m *Multi) atPlace(ctx context.Context, i int, op func(p frond.Place) error) error {
	if now := m.clock.Now().UnixNano(); now-m.read.Load() >= int64(m.every) {
		m.readAll(ctx, now)
	}
	for fresh := false; ; fresh = true {
		p, err := m.place(ctx, i, fresh)
		if err != nil {
			return err
		}
		err = op(p)
		if !errors.Is(err, frond.ErrWrongPlace) || fresh {
			return err
		}
		m.readAll(ctx, m.clock.Now().UnixNano())
	}
}

// placeReadTimeout bounds a background reading of a store's place.
const placeReadTimeout = 5 * time.Second

// readAll reads the place of every store again, in the background (an
// allocation never waits for a slow store's place); a store that does not
// answer keeps the place last read. While a reading runs, it is read once
// more when it ends: a reading begun before a change of the set would
// otherwise be the last (issue 57, item 5).
func (m *Multi) readAll(ctx context.Context, now int64) {
	m.read.Store(now)
	m.again.Store(true)
	if !m.busy.CompareAndSwap(false, true) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		mixed := false // read once more for places of two generations
		for {
			for m.again.Swap(false) {
				var wg sync.WaitGroup
				for i := range m.stores {
					wg.Go(func() {
						c, cancel := context.WithTimeout(ctx, placeReadTimeout)
						defer cancel()
						m.place(c, i, true)
					})
				}
				wg.Wait()
				if !mixed && m.mixedGenerations() {
					// Some places read before a change of the set and some
					// after (the reads run at once): read them all once
					// more, or the stale ones would stand until the next
					// refresh.
					mixed = true
					m.again.Store(true)
				}
			}
			m.busy.Store(false)
			// Asked for between the last check and now: read again, unless
			// the caller started a reading of its own.
			if !m.again.Load() || !m.busy.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// mixedGenerations reports whether the places last read are of two sets'
// generations (retired stores aside).
func (m *Multi) mixedGenerations() bool {
	gen := int64(-1)
	for i := range m.places {
		p := m.places[i].Load()
		if p == nil || p.Of == 0 {
			continue
		}
		if gen >= 0 && p.Gen != gen {
			return true
		}
		gen = p.Gen
	}
	return false
}

// readPlace reads the place of store i and keeps it unless a reading begun
// after this one kept its own first (ticks).
func (m *Multi) readPlace(ctx context.Context, i int) (frond.Place, error) {
	tick := m.ticks.Add(1)
	p, err := frond.PlaceOf(ctx, m.stores[i])
	if err != nil {
		return frond.Place{}, err
	}
	m.mu.Lock()
	if tick > m.at[i] {
		m.at[i] = tick
		if p.Moving() {
			m.places[i].Store(nil) // read again once the change is done
		} else {
			m.places[i].Store(&p)
		}
	}
	m.mu.Unlock()
	return p, nil
}

// place returns the place this node allocates at from store i, read from
// the store if fresh or not read yet, with an error wrapping
// frond.ErrWrongPlace when this node must not allocate from it.
func (m *Multi) place(ctx context.Context, i int, fresh bool) (frond.Place, error) {
	if p := m.places[i].Load(); p != nil && !fresh && m.usable(i, *p) == nil {
		return *p, nil
	}
	// Not read yet, or not usable as last read: the set may have changed.
	p, err := m.readPlace(ctx, i)
	if err != nil {
		return frond.Place{}, err
	}
	return p, m.usable(i, p)
}

// usable says why this node must not allocate from store i at p: a change
// of the set is under way, the store was retired, it stands alone while
// this node lists several stores, or it is of an older set than another
// store of this node's.
func (m *Multi) usable(i int, p frond.Place) error {
	switch {
	case p.Fenced():
		return fmt.Errorf("%s: %w", m.name(i), frond.WrongPlace(p, p.Rearmed()))
	case p.Moving():
		return fmt.Errorf("%w: %s is fenced: a change of the set to generation %d is under way (frond stores set); it serves again once the change is done", frond.ErrWrongPlace, m.name(i), p.Next)
	case p.Retired():
		return fmt.Errorf("%w: %s was %s: remove it from this node's list", frond.ErrWrongPlace, m.name(i), p.Describe())
	case p.Alone() && len(m.stores) > 1:
		// A store never placed is a whole ID space of its own.
		return notPlaced([]string{m.name(i)}, len(m.stores))
	}
	for j := range m.places {
		q := m.places[j].Load()
		switch {
		case q == nil || q.Of == 0:
		case q.Gen > p.Gen:
			return fmt.Errorf("%w: %s is %s, of an older set than %s (%s): it was not part of the latest change of the set", frond.ErrWrongPlace, m.name(i), p.Describe(), m.name(j), q.Describe())
		case q.Gen == p.Gen && q.Change != p.Change:
			return fmt.Errorf("%w: %s is %s, and %s is %s: two sets of one generation, made by two changes; "+
				"list the stores of one set (frond stores show)", frond.ErrWrongPlace, m.name(i), p.Describe(), m.name(j), q.Describe())
		}
	}
	return nil
}

// Residues is how many residue classes the stores of m share, as their
// places say (the number of stores before any is read): an Allocate of
// step s hands out about s/Residues IDs.
func (m *Multi) Residues() int {
	k := int64(0)
	for i := range m.places {
		if p := m.places[i].Load(); p != nil {
			k = max(k, p.Of)
		}
	}
	if k == 0 {
		return len(m.stores)
	}
	return int(k)
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

// TagCopies implements frond.TagCopier: the tag as every store holds it,
// in the order of the stores. It fails when one of them cannot answer.
func (m *Multi) TagCopies(ctx context.Context, name string) ([]frond.Tag, error) {
	out := make([]frond.Tag, len(m.stores))
	err := m.each(func(i int, s frond.SegmentStore) (err error) {
		out[i], err = s.Tag(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TagsAfter implements frond.TagPager: a page of the first store that
// answers.
func (m *Multi) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	var out []frond.Tag
	err := m.attempt(ctx, func(ctx context.Context, i int) (err error) {
		out, err = frond.TagsAfter(ctx, m.stores[i], after, limit)
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

// Unplaced returns an error wrapping ErrNotPlaced, naming them, when stores
// of m stand alone (never made a set); nil otherwise, and for a store that
// cannot be read now (its place is checked at each allocation). It reads a
// store's place only when none that is usable was read before.
func (m *Multi) Unplaced(ctx context.Context) error {
	var alone []string
	for i := range m.stores {
		if _, err := m.place(ctx, i, false); errors.Is(err, ErrNotPlaced) {
			alone = append(alone, m.name(i))
		}
	}
	if len(alone) == 0 {
		return nil
	}
	return notPlaced(alone, len(m.stores))
}

// ErrNotWholeSet means this node does not list every store of its set, or
// the set is being changed: a tag's identity (its mode and mapping) must
// be the same in every store of the set, so its administration needs them
// all (issue 57). It wraps frond.ErrWrongPlace.
var ErrNotWholeSet = fmt.Errorf("%w: tag administration needs every store of the set", frond.ErrWrongPlace)

// wholeSet reads the place of every store now and returns them when this
// node lists exactly the stores of one set, none fenced: the places tag
// administration is done at, each checked again by its store in the same
// atomic operation as the change (frond.PlacedStore.UpdateTagAt). A store
// that does not answer, a set this node lists only part of, stores of two
// sets, a fenced, retired or lone store: each refuses with ErrNotWholeSet
// and what to do.
func (m *Multi) wholeSet(ctx context.Context) ([]frond.Place, error) {
	places := make([]frond.Place, len(m.stores))
	errs := make([]error, len(m.stores))
	var wg sync.WaitGroup
	for i := range m.stores {
		wg.Go(func() { places[i], errs[i] = m.readPlace(ctx, i) })
	}
	wg.Wait()
	how := "send it to a node that lists every store of the set (frond tag ... --server), and give this node the whole set (its store: key) when it restarts; frond stores show prints the set"
	var down []string
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", m.name(i), err))
		}
	}
	if len(down) > 0 {
		return nil, fmt.Errorf("%w: a tag is one tag on every store of its set, and %s did not answer: try again once every store answers", ErrNotWholeSet, strings.Join(down, "; "))
	}
	k := int64(len(m.stores))
	if k == 1 {
		if p := places[0]; p.Alone() || p.Of == 1 && !p.Moving() {
			return places, nil
		}
	}
	seen := make([]bool, k)
	for i, p := range places {
		switch {
		case p.Moving():
			return nil, fmt.Errorf("%w: %s is fenced by a change of the set under way (change %s to generation %d): finish it (frond stores set, again with the same stores) or abandon it, then change the tag",
				ErrNotWholeSet, m.name(i), p.Move.Change, p.Next)
		case p.Retired():
			return nil, fmt.Errorf("%w: %s was %s: remove it from this node's list", ErrNotWholeSet, m.name(i), p.Describe())
		case p.Alone():
			return nil, notPlaced([]string{m.name(i)}, len(m.stores))
		case p.Gen != places[0].Gen || p.Change != places[0].Change:
			return nil, fmt.Errorf("%w: %s is %s, and %s is %s: two sets; list the stores of one set: %s", ErrNotWholeSet, m.name(i), p.Describe(), m.name(0), places[0].Describe(), how)
		case p.Of != k || seen[p.Residue]:
			return nil, fmt.Errorf("%w: this node lists %d stores, and %s is %s: %s", ErrNotWholeSet, k, m.name(i), p.Describe(), how)
		}
		seen[p.Residue] = true
	}
	return places, nil
}

// copies reads the tag from every store at once: each copy, or an error
// (ErrTagNotFound where a store lacks it).
func (m *Multi) copies(ctx context.Context, name string) ([]frond.Tag, []error) {
	out := make([]frond.Tag, len(m.stores))
	errs := make([]error, len(m.stores))
	var wg sync.WaitGroup
	for i, s := range m.stores {
		wg.Go(func() { out[i], errs[i] = s.Tag(ctx, name) })
	}
	wg.Wait()
	return out, errs
}

// SameTag says why copy c of a tag (in the store named where) is not the
// tag t: another mode, or another mapping (a change of mapping under way
// counts as another); nil when it is. Stores of a set keep one tag: the
// residues keep their numbers apart only when every store hands out the
// tag's counter in one mapping (a Mist number's residue is random).
func SameTag(c, t frond.Tag, where string) error {
	cm, tm := frond.StoredMapping(c.Mapping), frond.StoredMapping(t.Mapping)
	cmode, tmode := frond.StoredMode(c.Mode), frond.StoredMode(t.Mode)
	if cm == tm && cmode == tmode {
		return nil
	}
	return fmt.Errorf("tag %q exists in %s as a %s tag of %s numbers, not a %s tag of %s numbers: "+
		"a tag is one tag on every store of its set (docs/stores.md)", t.Name, where, c.ModeName(), c.MappingName(), t.ModeName(), t.MappingName())
}

// CreateTag implements frond.SegmentStore: it creates the tag in every
// store of the set, as one tag (issue 57). Every store must answer and
// this node must list the whole set (wholeSet). The tag is read from
// every store first: where a copy exists in another mode or mapping, or a
// change of mapping is under way, nothing is created (frond.ErrTagExists,
// naming it); where every store has it, frond.ErrTagExists; else the
// stores that lack it get it, in residue order, each at its place. Two
// creations at once race for the first store that lacks the tag, so the
// second finds the first's copy there and creates nothing unless it is
// the same tag. A store that fails midway leaves the tag in the stores
// before it: creating it again (the same tag) completes the set.
//
// It refuses while stores stand alone (Unplaced): the tag would be created
// and then every request of it refused.
func (m *Multi) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	if err := m.Unplaced(ctx); err != nil {
		return frond.Tag{}, err
	}
	places, err := m.wholeSet(ctx)
	if err != nil {
		return frond.Tag{}, err
	}
	copies, errs := m.copies(ctx, t.Name)
	var missing []int
	for i, err := range errs {
		switch {
		case errors.Is(err, frond.ErrTagNotFound):
			missing = append(missing, i)
		case err != nil:
			return frond.Tag{}, fmt.Errorf("create %q: read %s: %w", t.Name, m.name(i), err)
		default:
			if err := SameTag(copies[i], t, m.name(i)); err != nil {
				return frond.Tag{}, fmt.Errorf("%w: %w; create it with its mode and mapping to complete the set, or delete it from every store first", frond.ErrTagExists, err)
			}
		}
	}
	if len(missing) == 0 {
		return frond.Tag{}, fmt.Errorf("create %q: %w in every store", t.Name, frond.ErrTagExists)
	}
	// Residue order: every creator meets the others' copies in the same
	// store first.
	slices.SortFunc(missing, func(a, b int) int { return int(places[a].Residue - places[b].Residue) })
	var out frond.Tag
	for _, i := range missing {
		got, err := frond.CreateTagAt(ctx, m.stores[i], places[i], t)
		if errors.Is(err, frond.ErrTagExists) {
			// Created meanwhile by another node: the same tag, or stop.
			if got, err = m.stores[i].Tag(ctx, t.Name); err == nil {
				err = SameTag(got, t, m.name(i))
			}
			if err != nil {
				return frond.Tag{}, fmt.Errorf("%w: %w; another creation of it ran at once", frond.ErrTagExists, err)
			}
		}
		if err != nil {
			return frond.Tag{}, fmt.Errorf("create %q in %s (the stores before it in the set have it; create it again to complete the set): %w", t.Name, m.name(i), err)
		}
		if out.Name == "" {
			out = got
		}
	}
	return out, nil
}

// UpdateTag implements frond.SegmentStore: it updates every store of the
// set, each at its place (wholeSet).
func (m *Multi) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	places, err := m.wholeSet(ctx)
	if err != nil {
		return frond.Tag{}, err
	}
	var out frond.Tag
	err = m.each(func(i int, s frond.SegmentStore) error {
		got, err := frond.UpdateTagAt(ctx, s, places[i], name, u)
		if err == nil && out.Name == "" {
			out = got
		}
		return err
	})
	return out, err
}

// DeleteTag implements frond.SegmentStore: it deletes the tag from every
// store of the set, each at its place (wholeSet).
func (m *Multi) DeleteTag(ctx context.Context, name string) error {
	places, err := m.wholeSet(ctx)
	if err != nil {
		return err
	}
	return m.each(func(i int, s frond.SegmentStore) error { return frond.DeleteTagAt(ctx, s, places[i], name) })
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
				_, errs[i] = frond.TagsAfter(ctx, s, "", 1)
			}
			if errs[i] == nil {
				_, errs[i] = m.place(ctx, i, true) // a misplaced store shows in readiness
			}
		})
	}
	wg.Wait()
	var down, alone []string
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", m.name(i), err))
		}
		if errors.Is(err, ErrNotPlaced) {
			alone = append(alone, m.name(i))
		}
	}
	if len(alone) == len(m.stores) {
		return notPlaced(alone, len(m.stores)) // one line that says what to do
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
