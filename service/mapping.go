package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
)

// A tag's mapping (frond.Tag.Mapping) is kept with the tag: the numbers
// it hands out are the counter itself (plain), Mist's (the counter and two
// random bytes) or opaque (a keyed permutation), the same on every node and
// every request (fitMapping). The forms configured on a node (Config.Forms)
// that name a mapping must agree with the tag's (checkMappings, at start).

// createMapping fills the mapping of a tag to be created: the one its
// configured form names (forms: {order: mist} creates a Mist tag), and
// refuses one that disagrees with it.
func (s *Service) createMapping(t *frond.Tag) error {
	form := s.cfg.Forms[t.Name]
	want := FormMapping(form)
	switch {
	case t.Mapping == "":
		t.Mapping = want
	case frond.StoredMapping(t.Mapping) != want && form != "":
		return fmt.Errorf("%w: tag %s: mapping %s, and this node's configured form (forms:) %s is %s numbers", frond.ErrInvalidArgument,
			Quote(t.Name), frond.MappingName(t.Mapping), Quote(form), frond.MappingName(want))
	}
	t.Mapping = frond.StoredMapping(t.Mapping)
	if t.Mapping == frond.MappingOpaque && s.kinds.cur.seg == nil {
		return fmt.Errorf("%w: tag %s: opaque numbers need an obfuscation key on every node (obfuscation.key_file)", frond.ErrInvalidArgument, Quote(t.Name))
	}
	return nil
}

// mappingAttempts bounds the tries of the raise of a change of mapping
// that finds a copy moved past the raise it computed (each try doubles the
// headroom).
const mappingAttempts = 6

// changeMapping changes a tag's mapping (u.Mapping, with u's other
// fields) on every store of its set at once, in two steps (issue 57):
//
//  1. Fence: every copy is marked frond.MappingChange(from, to). From
//     then on no node hands out an ID of a new segment of the tag
//     (segment.MappingChanging): what nodes hold is served, and every
//     number the old mapping gave comes from a counter below the max_id
//     its copy had when it was marked.
//  2. Raise: every copy is read (all marked), and each is raised, with
//     the new mapping, to one target: the new mapping's floor
//     (frond.MappingFloor) over the highest max_id of every copy plus a
//     headroom of the largest step a node takes (the adaptive maximum),
//     computed once. Each store checks the raise against its own max_id
//     as it is then (frond.TagUpdate.Apply); a copy that moved past it
//     (skipped segments) is raised from a fresh read.
//
// Every step is a tag update of the set (the store's place checked in the
// same transaction), so a node that does not list the whole set changes
// nothing. Interrupted, the change is finished by running it again; copies
// that disagree otherwise are refused. A change to or from opaque, and of
// a sequence tag, is refused.
func (s *Service) changeMapping(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	to := frond.StoredMapping(*u.Mapping)
	if err := frond.CheckMapping(to); err != nil {
		return frond.Tag{}, err
	}
	if form := s.cfg.Forms[name]; form != "" && FormMapping(form) != to {
		return frond.Tag{}, fmt.Errorf("%w: tag %s: this node's configured form (forms:) %s is %s numbers: change the configuration with the tag", frond.ErrInvalidArgument, Quote(name), Quote(form), frond.MappingName(FormMapping(form)))
	}
	if to == frond.MappingOpaque && s.kinds.cur.seg == nil {
		return frond.Tag{}, fmt.Errorf("%w: tag %s: opaque numbers need an obfuscation key on every node (obfuscation.key_file)", frond.ErrInvalidArgument, Quote(name))
	}
	if u.Adopt {
		// The operator's word, no raise: every store records it.
		out, err := s.store.UpdateTag(ctx, name, u)
		if err == nil {
			s.setTag(out)
			s.log.Warn("tag mapping adopted: recorded without a raise", "tag", name, "mapping", out.MappingName(), "max_id", out.MaxID)
		}
		return out, adminError(err)
	}
	copies, err := frond.TagCopies(ctx, s.store, name)
	if err != nil {
		return frond.Tag{}, adminError(err)
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
	if fence {
		marked := frond.MappingChange(from, to)
		if _, err := s.store.UpdateTag(ctx, name, frond.TagUpdate{Mapping: &marked}); err != nil {
			return frond.Tag{}, fmt.Errorf("tag %s: fence every copy for the change of mapping from %s to %s: %w (nothing is handed out from a fenced copy: run the same change again to finish it)",
				Quote(name), frond.MappingName(from), frond.MappingName(to), adminError(err))
		}
		s.log.Info("tag mapping change: every copy fenced", "tag", name, "from", frond.MappingName(from), "to", frond.MappingName(to))
	}
	headroom0 := max(s.seg.Settings().MaxStep, 1<<16)
	var last error
	for attempt := 0; attempt < mappingAttempts; attempt++ {
		copies, err := frond.TagCopies(ctx, s.store, name)
		if err != nil {
			return frond.Tag{}, adminError(err)
		}
		top, topTo, step := int64(0), int64(0), int64(1)
		for _, c := range copies {
			m := frond.StoredMapping(c.Mapping)
			switch {
			case m == to: // finished by an earlier try or run, above every number of the old mapping
				topTo = max(topTo, c.MaxID)
			case m == frond.MappingChange(from, to):
				top = max(top, c.MaxID)
			default:
				return frond.Tag{}, fmt.Errorf("%w: tag %s: a copy became %s during the change of mapping from %s to %s: another change ran at once; run this one again",
					frond.ErrStoreUnavailable, Quote(name), c.MappingName(), frond.MappingName(from), frond.MappingName(to))
			}
			step = max(step, c.Step)
		}
		// One shift, computed once from every copy (issue 57, item 4).
		headroom := max(16*step, headroom0) << attempt
		if top > math.MaxInt64-headroom || topTo > math.MaxInt64-headroom {
			return frond.Tag{}, fmt.Errorf("%w: tag %s: max_id %d leaves no room for the change", frond.ErrTagExhausted, Quote(name), top)
		}
		target, err := frond.MappingFloor(from, to, top+headroom)
		if err != nil {
			return frond.Tag{}, fmt.Errorf("tag %s: %w", Quote(name), err)
		}
		// Never below a copy finished already, nor below what was asked.
		target = max(target, topTo+headroom)
		if u.MaxID != nil {
			target = max(target, *u.MaxID)
		}
		change := u
		change.MaxID, change.Mapping = &target, &to
		out, err := s.store.UpdateTag(ctx, name, change)
		if err == nil {
			s.setTag(out)
			s.log.Info("tag mapping changed", "tag", name, "mapping", out.MappingName(), "max_id", out.MaxID)
			return out, nil
		}
		if !errors.Is(err, frond.ErrWouldReissue) && !errors.Is(err, frond.ErrInvalidArgument) {
			return frond.Tag{}, fmt.Errorf("tag %s: raise every copy for the change of mapping from %s to %s: %w (the copies stay fenced: run the same change again to finish it)",
				Quote(name), frond.MappingName(from), frond.MappingName(to), adminError(err))
		}
		last = err // a copy moved past the target meanwhile: read again
	}
	return frond.Tag{}, fmt.Errorf("%w: tag %s: its max_id moved past the raise on each of %d tries (the copies stay fenced: run the same change again): %w", frond.ErrStoreUnavailable, Quote(name), mappingAttempts, last)
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
			return "", false, fmt.Errorf("%w: tag %s is a sequence tag: its mapping is set when it is created", frond.ErrInvalidArgument, Quote(name))
		}
		m := frond.StoredMapping(c.Mapping)
		if f, t, ok := frond.ParseMappingChange(m); ok {
			if t != to {
				return "", false, fmt.Errorf("%w: tag %s: a change of its mapping from %s to %s is under way: finish it first (frond tag set %s --mapping %s)",
					frond.ErrInvalidArgument, Quote(name), frond.MappingName(f), frond.MappingName(t), name, frond.MappingName(t))
			}
			changing = append(changing, f)
			continue
		}
		if !slices.Contains(settled, m) {
			settled = append(settled, m)
		}
	}
	for _, f := range changing[min(1, len(changing)):] {
		if f != changing[0] {
			return "", false, fmt.Errorf("%w: tag %s: its copies are being changed from two mappings: frond audit reports them", frond.ErrInvalidArgument, Quote(name))
		}
	}
	switch {
	case len(changing) > 0 && len(settled) == 0:
		return changing[0], false, nil
	case len(changing) > 0 && len(settled) == 1 && (settled[0] == changing[0] || settled[0] == to):
		return changing[0], settled[0] == changing[0], nil
	case len(changing) == 0 && len(settled) == 1:
		return settled[0], settled[0] != to, nil
	}
	names := append(settled, changing...)
	for i := range names {
		names[i] = frond.MappingName(names[i])
	}
	return "", false, fmt.Errorf("%w: tag %s: its copies on the stores of the set disagree (%s): the set has handed out numbers of two mappings, "+
		"which may meet; frond audit reports them; move the tag's users to a new tag", frond.ErrInvalidArgument, Quote(name), strings.Join(names, ", "))
}

