package segment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// segment is one allocated range served by an atomic add on pos. The fields
// every call reads sit on their own cache line, apart from pos, so that
// under contention only pos moves between cores.
type segment struct {
	start   int64
	end     int64 // exclusive
	stride  int64
	trigger int64 // handing out this ID starts the load of the next segment
	count   int64
	step    int64 // the step asked for
	loaded  time.Time
	mapping string // frond.Allocation.Mapping: the numbers its IDs are handed out as
	_       [64]byte
	pos     atomic.Int64 // next ID to hand out; runs past end once used up
	_       [56]byte
}

var emptySegment = &segment{stride: 1, trigger: -1}

func newSegment(r frond.Range, threshold float64, loaded time.Time, step int64, mapping string) *segment {
	s := &segment{start: r.Start, end: r.End, stride: max(r.Stride, 1), loaded: loaded, step: step, mapping: mapping}
	s.count = r.Len()
	k := min(int64(float64(s.count)*threshold), s.count-1)
	s.trigger = s.start + k*s.stride
	s.pos.Store(s.start)
	return s
}

// used returns how many IDs of s have been handed out and the first ID
// not handed out (end when s is used up).
func (s *segment) used() (n, next int64) {
	p := s.firstUnused(s.pos.Load())
	if p == s.end {
		return s.count, p
	}
	return (p - s.start) / s.stride, p
}

// firstUnused reads a value p of pos: the first ID of s not handed out, or
// end when s is used up. pos only grows, by a caller's add, and runs past
// end once s is used up: near the top of the ID space it wraps negative
// there, so p is compared as the hot path does, by its unsigned distance
// from start (a wrapped p is far beyond end, never "nothing handed out").
func (s *segment) firstUnused(p int64) int64 {
	if uint64(p-s.start) < uint64(s.end-s.start) {
		return p
	}
	return s.end
}

// Buffer is the double buffer of one tag: the current segment, served by an
// atomic add, and the next one, loaded in the background once Threshold of
// the current one is used. A Buffer is obtained from Engine.Buffer and is
// safe for concurrent use.
type Buffer struct {
	e   *Engine
	tag string
	cur atomic.Pointer[segment]

	mu       sync.Mutex
	next     *segment
	filling  bool          // a fill goroutine is running
	done     chan struct{} // closed when the current load attempt ends
	kick     chan struct{} // wakes a fill goroutine from its backoff
	gone     chan struct{} // closed by drop: stops a fill goroutine
	removed  bool          // dropped from the engine (idle, tag not found, first load failed)
	created  time.Time
	mark     int64     // IDs handed out at markAt (Sweep)
	markAt   time.Time // when mark last changed
	lastErr  error
	lastFail time.Time
	failures uint64
	loads    uint64
	step     int64 // step asked for in the last successful load
	minStep  int64 // the tag's configured step
	lastLoad time.Time
	loadDur  time.Duration
	issued   int64        // IDs of segments already switched out
	waits    uint64       // callers that found both segments empty after the first load
	hungry   bool         // a caller waited since the last load: the next step doubles
	steps    []StepChange // the last maxStepChanges changes of the step, oldest first
	rateAt   time.Time
	rateN    int64
	rate     float64
}

func newBuffer(e *Engine, tag string) *Buffer {
	now := e.cfg.Clock.Now()
	b := &Buffer{e: e, tag: tag, done: make(chan struct{}), kick: make(chan struct{}, 1), gone: make(chan struct{}), created: now, rateAt: now}
	b.cur.Store(emptySegment)
	return b
}

// errDropped is refill's answer on a dropped buffer: the call goes on
// through the engine, which has (or loads) the tag's buffer.
var errDropped = errors.New("buffer dropped")

// drop takes b out of the engine for good: its unused IDs are skipped, a
// fill goroutine stops, and calls through a handle go to the engine.
func (b *Buffer) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropLocked()
}

