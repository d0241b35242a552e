package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
)

// ErrClockSkew means the node's clock is too far from its live peers'
// average for it to issue snowflake IDs. *PeerSkewError unwraps to it.
var ErrClockSkew = errors.New("clock far from the peers' clocks")

// ClockBehindError is the answer to a snowflake call while the clock is
// behind the last time recorded for the worker ID (by an earlier run of this
// node or an earlier holder of the ID) by more than a backward step that is
// waited out. Snowflake IDs resume by themselves once the clock passes that
// time; segment IDs are not affected. It unwraps to
// snowflake.ErrClockBackwards.
type ClockBehindError struct {
	Behind     time.Duration // how far the clock is behind LastIssued
	LastIssued time.Time
	Worker     int64
}

func (e *ClockBehindError) Error() string {
	return fmt.Sprintf("the clock is %v behind the last time worker ID %d was used (%s): refusing snowflake IDs until the clock passes it, "+
		"which would otherwise risk duplicate IDs. Fix the clock (NTP) or wait; segment IDs are not affected",
		e.Behind.Round(time.Millisecond), e.Worker, e.LastIssued.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns snowflake.ErrClockBackwards.
func (e *ClockBehindError) Unwrap() error { return snowflake.ErrClockBackwards }

// PeerSkewError says that this node's clock was too far from the average of
// its live peers' clocks when it acquired its worker ID. It unwraps to
// ErrClockSkew.
type PeerSkewError struct {
	Skew  time.Duration // this node's clock minus the peers' average
	Peers int
	Max   time.Duration
}

func (e *PeerSkewError) Error() string {
	dir := "ahead of"
	if e.Skew < 0 {
		dir = "behind"
	}
	return fmt.Sprintf("this node's clock is %v %s the average of its %d live peers (at most %v allowed): refusing snowflake IDs until it is within; fix the clock (NTP)",
		e.Skew.Abs().Round(time.Millisecond), dir, e.Peers, e.Max)
}

// Unwrap returns ErrClockSkew.
func (e *PeerSkewError) Unwrap() error { return ErrClockSkew }

// snowState is what snowflake calls see: a generator, or why there is none.
// It is replaced, never changed.
type snowState struct {
	gen       *snowflake.Generator // nil: not issuing; err says why
	worker    frond.Worker
	held      bool // worker is held (a node may hold an ID and not issue: peer skew)
	notBefore time.Time
	err       error
}

// acquireTimeout bounds one attempt to acquire a worker ID.
const acquireTimeout = 15 * time.Second

// startSnowflake makes the first attempt to hold a worker ID and start the
// generator. Errors that retrying cannot fix (every ID taken, the configured
// ID out of range or locked by another process) refuse the start; a registry
// that cannot be reached does not: the node serves segment IDs and keeps
// trying.
func (s *Service) startSnowflake(ctx context.Context) error {
	s.workerID.Store(-1)
	s.snow.Store(&snowState{err: fmt.Errorf("%w: not acquired yet", frond.ErrWorkerLost)})
	actx, cancel := context.WithTimeout(ctx, acquireTimeout)
	defer cancel()
	err := s.acquire(actx, ctx)
	if err != nil && !errors.Is(err, frond.ErrStoreUnavailable) && !errors.Is(err, frond.ErrWorkerLost) {
		return fmt.Errorf("acquire worker ID: %w", err)
	}
	return nil
}

func (s *Service) reserveLead() time.Duration { return 2*s.cfg.PersistEvery + s.cfg.MaxLead }

// acquire holds a worker ID (unless one is held), waits out a small clock
// gap, checks the peers' clocks, and installs a generator. ctx bounds the
// registry calls, life the clock wait (it ends at shutdown). It is called
// by New and then only by the supervisor goroutine.
func (s *Service) acquire(ctx, life context.Context) error {
	st := s.snow.Load()
	w := st.worker
	if !st.held {
		var err error
		w, err = s.reg.Acquire(ctx, s.cfg.Layout.MaxNode())
		if err != nil {
			s.setDown(&snowState{err: fmt.Errorf("%w: %w (retrying every %v)", frond.ErrWorkerLost, err, s.cfg.RetryEvery)}, err)
			return err
		}
		s.workerID.Store(w.ID)
		if w.FromCache {
			s.log.Warn("WORKER REGISTRY UNREACHABLE: using the worker ID from the local record; frond keeps trying the registry",
				"worker", w.ID, "last_issued", w.LastIssued)
		} else {
			s.log.Info("worker ID acquired", "worker", w.ID, "last_issued", w.LastIssued)
		}
	}
	notBefore := w.LastIssued
	if s.prevLast.After(notBefore) {
		notBefore = s.prevLast
	}
	if err := s.waitForClock(life, w.ID, notBefore); err != nil {
		return err // shutting down
	}

	if pc, ok := s.reg.(frond.PeerClock); ok && s.cfg.MaxPeerSkew > 0 && !w.FromCache {
		if err := s.checkPeers(ctx, pc); err != nil {
			var pse *PeerSkewError
			if errors.As(err, &pse) {
				s.setDown(&snowState{worker: w, held: true, err: err}, err)
				return nil
			}
			s.log.Warn("the peers' clocks could not be measured; starting without the check", "err", err)
		}
	}

	gen, err := snowflake.New(snowflake.Settings{
		Layout: s.cfg.Layout, Node: w.ID, NotBefore: notBefore,
		MaxBackward: s.cfg.MaxBackward, MaxLead: s.cfg.MaxLead, RandomStart: s.cfg.RandomStart, Now: s.cfg.Now,
		Reserved: true, // nothing is issued until a reservation is recorded
	})
	if err != nil {
		s.setDown(&snowState{worker: w, held: true, err: err}, err)
		return err
	}
	next := &snowState{gen: gen, worker: w, held: true, notBefore: notBefore}
	if err := s.reserveOn(ctx, next); errors.Is(err, frond.ErrWorkerLost) {
		s.setDown(&snowState{err: err}, err)
		return err
	} else if err != nil {
		// Installed anyway: calls answer registry_behind until a reservation
		// is recorded, which the supervisor retries every PersistEvery.
		s.log.Error("worker registry did not record the time; snowflake IDs wait for it", "err", err)
	}
	if !s.publish(next) {
		return fmt.Errorf("%w: shutting down", frond.ErrClosed)
	}
	if behind := notBefore.Sub(time.Unix(0, s.now())); behind > 0 {
		s.log.Error("CLOCK BEHIND: refusing snowflake IDs until the clock passes the last time this worker ID was used; segment IDs are served",
			"behind", behind.Round(time.Millisecond), "last_issued", notBefore, "worker", w.ID)
	} else {
		s.log.Info("snowflake ready", "worker", w.ID, "layout", s.cfg.Layout.String())
	}
	return nil
}

// waitForClock sleeps while the clock is behind notBefore by at most
// StartupWait, so that a quick restart comes up issuing. It returns ctx's
// error if ctx ends first (shutdown).
func (s *Service) waitForClock(ctx context.Context, worker int64, notBefore time.Time) error {
	behind := notBefore.Sub(time.Unix(0, s.now()))
	if behind <= 0 || behind > s.cfg.StartupWait {
		return nil
	}
	s.log.Info("waiting for the clock to pass the last time this worker ID was used", "worker", worker, "behind", behind.Round(time.Millisecond))
	for slept := time.Duration(0); behind > 0 && slept <= s.cfg.StartupWait; {
		d := behind + time.Millisecond
		if s.cfg.Sleep != nil {
			s.cfg.Sleep(d)
		} else {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		slept += d
		behind = notBefore.Sub(time.Unix(0, s.now()))
	}
	return nil
}

// publish makes st what snowflake calls see, unless the service is closing:
// then nothing replaces the closed state, and it reports false.
func (s *Service) publish(st *snowState) bool {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.closing {
		return false
	}
	s.snow.Store(st)
	return true
}

// checkPeers compares this node's clock with its live peers' average.
// peerSkew is a measurement of checkPeers.
type peerSkew struct {
	skew  time.Duration
	peers int
}

func (s *Service) checkPeers(ctx context.Context, pc frond.PeerClock) error {
	offs, err := pc.PeerOffsets(ctx)
	if err != nil || len(offs) == 0 {
		return err
	}
	var sum float64
	for _, o := range offs {
		sum += float64(o.Offset)
	}
	skew := -time.Duration(math.Round(sum / float64(len(offs))))
	s.peerSkew.Store(&peerSkew{skew: skew, peers: len(offs)})
	if skew.Abs() > s.cfg.MaxPeerSkew {
		return &PeerSkewError{Skew: skew, Peers: len(offs), Max: s.cfg.MaxPeerSkew}
	}
	s.log.Info("clock checked against live peers", "peers", len(offs), "skew", skew.Round(time.Microsecond))
	return nil
}

// setDown publishes a state without a generator, logging the change.
func (s *Service) setDown(next *snowState, cause error) {
	prev := s.snow.Load()
	if !s.publish(next) {
		return
	}
	if prev.err == nil || prev.err.Error() != next.err.Error() {
		s.log.Error("snowflake IDs unavailable; segment IDs are not affected", "err", cause)
	}
}

// reserveOn records a time ahead of the clock in the registry, then lets
// st's generator issue up to it.
func (s *Service) reserveOn(ctx context.Context, st *snowState) error {
	from := time.Unix(0, s.now())
	if st.notBefore.After(from) { // the clock is behind: reserve past the time it waits for
		from = st.notBefore
	}
	h := from.Add(s.reserveLead())
	if err := s.reg.Save(ctx, h); err != nil {
		s.saveErr.Store(&err)
		return err
	}
	s.saveErr.Store(nil)
	st.gen.SetLimit(h)
	return nil
}

// reserve reserves on the current state (tests).
func (s *Service) reserve(ctx context.Context) error {
	st := s.snow.Load()
	if st.gen == nil {
		return st.err
	}
	return s.reserveOn(ctx, st)
}

// lose stops snowflake IDs after the registry took the worker ID back.
func (s *Service) lose(st *snowState, cause error) {
	if s.snow.Load() != st {
		return
	}
	if st.gen != nil {
		if last := st.gen.Seal(); last.After(s.prevLast) {
			s.prevLast = last
		}
	}
	if cause == nil {
		cause = errors.New("the registry no longer vouches for it (lease or session lost)")
	}
	err := fmt.Errorf("%w: worker ID %d: %v; snowflake IDs stop until this node holds an ID again (retrying every %v)",
		frond.ErrWorkerLost, st.worker.ID, cause, s.cfg.RetryEvery)
	s.setDown(&snowState{err: err}, err)
}

// supervise keeps the reservation ahead of the clock, notices a lost worker
// ID, and acquires one again when there is none.
func (s *Service) supervise() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.PersistEvery)
	defer tick.Stop()
	retry := time.NewTimer(s.cfg.RetryEvery)
	defer retry.Stop()
	armed := true
	for {
		st := s.snow.Load()
		var retryC <-chan time.Time
		if st.gen == nil {
			if !armed {
				retry.Reset(s.cfg.RetryEvery)
				armed = true
			}
			retryC = retry.C
		}
		var lost <-chan struct{}
		if st.held {
			lost = st.worker.Lost
		}
		select {
		case <-s.stop:
			return
		case <-lost:
			s.lose(st, nil)
		case <-retryC:
			armed = false
			ctx, cancel := context.WithTimeout(s.runCtx, acquireTimeout)
			s.acquire(ctx, s.runCtx)
			cancel()
		case <-tick.C:
			if st.gen == nil {
				continue
			}
			// Within three quarters of a tick: the reservation runs two
			// ticks ahead, so a save that hangs (a registry cut off) gives
			// way to the local record before the last reservation runs out,
			// and the next tick comes on time.
			ctx, cancel := context.WithTimeout(s.runCtx, tickBudget(s.cfg.PersistEvery))
			err := s.reserveOn(ctx, st)
			switch {
			case errors.Is(err, frond.ErrWorkerLost):
				s.lose(st, err)
			case err != nil:
				s.log.Error("worker registry did not record the time; snowflake IDs stop at the last reservation", "err", err)
			}
			if st.worker.FromCache && !errors.Is(err, frond.ErrWorkerLost) {
				// Whether or not the record still allowed a reservation:
				// once past its bound only the registry can restart IDs.
				s.backToRegistry(ctx, st)
			}
			cancel()
		}
	}
}

// tickBudget bounds the registry calls of one supervisor tick.
func tickBudget(every time.Duration) time.Duration { return max(every*3/4, time.Millisecond) }

// backToRegistry tries the registry again while the worker ID comes from
// the local record; once the registry answers, the node holds its ID there.
func (s *Service) backToRegistry(ctx context.Context, st *snowState) {
	w, err := s.reg.Acquire(ctx, s.cfg.Layout.MaxNode())
	if err != nil || w.FromCache {
		return
	}
	// The registry's time (or the record's, the later) is one this node
	// reserved itself: the generator goes on.
	if w.ID == st.worker.ID && st.gen.WithinLimit(w.LastIssued) {
		next := *st
		next.worker = w
		s.publish(&next)
		s.log.Info("worker registry reachable again: worker ID held there", "worker", w.ID)
		return
	}
	// The registry gave another ID, or the same one with a later time (it
	// went to another node meanwhile and came back recycled): stop the
	// generator of the cached one and start past the registry's time.
	if last := st.gen.Seal(); last.After(s.prevLast) {
		s.prevLast = last
	}
	if w.ID == st.worker.ID {
		s.log.Warn("worker registry reachable again: worker ID held there with a later last time than this node issued", "worker", w.ID, "last_issued", w.LastIssued)
	} else {
		s.log.Warn("worker registry reachable again and gave another worker ID", "was", st.worker.ID, "now", w.ID)
	}
	s.workerID.Store(w.ID)
	s.publish(&snowState{worker: w, held: true, err: fmt.Errorf("%w: switching to worker ID %d", frond.ErrWorkerLost, w.ID)})
	s.acquire(ctx, s.runCtx)
}

// closeSnowflake stops the generator for good and records the exact time of
// its last ID, so the next start need not wait for the reservation.
func (s *Service) closeSnowflake(ctx context.Context) error {
	s.pubMu.Lock()
	s.closing = true
	st := s.snow.Load()
	s.snow.Store(&snowState{err: fmt.Errorf("%w: shutting down", frond.ErrClosed)})
	s.pubMu.Unlock()
	if st.gen == nil || !st.held {
		return nil
	}
	last := st.gen.Seal() // no ID after this time, even from calls in flight
	select {
	case <-st.worker.Lost:
		return nil // not ours to record any more
	default:
	}
	var err error
	if r, ok := s.reg.(frond.Releaser); ok {
		err = r.Release(ctx, last)
	} else {
		err = s.reg.Save(ctx, last)
	}
	if errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		// The registry holds the last reservation, later than last, or
		// last itself if it applied the release and its answer was lost;
		// a local record was lowered to last before the release was sent
		// (package cache), so it vouches for no more than the registry
		// holds. No ID can be issued twice; a restart at most waits for the
		// reservation. A stop is not a failure because the registry was
		// unreachable.
		s.log.Warn("the worker registry did not confirm the exact last time at shutdown; it holds that time or the last reservation (safe: the next start may wait up to it)",
			"last", last, "err", err)
		return nil
	}
	if errors.Is(err, frond.ErrWorkerLost) {
		// The registry took the ID back before this node noticed: the ID is
		// not ours to record, and what the registry holds (our last
		// reservation, or the next holder's later time) stands.
		s.log.Warn("the worker ID was no longer held at shutdown; nothing to record", "last", last, "err", err)
		return nil
	}
	if err == nil {
		s.log.Info("snowflake time recorded at shutdown", "worker", st.worker.ID, "last", last)
	}
	return err
}

