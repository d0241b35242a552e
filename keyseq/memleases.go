package keyseq

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/frond-id/frond"
)

// MemLeases is a LeaseStore in memory, on the clock it is given: one
// process's spaces (tests, the model) and the reference the SQL and Redis
// stores are checked against.
type MemLeases struct {
	Now func() time.Time // the store's clock; nil: time.Now

	mu      sync.Mutex
	spaces  map[string]*memSpace
	defs    map[string]Space
	peerKey []byte
	place   frond.Place // the store's place (frond.PlaceKeeper): its lost-data fence
	// unfenced: Release ignores the maxima (the broken give-back the
	// model must find: export_test.go).
	unfenced bool
}

type memSpace struct {
	max     map[int]int64
	owner   map[int]Owner
	until   map[int]time.Time
	members map[string]memMember // by token
}

type memMember struct {
	o     Owner
	until time.Time
}

var (
	_ SpaceStore        = (*MemLeases)(nil)
	_ frond.PlaceKeeper = (*MemLeases)(nil)
)

// Place implements frond.PlaceKeeper.
func (m *MemLeases) Place(context.Context) (frond.Place, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.place, nil
}

// SwapPlace implements frond.PlaceKeeper.
func (m *MemLeases) SwapPlace(_ context.Context, old, p frond.Place) error {
	if err := p.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.place != old {
		return fmt.Errorf("%w: the store is %s, not %s", frond.ErrPlaceChanged, m.place.Describe(), old.Describe())
	}
	m.place = p
	return nil
}

// Close does nothing: the spaces live as long as the value.
func (m *MemLeases) Close() error { return nil }

// CreateSpace implements SpaceStore.
func (m *MemLeases) CreateSpace(_ context.Context, sp Space) error {
	sp = sp.WithDefaults()
	if err := sp.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.defs[sp.Name]; ok {
		return fmt.Errorf("keyed sequence space %q: %w", sp.Name, frond.ErrTagExists)
	}
	if m.defs == nil {
		m.defs = map[string]Space{}
	}
	m.defs[sp.Name] = sp
	return nil
}

// PeerKey implements SpaceStore.
func (m *MemLeases) PeerKey(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.peerKey == nil {
		m.peerKey = NewPeerKey()
	}
	return m.peerKey, nil
}

// Rearm implements SpaceStore.
func (m *MemLeases) Rearm(_ context.Context, sp Space, above int64) error {
	sp = sp.WithDefaults()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.space(sp.Name)
	for i := range sp.Sections {
		if cur, ok := s.max[i]; !ok || cur < above {
			s.max[i] = max(above, 1)
		}
	}
	return nil
}

// LookupSpace implements SpaceStore.
func (m *MemLeases) LookupSpace(_ context.Context, name string) (Space, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp, ok := m.defs[name]
	if !ok {
		return Space{}, SpaceNotFound(name)
	}
	return sp, nil
}

// ListSpaces implements SpaceStore.
func (m *MemLeases) ListSpaces(context.Context) ([]Space, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Collect(maps.Values(m.defs))
	SortSpaces(out)
	return out, nil
}

func (m *MemLeases) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *MemLeases) space(name string) *memSpace {
	if m.spaces == nil {
		m.spaces = map[string]*memSpace{}
	}
	s := m.spaces[name]
	if s == nil {
		s = &memSpace{max: map[int]int64{}, owner: map[int]Owner{}, until: map[int]time.Time{}, members: map[string]memMember{}}
		m.spaces[name] = s
	}
	return s
}

// holds reports whether o's live lease holds section i at now.
func (s *memSpace) holds(i int, o Owner, now time.Time) bool {
	return s.owner[i].Token == o.Token && now.Before(s.until[i])
}

func (s *memSpace) raise(i int, step int64) (frond.Range, error) {
	m, ok := s.max[i]
	if !ok {
		m = 1
	}
	if m > math.MaxInt64-step {
		return frond.Range{}, fmt.Errorf("section %d: %w", i, frond.ErrTagExhausted)
	}
	s.max[i] = m + step
	return frond.Range{Start: m, End: m + step, Stride: 1}, nil
}