func (b *Buffer) dropLocked() {
	if b.removed {
		return
	}
	b.removed = true
	close(b.gone)
	n := b.issuedLocked()
	b.cur.Store(emptySegment)
	b.next = nil
	b.e.remove(b)
	// Counted as retired only once out of the maps: Overview, reading
	// retired before the maps, never counts a buffer twice.
	b.e.retired.Add(n)
}

// idle reports whether b handed out no ID for IdleAfter, as seen by Sweep.
func (b *Buffer) idle(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, _ := b.cur.Load().used()
	used := b.issued + n
	if used != b.mark || b.markAt.IsZero() {
		b.mark, b.markAt = used, now
		return false
	}
	return now.Sub(b.markAt) >= b.e.cfg.IdleAfter
}

// Tag returns the buffer's tag.
func (b *Buffer) Tag() string { return b.tag }

// Next returns the next ID of the tag. It waits on the store only when both
// buffers are empty, and then no longer than ctx allows. Errors: one wrapping
// frond.ErrTagNotFound when the tag does not exist; one wrapping
// frond.ErrStoreUnavailable when both buffers are empty and the store cannot
// give a segment (or ctx ended first); frond.ErrClosed after Engine.Close.
func (b *Buffer) Next(ctx context.Context) (int64, error) {
	v, _, err := b.NextMapped(ctx)
	return v, err
}

// NextMapped is Next, with the mapping of the segment the ID came from
// (frond.Allocation.Mapping): the numbers it is to be handed out as. A
// change of a tag's mapping reaches a node with its first segment of the
// new mapping, whatever the node believed of the tag.
func (b *Buffer) NextMapped(ctx context.Context) (int64, string, error) {
	s := b.cur.Load()
	v := s.pos.Add(s.stride) - s.stride
	if uint64(v-s.start) < uint64(s.end-s.start) {
		if v == s.trigger {
			b.prefetch()
		}
		return v, s.mapping, nil
	}
	return b.nextMappedSlow(ctx)
}

func (b *Buffer) nextMappedSlow(ctx context.Context) (int64, string, error) {
	for {
		s := b.cur.Load()
		v := s.pos.Add(s.stride) - s.stride
		if uint64(v-s.start) < uint64(s.end-s.start) {
			if v == s.trigger {
				b.prefetch()
			}
			return v, s.mapping, nil
		}
		if err := b.refill(ctx, s); err != nil {
			if errors.Is(err, errDropped) {
				return b.e.NextMapped(ctx, b.tag)
			}
			return 0, "", err
		}
	}
}

// NextN takes n IDs, crossing segment boundaries when needed, and returns
// them as ranges in increasing order (adjacent ranges merged). On error it
// returns the ranges it already took together with the error; those IDs are
// valid and will not be handed out again.
func (b *Buffer) NextN(ctx context.Context, n int64) ([]frond.Range, error) {
	return b.nextN(ctx, n, false, nil)
}

// MappingChanging is the refusal of an allocation whose mapping is a
// change under way (frond.MappingChange): the allocation's IDs are never
// handed out (lost, never given), so the max_id values the change reads
// once every copy is fenced bound every number of the old mapping. Nil
// for a settled mapping.
func MappingChanging(mapping string) error {
	from, to, ok := frond.ParseMappingChange(mapping)
	if !ok {
		return nil
	}
	return fmt.Errorf("%w: a change of the tag's mapping from %s to %s is under way (frond tag set): no new segment is served until it is done, "+
		"and the one taken is skipped; rerun the change if it was interrupted", frond.ErrStoreUnavailable, frond.MappingName(from), frond.MappingName(to))
}

// ErrMappingChanged ends a batch (NextNMapped, NextRunMapped) that came to
// a segment of another mapping than its first IDs': the tag's mapping
// changed (frond.TagUpdate.Mapping). The IDs taken are valid and unique,
// in the first mapping; the caller skips them and asks again.
var ErrMappingChanged = errors.New("the tag's mapping changed within the batch")

