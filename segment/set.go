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

// SetOptions tune ChangeSet.
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

// SetChange is what ChangeSet did.
type SetChange struct {
	Gen     int64         // the generation of the new set
	Places  []frond.Place // the new place of each store of the set, in order
	Tags    int           // tags raised or checked in every store of the set
	Raised  int           // (store, tag) pairs whose max_id went up
	Created int           // (store, tag) pairs created where a store lacked the tag
	Resumed bool          // an interrupted change was found and finished
}

// ChangeSet makes set the stores that share one ID space, store i handing
// out the IDs congruent to i modulo len(set) (one store: the set's only store, which serves nodes that list it alone),
// and retires the stores of retire (no node allocates from them again
// until a change places them). It is the only safe way to add a store,
// remove one, reorder them, or go back to one store, and it is safe while
// nodes run:
//
//  1. Every store's place is read. Unless a change was interrupted (some
//     store is fenced), the stores of the newest set found must all be
//     given, in set or retire: a store left out would keep IDs this change
//     cannot see.
//  2. Every store is fenced (SwapPlace to its place with Next set): from
//     then on no node allocates from any of them (nodes serve what they
//     hold). A store's allocations are ordered against SwapPlace, so every
//     ID handed out from it is below the max_id read next.
//  3. Every tag's max_id is read in every store, and every store of the
//     new set is raised to the highest plus the margin (tags it lacks are
//     created there), so no store hands out an ID any store handed out.
//  4. The new places are written, each by compare-and-set from the fence.
//
// Nodes learn the new places from the stores (Multi re-reads a store's
// place when the store refuses its allocation). If ChangeSet fails midway
// the stores it fenced stay fenced, which is safe (no store serves), and
// calling it again with the same stores finishes the change.
func ChangeSet(ctx context.Context, set, retire []frond.SegmentStore, o SetOptions) (SetChange, error) {
	if len(set) == 0 {
		return SetChange{}, fmt.Errorf("%w: a set of stores needs at least one store", frond.ErrInvalidArgument)
	}
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	all := append(slices.Clip(set), retire...)
	name := func(i int) string {
		if i < len(o.Names) && o.Names[i] != "" {
			return o.Names[i]
		}
		if i >= len(set) {
			return fmt.Sprintf("retired store %d", i-len(set))
		}
		return fmt.Sprintf("store %d", i)
	}
	ps := make([]frond.PlacedStore, len(all))
	for i, s := range all {
		p, ok := s.(frond.PlacedStore)
		if !ok {
			return SetChange{}, fmt.Errorf("%w: %s keeps no place: it cannot be part of a set of stores", frond.ErrInvalidArgument, name(i))
		}
		ps[i] = p
	}

	// 1. Read the places; check the newest set is all here.
	places := make([]frond.Place, len(all))
	var out SetChange
	for i, s := range ps {
		p, err := s.Place(ctx)
		if err != nil {
			return SetChange{}, fmt.Errorf("read the place of %s: %w", name(i), err)
		}
		places[i] = p
		out.Resumed = out.Resumed || p.Moving()
		out.Gen = max(out.Gen, p.Gen, p.Next)
	}
	out.Gen++
	if err := completeSet(places, name); err != nil {
		return SetChange{}, err
	}
	logf("changing the set of stores to generation %d (%d stores, %d retired)", out.Gen, len(set), len(retire))

	// 2. Fence every store.
	fences := make([]frond.Place, len(all))
	for i, s := range ps {
		fences[i] = places[i]
		fences[i].Next = out.Gen
		if err := s.SwapPlace(ctx, places[i], fences[i]); err != nil {
			return SetChange{}, fmt.Errorf("fence %s (is another change running?): %w", name(i), err)
		}
		logf("fenced %s (%s)", name(i), places[i].Describe())
	}

	// 3. Read every max_id, raise the stores of the new set above them.
	type seen struct {
		tag frond.Tag
		max int64
	}
	tags := map[string]*seen{}
	have := make([]map[string]int64, len(all))
	for i, s := range ps {
		list, err := s.Tags(ctx)
		if err != nil {
			return SetChange{}, fmt.Errorf("read the tags of %s: %w", name(i), err)
		}
		have[i] = map[string]int64{}
		for _, t := range list {
			have[i][t.Name] = t.MaxID
			if v, ok := tags[t.Name]; !ok {
				tags[t.Name] = &seen{tag: t, max: t.MaxID}
			} else {
				v.max = max(v.max, t.MaxID)
			}
		}
	}
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	slices.Sort(names)
	out.Tags = len(names)
	for i := range set {
		for _, n := range names {
			v := tags[n]
			margin := o.Margin
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
			switch {
			case !ok:
				t := v.tag
				t.MaxID = target
				if _, err := ps[i].CreateTag(ctx, t); err != nil {
					return SetChange{}, fmt.Errorf("create tag %q in %s at max_id %d: %w", n, name(i), target, err)
				}
				out.Created++
			case cur < target:
				if _, err := ps[i].UpdateTag(ctx, n, frond.TagUpdate{MaxID: &target}); err != nil {
					return SetChange{}, fmt.Errorf("raise tag %q in %s from max_id %d to %d: %w", n, name(i), cur, target, err)
				}
				out.Raised++
			}
		}
		logf("raised %s: every tag above the highest max_id of every store", name(i))
	}

	// 4. Write the new places.
	k := int64(len(set))
	for i, s := range ps {
		p := frond.Place{Residue: int64(i), Of: k, Gen: out.Gen} // Of 1: the set's only store, served to nodes alone too
		if i >= len(set) {
			p = frond.Place{Gen: out.Gen} // retired: matches no node's request
		}
		if err := s.SwapPlace(ctx, fences[i], p); err != nil {
			return SetChange{}, fmt.Errorf("place %s (is another change running?): %w", name(i), err)
		}
		if i < len(set) {
			out.Places = append(out.Places, p)
		}
		logf("%s is now %s", name(i), p.Describe())
	}
	return out, nil
}

