package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
)

// Issuer holds a worker ID and issues snowflake IDs with it up to the time
// the registry has recorded (see the package documentation). Its methods
// are safe for concurrent use.
type Issuer struct {
	set Settings
	reg frond.WorkerRegistry
	log *slog.Logger

	state    atomic.Pointer[state]    // what calls use; never nil after New
	lastHeld atomic.Int64             // the last worker ID held, -1 before the first
	issued   *counter                 // IDs issued since New
	saveErr  atomic.Pointer[error]    // the last failed reservation, nil when fine
	peerSkew atomic.Pointer[peerSkew] // the last clock check against the live peers

	prevLast time.Time  // latest time a sealed generator of this Issuer used (supervisor only)
	pubMu    sync.Mutex // orders publish against Close
	closing  bool       // under pubMu: no state replaces the closed one

	runCtx    context.Context // the supervisor's calls; cancelled by Close
	cancelRun context.CancelFunc
	stop      chan struct{}
	done      chan struct{} // closed when the supervisor returns
	closeOnce sync.Once
	closeErr  error
}

// state is what calls see: a generator, or why there is none. It is
// replaced, never changed.
type state struct {
	gen       *snowflake.Generator // nil: not issuing; err says why
	worker    frond.Worker
	held      bool // worker is held (an Issuer may hold an ID and not issue: peer skew)
	notBefore time.Time
	err       error
}

// peerSkew is a measurement of checkPeers.
type peerSkew struct {
	skew  time.Duration
	peers int
}

// closeGrace is how long Close waits for the supervisor once its context
// has ended.
const closeGrace = 100 * time.Millisecond

// acquireTimeout bounds one attempt to acquire a worker ID.
const acquireTimeout = 15 * time.Second

// New acquires a worker ID from reg, reserves time there and starts the
// supervisor that keeps the reservation ahead of the clock. The Issuer owns
// reg once New returns it (Close closes reg; on an error, reg is the
// caller's to close). Errors that retrying cannot fix (invalid settings,
// every ID taken, the configured ID out of range or locked by another
// process) are returned; a registry that cannot be reached is not: the
// Issuer answers frond.ErrWorkerLost and keeps trying. ctx bounds the first
// acquisition and the start-up clock wait.
func New(ctx context.Context, reg frond.WorkerRegistry, set Settings, log *slog.Logger) (*Issuer, error) {
	if err := set.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Issuer{set: set.WithDefaults(), reg: reg, log: log, stop: make(chan struct{}), done: make(chan struct{}), issued: newCounter()}
	w.runCtx, w.cancelRun = context.WithCancel(context.Background())
	if c := w.layoutCheck(); !c.OK {
		log.Warn("SNOWFLAKE LAYOUT RUNS OUT SOON: " + c.Detail)
	}
	w.lastHeld.Store(-1)
	w.state.Store(&state{err: fmt.Errorf("%w: not acquired yet", frond.ErrWorkerLost)})
	actx, cancel := context.WithTimeout(ctx, acquireTimeout)
	err := w.acquire(actx, ctx)
	cancel()
	if err != nil && !errors.Is(err, frond.ErrStoreUnavailable) && !errors.Is(err, frond.ErrWorkerLost) {
		w.cancelRun()
		return nil, fmt.Errorf("acquire worker ID: %w", err)
	}
	go w.supervise()
	return w, nil
}

// Layout returns the snowflake layout.
func (w *Issuer) Layout() snowflake.Layout { return w.set.Layout }

// Next returns a snowflake ID.
func (w *Issuer) Next() (int64, error) {
	st := w.state.Load()
	if st.gen == nil {
		return 0, st.err
	}
	id, err := st.gen.Next()
	if err != nil {
		return 0, w.genErr(st, err)
	}
	w.issued.Add(1)
	return id, nil
}