// NextNMapped is NextN, with the mapping of the segments the IDs came from:
// all of one mapping, else the batch ends with ErrMappingChanged.
func (b *Buffer) NextNMapped(ctx context.Context, n int64) ([]frond.Range, string, error) {
	mapping := "\x00"
	out, err := b.nextN(ctx, n, false, &mapping)
	return out, mapping, err
}

// NextRunMapped is NextRun, with the mapping of the segment.
func (b *Buffer) NextRunMapped(ctx context.Context, n int64) (frond.Range, string, error) {
	mapping := "\x00"
	out, err := b.nextN(ctx, n, true, &mapping)
	if err != nil || len(out) == 0 {
		return frond.Range{}, mapping, err
	}
	return out[0], mapping, nil
}

// NextRun takes up to n IDs from one segment: one range, shorter than n
// when the current segment ends first (TinyID's segments, which its client
// reads as one run).
func (b *Buffer) NextRun(ctx context.Context, n int64) (frond.Range, error) {
	out, err := b.nextN(ctx, n, true, nil)
	if err != nil || len(out) == 0 {
		return frond.Range{}, err
	}
	return out[0], nil
}

// nextN takes n IDs (up to n from one segment, with oneRun). With mapping
// set, *mapping becomes the mapping of the first segment IDs are taken
// from (it starts as "\x00", none yet), and a later segment of another ends
// the batch with ErrMappingChanged.
func (b *Buffer) nextN(ctx context.Context, n int64, oneRun bool, mapping *string) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: count %d: must be at least 1", frond.ErrInvalidArgument, n)
	}
	var out []frond.Range
	for n > 0 {
		s := b.cur.Load()
		k := min(n, max(s.count, 1))
		v := s.pos.Add(k*s.stride) - k*s.stride
		if uint64(v-s.start) < uint64(s.end-s.start) {
			if mapping != nil && *mapping != s.mapping {
				if *mapping != "\x00" {
					// The IDs just taken are skipped, as a failed batch's.
					return out, fmt.Errorf("tag %q: %w", b.tag, ErrMappingChanged)
				}
				*mapping = s.mapping
			}
			end := s.end
			if k*s.stride < s.end-v {
				end = v + k*s.stride
			}
			r := frond.Range{Start: v, End: end, Stride: s.stride}
			if v <= s.trigger && s.trigger < end {
				b.prefetch()
			}
			n -= r.Len()
			// Merge only a true continuation: with several stores the next
			// segment may come from another residue class and abut the
			// previous range without continuing it.
			if last := len(out) - 1; last >= 0 && out[last].Stride == r.Stride && out[last].Last()+r.Stride == r.Start {
				out[last].End = r.End
			} else {
				out = append(out, r)
			}
			if oneRun {
				return out, nil
			}
			continue
		}
		if err := b.refill(ctx, s); err != nil {
			if errors.Is(err, errDropped) {
				nb, err := b.e.Buffer(b.tag)
				if err != nil {
					return out, err
				}
				// Its segments' mapping is checked against the first's.
				more, err := nb.nextN(ctx, n, oneRun, mapping)
				return append(out, more...), err
			}
			return out, err
		}
	}
	return out, nil
}

// prefetch starts loading the next segment unless one is loaded or loading.
func (b *Buffer) prefetch() {
	b.mu.Lock()
	if b.next == nil && !b.removed {
		b.startFillLocked()
	}
	b.mu.Unlock()
}

func (b *Buffer) startFillLocked() {
	if b.filling {
		select {
		case b.kick <- struct{}{}:
		default:
		}
		return
	}
	if !b.e.goFill(b) {
		return
	}
	b.filling = true
}

