// Package keyseq hands out strictly increasing values per key, for very
// many keys: the sequence number of each message within a conversation,
// invoice numbers per tenant. It is WeChat seqsvr's design (docs/
// sequences.md): keys are grouped in sections that share one persisted
// maximum, raised by a step before any value past it is answered; a
// section's owner keeps each key's last value in memory, and after a
// restart (or a new owner) every key of the section starts above the
// persisted maximum, so a value is never given twice, with gaps allowed.
//
// An Engine owns every section of one space (a single node; the owner of
// each section across nodes is chosen above it). Keys are not kept: each
// section has a fixed table of counters indexed by a hash of the key, so
// memory is the table's whatever the number of keys, and two keys whose
// hashes meet share a counter, which still increases for each of them.
package keyseq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// Defaults of a Space.
const (
	DefaultStep     = 10_000
	DefaultSections = 1024
	DefaultSlots    = 1 << 14 // counters per section: 16 Mi in all, 64 MiB
	MaxKeyLen       = 255
	MaxCount        = 10_000 // values in one request
	// MaxSections bounds a space's sections (issue 69: 1,048,576 of one
	// slot passed the memory check, took 5 s to start, 250 MB, and every
	// lease round failed on SQLite's bound of variables).
	MaxSections = 1 << 16
)

// Space configures a keyed sequence space.
type Space struct {
	// Name names the space, as a tag is named (frond.ValidateTagName).
	Name string
	// Step is how far a section's maximum is raised at a time: the values
	// a restart may skip per section. Zero: DefaultStep.
	Step int64
	// Sections is how many sections share the keys (each one persisted
	// maximum, and later one owner). Zero: DefaultSections.
	Sections int
	// Slots is the counters per section, a power of two. Zero:
	// DefaultSlots.
	Slots int
}

// WithDefaults fills the zero fields.
func (s Space) WithDefaults() Space {
	if s.Step == 0 {
		s.Step = DefaultStep
	}
	if s.Sections == 0 {
		s.Sections = DefaultSections
	}
	if s.Slots == 0 {
		s.Slots = DefaultSlots
	}
	return s
}

// Validate checks a space with its defaults filled.
func (s Space) Validate() error {
	if err := frond.ValidateTagName(s.Name); err != nil {
		return fmt.Errorf("space name: %w", err)
	}
	switch {
	case s.Step < 1 || s.Step > math.MaxUint32/2:
		return fmt.Errorf("%w: step %d: 1 to %d", frond.ErrInvalidArgument, s.Step, math.MaxUint32/2)
	case s.Sections < 1 || s.Sections > MaxSections:
		return fmt.Errorf("%w: sections %d: 1 to %d", frond.ErrInvalidArgument, s.Sections, MaxSections)
	case s.Slots < 1 || s.Slots > 1<<24 || s.Slots&(s.Slots-1) != 0:
		return fmt.Errorf("%w: slots %d: a power of two up to %d", frond.ErrInvalidArgument, s.Slots, 1<<24)
	}
	return nil
}

// SectionStore keeps the sections' maxima. Raise raises the maximum of
// each of sections of space by step, each in one atomic operation of the
// store, and returns for each the values it took, [old, new): every value
// handed out before is below old. A section never raised starts at 1. It
// returns what Allocate of a frond.SegmentStore returns on failure; after
// an ambiguous failure a raise may have happened (values are skipped,
// never given twice).
type SectionStore interface {
	Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error)
}

