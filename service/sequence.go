package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
)

// Sequence tags (frond.ModeSequence): every ID is taken from the store when
// it is asked for, so IDs are linearizable across nodes (docs/decisions/006):
// if one request's answer arrives before another request is sent, to any
// node, the first ID is smaller.
//
// Group commit: the callers of one tag wait in a queue, and at most one store
// call per tag is in flight on this node. When it returns, the callers that
// arrived meanwhile are served together by the next call, which takes the
// sum of their counts and hands the IDs out in arrival order. A caller never
// joins a call that started before it arrived: such a call may have been
// ordered in the store before an answer the caller has already seen from
// another node.

// modeTTL is how long a tag's mode is used before it is read again (in the
// background): a tag deleted and created again under the other mode by
// another node is seen within it.
const modeTTL = 30 * time.Second

// modeCache holds each tag's mode as last read.
type modeCache struct {
	m sync.Map // tag -> *modeEntry
	// fail is when a read of an unknown tag's mode last failed on an
	// outage (Unix ns; 0: never).
	fail  atomic.Int64
	epoch atomic.Int64 // raised every modeTTL: cached modes older are read again
	// idleEpochs: a mode not asked for in this many epochs is forgotten
	// (segment.idle_after in epochs; 0: never).
	idleEpochs int64
}

type modeEntry struct {
	mode       string // frond.Tag.Mode as stored: "" or ModeSequence
	mapping    string // frond.Tag.Mapping as stored: "" (plain), mist or opaque
	epoch      int64  // Service.modes.epoch when it was read
	refreshing atomic.Bool
}

// ageModes makes every cached mode stale once per modeTTL: the hot path
// compares an epoch instead of reading the clock.
func (s *Service) ageModes() {
	defer s.bg.wg.Done()
	t := time.NewTicker(modeTTL)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.modes.age()
		case <-s.bg.ctx.Done():
			return
		}
	}
}

// age makes every cached mode stale, and forgets those of the tags no one
// asked for in idleEpochs epochs (a mode in use is read again each epoch,
// which moves its entry to the new epoch): the cache holds the tags in
// use, as the segment engine's buffers do, not every tag ever asked for.
func (c *modeCache) age() {
	cur := c.epoch.Add(1)
	if c.idleEpochs <= 0 {
		return
	}
	c.m.Range(func(k, v any) bool {
		if cur-v.(*modeEntry).epoch > c.idleEpochs {
			c.m.CompareAndDelete(k, v)
		}
		return true
	})
}

// modeOf returns a tag's mode, from the cache or the store. A tag the
// segment engine holds buffers of is a segment tag; its mode is still read
// once, so a sequence tag that a stale node served from buffers is found.
func (s *Service) modeOf(ctx context.Context, tag string) (string, error) {
	k, err := s.kindOf(ctx, tag)
	return k.mode, err
}

// tagKind is what a node caches of a tag: its mode and mapping.
type tagKind struct{ mode, mapping string }

// kindOf is modeOf with the tag's mapping (frond.Tag.Mapping) as last
// read. A segment's IDs are handed out in the mapping that came with the
// segment (segment.Engine.NextMapped), not this one: this one checks a
// request before any ID is taken.
func (s *Service) kindOf(ctx context.Context, tag string) (tagKind, error) {
	if v, ok := s.modes.m.Load(tag); ok {
		e := v.(*modeEntry)
		if e.epoch != s.modes.epoch.Load() && e.refreshing.CompareAndSwap(false, true) {
			go s.refreshMode(tag, e)
		}
		return tagKind{e.mode, e.mapping}, nil
	}
	// As the segment engine does for first loads: for a moment after the
	// store failed to answer, a tag whose mode is not known yet fails at
	// once instead of waiting for the store again.
	if at := s.modes.fail.Load(); at != 0 {
		if since := time.Since(time.Unix(0, at)); since < s.failFast() {
			return tagKind{}, fmt.Errorf("%w: tag %s: its mode is not known yet, and a store read failed %v ago", frond.ErrStoreUnavailable, Quote(tag), since.Round(time.Millisecond))
		}
	}
	t, err := s.store.Tag(ctx, tag)
	if err != nil {
		if errors.Is(err, frond.ErrStoreUnavailable) && ctx.Err() == nil {
			s.modes.fail.Store(time.Now().UnixNano())
		}
		return tagKind{}, err
	}
	s.setTag(t)
	return tagKind{frond.StoredMode(t.Mode), frond.ServedMapping(t.Mapping)}, nil
}

