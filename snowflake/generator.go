package snowflake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
)

// DefaultMaxBackward is the largest backward clock step a generator waits out
// by default, as Leaf does.
const DefaultMaxBackward = 5 * time.Millisecond

// Settings configure a Generator. The zero value is valid: the twitter layout,
// node 0, backward steps up to 5 ms waited out, no borrowing, no random start,
// the system clock.
type Settings struct {
	// Layout is the bit layout; the zero value (Unit 0) means the twitter preset.
	Layout Layout
	// Node is the worker ID, 0 to Layout.MaxNode().
	Node int64
	// MaxBackward is the largest backward clock step that is waited out (the
	// generator keeps issuing from the last tick's remaining sequence and
	// sleeps only if that runs out); a larger one makes Next return a
	// *ClockError. Zero means DefaultMaxBackward; a negative value refuses
	// every backward step.
	MaxBackward time.Duration
	// MaxLead enables borrowing: when a tick's sequence is exhausted the
	// generator moves on to the next tick before the clock gets there, up to
	// MaxLead ahead of the clock (RFC 9562 section 6.2, method 3; yitter's
	// drift). Zero turns borrowing off: callers wait for the next tick.
	MaxLead time.Duration
	// RandomStart, when positive, starts the sequence of each new tick at a
	// random value in [0, RandomStart) so that IDs issued at low traffic are
	// not all even (Leaf uses 100). It must not exceed half the sequence space.
	RandomStart int64
	// Reserved makes the generator issue nothing until SetLimit allows it.
	// A service that records reservations in a worker registry sets it, so
	// that no ID exists before a reservation covering it is durable, whatever
	// happens to the first reservation. Without it the generator has no limit
	// until SetLimit is called.
	Reserved bool
	// NotBefore is the last time a previous run of this node issued (from a
	// worker registry). The generator issues only IDs of later ticks, and
	// refuses while the clock is behind it by more than MaxBackward.
	NotBefore time.Time
	// Now reads the wall clock in nanoseconds since the Unix epoch. Nil means
	// a SystemClock with DefaultResync.
	Now func() int64
	// Sleep waits for d. Nil means: spin (yielding the processor) for waits
	// up to a millisecond, time.Sleep for longer ones. Tests inject a fake
	// that advances their clock.
	Sleep func(d time.Duration)
}

// ClockError is returned when the clock is behind the last time the
// generator used by more than it may wait out. It unwraps to ErrClockBackwards.
type ClockError struct {
	// Offset is how far the clock is behind.
	Offset time.Duration
	// Max is the most the generator waits out (Settings.MaxBackward).
	Max time.Duration
	// Stalled is set when the clock did not advance while the generator
	// waited for it: it was waiting for Offset more.
	Stalled bool
}

func (e *ClockError) Error() string {
	if e.Stalled {
		return fmt.Sprintf("clock moved backwards or stalled: still %v short of the last issued time after waiting; refusing snowflake IDs", e.Offset)
	}
	return fmt.Sprintf("clock moved backwards by %v (at most %v is waited out): refusing snowflake IDs until the clock catches up; check NTP", e.Offset, e.Max)
}

// Unwrap returns ErrClockBackwards.
func (e *ClockError) Unwrap() error { return ErrClockBackwards }

// Generator issues snowflake IDs for one node. It is safe for concurrent use:
// the time and sequence of the last ID are packed in one 64-bit word, raised
// by an atomic add within a tick and by compare-and-swap to a new tick, so
// there is no mutex and, within a tick, no retry on the hot path.
//
// IDs of one generator strictly increase in the order the calls take effect.
type Generator struct {
	layout    Layout
	unitNs    int64
	epochNs   int64
	div       divider
	seqBits   uint
	seqMask   uint64
	timeShift uint
	nodePart  int64
	shardBits uint // the IDs' lowest bits, left 0 (Layout.WithShard)
	maxTick   int64
	maxBackNs int64
	maxLead   int64 // ticks
	budget    int64 // ns a single call may wait in all
	randStart uint64
	adds      bool // the state's fields leave bit 63 free: an add may run past the end
	now       func() int64
	sys       *SystemClock // when set, called directly (cheaper than now)
	sleep     func(time.Duration)

	_        [64]byte
	state    atomic.Uint64 // tick<<seqBits | sequence of the last ID issued
	_        [56]byte
	seenTick atomic.Int64 // the latest tick the clock has shown
	seen     atomic.Int64 // the reading (ns) that first showed seenTick

	borrows  atomic.Uint64
	waits    atomic.Uint64
	steps    atomic.Uint64
	refusals atomic.Uint64
	stepAt   atomic.Int64 // 1 + the seen tick at which the last backward step was counted
	maxLeadT atomic.Int64 // largest lead taken, in ticks
	limit    atomic.Int64 // latest tick that may be issued (SetLimit); noLimit or below 0
}