// Engine hands out the values of one space's keys, owning every section.
type Engine struct {
	space    Space
	store    SectionStore
	sections []section
	gate     *gate // nil: every section is served (one node owns them all)
	// floors, when set, keeps the highest maximum this engine raised each
	// section to where it survives a restart; floor[i] (under section i's
	// lock) is section i's as kept. A raise that starts below it is
	// refused (LostDataError).
	floors Floors
	floor  []int64
	lost   atomic.Uint64 // raises refused so
	// floorFail is the last failure to keep a floor (a full disk), nil
	// once one is kept again: a section taken but not served for it is
	// refused naming it, not as "no node owns it".
	floorFail atomic.Pointer[error]
	// budget, when set, is reserved for a section's counters before they
	// are allocated, and freed when the section is dropped (issue 59).
	budget *Budget
	// fence, when set, is the store's lost-data fence as last read: every
	// section is refused with it, whoever serves it (issue 68, item 1).
	fence atomic.Pointer[FencedError]
	// onLost, when set, is called (with the section's lock held: it must
	// not block) when a raise is refused below a floor: the node fences
	// the store for every node.
	onLost func(*LostDataError)
}

// SetFence makes e refuse every section with f, the store's lost-data
// fence as read (nil: the fence is off).
func (e *Engine) SetFence(f *FencedError) { e.fence.Store(f) }

// Fence is the fence e refuses every section with (nil: none).
func (e *Engine) Fence() *FencedError { return e.fence.Load() }

// Observe raises the floors kept to the store's maxima as read
// (Table.Maxima): a node keeps the highest maximum it read of every
// section, not only of those it raised, so that its take of a section it
// never served is refused below it when the store lost data (issue 68,
// item 1: after a store came back empty, a node served the sections
// another node had served from 1). Nothing without floors. A floor that
// cannot be written is kept in memory still; the error is returned.
func (e *Engine) Observe(maxima []int64) error {
	if e.floors == nil {
		return nil
	}
	var first error
	for i, m := range maxima {
		if i >= len(e.sections) {
			break
		}
		s := &e.sections[i]
		s.mu.Lock()
		if m > e.floor[i] {
			if err := e.floors.Record(e.space.Name, i, m); err != nil && first == nil {
				first = err
				e.floorFail.Store(&err)
			}
			e.floor[i] = m
		}
		s.mu.Unlock()
	}
	return first
}

// KeepFloors makes e keep its floors in f (loaded now) and refuse a raise
// that starts below one (issue 58): call it before the first value.
func (e *Engine) KeepFloors(f Floors) error {
	fl, err := f.Load(e.space.Name, e.space.Sections)
	if err != nil {
		return err
	}
	e.floors, e.floor = f, fl
	return nil
}

// Lost reports whether section i refused a raise because the store lost
// data: its node holds it without serving it (nobody else may take it and
// raise it past the values answered) until it is re-armed.
func (e *Engine) Lost(i int) bool {
	s := &e.sections[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost != nil
}

// ClearLost forgets the sections' refusals for lost data, once the store
// was re-armed above every value answered (frond space rearm): their node
// takes them again, with a raise checked against the floors as any.
func (e *Engine) ClearLost() {
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		s.lost = nil
		s.mu.Unlock()
	}
}

// Floors is a copy of the floors e keeps, by section (nil without).
func (e *Engine) Floors() []int64 {
	if e.floors == nil {
		return nil
	}
	out := make([]int64, len(e.sections))
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		out[i] = e.floor[i]
		s.mu.Unlock()
	}
	return out
}

// Floor is the highest floor e keeps (0 without floors).
func (e *Engine) Floor() int64 {
	var f int64
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		if e.floor != nil {
			f = max(f, e.floor[i])
		}
		s.mu.Unlock()
	}
	return f
}

// LostSections counts the sections refused for lost data (Lost): every
// one while the store is fenced (Fence).
func (e *Engine) LostSections() int {
	if e.fence.Load() != nil {
		return len(e.sections)
	}
	n := 0
	for i := range e.sections {
		if e.Lost(i) {
			n++
		}
	}
	return n
}

// LostData counts the raises refused because the store's maximum went
// below a floor (LostDataError).
func (e *Engine) LostData() uint64 { return e.lost.Load() }

// gate is an owner's fence (Node): a section is served only once granted
// (taken under a lease), and only while now is before valid, the end of
// the lease as this node may count it on its monotonic clock.
type gate struct {
	now   func() time.Time
	valid atomic.Pointer[time.Time]
}