// NextN returns n snowflake IDs, n at least 1. On an error it returns the
// IDs issued before it, which are valid and unique.
func (w *Issuer) NextN(n int) ([]int64, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: count %d: must be at least 1", frond.ErrInvalidArgument, n)
	}
	st := w.state.Load()
	if st.gen == nil {
		return nil, st.err
	}
	ids, err := st.gen.NextN(n)
	w.issued.Add(uint64(len(ids)))
	if err != nil {
		err = w.genErr(st, err)
	}
	return ids, err
}

// Peek says whether Next would issue now, without issuing: the error it
// would answer, or nil.
func (w *Issuer) Peek() error {
	st := w.state.Load()
	if st.gen == nil {
		return st.err
	}
	now := time.Unix(0, w.set.Now())
	if behind := st.notBefore.Sub(now); behind > w.set.maxBackward() {
		return &ClockBehindError{Behind: behind, LastIssued: st.notBefore, Worker: st.worker.ID}
	}
	if !st.gen.WithinLimit(now) {
		return fmt.Errorf("%w: the clock is past the time reserved in the worker registry", snowflake.ErrUnreserved)
	}
	return nil
}

// Issued counts the IDs issued since New.
func (w *Issuer) Issued() uint64 { return w.issued.Load() }

// LastHeld returns the last worker ID held (the one held now, or the one
// lost most recently), or -1 before the first.
func (w *Issuer) LastHeld() int64 { return w.lastHeld.Load() }

// Stats returns the current generator's statistics (zero while there is
// none).
func (w *Issuer) Stats() snowflake.Stats {
	if st := w.state.Load(); st.gen != nil {
		return st.gen.Stats()
	}
	return snowflake.Stats{}
}

// genErr turns a generator error into the Issuer's answer.
func (w *Issuer) genErr(st *state, err error) error {
	if errors.Is(err, snowflake.ErrSealed) {
		if cur := w.state.Load(); cur.gen == nil {
			return cur.err
		}
	}
	var ce *snowflake.ClockError
	if errors.As(err, &ce) {
		if behind := st.notBefore.Sub(time.Unix(0, w.set.Now())); behind > 0 {
			return &ClockBehindError{Behind: behind, LastIssued: st.notBefore, Worker: st.worker.ID}
		}
	}
	return err
}

func (w *Issuer) reserveLead() time.Duration { return 2*w.set.PersistEvery + w.set.MaxLead }

// acquire holds a worker ID (unless one is held), waits out a small clock
// gap, checks the peers' clocks, and installs a generator. ctx bounds the
// registry calls, life the clock wait (it ends at shutdown). It is called
// by New and then only by the supervisor goroutine.
func (w *Issuer) acquire(ctx, life context.Context) error {
	st := w.state.Load()
	wk := st.worker
	if !st.held {
		var err error
		wk, err = w.acquireNode(ctx)
		if err != nil {
			w.setDown(&state{err: fmt.Errorf("%w: %w (retrying every %v)", frond.ErrWorkerLost, err, w.set.RetryEvery)}, err)
			return err
		}
		w.lastHeld.Store(wk.ID)
		if wk.FromCache {
			w.log.Warn("WORKER REGISTRY UNREACHABLE: using the worker ID from the local record; frond keeps trying the registry",
				"worker", wk.ID, "last_issued", wk.LastIssued)
		} else {
			w.log.Info("worker ID acquired", "worker", wk.ID, "last_issued", wk.LastIssued)
		}
	}
	notBefore := wk.LastIssued
	if w.prevLast.After(notBefore) {
		notBefore = w.prevLast
	}
	if err := w.waitForClock(life, wk.ID, notBefore); err != nil {
		return err // shutting down
	}

	if pc, ok := w.reg.(frond.PeerClock); ok && w.set.MaxPeerSkew > 0 && !wk.FromCache {
		if err := w.checkPeers(ctx, pc); err != nil {
			var pse *PeerSkewError
			if errors.As(err, &pse) {
				w.setDown(&state{worker: wk, held: true, err: err}, err)
				return nil
			}
			w.log.Warn("the peers' clocks could not be measured; starting without the check", "err", err)
		}
	}

	gen, err := snowflake.New(snowflake.Settings{
		Layout: w.set.Layout, Node: wk.ID, NotBefore: notBefore,
		MaxBackward: w.set.MaxBackward, MaxLead: w.set.MaxLead, RandomStart: w.set.RandomStart, Now: w.set.Now,
		Reserved: true, // nothing is issued until a reservation is recorded
	})
	if err != nil {
		w.setDown(&state{worker: wk, held: true, err: err}, err)
		return err
	}
	next := &state{gen: gen, worker: wk, held: true, notBefore: notBefore}
	if err := w.reserveOn(ctx, next); errors.Is(err, frond.ErrWorkerLost) {
		w.setDown(&state{err: err}, err)
		return err
	} else if err != nil {
		// Installed anyway: calls answer registry_behind until a reservation
		// is recorded, which the supervisor retries every PersistEvery.
		w.log.Error("worker registry did not record the time; snowflake IDs wait for it", "err", err)
	}
	if !w.publish(next) {
		return fmt.Errorf("%w: shutting down", frond.ErrClosed)
	}
	if behind := notBefore.Sub(time.Unix(0, w.set.Now())); behind > 0 {
		w.log.Error("CLOCK BEHIND: refusing snowflake IDs until the clock passes the last time this worker ID was used; segment IDs are served",
			"behind", behind.Round(time.Millisecond), "last_issued", notBefore, "worker", wk.ID)
	} else {
		w.log.Info("snowflake ready", "worker", wk.ID, "layout", w.set.Layout.String())
	}
	return nil
}