// Values of Generator.limit besides a tick.
const (
	noLimit    = math.MaxInt64 // ClearLimit, or never limited
	nothingYet = -1            // Settings.Reserved before the first SetLimit
)

// New validates s and returns a generator.
func New(s Settings) (*Generator, error) {
	l := s.Layout
	if l.Unit == 0 && l.TimeBits == 0 {
		l, _ = Preset(Twitter)
	}
	var sys *SystemClock
	if s.Now == nil {
		sys = NewSystemClock(DefaultResync, 0)
		s.Now = sys.Now
	}
	now := time.Unix(0, s.Now())
	if err := l.Validate(now); err != nil {
		return nil, err
	}
	if s.Node < 0 || s.Node > l.MaxNode() {
		return nil, fmt.Errorf("%w: node %d out of 0..%d for %d node bits", ErrInvalidLayout, s.Node, l.MaxNode(), l.NodeBits)
	}
	switch {
	case s.MaxLead < 0:
		return nil, fmt.Errorf("%w: max lead %v is negative", ErrInvalidSettings, s.MaxLead)
	case s.RandomStart < 0 || s.RandomStart > (l.MaxSeq()+1)/2:
		return nil, fmt.Errorf("%w: random start %d out of 0..%d (half the sequence space)", ErrInvalidSettings, s.RandomStart, (l.MaxSeq()+1)/2)
	}
	if s.MaxBackward == 0 {
		s.MaxBackward = DefaultMaxBackward
	}
	if s.MaxBackward < 0 {
		s.MaxBackward = 0
	}
	if s.Sleep == nil {
		s.Sleep = spinSleep
	}
	g := &Generator{
		layout:    l,
		unitNs:    int64(l.Unit),
		epochNs:   l.Epoch.UnixNano(),
		div:       newDivider(uint64(l.Unit)),
		seqBits:   l.SeqBits,
		seqMask:   uint64(l.MaxSeq()),
		timeShift: l.NodeBits + l.SeqBits,
		nodePart:  s.Node << l.SeqBits,
		shardBits: l.ShardBits,
		maxTick:   l.MaxTick(),
		maxBackNs: int64(s.MaxBackward),
		maxLead:   int64(s.MaxLead) / int64(l.Unit),
		randStart: uint64(s.RandomStart),
		adds:      l.TimeBits+l.SeqBits < 63,
		now:       s.Now,
		sys:       sys,
		sleep:     s.Sleep,
	}
	g.budget = g.maxBackNs + g.maxLead*g.unitNs + 2*g.unitNs + int64(time.Millisecond)
	g.seen.Store(g.epochNs)
	g.seenTick.Store(0)
	g.limit.Store(noLimit)
	if s.Reserved {
		g.limit.Store(nothingYet)
	}
	if !s.NotBefore.IsZero() {
		nb := s.NotBefore.UnixNano()
		t := g.tickOf(nb)
		if t < 0 || t > g.maxTick {
			return nil, fmt.Errorf("%w: not-before time %s is outside the layout (%s to %s)", ErrInvalidSettings,
				s.NotBefore.Format(time.RFC3339Nano), l.Epoch.Format(time.RFC3339), l.Expires().Format(time.RFC3339))
		}
		// The sequence of tick t counts as used up: the next ID has a later tick.
		g.state.Store(uint64(t)<<g.seqBits | g.seqMask)
		g.seen.Store(nb)
		g.seenTick.Store(t)
	}
	return g, nil
}

// spinSleep waits d, yielding the processor for short waits (time.Sleep
// often oversleeps by tens of microseconds, which would cost a quarter of a
// millisecond tick) and sleeping for long ones.
func spinSleep(d time.Duration) {
	if d > time.Millisecond {
		time.Sleep(d)
		return
	}
	start := time.Now()
	for {
		runtime.Gosched()
		if time.Since(start) >= d {
			return
		}
	}
}

// Layout returns the generator's layout.
func (g *Generator) Layout() Layout { return g.layout }

// Node returns the generator's worker ID.
func (g *Generator) Node() int64 { return g.nodePart >> g.seqBits }

// tickOf returns the tick of a clock reading, rounding down (negative before
// the epoch).
func (g *Generator) tickOf(ns int64) int64 {
	d := ns - g.epochNs
	if d < 0 {
		return -1 - int64(g.div.div(uint64(-(d + 1))))
	}
	return int64(g.div.div(uint64(d)))
}