// snowErr turns a generator error into the service's answer.
func (s *Service) snowErr(st *snowState, err error) error {
	if errors.Is(err, snowflake.ErrSealed) {
		if cur := s.snow.Load(); cur.gen == nil {
			return cur.err
		}
	}
	var ce *snowflake.ClockError
	if errors.As(err, &ce) {
		if behind := st.notBefore.Sub(time.Unix(0, s.now())); behind > 0 {
			return &ClockBehindError{Behind: behind, LastIssued: st.notBefore, Worker: st.worker.ID}
		}
	}
	return err
}

// SnowflakeID returns a snowflake ID.
func (s *Service) SnowflakeID() (int64, error) {
	st := s.snow.Load()
	if st.gen == nil {
		return 0, st.err
	}
	id, err := st.gen.Next()
	if err != nil {
		return 0, s.snowErr(st, err)
	}
	s.snowIssued.Add(1)
	return id, nil
}

// SnowflakeIDs returns n snowflake IDs; n is at most MaxBatch.
func (s *Service) SnowflakeIDs(n int) ([]int64, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, n, MaxBatch)
	}
	st := s.snow.Load()
	if st.gen == nil {
		return nil, st.err
	}
	ids, err := st.gen.NextN(n)
	s.snowIssued.Add(uint64(len(ids)))
	if err != nil {
		err = s.snowErr(st, err)
	}
	return ids, err
}

