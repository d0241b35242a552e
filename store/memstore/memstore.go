// Package memstore is an in-memory frond.SegmentStore for tests and for
// trying frond out. It keeps nothing across restarts: a process that
// restarts on a memstore hands out the same IDs again, so never use it where
// IDs must outlive the process.
package memstore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/frond-id/frond"
)

var (
	_ frond.PlacedStore   = (*Store)(nil)
	_ frond.SequenceStore = (*Store)(nil)
	_ frond.TailReturner  = (*Store)(nil)
)

// Store is an in-memory segment store, safe for concurrent use.
type Store struct {
	clock frond.Clock

	mu     sync.Mutex
	tags   map[string]frond.Tag
	gone   map[string]int64 // deletions of each tag (frond.DeletionCounter)
	place  frond.Place
	id     string                                               // Identity, made at its first call
	before func(ctx context.Context, tag string, n int64) error // BeforeAllocate
	closed bool
}

// New returns an empty store. A nil clock means the system clock; it only
// stamps UpdatedAt.
func New(clock frond.Clock) *Store {
	if clock == nil {
		clock = frond.SystemClock{}
	}
	return &Store{clock: clock, tags: make(map[string]frond.Tag), gone: make(map[string]int64)}
}

func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", frond.ErrStoreUnavailable, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return frond.ErrClosed
	}
	return nil
}

// Allocate implements frond.SegmentStore: AllocateAt a store alone.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return s.AllocateAt(ctx, frond.Place{}, tag, step)
}

// AllocateAt implements frond.PlacedStore. It refuses a sequence tag
// (frond.ErrNotLeasable).
func (s *Store) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	r, t, err := s.raise(ctx, at, tag, step, false)
	return frond.Allocation{Range: r, Step: t.Step, Mapping: t.Mapping}, err
}

// AllocateIDs implements frond.SequenceStore: AllocateIDsAt a store alone.
func (s *Store) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return s.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

// AllocateIDsAt implements frond.PlacedStore: n IDs of a sequence tag
// (frond.ErrNotSequence for a segment tag).
func (s *Store) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d IDs: at least 1", frond.ErrInvalidArgument, n)
	}
	r, _, err := s.raise(ctx, at, tag, n, true)
	if err != nil {
		return nil, err
	}
	return []frond.Range{r}, nil
}

// BeforeAllocate makes f run before every allocation (Allocate,
// AllocateAt, AllocateIDs, AllocateIDsAt), with the tag and the step or
// count asked for; an error from f is the call's, and nothing is taken.
// Tests slow a store down, hold it or take it down with it: one hook for
// every allocation call, where a wrapper overriding some of them would let
// the others through. Set it before the store is used.
func (s *Store) BeforeAllocate(f func(ctx context.Context, tag string, n int64) error) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

// raise raises the max_id of tag by step (the tag's when <= 0) if the
// store is at at and the tag's mode is the one asked for.
func (s *Store) raise(ctx context.Context, at frond.Place, tag string, step int64, sequence bool) (frond.Range, frond.Tag, error) {
	s.mu.Lock()
	before := s.before
	s.mu.Unlock()
	if before != nil {
		if err := before(ctx, tag, step); err != nil {
			return frond.Range{}, frond.Tag{}, err
		}
	}
	if err := s.lock(ctx); err != nil {
		return frond.Range{}, frond.Tag{}, err
	}
	defer s.mu.Unlock()
	if err := frond.CheckPlace(s.place.String(), at); err != nil {
		return frond.Range{}, frond.Tag{}, fmt.Errorf("allocate %q: %w", tag, err)
	}
	t, ok := s.tags[tag]
	switch {
	case !ok:
		return frond.Range{}, frond.Tag{}, fmt.Errorf("tag %q: %w", tag, frond.ErrTagNotFound)
	case sequence && t.Mode != frond.ModeSequence:
		return frond.Range{}, frond.Tag{}, fmt.Errorf("allocate %q: %w", tag, frond.ErrNotSequence)
	case !sequence && t.Mode == frond.ModeSequence:
		return frond.Range{}, frond.Tag{}, fmt.Errorf("allocate %q: %w: it is a sequence tag, whose IDs are taken one store call at a time", tag, frond.ErrNotLeasable)
	}
	if step <= 0 {
		step = t.Step
	}
	if t.MaxID > math.MaxInt64-step {
		return frond.Range{}, frond.Tag{}, fmt.Errorf("allocate %q: max_id %d + step %d: %w", tag, t.MaxID, step, frond.ErrTagExhausted)
	}
	start := t.MaxID
	t.MaxID += step
	t.UpdatedAt = s.clock.Now()
	s.tags[tag] = t
	return frond.Range{Start: start, End: t.MaxID, Stride: 1}, t, nil
}

// Place implements frond.PlacedStore.
func (s *Store) Place(ctx context.Context) (frond.Place, error) {
	if err := s.lock(ctx); err != nil {
		return frond.Place{}, err
	}
	defer s.mu.Unlock()
	return s.place, nil
}

// Identity implements frond.PlacedStore.
func (s *Store) Identity(ctx context.Context) (string, error) {
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	if s.id == "" {
		s.id = frond.NewIdentity()
	}
	return s.id, nil
}