func (g *Generator) startSeq() uint64 {
	if g.randStart == 0 {
		return 0
	}
	return rand.Uint64N(g.randStart)
}

func (g *Generator) compose(state uint64) int64 {
	return (int64(state>>g.seqBits)<<g.timeShift | g.nodePart | int64(state&g.seqMask)) << g.shardBits
}

// reserve takes up to n (>= 1) consecutive values of the packed state and
// returns the first and last. The range lies in one tick, except that a
// range taken by an atomic add may run on into the following tick.
//
// Values that continue the current tick are taken with one atomic add, which
// never fails under contention (a compare-and-swap loop on one word loses
// most of its races on many cores and re-reads the clock for each). Only
// moving to a new tick (the clock's, or the next one when the sequence is
// used up) takes a compare-and-swap. An add may run past what may be issued
// now when other callers took the last values of the tick at the same time;
// such a caller holds values of a later tick and waits for the clock to allow
// them, as it would have waited for that tick anyway. Callers add only after
// they saw the state within what may be issued, so the state runs ahead by at
// most one value per concurrent caller, never by one per refused call.
func (g *Generator) reserve(n uint64) (lo, hi uint64, err error) {
	var w waiter
	for {
		// Load the state before reading the clock, so a reading older than
		// the state can only come from a clock that really stepped back.
		old := g.state.Load()
		if old&sealedBit != 0 {
			return 0, 0, ErrSealed
		}
		seenTick := g.seenTick.Load()
		seen := g.seen.Load()
		var nowNs int64
		if g.sys != nil {
			nowNs = g.sys.Now()
		} else {
			nowNs = g.now()
		}
		t, top := g.tickOf(nowNs), seenTick
		if t != seenTick {
			if top, err = g.moved(nowNs, t, seenTick, seen); err != nil {
				return 0, 0, err
			}
		}
		last := int64(old >> g.seqBits)
		next, fresh := last, false
		switch {
		case t > last:
			next, fresh = t, true
		case old&g.seqMask == g.seqMask: // the sequence of tick last is used up
			next, fresh = last+1, true
		}
		if next > g.maxTick || next > g.limit.Load() {
			return 0, 0, g.notIssuable(next)
		}
		// A new tick may lead the clock by MaxLead. The tick of the state
		// goes on being issued after a backward step the generator waits
		// out, so it is measured against the latest tick the clock showed.
		lead := next - top
		if fresh {
			lead = next - t
		}
		if lead > g.maxLead {
			// Wait until the clock reaches tick next-maxLead.
			if err := w.sleep(g, (next-g.maxLead)*g.unitNs+g.epochNs-nowNs, nowNs); err != nil {
				return 0, 0, err
			}
			continue
		}
		if fresh || !g.adds {
			lo = old + 1 // the next value of tick last
			if fresh {
				lo = uint64(next)<<g.seqBits | g.startSeq()
			}
			hi = min(lo|g.seqMask, lo+n-1)
			if !g.state.CompareAndSwap(old, hi) {
				continue
			}
			g.noteLead(hi, t, fresh)
			return lo, hi, nil
		}
		k := min(n, g.seqMask-old&g.seqMask)
		hi = g.state.Add(k)
		lo = hi - k + 1
		if hi&sealedBit != 0 {
			return 0, 0, ErrSealed
		}
		if end := int64(hi >> g.seqBits); end != next {
			// Others took the rest of the tick meanwhile: the range ends in
			// a later tick, which may have to wait for the clock.
			if t, err = g.await(end, &w); err != nil {
				return 0, 0, err // the range is lost: a gap, never a duplicate
			}
		}
		g.noteLead(hi, t, lo&g.seqMask == 0 || lo>>g.seqBits != hi>>g.seqBits)
		return lo, hi, nil
	}
}

// read reads the clock and returns the reading, its tick and the latest tick
// the clock has shown, refusing a backward step larger than the generator
// waits out.
func (g *Generator) read() (nowNs, t, top int64, err error) {
	seenTick := g.seenTick.Load()
	seen := g.seen.Load()
	if g.sys != nil {
		nowNs = g.sys.Now()
	} else {
		nowNs = g.now()
	}
	t, top = g.tickOf(nowNs), seenTick
	if t != seenTick {
		top, err = g.moved(nowNs, t, seenTick, seen)
	}
	return nowNs, t, top, err
}