// failFast is the segment engine's FailFast: the sequence tags' too.
func (s *Service) failFast() time.Duration { return s.seg.Settings().FailFast }

func (s *Service) refreshMode(tag string, old *modeEntry) {
	defer old.refreshing.Store(false)
	ctx, cancel := context.WithTimeout(s.bg.ctx, s.loadTimeout())
	defer cancel()
	t, err := s.store.Tag(ctx, tag)
	switch {
	case err == nil:
		s.setTag(t)
	case errors.Is(err, frond.ErrTagNotFound):
		s.modes.m.Delete(tag)
	default:
		// The store is away: the tag is in use, so its mode stays cached
		// (and its buffers served) as if read now; it is read again next
		// epoch. Aging it out would make its next request wait on the
		// store it cannot reach.
		s.modes.m.CompareAndSwap(tag, old, &modeEntry{mode: old.mode, mapping: old.mapping, epoch: s.modes.epoch.Load()})
	}
}

// setMode records a mode learnt from a store's refusal; the mapping stays
// as cached.
func (s *Service) setMode(tag, mode string) {
	mapping := ""
	if v, ok := s.modes.m.Load(tag); ok {
		mapping = v.(*modeEntry).mapping
	}
	s.setKind(tag, tagKind{mode, mapping})
}

// setTag records the mode and mapping of a tag as read.
func (s *Service) setTag(t frond.Tag) { s.setKind(t.Name, tagKind{t.Mode, t.Mapping}) }

func (s *Service) setKind(tag string, k tagKind) {
	mode := frond.StoredMode(k.mode)
	// During a change of mapping (frond.MappingChange) the numbers served
	// are still the old mapping's: no segment of the new one is served
	// until the change is done.
	s.modes.m.Store(tag, &modeEntry{mode: mode, mapping: frond.ServedMapping(k.mapping), epoch: s.modes.epoch.Load()})
	if mode == frond.ModeSequence {
		s.seg.Forget(tag) // buffers of a tag that became a sequence tag
	}
}

// loadTimeout is the segment engine's LoadTimeout: the bound of a sequence
// tag's store call too.
func (s *Service) loadTimeout() time.Duration { return s.seg.Settings().LoadTimeout }

// sequencer is the group commit of the sequence tags of one node.
type sequencer struct {
	s    *Service
	mu   sync.Mutex
	tags map[string]*seqQueue
	// fails holds, per tag, the last store call that failed on an outage:
	// for FailFast after it, callers get its error at once instead of
	// queueing for the store (as the segment engine's callers do).
	fails map[string]seqFail
	// trips and ids count store calls and IDs, for metrics and the
	// dashboard: ids/trips is the mean group.
	stats   sync.Map     // tag -> *seqCounters
	retired atomic.Int64 // IDs of the deleted tags' counters
	seen    atomic.Int64 // the highest SequenceOverview.IDs answered
}

type seqQueue struct {
	waiting []*seqWaiter
	busy    bool // a store call is in flight
}

// MaxSequenceGroup bounds the IDs of one group commit: the waiters that
// arrived first, in order, up to this many IDs, are served by one store
// call, and the rest by the next (each arrived before it starts, so the
// order holds). One request larger than this (up to MaxRangesBatch) is a
// group of its own: a store call is never larger than the larger of this
// and one request.
const MaxSequenceGroup = MaxBatch

