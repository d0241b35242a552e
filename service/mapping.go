package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/frond-id/frond"
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

// mappingAttempts bounds the tries of a change of mapping that finds the
// tag moved past the raise it computed (each try doubles the headroom).
const mappingAttempts = 6

// changeMapping changes a tag's mapping (u.Mapping, with u's other
// fields): it reads the tag from every store (frond.TagCopies), raises
// every store to the floor of the new mapping over the highest max_id plus
// a headroom for the allocations made meanwhile (frond.MappingFloor), and
// has each store change the mapping with the raise in one step, checked
// there against its max_id as it is then (frond.TagUpdate.Apply). A store
// that moved past the headroom refuses, and the change is tried again
// from a fresh read with a larger headroom. A change to or from opaque,
// and of a sequence tag, is refused.
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
		return out, err
	}
	var last error
	for attempt := 0; attempt < mappingAttempts; attempt++ {
		copies, err := frond.TagCopies(ctx, s.store, name)
		if err != nil {
			return frond.Tag{}, err
		}
		top, step, same := int64(0), int64(1), true
		for _, c := range copies {
			if c.Mode == frond.ModeSequence {
				return frond.Tag{}, fmt.Errorf("%w: tag %s is a sequence tag: its mapping is set when it is created", frond.ErrInvalidArgument, Quote(name))
			}
			top, step = max(top, c.MaxID), max(step, c.Step)
			same = same && frond.StoredMapping(c.Mapping) == to
		}
		if same && u.MaxID == nil {
			return copies[0], nil // nothing to change
		}
		// The allocations made between this read and the change: a few of
		// the largest steps, more on each try.
		headroom := max(16*step, 1<<16) << attempt
		target := top
		if target > math.MaxInt64-headroom {
			return frond.Tag{}, fmt.Errorf("%w: tag %s: max_id %d leaves no room for the change", frond.ErrTagExhausted, Quote(name), top)
		}
		target += headroom
		for _, c := range copies {
			floor, err := frond.MappingFloor(c.Mapping, to, target)
			if err != nil {
				return frond.Tag{}, fmt.Errorf("tag %s: %w", Quote(name), err)
			}
			target = max(target, floor)
		}
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
			return frond.Tag{}, err
		}
		last = err // a store moved past the target meanwhile: read again
	}
	return frond.Tag{}, fmt.Errorf("%w: tag %s: its max_id moved past the raise on each of %d tries: %w", frond.ErrStoreUnavailable, Quote(name), mappingAttempts, last)
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