// moved handles a reading whose tick t is not the latest the clock has shown
// (seenTick, first shown by the reading seen): it records a later tick, and
// refuses a backward step larger than the generator waits out. It returns
// the latest tick shown.
func (g *Generator) moved(nowNs, t, seenTick, seen int64) (int64, error) {
	if t > seenTick {
		// Once per tick. The pair is not updated atomically: a reader may
		// pair the new tick with the old reading and underestimate a
		// backward step by less than a tick.
		if g.seenTick.CompareAndSwap(seenTick, t) {
			g.seen.Store(nowNs)
		}
		return t, nil
	}
	behind := max(seen, g.epochNs+seenTick*g.unitNs) - nowNs
	g.noteStep(seenTick)
	if behind > g.maxBackNs {
		g.refusals.Add(1)
		return 0, &ClockError{Offset: time.Duration(behind), Max: time.Duration(g.maxBackNs)}
	}
	return seenTick, nil
}

// notIssuable returns the error for a tick past the layout's end or past the
// limit, nil for a tick that may be issued.
func (g *Generator) notIssuable(tick int64) error {
	if tick > g.maxTick {
		return fmt.Errorf("%w: layout %s ran out on %s", ErrLayoutExpired, g.layout.Name, g.layout.Expires().Format(time.RFC3339))
	}
	if limit := g.limit.Load(); tick > limit {
		return g.unreserved(tick, limit)
	}
	return nil
}

// await waits until tick may be issued: within the limit and at most
// MaxLead ahead of the clock. It returns the clock's tick.
func (g *Generator) await(tick int64, w *waiter) (int64, error) {
	for {
		if err := g.notIssuable(tick); err != nil {
			return 0, err
		}
		nowNs, t, _, err := g.read()
		if err != nil {
			return 0, err
		}
		if tick-t <= g.maxLead {
			return t, nil
		}
		if err := w.sleep(g, (tick-g.maxLead)*g.unitNs+g.epochNs-nowNs, nowNs); err != nil {
			return 0, err
		}
	}
}

// noteLead counts a tick taken ahead of the clock's tick t: the tick of the
// last value taken, hi, when the range started it.
func (g *Generator) noteLead(hi uint64, t int64, started bool) {
	tick := int64(hi >> g.seqBits)
	if !started || tick <= t {
		return
	}
	g.borrows.Add(1)
	lead := tick - t
	for m := g.maxLeadT.Load(); lead > m && !g.maxLeadT.CompareAndSwap(m, lead); m = g.maxLeadT.Load() {
	}
}

// waiter bounds the waits of one call by the clock, not by how often the
// call waits: under contention a call may lose the race for several ticks in
// a row while the clock is fine. What counts is how far the clock fell short
// of the time slept (stalled); past the budget, the call gives up.
type waiter struct {
	stalled, sleptNs, sleptAt int64
}

// sleep waits d nanoseconds after the reading nowNs, or refuses when the
// clock has fallen too far short of the earlier waits.
func (w *waiter) sleep(g *Generator, d, nowNs int64) error {
	if w.sleptNs > 0 {
		w.stalled += max(w.sleptNs-(nowNs-w.sleptAt), 0)
	}
	if w.stalled+d > g.budget {
		g.refusals.Add(1)
		return &ClockError{Offset: time.Duration(d), Max: time.Duration(g.maxBackNs), Stalled: true}
	}
	g.waits.Add(1)
	g.sleep(time.Duration(d))
	w.sleptNs, w.sleptAt = d, nowNs
	return nil
}

// noteStep counts a backward step once per latest tick.
func (g *Generator) noteStep(seenTick int64) {
	if at := g.stepAt.Load(); at != seenTick+1 && g.stepAt.CompareAndSwap(at, seenTick+1) {
		g.steps.Add(1)
	}
}

// Next returns a new ID. It returns a *ClockError (errors.Is
// ErrClockBackwards) when the clock is behind by more than MaxBackward, and
// ErrLayoutExpired when the layout's time field has run out. It waits only
// when the current tick's sequence is used up and borrowing is off or at its
// limit, or while a small backward step is waited out.
func (g *Generator) Next() (int64, error) {
	lo, _, err := g.reserve(1)
	if err != nil {
		return 0, err
	}
	return g.compose(lo), nil
}

// AppendN appends n new IDs to dst, reserving as many as a tick holds in one
// step. On error it returns the IDs it already appended.
func (g *Generator) AppendN(dst []int64, n int) ([]int64, error) {
	for n > 0 {
		lo, hi, err := g.reserve(uint64(n))
		if err != nil {
			return dst, err
		}
		for s := lo; s <= hi; s++ {
			dst = append(dst, g.compose(s))
		}
		n -= int(hi - lo + 1)
	}
	return dst, nil
}

// NextN returns n new IDs in increasing order.
func (g *Generator) NextN(n int) ([]int64, error) {
	if n <= 0 {
		return nil, nil
	}
	return g.AppendN(make([]int64, 0, n), n)
}