// adminError is err of tag administration, with what to do when this
// node cannot change the tag because of its view of the set: a store
// alone this node lists that is part of a set refuses it (the set's stores
// must all be changed at once).
func adminError(err error) error {
	if errors.Is(err, frond.ErrWrongPlace) && !errors.Is(err, segment.ErrNotWholeSet) && !errors.Is(err, segment.ErrNotPlaced) {
		return fmt.Errorf("%w; tag administration of a set of stores needs a node that lists every store of the set (frond tag ... --server such a node)", err)
	}
	return err
}

// checkMappings compares the forms configured on this node that name a
// mapping (mist, opaque, opaque62) with the tags' own, at start: a form
// that disagrees is refused (a *ConfigError), as requests would be. A tag
// not created yet is created with the form's mapping (createMapping); a
// store that does not answer leaves the check to each request.
func (s *Service) checkMappings(ctx context.Context) error {
	for name, form := range s.cfg.Forms {
		want := FormMapping(form)
		if want == "" {
			continue // an encoding: any mapping
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		t, err := s.store.Tag(c, name)
		cancel()
		switch {
		case errors.Is(err, frond.ErrTagNotFound):
			continue
		case err != nil:
			s.log.Warn("the mapping of a tag with a configured form could not be read at start; each request checks it", "tag", name, "form", form, "err", err)
			continue
		}
		if got := frond.StoredMapping(t.Mapping); got != want {
			how := fmt.Sprintf("change the tag's mapping (frond tag set %s --mapping %s)", name, want)
			if want == frond.MappingOpaque || got != "" {
				how = fmt.Sprintf("if every node always gave its numbers in form %s, record it (frond tag set %s --mapping %s --adopt); else use a new tag", form, name, want)
			}
			return configError(fmt.Errorf("%w: form %s is %s numbers, and tag %s hands out %s numbers (its mapping, kept with the tag): %s, or remove the form",
				frond.ErrInvalidArgument, form, frond.MappingName(want), name, t.MappingName(), how), "Forms["+name+"]")
		}
	}
	return nil
}