// Take implements LeaseStore.
func (m *MemLeases) Take(_ context.Context, space string, sections []int, me Owner, ttl time.Duration, step int64) ([]Taken, error) {
	if err := CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := Fenced(space, m.place.String()); err != nil {
		return nil, err
	}
	s, now := m.space(space), m.now()
	var out []Taken
	for _, i := range slices.Sorted(slices.Values(sections)) {
		if s.owner[i].Token != "" && now.Before(s.until[i]) && s.owner[i].Token != me.Token {
			continue
		}
		r, err := s.raise(i, step)
		if err != nil {
			return nil, err
		}
		s.owner[i], s.until[i] = me, now.Add(ttl)
		out = append(out, Taken{Section: i, Range: r})
	}
	return out, nil
}

// Renew implements LeaseStore.
func (m *MemLeases) Renew(_ context.Context, space string, me Owner, ttl time.Duration) ([]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, now := m.space(space), m.now()
	var held []int
	for i := range s.owner {
		// A lease run out stays as it is (owner and end), as in the SQL and
		// Redis stores: others see it end (Table.Untils) and may take it.
		if s.holds(i, me, now) {
			s.until[i] = now.Add(ttl)
			held = append(held, i)
		}
	}
	s.members[me.Token] = memMember{o: me, until: now.Add(ttl)}
	slices.Sort(held)
	return held, nil
}

// RaiseOwned implements LeaseStore.
func (m *MemLeases) RaiseOwned(_ context.Context, space string, sections []int, step int64, me Owner) ([]frond.Range, error) {
	if err := CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := Fenced(space, m.place.String()); err != nil {
		return nil, err
	}
	s, now := m.space(space), m.now()
	for _, i := range sections {
		if !s.holds(i, me, now) {
			return nil, fmt.Errorf("space %q section %d: %w", space, i, ErrNotOwner)
		}
	}
	out := make([]frond.Range, len(sections))
	for k, i := range sections {
		r, err := s.raise(i, step)
		if err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, nil
}

// Release implements LeaseStore.
func (m *MemLeases) Release(_ context.Context, space string, give []Given, me Owner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.space(space)
	for i, o := range s.owner {
		if o.Token != me.Token {
			continue
		}
		k := slices.IndexFunc(give, func(g Given) bool { return g.Section == i })
		if give == nil || k >= 0 && (s.max[i] == give[k].Max || m.unfenced) {
			delete(s.owner, i)
			delete(s.until, i)
		}
	}
	if give == nil {
		delete(s.members, me.Token)
	}
	return nil
}

// Read implements LeaseStore.
func (m *MemLeases) Read(_ context.Context, space string, sections int) (Table, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, now := m.space(space), m.now()
	t := Table{Owners: make([]Owner, sections), Untils: make([]int64, sections), Holders: make([]string, sections), Maxima: make([]int64, sections), Fence: m.place.String()}
	for i, m := range s.max {
		if i < sections {
			t.Maxima[i] = m
		}
	}
	for i, o := range s.owner {
		if i < sections && now.Before(s.until[i]) {
			t.Owners[i] = o
		}
		if i < sections && o.Token != "" {
			t.Untils[i] = s.until[i].UnixMicro()
			t.Holders[i] = o.Token
		}
	}
	for _, mb := range s.members {
		if now.Before(mb.until) {
			t.Members = append(t.Members, mb.o)
		}
	}
	slices.SortFunc(t.Members, CompareOwner)
	return t, nil
}

// CompareOwner orders owners by token.
func CompareOwner(a, b Owner) int {
	if a.Token < b.Token {
		return -1
	}
	if a.Token > b.Token {
		return 1
	}
	return 0
}

// CheckSections checks a raise's or a take's arguments: a step of at
// least 1, each section once, none negative.
func CheckSections(space string, sections []int, step int64) error {
	if step < 1 {
		return fmt.Errorf("%w: step %d", frond.ErrInvalidArgument, step)
	}
	sorted := slices.Sorted(slices.Values(sections))
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return fmt.Errorf("%w: space %q: a section named twice in one raise", frond.ErrInvalidArgument, space)
	}
	if len(sorted) > 0 && sorted[0] < 0 {
		return fmt.Errorf("%w: space %q: section %d", frond.ErrInvalidArgument, space, sorted[0])
	}
	return nil
}