// sealedBit marks a sealed state word; time and sequence use at most 63 bits.
const sealedBit = 1 << 63

// Seal stops the generator for good and returns the start of the tick of the
// last ID it issued. Every call that has not yet taken effect fails with
// ErrSealed, so the time returned is final: a registry may record it.
func (g *Generator) Seal() time.Time {
	old := g.state.Or(sealedBit)
	return g.layout.TickTime(int64(old &^ sealedBit >> g.seqBits))
}

func (g *Generator) unreserved(t, limit int64) error {
	if limit < 0 {
		return fmt.Errorf("%w: nothing is reserved yet", ErrUnreserved)
	}
	return fmt.Errorf("%w: the clock is at %s, reserved up to %s", ErrUnreserved,
		g.layout.TickTime(t).Format(time.RFC3339Nano), g.layout.TickTime(limit).Format(time.RFC3339Nano))
}

// SetLimit sets the latest time whose tick may be issued: the time a worker
// registry has durably recorded. Past it, Next returns ErrUnreserved. A
// service raises the limit as the registry records later times, so a crash
// never leaves issued IDs later than the recorded time. A time before the
// layout's epoch (the zero time among them) allows nothing; only ClearLimit
// removes the limit.
func (g *Generator) SetLimit(t time.Time) {
	if t.Before(g.layout.Epoch) {
		g.limit.Store(nothingYet)
		return
	}
	g.limit.Store(min(g.tickOf(t.UnixNano()), g.maxTick))
}

// Limit returns the latest time whose tick may be issued (SetLimit), and
// false when there is no limit or nothing is allowed yet.
func (g *Generator) Limit() (time.Time, bool) {
	l := g.limit.Load()
	if l == noLimit || l < 0 {
		return time.Time{}, false
	}
	return g.layout.TickTime(l), true
}

// ClearLimit removes the limit of SetLimit: the generator issues up to the
// clock (and MaxLead).
func (g *Generator) ClearLimit() { g.limit.Store(noLimit) }

// WithinLimit reports whether t's tick is at or before the limit of
// SetLimit (always without a limit, and for a time before the epoch).
func (g *Generator) WithinLimit(t time.Time) bool {
	if t.Before(g.layout.Epoch) {
		return true
	}
	return g.tickOf(t.UnixNano()) <= g.limit.Load()
}

// Last returns the start of the tick of the last ID issued (or of NotBefore).
// A worker registry persists it so a restart never reuses a tick.
func (g *Generator) Last() time.Time {
	return g.layout.TickTime(int64(g.state.Load() &^ sealedBit >> g.seqBits))
}

// Behind returns how far the clock is now behind the latest reading the
// generator has seen (or NotBefore); zero when the clock is fine. Readiness
// checks use it without issuing an ID.
func (g *Generator) Behind() time.Duration {
	if d := g.seen.Load() - g.now(); d > 0 {
		return time.Duration(d)
	}
	return 0
}

// Stats describe a generator's clock handling since it was created.
type Stats struct {
	// Last is the time field of the last ID issued.
	Last time.Time
	// Lead is how far Last is ahead of the clock now (borrowing); 0 if not ahead.
	Lead time.Duration
	// MaxLead is the largest lead borrowing has taken.
	MaxLead time.Duration
	// MaxLeadAllowed is Settings.MaxLead rounded down to whole ticks.
	MaxLeadAllowed time.Duration
	// Behind is how far the clock is behind the latest reading (see Behind).
	Behind time.Duration
	// Borrows counts ticks taken ahead of the clock.
	Borrows uint64
	// Waits counts the times a call slept.
	Waits uint64
	// BackwardSteps counts backward clock steps seen, absorbed or refused.
	BackwardSteps uint64
	// Refusals counts calls that returned a *ClockError.
	Refusals uint64
}

// Stats returns the generator's statistics.
func (g *Generator) Stats() Stats {
	last := int64(g.state.Load() &^ sealedBit >> g.seqBits)
	lead := (last - g.tickOf(g.now())) * g.unitNs
	return Stats{
		Last:           g.layout.TickTime(last),
		Lead:           time.Duration(max(lead, 0)),
		MaxLead:        time.Duration(g.maxLeadT.Load() * g.unitNs),
		MaxLeadAllowed: time.Duration(g.maxLead * g.unitNs),
		Behind:         g.Behind(),
		Borrows:        g.borrows.Load(),
		Waits:          g.waits.Load(),
		BackwardSteps:  g.steps.Load(),
		Refusals:       g.refusals.Load(),
	}
}