// completeSet checks that the stores given hold every store that may hand
// out IDs of the current set, so that this change sees every max_id:
//
//   - every residue of the newest set among them (a store fenced by an
//     interrupted change counts by the place it was fenced at);
//   - the set of the newest generation that retired a store among them (a
//     store retired at generation g means the set of generation g exists);
//   - when an interrupted change had begun writing its new places (a store
//     is placed at the generation a fence names), its old set was fenced
//     whole and raised past before any place was written: nothing of it is
//     needed again, and the newest set is the interrupted change's.
func completeSet(places []frond.Place, name func(int) string) error {
	writing := map[int64]bool{} // generations an interrupted change was writing
	for _, p := range places {
		if p.Moving() {
			for _, q := range places {
				if !q.Moving() && q.Of > 0 && q.Gen == p.Next {
					writing[p.Next] = true
				}
			}
		}
	}
	var newest frond.Place
	retired := int64(0)
	for _, p := range places {
		if p.Retired() {
			retired = max(retired, p.Gen)
		}
		if p.Of > 0 && p.Gen >= newest.Gen && (!p.Moving() || len(writing) == 0) {
			newest = p
		}
	}
	if newest.Of == 0 && retired == 0 {
		return nil // every store stands alone, never placed
	}
	if writing[newest.Gen] {
		return nil // the interrupted change's own new set: its stores are fenced or placed by it
	}
	if retired > newest.Gen {
		return fmt.Errorf("%w: a store given was retired by the change to generation %d, but no store of that set is given: "+
			"give every store of the current set (in the new set, or to retire), since each may hold IDs this change must see", frond.ErrInvalidArgument, retired)
	}
	got := make([]int, newest.Of)
	var errs []error
	for i, p := range places {
		if p.Gen != newest.Gen || p.Of == 0 || p.Moving() && len(writing) > 0 {
			continue
		}
		if p.Of != newest.Of {
			errs = append(errs, fmt.Errorf("%s is %s, another size of the same generation", name(i), p.Describe()))
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
			errs = append(errs, fmt.Errorf("%d stores given are residue %d of generation %d: the same store twice?", n, r, newest.Gen))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("the set of generation %d has %d stores, and residue %s %s not among the stores given: "+
			"give every store of the current set (in the new set, or to retire), since each may hold IDs this change must see",
			newest.Gen, newest.Of, strings.Join(missing, ", "), map[bool]string{true: "is", false: "are"}[len(missing) == 1]))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	return nil
}