// SwapPlace implements frond.PlacedStore.
func (s *Store) SwapPlace(ctx context.Context, old, p frond.Place) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.place != old {
		return fmt.Errorf("%w: it is %s, not %s", frond.ErrPlaceChanged, s.place.Describe(), old.Describe())
	}
	s.place = p
	return nil
}

// ReturnTail implements frond.TailReturner.
func (s *Store) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	t, ok := s.tags[tag]
	if !ok || t.MaxID != to || from >= to || t.Mode == frond.ModeSequence || s.place != (frond.Place{}) || t.Mapping != frond.StoredMapping(mapping) {
		return false, nil
	}
	t.MaxID = from
	t.UpdatedAt = s.clock.Now()
	s.tags[tag] = t
	return true, nil
}

// Tag implements frond.SegmentStore.
func (s *Store) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if err := s.lock(ctx); err != nil {
		return frond.Tag{}, err
	}
	defer s.mu.Unlock()
	t, ok := s.tags[name]
	if !ok {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, frond.ErrTagNotFound)
	}
	return t, nil
}

// TagsAfter implements frond.TagPager.
func (s *Store) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	all, err := s.Tags(ctx)
	if err != nil {
		return nil, err
	}
	return frond.PageOf(all, after, limit), nil
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]frond.Tag, 0, len(s.tags))
	for _, t := range s.tags {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b frond.Tag) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// CreateTag implements frond.SegmentStore: CreateTagAt a store alone.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return s.CreateTagAt(ctx, frond.Place{}, t)
}

// atTag checks, under s.mu, that tag administration at at may go on.
func (s *Store) atTag(at frond.Place, what string) error {
	if err := frond.CheckTagPlace(s.place.String(), at); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CreateTagAt implements frond.PlacedStore.
func (s *Store) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if err := s.lock(ctx); err != nil {
		return frond.Tag{}, err
	}
	defer s.mu.Unlock()
	if err := s.atTag(at, fmt.Sprintf("create %q", t.Name)); err != nil {
		return frond.Tag{}, err
	}
	if _, ok := s.tags[t.Name]; ok {
		return frond.Tag{}, fmt.Errorf("create %q: %w", t.Name, frond.ErrTagExists)
	}
	t.UpdatedAt = s.clock.Now()
	t.Mode = frond.StoredMode(t.Mode)
	t.Mapping = frond.StoredMapping(t.Mapping)
	s.tags[t.Name] = t
	return t, nil
}

// UpdateTag implements frond.SegmentStore: UpdateTagAt a store alone.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

// UpdateTagAt implements frond.PlacedStore.
func (s *Store) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := u.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if err := s.lock(ctx); err != nil {
		return frond.Tag{}, err
	}
	defer s.mu.Unlock()
	if err := s.atTag(at, fmt.Sprintf("update %q", name)); err != nil {
		return frond.Tag{}, err
	}
	t, ok := s.tags[name]
	if !ok {
		return frond.Tag{}, fmt.Errorf("update %q: %w", name, frond.ErrTagNotFound)
	}
	t, err := u.Apply(t)
	if err != nil {
		return frond.Tag{}, err
	}
	t.UpdatedAt = s.clock.Now()
	s.tags[name] = t
	return t, nil
}

// DeleteTag implements frond.SegmentStore: DeleteTagAt a store alone.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	return s.DeleteTagAt(ctx, frond.Place{}, name)
}

// DeleteTagAt implements frond.PlacedStore.
func (s *Store) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.atTag(at, fmt.Sprintf("delete %q", name)); err != nil {
		return err
	}
	if _, ok := s.tags[name]; !ok {
		return fmt.Errorf("delete %q: %w", name, frond.ErrTagNotFound)
	}
	delete(s.tags, name)
	s.gone[name]++
	return nil
}

// Snapshot is a copy of a Store's content (Store.Snapshot): a backup.
type Snapshot struct {
	tags  map[string]frond.Tag
	gone  map[string]int64
	place frond.Place
	id    string
}

// Snapshot copies the store's content, as a backup would.
func (s *Store) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Snapshot{tags: maps.Clone(s.tags), gone: maps.Clone(s.gone), place: s.place, id: s.id}
}

// Restore puts the store's content back to sn, as a restored backup, a
// fail-over to a replica behind or a Redis restarted from an older file
// do: the writes acknowledged since are lost. The zero Snapshot empties
// the store (a Redis restarted without its data). For tests of a store
// that goes back (issue 67).
func (s *Store) Restore(sn Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags, s.gone, s.place, s.id = maps.Clone(sn.tags), maps.Clone(sn.gone), sn.place, sn.id
	if s.tags == nil {
		s.tags = map[string]frond.Tag{}
	}
	if s.gone == nil {
		s.gone = map[string]int64{}
	}
}

// Deletions implements frond.DeletionCounter.
func (s *Store) Deletions(ctx context.Context, tag string) (int64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.gone[tag], nil
}

// RaiseDeletions implements frond.DeletionCounter.
func (s *Store) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.gone[tag] = max(s.gone[tag], n)
	return nil
}

// Close implements frond.SegmentStore.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
