package segment

import (
	"context"
	"fmt"
	"slices"

	"github.com/frond-id/frond"
)

// Rearmed is what Rearm did to one store.
type Rearmed struct {
	Fence string // the finding the store was fenced with ("" when it was not)
	// Stays says why the fence stays: it is a keyed sequence space's
	// finding (frond.LostFindingSpace), taken off by that space's re-arm
	// (frond space rearm), which raises its sections above every node's
	// floors; this re-arm raises segment tags only.
	Stays  string
	Raised map[string]int64 // tags raised, to their new max_id
	Kept   int              // tags already above every floor
	// Missing are the tags of the floors the store does not hold (a
	// Redis restarted empty): created again, each must start above its
	// floor (frond tag create --max-id), or nodes refuse it again.
	Missing map[string]int64
}

// Rearm re-arms a segment store that lost acknowledged writes (issue 67):
// it raises every tag of the store to at least above and to the highest
// floor any of the nodes' floors report for it (in the tag's mapping:
// TagFloors.Highest), and each tag's count of deletions to the highest a
// node saw (frond.DeletionCounter), then takes the store's lost-data fence off
// (frond.Place.Lost), in that order, so that no node allocates below a
// floor in between. floors are each node's floors of this store (frond
// stores floors); a node whose floors are not given is covered only by
// above. Run again, it raises nothing more and finds no fence.
//
// It is refused while a change of the set is under way at the store. The
// raises are tag administration at the place read (the fence itself, if
// any), so that a store whose place changed meanwhile changes nothing.
func Rearm(ctx context.Context, s frond.SegmentStore, floors []map[string]TagFloors, above int64) (Rearmed, error) {
	out := Rearmed{Raised: map[string]int64{}, Missing: map[string]int64{}}
	p, err := frond.PlaceOf(ctx, s)
	if err != nil {
		return out, fmt.Errorf("read the store's place: %w", err)
	}
	if p.Moving() {
		return out, fmt.Errorf("%w: %s: finish or abandon the change of the set first (frond stores set)", frond.ErrPlaceChanged, p.Describe())
	}
	out.Fence = p.Lost
	seen := map[string]bool{}
	after := ""
	for {
		page, err := frond.TagsAfter(ctx, s, after, 1000)
		if err != nil {
			return out, fmt.Errorf("read the store's tags: %w", err)
		}
		for _, t := range page {
			seen[t.Name] = true
			target := above
			for _, f := range floors {
				if tf, ok := f[t.Name]; ok {
					target = max(target, tf.Highest(frond.ServedMapping(t.Mapping), t.Mode == frond.ModeSequence))
				}
			}
			if t.MaxID >= target {
				out.Kept++
				continue
			}
			if _, err := frond.UpdateTagAt(ctx, s, p, t.Name, frond.TagUpdate{MaxID: &target}); err != nil {
				return out, fmt.Errorf("raise tag %q to %d: %w (run the re-arm again)", t.Name, target, err)
			}
			out.Raised[t.Name] = target
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Name
	}
	// The deletions counted with the writes lost went back with them: each
	// tag's count is raised to the highest a node saw, or a tag deleted
	// and created again later would read as a loss to that node.
	deletions := map[string]int64{}
	for _, f := range floors {
		for name, tf := range f {
			deletions[name] = max(deletions[name], tf.Deletions)
		}
	}
	if d, ok := s.(frond.DeletionCounter); ok {
		for name, n := range deletions {
			if n == 0 {
				continue
			}
			if err := d.RaiseDeletions(ctx, name, n); err != nil {
				return out, fmt.Errorf("raise the deletions of tag %q to %d: %w (run the re-arm again)", name, n, err)
			}
		}
	}
	for _, f := range floors {
		for name, tf := range f {
			if !seen[name] {
				// In plain numbers (a Mist floor as its numbers), or as a
				// sequence tag's: an upper bound for any mapping.
				out.Missing[name] = max(out.Missing[name], tf.Highest("", false), tf.Ends[classSeq], tf.Ends[classOpaque])
			}
		}
	}
	if sp := frond.LostFindingSpace(p.Lost); sp != "" {
		out.Stays = fmt.Sprintf("it is keyed sequence space %q's finding: frond space rearm %s takes it off once its sections are above every node's floors", sp, sp)
		return out, nil
	}
	if ps, ok := s.(frond.PlacedStore); ok && p.Fenced() {
		if err := ps.SwapPlace(ctx, p, p.Rearmed()); err != nil {
			return out, fmt.Errorf("take the lost-data fence off: %w (run the re-arm again)", err)
		}
	}
	return out, nil
}

// MissingNames are the names of r.Missing, sorted.
func (r Rearmed) MissingNames() []string {
	names := make([]string, 0, len(r.Missing))
	for n := range r.Missing {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