// SnowflakeStats returns the current generator's statistics (zero while
// there is none).
func (s *Service) SnowflakeStats() snowflake.Stats {
	if st := s.snow.Load(); st.gen != nil {
		return st.gen.Stats()
	}
	return snowflake.Stats{}
}

// WorkerInfo describes the worker ID of this node.
type WorkerInfo struct {
	ID        int64  `json:"id"` // -1: none held
	Held      bool   `json:"held"`
	Issuing   bool   `json:"issuing"`
	FromCache bool   `json:"from_cache,omitempty"`
	Error     string `json:"error,omitempty"`
	// ReservedAhead is how far ahead of the clock the registry has recorded
	// a time this node may issue up to (negative: behind; snowflake IDs
	// wait for it).
	ReservedAhead time.Duration `json:"reserved_ahead_ns,omitempty"`
	// PeerSkew is this node's clock minus its live peers' average, as last
	// measured (registries that see their peers), with the peers' count.
	PeerSkew  time.Duration `json:"peer_skew_ns,omitempty"`
	PeerCount int           `json:"peers,omitempty"`
}

// WorkerInfo returns the state of this node's worker ID.
func (s *Service) WorkerInfo() WorkerInfo {
	st := s.snow.Load()
	wi := WorkerInfo{ID: -1, Held: st.held, Issuing: st.gen != nil}
	if st.held {
		wi.ID, wi.FromCache = st.worker.ID, st.worker.FromCache
	}
	if st.gen != nil {
		if limit, ok := st.gen.Limit(); ok {
			wi.ReservedAhead = limit.Sub(time.Unix(0, s.now()))
		}
	}
	if p := s.peerSkew.Load(); p != nil {
		wi.PeerSkew, wi.PeerCount = p.skew, p.peers
	}
	if st.err != nil {
		wi.Error = st.err.Error()
	}
	return wi
}

