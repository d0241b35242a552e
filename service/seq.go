package service

import (
	"context"
	"fmt"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
)

// errNoSpaces: the node serves no keyed sequences.
var errNoSpaces = fmt.Errorf("%w: this node serves no keyed sequences (sequences.store is off)", frond.ErrInvalidArgument)

// checkSeq checks a keyed sequence request: the space's name is a tag's
// (and a tag token that names it allows it), the key 1 to 255 bytes, and
// the answer plain numbers.
func (s *Service) checkSeq(r *Request) error {
	if s.cfg.Spaces == nil {
		return errNoSpaces
	}
	if err := frond.ValidateTagName(r.Name); err != nil {
		return err
	}
	if err := keyseq.CheckKey(r.Key); err != nil {
		return err
	}
	if !r.Peer {
		if err := s.checkToken(r.Token, r.Name); err != nil {
			return err
		}
	}
	if r.Form != "" && r.Form != FormNumber || r.Prefix != "" {
		return fmt.Errorf("%w: keyed sequences are plain numbers: no forms or prefixes", frond.ErrInvalidArgument)
	}
	r.Form = FormNumber
	return nil
}

// takeSeq answers the next n values of r.Key in space r.Name, from this
// node or the owner of the key's section.
func (s *Service) takeSeq(ctx context.Context, r *Request, n int64) (Answer, error) {
	first, last, err := s.cfg.Spaces.Next(ctx, r.Name, r.Key, n, r.Forwarded)
	if err != nil {
		return Answer{}, err
	}
	if last-first+1 != n {
		return Answer{}, fmt.Errorf("%w: space %s: %d values answered for %d", frond.ErrStoreUnavailable, Quote(r.Name), last-first+1, n)
	}
	nums := make([]int64, n)
	for i := range nums {
		nums[i] = first + int64(i)
	}
	return Answer{Form: FormNumber, Nums: nums}, nil
}

// Spaces is the node's keyed sequence spaces, nil if it serves none.
func (s *Service) Spaces() *keyseq.Spaces { return s.cfg.Spaces }

// CreateSpace creates a keyed sequence space (admin).
func (s *Service) CreateSpace(ctx context.Context, sp keyseq.Space) (keyseq.Space, error) {
	if s.cfg.Spaces == nil {
		return keyseq.Space{}, errNoSpaces
	}
	return s.cfg.Spaces.Create(ctx, sp)
}

// RearmSpace raises every section of a space in its store to at least
// above and every floor gathered from the nodes, and takes the store's
// lost-data fence off when it is the space's (admin; keyseq.Spaces.Rearm).
func (s *Service) RearmSpace(ctx context.Context, space string, above int64) (keyseq.Rearmed, error) {
	if s.cfg.Spaces == nil {
		return keyseq.Rearmed{}, errNoSpaces
	}
	if err := frond.ValidateTagName(space); err != nil {
		return keyseq.Rearmed{}, err
	}
	return s.cfg.Spaces.Rearm(ctx, space, above)
}

// SpaceFloors is, by section, the floors this node keeps of a space (admin,
// or a node of the cluster gathering them for a re-arm).
func (s *Service) SpaceFloors(ctx context.Context, space string) ([]int64, error) {
	if s.cfg.Spaces == nil {
		return nil, errNoSpaces
	}
	if err := frond.ValidateTagName(space); err != nil {
		return nil, err
	}
	return s.cfg.Spaces.Floors(ctx, space)
}

// ListSpaces lists the keyed sequence spaces with this node's view of each
// (admin).
func (s *Service) ListSpaces(ctx context.Context) ([]keyseq.SpaceStatus, error) {
	if s.cfg.Spaces == nil {
		return nil, errNoSpaces
	}
	return s.cfg.Spaces.List(ctx)
}