// open reports whether the lease may still be counted on.
func (g *gate) open() bool {
	v := g.valid.Load()
	return v != nil && g.now().Before(*v)
}

// section is one section's state: its values run from base (the first
// value not handed out before this engine loaded it) to below ceil (the
// persisted maximum); slot i holds the last value of its keys minus base
// plus one (0: none since the load).
type section struct {
	mu      sync.Mutex
	closed  bool // the engine was closed: it answers no more
	granted bool // with a gate: the section is this node's
	loaded  bool
	served  uint64 // values answered
	// lost is the refusal of a raise below this engine's floor or ceil
	// (the store lost data): the section answers it, and its node takes
	// it no more, until it is re-armed (ClearLost).
	lost  *LostDataError
	base  int64
	ceil  int64
	slots []uint32
}

// New returns an engine over store. Nothing is read until the first value.
func New(space Space, store SectionStore) (*Engine, error) {
	space = space.WithDefaults()
	if err := space.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{space: space, store: store, sections: make([]section, space.Sections)}
	return e, nil
}

// Space is the engine's space, its defaults filled.
func (e *Engine) Space() Space { return e.space }

// hash is FNV-1a with a final mix: the same on every node and version, so
// that a key's section is (its owner is chosen by section).
func hash(key string) uint64 { return frond.KeyHash(key) }

// CheckKey checks a key: 1 to 255 bytes.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key of %d bytes: 1 to %d", frond.ErrInvalidArgument, len(key), MaxKeyLen)
	}
	return nil
}

// SectionOf is the section of key in a space of that many sections.
func SectionOf(key string, sections int) int { return int(hash(key) % uint64(sections)) }

// Next hands out the next n values of key, first to last, each above every
// value key was given before, by this engine or any other that owned its
// section before it.
func (e *Engine) Next(ctx context.Context, key string, n int64) (first, last int64, err error) {
	if err := CheckKey(key); err != nil {
		return 0, 0, err
	}
	if n < 1 || n > MaxCount {
		return 0, 0, fmt.Errorf("%w: count %d: 1 to %d", frond.ErrInvalidArgument, n, MaxCount)
	}
	h := hash(key)
	i := int(h % uint64(len(e.sections)))
	s := &e.sections[i]
	slot := (h >> 32) & uint64(e.space.Slots-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return 0, 0, fmt.Errorf("keyed sequence space %q: %w", e.space.Name, frond.ErrClosed)
		}
		if s.lost != nil {
			return 0, 0, s.lost
		}
		if f := e.fence.Load(); f != nil {
			return 0, 0, f
		}
		if e.gate != nil && (!s.granted || !e.gate.open()) {
			// Checked again after every raise: the answer below is given
			// within the lease.
			return 0, 0, &NotOwnerError{Space: e.space.Name, Section: i}
		}
		if s.loaded {
			if err := e.counters(i, s); err != nil {
				return 0, 0, err
			}
			first = s.base + int64(s.slots[slot])
			last = first + n - 1
			if last < s.ceil {
				if off := last - s.base + 1; off <= math.MaxUint32 {
					s.slots[slot] = uint32(off)
					s.served += uint64(n)
					return first, last, nil
				}
				// The counter's offset would not fit: start the section
				// again above everything it handed out.
				s.loaded = false
				s.base = s.ceil
			}
		}
		if err := e.raise(ctx, i, s); err != nil {
			if errors.Is(err, ErrNotOwner) {
				e.drop(s) // the lease is gone from the store: not ours any more
			}
			return 0, 0, err
		}
	}
}

// drop forgets the section (its counters back to the budget); called with
// s.mu held.
func (e *Engine) drop(s *section) {
	if s.slots != nil {
		e.budget.Free(SectionBytes(e.space))
	}
	s.granted, s.loaded, s.slots = false, false, nil
}