// Worker returns the worker ID this node holds, or -1.
func (s *Service) Worker() int64 { return s.WorkerInfo().ID }

// serialNode is the node number of serial templates: the last worker ID
// held (segment-sourced serials are unique through the store; the node
// field only tells nodes apart).
func (s *Service) serialNode() int64 { return max(s.workerID.Load(), 0) }

func (s *Service) maxBackward() time.Duration {
	if s.cfg.MaxBackward == 0 {
		return snowflake.DefaultMaxBackward
	}
	return max(s.cfg.MaxBackward, 0)
}

// snowflakeChecks are the worker and clock parts of readiness.
func (s *Service) snowflakeChecks() []Check {
	st := s.snow.Load()
	w := Check{Name: "worker", OK: st.held && st.err == nil}
	switch {
	case st.held && st.worker.FromCache:
		w.Detail = fmt.Sprintf("worker ID %d from the local record: the registry is unreachable", st.worker.ID)
	case st.held:
		w.Detail = fmt.Sprintf("worker ID %d", st.worker.ID)
	default:
		w.Detail = st.err.Error()
	}
	if perr := s.saveErr.Load(); perr != nil && st.gen != nil {
		w.OK, w.Detail = false, fmt.Sprintf("%s; the registry did not record the time: %v", w.Detail, *perr)
	}
	if wr, ok := s.reg.(frond.Warner); ok {
		for _, m := range wr.Warnings() {
			w.Detail += "; " + m
		}
	}

	c := Check{Name: "clock", OK: true}
	var pse *PeerSkewError
	switch {
	case errors.As(st.err, &pse):
		c.OK, c.Detail = false, pse.Error()
	case st.gen != nil:
		now := time.Unix(0, s.now())
		if behind := st.notBefore.Sub(now); behind > s.maxBackward() {
			c.OK, c.Detail = false, (&ClockBehindError{Behind: behind, LastIssued: st.notBefore, Worker: st.worker.ID}).Error()
		} else if behind := st.gen.Behind(); behind > s.maxBackward() {
			c.OK, c.Detail = false, fmt.Sprintf("the clock is %v behind the last time used for snowflake IDs; they resume when it catches up", behind.Round(time.Millisecond))
		} else if behind > 0 {
			c.Detail = fmt.Sprintf("%v behind, within the %v that is waited out", behind, s.maxBackward())
		}
	}
	return []Check{w, c, s.layoutCheck()}
}