// waitForClock sleeps while the clock is behind notBefore by at most
// StartupWait, so that a quick restart comes up issuing. It returns ctx's
// error if ctx ends first (shutdown).
func (w *Issuer) waitForClock(ctx context.Context, worker int64, notBefore time.Time) error {
	behind := notBefore.Sub(time.Unix(0, w.set.Now()))
	if behind <= 0 || behind > w.set.StartupWait {
		return nil
	}
	w.log.Info("waiting for the clock to pass the last time this worker ID was used", "worker", worker, "behind", behind.Round(time.Millisecond))
	for slept := time.Duration(0); behind > 0 && slept <= w.set.StartupWait; {
		d := behind + time.Millisecond
		if w.set.Sleep != nil {
			w.set.Sleep(d)
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
		behind = notBefore.Sub(time.Unix(0, w.set.Now()))
	}
	return nil
}

// publish makes st what calls see, unless the Issuer is closing: then
// nothing replaces the closed state, and it reports false.
func (w *Issuer) publish(st *state) bool {
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	if w.closing {
		return false
	}
	w.state.Store(st)
	return true
}

// checkPeers compares this node's clock with its live peers' average.
func (w *Issuer) checkPeers(ctx context.Context, pc frond.PeerClock) error {
	offs, err := pc.PeerOffsets(ctx)
	if err != nil || len(offs) == 0 {
		return err
	}
	var sum float64
	for _, o := range offs {
		sum += float64(o.Offset)
	}
	skew := -time.Duration(math.Round(sum / float64(len(offs))))
	w.peerSkew.Store(&peerSkew{skew: skew, peers: len(offs)})
	if skew.Abs() > w.set.MaxPeerSkew {
		return &PeerSkewError{Skew: skew, Peers: len(offs), Max: w.set.MaxPeerSkew}
	}
	w.log.Info("clock checked against live peers", "peers", len(offs), "skew", skew.Round(time.Microsecond))
	return nil
}

// setDown publishes a state without a generator, logging the change.
func (w *Issuer) setDown(next *state, cause error) {
	prev := w.state.Load()
	if !w.publish(next) {
		return
	}
	if prev.err == nil || prev.err.Error() != next.err.Error() {
		w.log.Error("snowflake IDs unavailable; segment IDs are not affected", "err", cause)
	}
}

// reserveOn records a time ahead of the clock in the registry, then lets
// st's generator issue up to it.
func (w *Issuer) reserveOn(ctx context.Context, st *state) error {
	from := time.Unix(0, w.set.Now())
	if st.notBefore.After(from) { // the clock is behind: reserve past the time it waits for
		from = st.notBefore
	}
	h := from.Add(w.reserveLead())
	if err := w.reg.Save(ctx, h); err != nil {
		w.saveErr.Store(&err)
		return err
	}
	w.saveErr.Store(nil)
	st.gen.SetLimit(h)
	return nil
}

// lose stops IDs after the registry took the worker ID back.
func (w *Issuer) lose(st *state, cause error) {
	if w.state.Load() != st {
		return
	}
	if st.gen != nil {
		if last := st.gen.Seal(); last.After(w.prevLast) {
			w.prevLast = last
		}
	}
	if cause == nil {
		cause = errors.New("the registry no longer vouches for it (lease or session lost)")
	}
	err := fmt.Errorf("%w: worker ID %d: %v; snowflake IDs stop until this node holds an ID again (retrying every %v)",
		frond.ErrWorkerLost, st.worker.ID, cause, w.set.RetryEvery)
	w.setDown(&state{err: err}, err)
}

// supervise keeps the reservation ahead of the clock, notices a lost worker
// ID, and acquires one again when there is none.
func (w *Issuer) supervise() {
	defer close(w.done)
	tick := time.NewTicker(w.set.PersistEvery)
	defer tick.Stop()
	retry := time.NewTimer(w.set.RetryEvery)
	defer retry.Stop()
	armed := true
	for {
		st := w.state.Load()
		var retryC <-chan time.Time
		if st.gen == nil {
			if !armed {
				retry.Reset(w.set.RetryEvery)
				armed = true
			}
			retryC = retry.C
		}
		var lost <-chan struct{}
		if st.held {
			lost = st.worker.Lost
		}
		select {
		case <-w.stop:
			return
		case <-lost:
			w.lose(st, nil)
		case <-retryC:
			armed = false
			ctx, cancel := context.WithTimeout(w.runCtx, acquireTimeout)
			w.acquire(ctx, w.runCtx)
			cancel()
		case <-tick.C:
			if st.gen == nil {
				continue
			}
			// Within three quarters of a tick: the reservation runs two
			// ticks ahead, so a save that hangs (a registry cut off) gives
			// way to the local record before the last reservation runs out,
			// and the next tick comes on time.
			ctx, cancel := context.WithTimeout(w.runCtx, tickBudget(w.set.PersistEvery))
			err := w.reserveOn(ctx, st)
			switch {
			case errors.Is(err, frond.ErrWorkerLost):
				w.lose(st, err)
			case err != nil:
				w.log.Error("worker registry did not record the time; snowflake IDs stop at the last reservation", "err", err)
			}
			if st.worker.FromCache && !errors.Is(err, frond.ErrWorkerLost) {
				// Whether or not the record still allowed a reservation:
				// once past its bound only the registry can restart IDs.
				w.backToRegistry(ctx, st)
			}
			cancel()
		}
	}
}

// acquireNode acquires a worker ID within this node's datacenter from the
// registry and answers it as the node field of the IDs: the datacenter's
// bits above the worker's (without datacenter bits, the worker ID itself).
// A registry namespaces its worker IDs by datacenter
// (registry.Options.Datacenter), so two datacenters never issue one node
// field, whether they share a registry or not.
func (w *Issuer) acquireNode(ctx context.Context) (frond.Worker, error) {
	l := w.set.Layout
	wk, err := w.reg.Acquire(ctx, l.MaxWorker())
	if err != nil {
		return wk, err
	}
	if wk.ID < 0 || wk.ID > l.MaxWorker() {
		return frond.Worker{}, fmt.Errorf("%w: the registry gave worker ID %d, outside 0..%d", frond.ErrNoWorkerID, wk.ID, l.MaxWorker())
	}
	wk.ID = l.NodeOf(w.set.Datacenter, wk.ID)
	return wk, nil
}

// tickBudget bounds the registry calls of one supervisor tick.
func tickBudget(every time.Duration) time.Duration { return max(every*3/4, time.Millisecond) }

// backToRegistry tries the registry again while the worker ID comes from
// the local record; once the registry answers, the Issuer holds its ID
// there.
func (w *Issuer) backToRegistry(ctx context.Context, st *state) {
	wk, err := w.acquireNode(ctx)
	if err != nil || wk.FromCache {
		return
	}
	// The registry's time (or the record's, the later) is one this node
	// reserved itself: the generator goes on.
	if wk.ID == st.worker.ID && st.gen.WithinLimit(wk.LastIssued) {
		next := *st
		next.worker = wk
		w.publish(&next)
		w.log.Info("worker registry reachable again: worker ID held there", "worker", wk.ID)
		return
	}
	// The registry gave another ID, or the same one with a later time (it
	// went to another node meanwhile and came back recycled): stop the
	// generator of the cached one and start past the registry's time.
	if last := st.gen.Seal(); last.After(w.prevLast) {
		w.prevLast = last
	}
	if wk.ID == st.worker.ID {
		w.log.Warn("worker registry reachable again: worker ID held there with a later last time than this node issued", "worker", wk.ID, "last_issued", wk.LastIssued)
	} else {
		w.log.Warn("worker registry reachable again and gave another worker ID", "was", st.worker.ID, "now", wk.ID)
	}
	w.lastHeld.Store(wk.ID)
	w.publish(&state{worker: wk, held: true, err: fmt.Errorf("%w: switching to worker ID %d", frond.ErrWorkerLost, wk.ID)})
	w.acquire(ctx, w.runCtx)
}

// Close stops the Issuer for good, records the exact time of its last ID
// (so the next start need not wait for the reservation) and closes the
// registry, within ctx: the supervisor's registry calls and clock waits
// are cancelled, and if it has not stopped when ctx ends, Close goes on
// without it (it can no longer publish a generator). Later calls return
// the first's result.
func (w *Issuer) Close(ctx context.Context) error {
	w.closeOnce.Do(func() {
		var errs []error
		close(w.stop)
		w.cancelRun()
		select {
		case <-w.done:
		case <-ctx.Done():
			// A spent ctx still leaves the supervisor a moment to see the
			// stop it was just sent: one that is idle returns at once.
			select {
			case <-w.done:
			case <-time.After(closeGrace):
				errs = append(errs, fmt.Errorf("the worker supervisor did not stop in time: %w", ctx.Err()))
			}
		}
		w.closeErr = errors.Join(append(errs, w.release(ctx), w.reg.Close())...)
	})
	return w.closeErr
}

// release seals the generator and records the exact time of its last ID.
func (w *Issuer) release(ctx context.Context) error {
	w.pubMu.Lock()
	w.closing = true
	st := w.state.Load()
	w.state.Store(&state{err: fmt.Errorf("%w: shutting down", frond.ErrClosed)})
	w.pubMu.Unlock()
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
	if r, ok := w.reg.(frond.Releaser); ok {
		err = r.Release(ctx, last)
	} else {
		err = w.reg.Save(ctx, last)
	}
	if errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		// The registry holds the last reservation, later than last, or
		// last itself if it applied the release and its answer was lost;
		// a local record was lowered to last before the release was sent
		// (package cache), so it vouches for no more than the registry
		// holds. No ID can be issued twice; a restart at most waits for the
		// reservation. A stop is not a failure because the registry was
		// unreachable.
		w.log.Warn("the worker registry did not confirm the exact last time at shutdown; it holds that time or the last reservation (safe: the next start may wait up to it)",
			"last", last, "err", err)
		return nil
	}
	if errors.Is(err, frond.ErrWorkerLost) {
		// The registry took the ID back before this node noticed: the ID is
		// not ours to record, and what the registry holds (our last
		// reservation, or the next holder's later time) stands.
		w.log.Warn("the worker ID was no longer held at shutdown; nothing to record", "last", last, "err", err)
		return nil
	}
	if err == nil {
		w.log.Info("snowflake time recorded at shutdown", "worker", st.worker.ID, "last", last)
	}
	return err
}
