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

// mappingAttempts bounds the tries of the raise of a change of mapping
// that finds a copy moved past the raise it computed (each try doubles the
// headroom).
const mappingAttempts = 6

// ChangeMapping changes the mapping of tag name to *u.Mapping (with u's
// other fields) on every store s is made of (a Multi listing a whole set,
// or one store), in two steps (issue 57):
//
//  1. Fence: every copy is marked frond.MappingChange(from, to). From
//     then on no node hands out an ID of a new segment of the tag
//     (MappingChanging): what nodes hold is served, and every number the
//     old mapping gave comes from a counter below the max_id its copy had
//     when it was marked.
//  2. Raise: every copy is read (all marked), and each is raised, with
//     the new mapping, to one target: the new mapping's floor
//     (frond.MappingFloor) over the highest max_id of the marked copies
//     plus a headroom of maxStep (the largest step a node takes: the
//     adaptive maximum) or 16 steps, computed once. Each store checks the
//     raise against its own max_id as it is then (frond.TagUpdate.Apply);
//     when a copy moved past it (segments taken and skipped meanwhile),
//     every copy is read again and raised with twice the headroom.
//
// Every step is tag administration of the set (the store's place checked
// in the same transaction: frond.PlacedStore.UpdateTagAt), so a node that
// does not list the whole set, or a change of the set under way, changes
// nothing. Interrupted, the change is finished by running it again (a copy
// marked stays marked, serving nothing new, until then); copies that
// disagree otherwise (two settled mappings, a change to another mapping
// under way) are refused. A change to or from opaque, and of a sequence
// tag, is refused.
func ChangeMapping(ctx context.Context, s frond.SegmentStore, name string, u frond.TagUpdate, maxStep int64) (frond.Tag, error) {
	to := frond.StoredMapping(*u.Mapping)
	if err := frond.CheckMapping(to); err != nil {
		return frond.Tag{}, err
	}
	copies, err := frond.TagCopies(ctx, s, name)
	if err != nil {
		return frond.Tag{}, err
	}
	from, fence, err := mappingFrom(name, copies, to)
	if err != nil {
		return frond.Tag{}, err
	}
	if from == to { // every copy has it already: the other fields alone
		u.Mapping = nil
		if u.Step == nil && u.Description == nil && u.MaxID == nil {
			return copies[0], nil
		}
		return s.UpdateTag(ctx, name, u)
	}
	if _, err := frond.MappingFloor(from, to, 0); err != nil {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, err)
	}
	if fence {
		marked := frond.MappingChange(from, to)
		if _, err := s.UpdateTag(ctx, name, frond.TagUpdate{Mapping: &marked}); err != nil {
			return frond.Tag{}, fmt.Errorf("tag %q: fence every copy for the change of mapping from %s to %s: %w (nothing new is handed out from a fenced copy: run the same change again to finish it)",
				name, frond.MappingName(from), frond.MappingName(to), err)
		}
	}
	var last error
	for attempt := 0; attempt < mappingAttempts; attempt++ {
		copies, err := frond.TagCopies(ctx, s, name)
		if err != nil {
			return frond.Tag{}, fmt.Errorf("tag %q: read every copy for the change of mapping from %s to %s: %w (the copies stay fenced: run the same change again to finish it)",
				name, frond.MappingName(from), frond.MappingName(to), err)
		}
		top, topTo, step := int64(0), int64(0), int64(1)
		for _, c := range copies {
			switch frond.StoredMapping(c.Mapping) {
			case to: // finished by an earlier try or run, above every number of the old mapping
				topTo = max(topTo, c.MaxID)
			case frond.MappingChange(from, to):
				top = max(top, c.MaxID)
			default:
				return frond.Tag{}, fmt.Errorf("%w: tag %q: a copy became %s during the change of mapping from %s to %s: another change ran at once; run this one again",
					frond.ErrStoreUnavailable, name, c.MappingName(), frond.MappingName(from), frond.MappingName(to))
			}
			step = max(step, c.Step)
		}
		// One shift, computed once from every copy (issue 57, item 4).
		headroom := max(16*step, maxStep, 1<<16) << attempt
		if top > math.MaxInt64-headroom || topTo > math.MaxInt64-headroom {
			return frond.Tag{}, fmt.Errorf("%w: tag %q: max_id %d leaves no room for the change", frond.ErrTagExhausted, name, max(top, topTo))
		}
		target, err := frond.MappingFloor(from, to, top+headroom)
		if err != nil {
			return frond.Tag{}, fmt.Errorf("tag %q: %w", name, err)
		}
		// Never below a copy finished already, nor below what was asked.
		target = max(target, topTo+headroom)
		if u.MaxID != nil {
			target = max(target, *u.MaxID)
		}
		change := u
		change.MaxID, change.Mapping = &target, &to
		out, err := s.UpdateTag(ctx, name, change)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, frond.ErrWouldReissue) && !errors.Is(err, frond.ErrInvalidArgument) {
			return frond.Tag{}, fmt.Errorf("tag %q: raise every copy for the change of mapping from %s to %s: %w (the copies not raised stay fenced: run the same change again to finish it)",
				name, frond.MappingName(from), frond.MappingName(to), err)
		}
		last = err // a copy moved past the target meanwhile: read again
	}
	return frond.Tag{}, fmt.Errorf("%w: tag %q: its max_id moved past the raise on each of %d tries (the copies stay fenced: run the same change again): %w", frond.ErrStoreUnavailable, name, mappingAttempts, last)
}

// mappingFrom reads the copies of a tag for a change of its mapping to to:
// the mapping it moves from (to itself when every copy has to already),
// and whether a copy is still to be fenced. Copies that disagree
// otherwise (two settled mappings, a change to another mapping under way,
// a sequence tag) are refused.
func mappingFrom(name string, copies []frond.Tag, to string) (from string, fence bool, err error) {
	var settled, changing []string
	for _, c := range copies {
		if c.Mode == frond.ModeSequence {
			return "", false, fmt.Errorf("%w: tag %q is a sequence tag: its mapping is set when it is created", frond.ErrInvalidArgument, name)
		}
		m := frond.StoredMapping(c.Mapping)
		if f, t, ok := frond.ParseMappingChange(m); ok {
			if t != to {
				return "", false, fmt.Errorf("%w: tag %q: a change of its mapping from %s to %s is under way: finish it first (frond tag set %s --mapping %s)",
					frond.ErrInvalidArgument, name, frond.MappingName(f), frond.MappingName(t), name, frond.MappingName(t))
			}
			if !slices.Contains(changing, f) {
				changing = append(changing, f)
			}
			continue
		}
		if !slices.Contains(settled, m) {
			settled = append(settled, m)
		}
	}
	switch {
	case len(changing) == 1 && len(settled) == 0:
		return changing[0], false, nil
	case len(changing) == 1 && len(settled) == 1 && (settled[0] == changing[0] || settled[0] == to):
		return changing[0], settled[0] == changing[0], nil
	case len(changing) == 0 && len(settled) == 1:
		return settled[0], settled[0] != to, nil
	}
	var names []string
	for _, m := range append(settled, changing...) {
		names = append(names, frond.MappingName(m))
	}
	return "", false, fmt.Errorf("%w: tag %q: its copies on the stores of the set disagree (%s): the set has handed out numbers of two mappings, "+
		"which may meet; frond audit reports them; move the tag's users to a new tag", frond.ErrInvalidArgument, name, strings.Join(names, ", "))
}