// nextGroup takes the next group off the queue: the first waiter, and
// those after it while the group's IDs stay within MaxSequenceGroup.
// q.mu is held.
func (tq *seqQueue) nextGroup() []*seqWaiter {
	if len(tq.waiting) == 0 {
		return nil
	}
	n, total := 1, tq.waiting[0].n
	for ; n < len(tq.waiting) && total+tq.waiting[n].n <= MaxSequenceGroup; n++ {
		total += tq.waiting[n].n
	}
	batch := tq.waiting[:n:n]
	tq.waiting = tq.waiting[n:]
	if len(tq.waiting) == 0 {
		tq.waiting = nil
	}
	return batch
}

type seqFail struct {
	at  time.Time
	err error
}

type seqWaiter struct {
	n      int64
	ranges []frond.Range
	err    error
	done   chan struct{}
}

// SequenceStats are the counters of one sequence tag on this node.
type SequenceStats struct {
	Tag   string `json:"tag"`
	Trips uint64 `json:"trips"`     // store calls
	IDs   uint64 `json:"ids"`       // IDs taken (handed out, or lost with callers gone)
	Max   uint64 `json:"max_group"` // the most requests one store call served
}

type seqCounters struct {
	tag             string
	trips, ids, max atomic.Uint64
}

// take returns n IDs of tag, taken by a store call that started after this
// call began. If ctx ends first the IDs (if the store call still succeeds)
// are skipped, never handed to anyone else.
func (q *sequencer) take(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	w := &seqWaiter{n: n, done: make(chan struct{})}
	q.mu.Lock()
	if err := q.failedLocked(tag); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	if q.tags == nil {
		q.tags = map[string]*seqQueue{}
	}
	tq := q.tags[tag]
	if tq == nil {
		tq = &seqQueue{}
		q.tags[tag] = tq
	}
	tq.waiting = append(tq.waiting, w)
	if !tq.busy {
		tq.busy = true
		go q.run(tag, tq)
	}
	q.mu.Unlock()
	select {
	case <-w.done:
		return w.ranges, w.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run serves the queue of tag, one store call at a time, until it is empty.
func (q *sequencer) run(tag string, tq *seqQueue) {
	for {
		q.mu.Lock()
		batch := tq.nextGroup()
		if len(batch) == 0 {
			tq.busy = false
			delete(q.tags, tag)
			q.mu.Unlock()
			return
		}
		// Callers that queued behind a call that failed on an outage get
		// its error, not a second wait for the store.
		if err := q.failedLocked(tag); err != nil {
			q.mu.Unlock()
			for _, w := range batch {
				w.err = err
				close(w.done)
			}
			continue
		}
		q.mu.Unlock()
		var total int64
		for _, w := range batch {
			total += w.n
		}
		ranges, err := q.allocate(tag, total)
		q.mu.Lock()
		if errors.Is(err, frond.ErrStoreUnavailable) && q.s.bg.ctx.Err() == nil {
			if q.fails == nil {
				q.fails = map[string]seqFail{}
			}
			q.fails[tag] = seqFail{at: time.Now(), err: err}
		} else {
			delete(q.fails, tag)
		}
		q.mu.Unlock()
		st := q.statsOf(tag)
		st.trips.Add(1)
		if err == nil {
			st.ids.Add(uint64(total))
			for g := uint64(len(batch)); ; {
				m := st.max.Load()
				if g <= m || st.max.CompareAndSwap(m, g) {
					break
				}
			}
		}
		for _, w := range batch { // arrival order
			if err != nil {
				w.err = err
			} else {
				w.ranges, ranges = cut(ranges, w.n)
			}
			close(w.done)
		}
	}
}

// peek reports whether a request for tag would be served now, without a
// store call that takes IDs: not within FailFast of a failed store call,
// and the store answers a ping (or, without one, a read of the tag).
func (q *sequencer) peek(ctx context.Context, tag string) error {
	q.mu.Lock()
	err := q.failedLocked(tag)
	q.mu.Unlock()
	if err != nil {
		return err
	}
	if p, ok := q.s.store.(frond.Pinger); ok {
		if err := p.Ping(ctx); err != nil && !errors.Is(err, segment.ErrDegraded) {
			return err // some stores of a multi-store down: the others serve
		}
		return nil
	}
	_, err = q.s.store.Tag(ctx, tag)
	return err
}

// failedLocked is the error of the tag's last store call when it failed on
// an outage within FailFast, else nil. q.mu is held.
func (q *sequencer) failedLocked(tag string) error {
	f, ok := q.fails[tag]
	if !ok {
		return nil
	}
	since := time.Since(f.at)
	if since >= q.s.failFast() {
		return nil
	}
	return fmt.Errorf("%w: sequence tag %s: the last store call failed %v ago: %w", frond.ErrStoreUnavailable, Quote(tag), since.Round(time.Millisecond), f.err)
}

// allocate takes total IDs of tag in one store call (frond.SequenceIDs: a
// sequence object where the store has one). A multi-store hands out one
// residue of what it takes, so a call may fall short and is followed by
// another.
func (q *sequencer) allocate(tag string, total int64) ([]frond.Range, error) {
	ctx, cancel := context.WithTimeout(q.s.bg.ctx, q.s.loadTimeout())
	defer cancel()
	var out []frond.Range
	for got := int64(0); got < total; {
		rs, err := frond.SequenceIDs(ctx, q.s.store, tag, total-got)
		if err != nil {
			return nil, err
		}
		var n int64
		for _, r := range rs {
			n += r.Len()
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: tag %q: the store handed out no ID", frond.ErrStoreUnavailable, tag)
		}
		out = append(out, rs...)
		got += n
	}
	return out, nil
}

// cut takes the first n IDs of rs: the ranges holding them, and the rest.
func cut(rs []frond.Range, n int64) (head, rest []frond.Range) {
	for n > 0 && len(rs) > 0 {
		r := rs[0]
		if l := r.Len(); l <= n {
			head = append(head, r)
			n -= l
			rs = rs[1:]
			continue
		}
		stride := max(r.Stride, 1)
		split := r.Start + n*stride
		head = append(head, frond.Range{Start: r.Start, End: split, Stride: r.Stride})
		rs = append([]frond.Range{{Start: split, End: r.End, Stride: r.Stride}}, rs[1:]...)
		n = 0
	}
	return head, rs
}

func (q *sequencer) statsOf(tag string) *seqCounters {
	if v, ok := q.stats.Load(tag); ok {
		return v.(*seqCounters)
	}
	v, _ := q.stats.LoadOrStore(tag, &seqCounters{tag: tag})
	return v.(*seqCounters)
}

// SequenceStats returns the counters of the sequence tags served on this
// node, by tag.
func (s *Service) SequenceStats() []SequenceStats {
	out := s.SequenceOverview().Tags
	slices.SortFunc(out, func(a, b SequenceStats) int { return strings.Compare(a.Tag, b.Tag) })
	return out
}

// SequenceOverview is the sequence tags served on this node at once.
type SequenceOverview struct {
	// IDs is how many sequence IDs this node has handed out since it
	// started, those of deleted tags included: a counter.
	IDs uint64
	// Tags are the counters of each tag, in no order.
	Tags []SequenceStats
}

// SequenceOverview returns the counters of the sequence tags and their sum.
func (s *Service) SequenceOverview() SequenceOverview {
	o := SequenceOverview{IDs: uint64(s.seq.retired.Load())} // before the map: see forgetSequence
	s.seq.stats.Range(func(_, v any) bool {
		st := v.(*seqCounters)
		q := SequenceStats{Tag: st.tag, Trips: st.trips.Load(), IDs: st.ids.Load(), Max: st.max.Load()}
		o.IDs += q.IDs
		o.Tags = append(o.Tags, q)
		return true
	})
	// A tag deleted while this ran may be missing: see segment.HighWater.
	o.IDs = uint64(segment.HighWater(&s.seq.seen, int64(o.IDs)))
	return o
}

// forgetSequence drops a deleted tag's counters, keeping its IDs in the
// node's sum (out of the map first: an overview never counts them twice).
func (q *sequencer) forgetSequence(tag string) {
	if v, ok := q.stats.LoadAndDelete(tag); ok {
		q.retired.Add(int64(v.(*seqCounters).ids.Load()))
	}
}