// grant starts serving section i, taken with a raise that answered r (an
// engine with a gate: Node). Every key of it starts at r.Start.
func (e *Engine) grant(i int, r frond.Range) error {
	s := &e.sections[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.granted, s.loaded = true, false
	if err := e.apply(i, s, r); err != nil {
		e.drop(s)
		return err
	}
	return nil
}

// revoke stops serving section i; it returns once no call in flight can
// answer for it, with the section's maximum as this engine last raised it
// (ok false when it was not served, or not loaded: not known).
func (e *Engine) revoke(i int) (ceil int64, ok bool) {
	s := &e.sections[i]
	s.mu.Lock()
	ceil, ok = s.ceil, s.granted && s.loaded && !s.closed
	e.drop(s)
	s.mu.Unlock()
	return ceil, ok
}

// Served is how many values the engine answered.
func (e *Engine) Served() uint64 {
	var n uint64
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		n += s.served
		s.mu.Unlock()
	}
	return n
}

// granted reports whether section i is served.
func (e *Engine) granted(i int) bool {
	s := &e.sections[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.granted && !s.closed
}

// Load loads sections (every section when nil) that are not loaded yet,
// in one raise of the store for them all: an owner that takes many
// sections starts them in one round trip.
func (e *Engine) Load(ctx context.Context, sections []int) error {
	if sections == nil {
		sections = make([]int, len(e.sections))
		for i := range sections {
			sections[i] = i
		}
	}
	for _, i := range sections {
		if i < 0 || i >= len(e.sections) {
			return fmt.Errorf("%w: section %d: 0 to %d", frond.ErrInvalidArgument, i, len(e.sections)-1)
		}
	}
	// In ascending order, each once: two loads lock their sections in one
	// order, and never wait for each other in a circle.
	sections = slices.Compact(slices.Sorted(slices.Values(sections)))
	var todo []int
	for _, i := range sections {
		s := &e.sections[i]
		s.mu.Lock()
		if !s.loaded && !s.closed {
			todo = append(todo, i)
			defer s.mu.Unlock()
			continue
		}
		s.mu.Unlock()
	}
	if len(todo) == 0 {
		return nil
	}
	rs, err := e.store.Raise(ctx, e.space.Name, todo, e.space.Step)
	if err != nil {
		return err
	}
	if len(rs) != len(todo) {
		return fmt.Errorf("%w: space %q: the store answered %d raises for %d sections", frond.ErrStoreUnavailable, e.space.Name, len(rs), len(todo))
	}
	for k, i := range todo {
		if err := e.apply(i, &e.sections[i], rs[k]); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the engine: it waits for the calls in flight and answers no
// more. An owner that hands a section over closes first (the fence: no two
// engines answer for one section at once).
func (e *Engine) Close() error {
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		if s.slots != nil {
			e.budget.Free(SectionBytes(e.space))
		}
		s.closed, s.slots = true, nil
		s.mu.Unlock()
	}
	return nil
}

// raise raises the section's maximum by one step; called with s.mu held.
// A raise that continues the section's range extends it; any other (the
// first, one after values were skipped, an answer that was lost) starts
// the section again at the raise's first value, every counter from there.
func (e *Engine) raise(ctx context.Context, i int, s *section) error {
	rs, err := e.store.Raise(ctx, e.space.Name, []int{i}, e.space.Step)
	if err != nil {
		if f := (*FencedError)(nil); errors.As(err, &f) {
			e.fence.Store(f) // fenced for lost data: every section, until re-armed
		}
		return err
	}
	if len(rs) != 1 {
		return fmt.Errorf("%w: space %q section %d: the store answered %v for one raise", frond.ErrStoreUnavailable, e.space.Name, i, rs)
	}
	return e.apply(i, s, rs[0])
}

// found tells the node a loss was found (onLost).
func (e *Engine) found(l *LostDataError) {
	if e.onLost != nil {
		e.onLost(l)
	}
}

// apply takes a raise of the section into it; called with s.mu held.
func (e *Engine) apply(i int, s *section, r frond.Range) error {
	if r.Len() < 1 || r.Stride > 1 {
		return fmt.Errorf("%w: space %q section %d: the store answered %v for a raise", frond.ErrStoreUnavailable, e.space.Name, i, r)
	}
	if s.loaded && r.Start < s.ceil {
		// Below values this section handed out: the store lost raises (a
		// Redis restarted without its data, a database restored).
		e.lost.Add(1)
		s.lost = &LostDataError{Space: e.space.Name, Section: i, Store: r.Start, Floor: s.ceil}
		e.found(s.lost)
		return s.lost
	}
	if e.floors != nil {
		if f := e.floor[i]; r.Start < f {
			// Below the maximum this node raised the section to before,
			// by its data directory: whoever served it since, the store's
			// maximum only ever goes up unless it lost writes.
			e.lost.Add(1)
			s.lost = &LostDataError{Space: e.space.Name, Section: i, Store: r.Start, Floor: f}
			e.found(s.lost)
			return s.lost
		}
		if r.End > e.floor[i] {
			// Kept before any value of the raise is answered.
			if err := e.floors.Record(e.space.Name, i, r.End); err != nil {
				e.floorFail.Store(&err)
				return err
			}
			e.floorFail.Store(nil)
			e.floor[i] = r.End
		}
	}
	if s.loaded && r.Start == s.ceil {
		s.ceil = r.End
		return nil
	}
	if s.slots != nil {
		clear(s.slots)
	}
	// A section's counters are allocated (and reserved from the node's
	// budget) by its first request (counters), not when it is taken: a
	// space started for one request holds the memory of the sections its
	// keys use, not of every section it took (issue 69: eight anonymous
	// GETs to eight spaces reserved all of sequences.memory, and the next
	// space held no section).
	s.base, s.ceil, s.loaded = r.Start, r.End, true
	return nil
}

// unallocated counts the sections served whose counters are not allocated
// yet (no request for them since they were taken): a node counts them as
// held when it decides how many more it can take.
func (e *Engine) unallocated() int {
	n := 0
	for i := range e.sections {
		s := &e.sections[i]
		s.mu.Lock()
		if s.granted && !s.closed && s.slots == nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// counters allocates section i's counters on its first request, reserved
// from the node's budget first; called with s.mu held.
func (e *Engine) counters(i int, s *section) error {
	if s.slots != nil {
		return nil
	}
	if !e.budget.Reserve(SectionBytes(e.space)) {
		return fmt.Errorf("%w: space %q section %d: its %d counters (%d bytes) do not fit in this node's memory for keyed sequences (sequences.memory, %d bytes, %d used): "+
			"another node may serve it; raise sequences.memory, or give the node fewer spaces", ErrMemoryBudget, e.space.Name, i, e.space.Slots, SectionBytes(e.space), e.budget.Limit(), e.budget.Used())
	}
	s.slots = make([]uint32, e.space.Slots)
	return nil
}

// Segments is a SectionStore on a frond.SegmentStore: each section is a tag
// ("frond.seq.{space}.{section}"), made the first time it is raised. Every
// store frond has serves it; one raise is one Allocate.
type Segments struct{ Store frond.SegmentStore }

// SectionTag is the tag of a section.
func SectionTag(space string, section int) string {
	return fmt.Sprintf("frond.seq.%s.%05d", space, section)
}

// Raise implements SectionStore, one section after another.
func (g Segments) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	out := make([]frond.Range, 0, len(sections))
	for _, i := range sections {
		tag := SectionTag(space, i)
		a, err := g.Store.Allocate(ctx, tag, step)
		if errors.Is(err, frond.ErrTagNotFound) {
			_, err = g.Store.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1, Step: step, Description: "keyed sequence section"})
			if err == nil || errors.Is(err, frond.ErrTagExists) {
				a, err = g.Store.Allocate(ctx, tag, step)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a.Range)
	}
	return out, nil
}
