package service

import (
	"context"
	"errors"
	"fmt"
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

// changeMapping changes a tag's mapping (u.Mapping, with u's other
// fields) on every store of its set at once: segment.ChangeMapping, the
// protocol (fence every copy, then raise every copy once), with a
// headroom of the largest step a node of this configuration takes. The
// change is refused here first when this node's configured form names
// another mapping, or opaque numbers lack their key.
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
	out, err := segment.ChangeMapping(ctx, s.store, name, u, s.seg.Settings().MaxStep)
	if err != nil {
		return frond.Tag{}, adminError(err)
	}
	s.setTag(out)
	s.log.Info("tag mapping changed", "tag", name, "mapping", out.MappingName(), "max_id", out.MaxID)
	return out, nil
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
		if got := frond.ServedMapping(t.Mapping); got != want { // during a change of mapping, the numbers nodes still serve
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