// refill is called when the current segment s is used up. It switches to the
// next segment if one is ready, and otherwise waits for a load, as long as
// ctx allows. A nil error means: try again; errDropped: go through the
// engine. No error sticks to the buffer: an answer that retrying does not
// change (a tag at the top of its range, a closed connection pool) is given
// again without a store call only for FailFast, then the store is asked
// again.
func (b *Buffer) refill(ctx context.Context, s *segment) error {
	b.mu.Lock()
	if b.cur.Load() != s { // another caller switched already
		b.mu.Unlock()
		return nil
	}
	if b.removed {
		b.mu.Unlock()
		return errDropped
	}
	if b.next != nil {
		b.issued += s.count
		b.cur.Store(b.next)
		b.next = nil
		b.mu.Unlock()
		return nil
	}
	if b.e.closed.Load() {
		b.mu.Unlock()
		return fmt.Errorf("segment %q: %w", b.tag, frond.ErrClosed)
	}
	now := b.e.cfg.Clock.Now()
	if err := b.lastErr; err != nil {
		if since := now.Sub(b.lastFail); since < b.e.cfg.FailFast {
			b.mu.Unlock()
			if definitive(err) {
				return err
			}
			return fmt.Errorf("%w: tag %q: both buffers empty; last load %v ago failed: %w", frond.ErrStoreUnavailable, b.tag, since.Round(time.Millisecond), err)
		}
	}
	if b.loads == 0 && !b.filling {
		// A first load: when one failed on an outage a moment ago, fail at
		// once and leave nothing behind (made-up tags while the store is down).
		if at := b.e.firstFail.Load(); at != 0 {
			if since := now.Sub(time.Unix(0, at)); since < b.e.cfg.FailFast {
				b.dropLocked()
				b.mu.Unlock()
				why := errors.New("the store")
				if p := b.e.firstErr.Load(); p != nil {
					why = *p
				}
				return fmt.Errorf("%w: tag %q: no segment loaded yet, and a load failed %v ago: %w", frond.ErrStoreUnavailable, b.tag, since.Round(time.Millisecond), why)
			}
		}
	}
	if b.loads > 0 {
		// The prefetch came too late: callers wait. The next load asks for
		// a larger step (Settings.nextStep), whatever the time since the last.
		b.waits++
		b.hungry = true
	}
	b.startFillLocked()
	if !b.filling { // the engine closed after the check above: no fill will wake us
		b.mu.Unlock()
		return fmt.Errorf("segment %q: %w", b.tag, frond.ErrClosed)
	}
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
		b.mu.Lock()
		err, ready := b.lastErr, b.next != nil
		b.mu.Unlock()
		if err != nil && !ready {
			if definitive(err) {
				return err
			}
			return fmt.Errorf("%w: tag %q: both buffers empty and the load failed: %w", frond.ErrStoreUnavailable, b.tag, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: tag %q: both buffers empty, waited for the store until: %w", frond.ErrStoreUnavailable, b.tag, ctx.Err())
	}
}

// definitive errors are answers, not outages: retrying at once does not help.
func definitive(err error) bool {
	return errors.Is(err, frond.ErrTagNotFound) || errors.Is(err, frond.ErrTagExhausted) ||
		errors.Is(err, frond.ErrInvalidArgument) || errors.Is(err, frond.ErrClosed) || errors.Is(err, frond.ErrForbidden) ||
		errors.Is(err, frond.ErrNotLeasable) || errors.Is(err, frond.ErrFormNotCarried)
}

// fill loads the next segment, retrying with backoff until it has one, the
// tag is gone, or the engine is closed.
func (b *Buffer) fill() {
	cfg := &b.e.cfg
	backoff := cfg.RetryMin
	for {
		err, finished := b.loadOnce()
		if finished {
			return
		}
		cfg.Logger.Warn("segment load failed; retrying", "tag", b.tag, "retry_in", backoff, "err", err)
		select {
		case <-cfg.After(backoff):
		case <-b.kick:
		case <-b.e.stop:
			b.endFill()
			return
		case <-b.gone:
			b.endFill()
			return
		}
		backoff = min(2*backoff, cfg.RetryMax)
	}
}

// endFill ends a fill between attempts and wakes the callers waiting for
// the next attempt: there is none.
func (b *Buffer) endFill() {
	b.mu.Lock()
	b.filling = false
	close(b.done)
	b.done = make(chan struct{})
	b.mu.Unlock()
}

// loadOnce makes one store call and records its outcome. In the same
// critical section it wakes the callers waiting for this attempt and, when
// the fill is over, clears b.filling: a caller that finds the buffers empty
// afterwards starts a new fill instead of waiting for one that has ended.
func (b *Buffer) loadOnce() (err error, finished bool) {
	cfg := &b.e.cfg
	b.mu.Lock()
	// The first two loads take the tag's own step, as Leaf's do (its second
	// load only starts the clock); the adaptive rule applies from the third.
	step := int64(0)
	if b.loads > 1 {
		lasted := cfg.Clock.Now().Sub(b.lastLoad)
		if b.hungry {
			lasted = 0 // callers waited: grow as for a segment used up at once
		}
		step = cfg.nextStep(b.step, b.minStep, lasted)
	}
	b.hungry = false
	first := b.loads == 0
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(b.e.ctx, cfg.LoadTimeout)
	t0 := cfg.Clock.Now()
	a, err := b.e.store.Allocate(ctx, b.tag, step)
	if step > 0 && errors.Is(err, frond.ErrTagExhausted) {
		// The adaptive step does not fit below 2^63; the tag's own may.
		step = 0
		a, err = b.e.store.Allocate(ctx, b.tag, step)
	}
	cancel()
	t1 := cfg.Clock.Now()
	if err == nil {
		err = MappingChanging(a.Mapping)
	}
	if err == nil && (a.Len() < 1 || a.Step < 1) {
		err = fmt.Errorf("store returned an empty allocation %+v", a)
	}
	if cfg.OnLoad != nil {
		label := b.tag
		if first && err != nil {
			label = "" // the tag may not exist: no series per made-up name
		}
		cfg.OnLoad(label, t1.Sub(t0), err)
	}

	b.mu.Lock()
	done := b.done
	b.done = make(chan struct{})
	if err != nil {
		b.lastErr, b.lastFail = fmt.Errorf("load segment: %w", err), t1
		b.failures++
		err = b.lastErr
		if first && !definitive(err) {
			b.e.firstErr.Store(&err)
			b.e.firstFail.Store(t1.UnixNano())
		}
		if first || errors.Is(err, frond.ErrTagNotFound) {
			// A tag that is gone, or whose first segment did not load,
			// leaves nothing behind; the next request starts afresh.
			b.dropLocked()
		}
	} else {
		if step <= 0 {
			step = a.Step
		}
		if b.lastErr != nil {
			cfg.Logger.Info("segment load recovered", "tag", b.tag, "failures", b.failures)
		}
		b.lastErr = nil
		b.next = newSegment(a.Range, cfg.Threshold, t1, step, a.Mapping)
		if n := len(b.steps); n == 0 || b.steps[n-1].Step != step {
			if n == maxStepChanges {
				b.steps = append(b.steps[:0], b.steps[1:]...)
			}
			b.steps = append(b.steps, StepChange{At: t1, Step: step})
		}
		b.step, b.minStep = step, a.Step
		b.lastLoad, b.loadDur = t1, t1.Sub(t0)
		b.loads++
		if first && !b.removed {
			b.e.promote(b)
		}
	}
	finished = err == nil || definitive(err) || b.e.closed.Load() || b.removed
	if finished {
		b.filling = false
	}
	b.mu.Unlock()
	close(done)
	return err, finished
}

// maxStepChanges is how many changes of the step a buffer remembers.
const maxStepChanges = 8

// StepChange is a load whose step differs from the load before it (the
// first load counts as one).
type StepChange struct {
	At   time.Time `json:"at"`
	Step int64     `json:"step"`
}

// BufferStats describe one segment of a buffer.
type BufferStats struct {
	Start  int64     `json:"start"`
	Pos    int64     `json:"pos"` // next ID to hand out (End when used up)
	End    int64     `json:"end"` // exclusive
	Stride int64     `json:"stride"`
	Loaded time.Time `json:"loaded"`
}

// issuedLocked is how many IDs b has handed out. The caller holds b.mu.
func (b *Buffer) issuedLocked() int64 {
	cur := b.cur.Load()
	if cur == emptySegment {
		return b.issued
	}
	used, _ := cur.used()
	return b.issued + used
}

// sample measures b's rate since its last sample (or its creation).
func (b *Buffer) sample(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el := now.Sub(b.rateAt)
	if el <= 0 {
		return
	}
	n := b.issuedLocked()
	b.rate = float64(n-b.rateN) / el.Seconds()
	b.rateAt, b.rateN = now, n
}

// Stats describe a tag's buffer for monitoring (Leaf's /cache and more).
type Stats struct {
	Tag string `json:"tag"`
	// Ready is Leaf's initOk: the buffer has loaded a segment.
	Ready bool `json:"ready"`
	// Current and Next are the two segments; NextReady says whether Next holds one.
	Current   BufferStats `json:"current"`
	Next      BufferStats `json:"next"`
	NextReady bool        `json:"next_ready"`
	Loading   bool        `json:"loading"`
	// Step is the step of the last load; MinStep the tag's configured step.
	Step    int64 `json:"step"`
	MinStep int64 `json:"min_step"`
	// Loads and Failures count store calls.
	Loads    uint64 `json:"loads"`
	Failures uint64 `json:"failures"`
	// LastLoad is when the last segment arrived and LastLoadDuration how long the call took.
	LastLoad         time.Time     `json:"last_load"`
	LastLoadDuration time.Duration `json:"last_load_duration"`
	// LastError is the error of the last load if it failed, else empty.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at"`
	// Issued is how many IDs this buffer has handed out.
	Issued int64 `json:"issued"`
	// Waits counts the callers that found both segments empty after the
	// first load: each makes the next step grow.
	Waits uint64 `json:"waits"`
	// Remaining is how many IDs both segments still hold.
	Remaining int64 `json:"remaining"`
	// Rate is the consumption in IDs per second over the engine's last
	// sample window (RateWindow): 0 until the first sample.
	Rate float64 `json:"rate"`
	// Horizon is how long Remaining lasts at Rate; -1 when Rate is zero.
	Horizon time.Duration `json:"horizon"`
	// Low: Horizon is shorter than the engine's Runway (Settings.Runway):
	// the buffered IDs run out before a store outage that long ends.
	Low bool `json:"low"`
	// Steps are the last changes of the step (at most 8), oldest first:
	// the adaptive step's history since the buffer was made.
	Steps []StepChange `json:"steps"`
}

// Stats returns the buffer's statistics.
func (b *Buffer) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.cur.Load()
	st := Stats{
		Tag: b.tag, Ready: b.loads > 0, Loading: b.filling,
		Step: b.step, MinStep: b.minStep, Loads: b.loads, Failures: b.failures, Waits: b.waits,
		LastLoad: b.lastLoad, LastLoadDuration: b.loadDur, Steps: slices.Clone(b.steps),
	}
	if b.lastErr != nil {
		st.LastError, st.LastErrorAt = b.lastErr.Error(), b.lastFail
	}
	if cur != emptySegment {
		used, pos := cur.used()
		st.Current = BufferStats{Start: cur.start, Pos: pos, End: cur.end, Stride: cur.stride, Loaded: cur.loaded}
		st.Remaining = cur.count - used
		st.Issued = b.issued + used
	} else if !b.removed {
		st.Issued = b.issued
	}
	if b.next != nil {
		st.NextReady = true
		st.Next = BufferStats{Start: b.next.start, Pos: b.next.start, End: b.next.end, Stride: b.next.stride, Loaded: b.next.loaded}
		st.Remaining += b.next.count
	}
	st.Rate = b.rate
	st.Horizon = -1
	if b.rate > 0 {
		st.Horizon = time.Duration(float64(st.Remaining) / b.rate * float64(time.Second))
		st.Low = st.Horizon < b.e.cfg.Runway
	}
	return st
}
