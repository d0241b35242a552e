package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/snowflake"
)

var bg = context.Background()

type clock = testclock.Clock

func newClock() *clock { return testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) }

// memRegistry is a WorkerRegistry in memory that can fail, lose the worker
// ID, answer from a "cache" and report peers' clocks.
type memRegistry struct {
	mu         sync.Mutex
	id         int64
	last       time.Time
	failErr    error // Save fails with it
	acquireErr error // Acquire fails with it
	fromCache  bool  // Acquire answers FromCache
	pastBound  bool  // Save fails while the ID held came from the "cache" (its bound has passed)
	cached     bool  // the ID held came from the "cache"
	peers      []frond.PeerOffset
	lost       chan struct{}
	held       bool
	acquires   int
}

func (r *memRegistry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquires++
	if r.acquireErr != nil {
		return frond.Worker{}, r.acquireErr
	}
	r.lost, r.held, r.cached = make(chan struct{}), true, r.fromCache
	return frond.Worker{ID: r.id, LastIssued: r.last, Lost: r.lost, FromCache: r.fromCache}, nil
}

func (r *memRegistry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failErr != nil {
		return r.failErr
	}
	if r.pastBound && r.cached {
		return fmt.Errorf("%w: the local record allows snowflake IDs only up to ...", frond.ErrStoreUnavailable)
	}
	if !r.held {
		return frond.ErrWorkerLost
	}
	if last.After(r.last) {
		r.last = last
	}
	return nil
}

// revoke takes the worker ID back, as an expired lease does.
func (r *memRegistry) revoke() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		r.held = false
		close(r.lost)
	}
}

func (r *memRegistry) set(f func(r *memRegistry)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *memRegistry) PeerOffsets(ctx context.Context) ([]frond.PeerOffset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peers, nil
}

func (r *memRegistry) Close() error { return nil }

// newIssuer runs an Issuer that reserves an hour ahead (the supervisor's
// tick is an hour: tests reserve with w.reserve) and retries at once.
func newIssuer(t *testing.T, c *clock, reg frond.WorkerRegistry) *Issuer {
	t.Helper()
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour, RetryEvery: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(bg) })
	return w
}

// newFromCacheIssuer runs an Issuer whose registry answers from its "local
// record" (worker ID 6), reserving every 5 ms, an hour ahead.
func newFromCacheIssuer(t *testing.T, c *clock, reg *memRegistry) *Issuer {
	t.Helper()
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: 5 * time.Millisecond, MaxLead: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(bg) })
	return w
}

// reserve reserves on the current state, as the supervisor's tick does.
func (w *Issuer) reserve(ctx context.Context) error {
	st := w.state.Load()
	if st.gen == nil {
		return st.err
	}
	return w.reserveOn(ctx, st)
}

// decode splits id by w's layout.
func decode(w *Issuer, id int64) snowflake.Parts {
	p, _ := w.Layout().Decompose(id)
	return p
}

type readiness struct {
	Ready  bool
	Detail string
}

func snowflakeReady(w *Issuer) readiness {
	ok, detail := w.Ready()
	return readiness{ok, detail}
}

// A clock far behind the recorded time: the node starts, serves segment
// IDs, and refuses snowflake IDs (saying by how much) until the clock passes
// that time.
func TestNew_ClockBehind(t *testing.T) {
	c := newClock()
	last := time.Unix(0, c.Now()).Add(3 * time.Hour) // more than StartupWait
	w := newIssuer(t, c, &memRegistry{id: 3, last: last})
	_, err := w.Next()
	var cbe *ClockBehindError
	if !errors.As(err, &cbe) || !errors.Is(err, snowflake.ErrClockBackwards) || cbe.Behind != 3*time.Hour || cbe.Worker != 3 {
		t.Fatalf("err = %v", err)
	}
	if _, err := w.NextN(2); !errors.As(err, &cbe) {
		t.Fatalf("batch: %v", err)
	}
	if chk := w.Checks()[1]; chk.Name != "clock" || chk.OK || !strings.Contains(chk.Detail, "3h0m0s behind") {
		t.Fatalf("readiness %+v", chk)
	}
	if wi := w.Info(); wi.ID != 3 || !wi.Held || !wi.Issuing {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	c.Add(3*time.Hour + time.Millisecond)
	id, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	if d := decode(w, id); !d.Time.After(last) {
		t.Fatalf("ID at %v, last %v", d.Time, last)
	}
}

// After a crash the registry holds a reservation up to 2 x PersistEvery
// ahead: a quick restart waits for the clock to pass it (StartupWait) and
// comes up issuing.
func TestNew_QuickRestartAfterCrash(t *testing.T) {
	c := newClock()
	start := c.Now()
	crashLast := time.Unix(0, start).Add(1500 * time.Millisecond)
	w := newIssuer(t, c, &memRegistry{last: crashLast})
	if waited := time.Duration(c.Now() - start); waited < 1500*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("New waited %v for a 1.5 s gap", waited)
	}
	id, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	if d := decode(w, id); !d.Time.After(crashLast) {
		t.Fatalf("ID at %v", d.Time)
	}
	for _, chk := range w.Checks() {
		if !chk.OK {
			t.Errorf("not ready: %+v", chk)
		}
	}
}

// Losing the worker ID at run time (an expired lease) stops snowflake IDs
// with worker_unavailable; segment IDs go on; the node acquires an ID again
// and never issues at or before a time it issued with the lost one.
func TestIssuer_LeaseLoss(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4}
	w := newIssuer(t, c, reg)
	before, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.acquireErr = fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable) })
	reg.revoke()
	testenv.WaitFor(t, "the loss", func() bool { return !w.Info().Held })
	_, err = w.Next()
	if !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("after the loss: %v", err)
	}
	// Readiness first says the ID was lost, then, once a retry has failed,
	// why it cannot be taken again.
	testenv.WaitFor(t, "a failed re-acquisition in readiness", func() bool {
		return strings.Contains(w.Checks()[0].Detail, "connection refused")
	})
	if chk := w.Checks()[0]; chk.Name != "worker" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	// The registry is back but recorded nothing past the reservation of
	// this node (a stale record): the node's own memory keeps it ahead.
	c.Add(time.Millisecond)
	reg.set(func(r *memRegistry) { r.acquireErr, r.last = nil, time.Time{} })
	testenv.WaitFor(t, "re-acquisition", func() bool { return w.Info().Issuing })
	after, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("ID %d after the re-acquisition is not above %d", after, before)
	}
}

// A node whose clock is far from its live peers' average holds its worker
// ID but does not issue until a retry finds it within the threshold.
func TestIssuer_PeerSkew(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 2, peers: []frond.PeerOffset{{Peer: "a", Offset: -8 * time.Second}, {Peer: "b", Offset: -12 * time.Second}}}
	w := newIssuer(t, c, reg)
	_, err := w.Next()
	var pse *PeerSkewError
	if !errors.As(err, &pse) || pse.Skew != 10*time.Second || pse.Peers != 2 || !errors.Is(err, ErrClockSkew) {
		t.Fatalf("err = %v", err)
	}
	if chk := w.Checks()[1]; chk.Name != "clock" || chk.OK || !strings.Contains(chk.Detail, "10s ahead of") {
		t.Fatalf("readiness %+v", chk)
	}
	if wi := w.Info(); !wi.Held || wi.Issuing || wi.ID != 2 || wi.PeerSkew != 10*time.Second || wi.PeerCount != 2 {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	n := reg.acquires
	reg.set(func(r *memRegistry) { r.peers = []frond.PeerOffset{{Peer: "a", Offset: time.Second}} })
	testenv.WaitFor(t, "the retry", func() bool { return w.Info().Issuing })
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.acquires != n {
		t.Fatalf("the retry acquired again (%d -> %d): the held ID should be kept", n, reg.acquires)
	}
}

// An unreachable registry at start-up does not stop the node: it serves
// segment IDs and acquires a worker ID when the registry answers. Errors
// that retrying cannot fix refuse the start.
func TestNew_RegistryErrors(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 1, acquireErr: fmt.Errorf("%w: dial tcp: refused", frond.ErrStoreUnavailable)}
	w := newIssuer(t, c, reg)
	if _, err := w.Next(); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("with the registry down: %v", err)
	}
	reg.set(func(r *memRegistry) { r.acquireErr = nil })
	testenv.WaitFor(t, "acquisition", func() bool { return w.Info().Issuing })
	if w.Info().ID != 1 {
		t.Fatalf("worker %d", w.Info().ID)
	}

	_, err := New(bg, &memRegistry{acquireErr: fmt.Errorf("%w: all 1024 taken", frond.ErrNoWorkerID)}, Settings{Now: c.Now}, nil)
	if !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("exhausted registry: %v", err)
	}
	// Every ID held or used too recently: waiting fixes it, so the node
	// starts and retries.
	later := &memRegistry{id: 2, acquireErr: registry.RecycleLater("all 1024 worker IDs", time.Unix(0, c.Now()).Add(time.Minute), time.Minute)}
	w2 := newIssuer(t, c, later)
	later.set(func(r *memRegistry) { r.acquireErr = nil })
	testenv.WaitFor(t, "acquisition after RecycleLater", func() bool { return w2.Info().Issuing })
}

// A worker ID from the local record (registry unreachable at start-up)
// issues; once the registry answers, the node holds its ID there again.
func TestIssuer_FromCacheBackToRegistry(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	w := newFromCacheIssuer(t, c, reg)
	if wi := w.Info(); !wi.FromCache || !wi.Issuing {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	if chk := w.Checks()[0]; !strings.Contains(chk.Detail, "local record") {
		t.Fatalf("readiness %+v", chk)
	}
	reg.set(func(r *memRegistry) { r.fromCache = false })
	testenv.WaitFor(t, "the registry", func() bool { return !w.Info().FromCache })
	if _, err := w.Next(); err != nil || w.Info().ID != 6 {
		t.Fatalf("worker %d: %v", w.Info().ID, err)
	}
}

// A node running from its local record past the record's bound (every
// reservation fails) still goes back to the registry once it answers.
func TestIssuer_FromCachePastBoundBackToRegistry(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	w := newFromCacheIssuer(t, c, reg)
	reg.set(func(r *memRegistry) { r.pastBound = true })
	c.Add(3 * time.Hour) // past the reservation: IDs stop
	testenv.WaitFor(t, "snowflake IDs to stop", func() bool { _, err := w.Next(); return err != nil })
	reg.set(func(r *memRegistry) { r.fromCache = false })
	testenv.WaitFor(t, "the registry", func() bool { return !w.Info().FromCache })
	testenv.WaitFor(t, "snowflake IDs", func() bool { _, err := w.Next(); return err == nil })
	if w.Info().ID != 6 {
		t.Fatalf("worker %d", w.Info().ID)
	}
}

// Back at the registry with the same worker ID but a later time than this
// node reserved (the ID went to another node while this one ran from its
// local record, and came back recycled): the generator starts again past
// the registry's time instead of going on at its own.
func TestIssuer_BackToRegistrySameIDLaterTime(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	w := newFromCacheIssuer(t, c, reg)
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	floor := time.Unix(0, c.Now()).Add(10 * time.Hour)
	reg.set(func(r *memRegistry) { r.fromCache, r.last = false, floor })
	var cbe *ClockBehindError
	testenv.WaitFor(t, "snowflake IDs refused until the registry's time", func() bool {
		_, err := w.Next()
		return errors.As(err, &cbe)
	})
	if cbe.Worker != 6 || cbe.Behind < 9*time.Hour || w.Info().FromCache {
		t.Fatalf("%+v, %+v", cbe, w.Info())
	}
}

// The reservation: the generator never issues past the time the registry
// recorded; when the registry stops recording, snowflake IDs stop there.
func TestIssuer_Reservation(t *testing.T) {
	c := newClock()
	reg := &memRegistry{}
	w := newIssuer(t, c, reg)
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(0, c.Now()).Add(2 * time.Hour); !reg.last.Equal(want) {
		t.Fatalf("reserved %v, want %v", reg.last, want)
	}
	reg.mu.Lock()
	reg.failErr = errors.New("disk full")
	reg.mu.Unlock()
	if err := w.reserve(bg); err == nil {
		t.Fatal("reserve succeeded")
	}
	if chk := w.Checks()[0]; chk.Name != "worker" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	c.Add(2*time.Hour + time.Millisecond)
	if _, err := w.Next(); !errors.Is(err, snowflake.ErrUnreserved) {
		t.Fatalf("past the reservation: %v", err)
	}
	reg.mu.Lock()
	reg.failErr = nil
	reg.mu.Unlock()
	if err := w.reserve(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != nil {
		t.Fatalf("after the registry recovered: %v", err)
	}
}

// A worker ID never used before (LastIssued zero) whose first reservation
// fails issues nothing: a kill -9 and a restart with the clock behind would
// otherwise reissue the same IDs (the generator took a zero limit as "no
// limit"). The file registry on a disk where worker.json cannot be written,
// and a fresh etcd, Redis or SQL worker ID with the registry cut, did this.
func TestIssuer_FreshWorkerFirstReservationFails(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 3, failErr: errors.New("read-only file system")}
	w := newIssuer(t, c, reg)
	if id, err := w.Next(); !errors.Is(err, snowflake.ErrUnreserved) {
		t.Fatalf("Next = %d, %v; want %v", id, err, snowflake.ErrUnreserved)
	}
	if ids, err := w.NextN(5); !errors.Is(err, snowflake.ErrUnreserved) || len(ids) != 0 {
		t.Fatalf("SnowflakeIDs = %v, %v", ids, err)
	}
	c.Add(time.Second)
	if _, err := w.Next(); !errors.Is(err, snowflake.ErrUnreserved) {
		t.Fatalf("a second later: %v", err)
	}
	reg.set(func(r *memRegistry) { r.failErr = nil })
	if err := w.reserve(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != nil {
		t.Fatalf("after the reservation: %v", err)
	}
}

// A clean shutdown records the exact last time, so a restart starts at once.
func TestIssuer_CloseReleasesExactTime(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	reg, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(bg, reg, Settings{Now: c.Now, PersistEvery: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Next()
	if err := w.Close(bg); err != nil {
		t.Fatal(err)
	}
	reg2, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Close()
	wk, _ := reg2.Acquire(bg, 1023)
	d := decode(w, id)
	if !wk.LastIssued.Equal(d.Time) {
		t.Fatalf("recorded %v, last ID at %v", wk.LastIssued, d.Time)
	}
}

// Per-kind readiness: snowflake is not ready whenever a snowflake request
// would fail (the overall page used to say 200 "degraded" while every
// snowflake request failed), and is ready again when it would succeed.
func TestIssuer_SnowflakeReady(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4}
	w := newIssuer(t, c, reg)
	wantReady := func(ready bool, fragment string) {
		t.Helper()
		k := snowflakeReady(w)
		_, err := w.Next()
		if k.Ready != ready || (err == nil) != ready || !strings.Contains(k.Detail, fragment) {
			t.Fatalf("Ready %+v, Next error %v; want ready %v with %q", k, err, ready, fragment)
		}
	}
	wantReady(true, "worker ID 4")
	// The clock steps back by a minute.
	c.Add(-time.Minute)
	wantReady(false, "behind")
	c.Add(time.Minute)
	wantReady(true, "worker ID 4")
	// The lease is lost and the registry does not answer.
	reg.set(func(r *memRegistry) { r.acquireErr = fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable) })
	reg.revoke()
	testenv.WaitFor(t, "a failed re-acquisition", func() bool { return strings.Contains(snowflakeReady(w).Detail, "connection refused") })
	wantReady(false, "connection refused")
	reg.set(func(r *memRegistry) { r.acquireErr = nil })
	testenv.WaitFor(t, "re-acquisition", func() bool { return w.Info().Issuing })
	wantReady(true, "worker ID 4")
	// The reservation runs out while the registry fails to record.
	reg.set(func(r *memRegistry) { r.failErr = errors.New("disk full") })
	c.Add(3 * time.Hour)
	wantReady(false, "has not recorded a time past the clock")
	w.reserve(bg)
	wantReady(false, "disk full")

	// A fresh worker ID whose first reservation fails.
	w2 := newIssuer(t, newClock(), &memRegistry{id: 5, failErr: errors.New("read-only file system")})
	if k := snowflakeReady(w2); k.Ready || !strings.Contains(k.Detail, "read-only file system") {
		t.Fatalf("fresh worker, first reservation failed: %+v", k)
	}
}

// hangingRegistry's Acquire and Save hang (until their context ends, or
// for good when ignoreCtx) while hang is open, as a registry behind a dead
// network path does; its Release records the exact time a clean stop hands
// it.
type hangingRegistry struct {
	*memRegistry
	hangAcquire, hangSave chan struct{}
	ignoreCtx             bool
	released              chan time.Time
}

func (r *hangingRegistry) wait(ctx context.Context, hang chan struct{}) error {
	if hang == nil {
		return nil
	}
	if r.ignoreCtx {
		<-hang
		return nil
	}
	select {
	case <-hang:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", frond.ErrStoreUnavailable, ctx.Err())
	}
}

func (r *hangingRegistry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	hang := r.hangAcquire
	r.mu.Unlock()
	if err := r.wait(ctx, hang); err != nil {
		return frond.Worker{}, err
	}
	return r.memRegistry.Acquire(ctx, maxNode)
}

func (r *hangingRegistry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	hang := r.hangSave
	r.mu.Unlock()
	if err := r.wait(ctx, hang); err != nil {
		return err
	}
	return r.memRegistry.Save(ctx, last)
}

func (r *hangingRegistry) Release(ctx context.Context, last time.Time) error {
	r.released <- last
	return nil
}

// closeWithin closes w with a shutdown timeout and fails if it takes much
// longer.
func closeWithin(t *testing.T, w *Issuer, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(bg, timeout)
		defer cancel()
		w.Close(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout + 3*time.Second):
		t.Fatalf("Close did not return within its %v shutdown timeout", timeout)
	}
}

// Close is bounded by its context while the supervisor is inside a registry
// call that hangs (it waited for the 15 s acquire timeout, or for good).
func TestIssuer_CloseBoundedDuringHungAcquire(t *testing.T) {
	for _, ignoreCtx := range []bool{false, true} {
		c := newClock()
		reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, ignoreCtx: ignoreCtx, released: make(chan time.Time, 1)}
		w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour, RetryEvery: time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hang := make(chan struct{})
		defer close(hang)
		reg.set(func(r *memRegistry) { reg.hangAcquire = hang })
		reg.revoke() // the supervisor acquires again, and hangs
		testenv.WaitFor(t, "the loss", func() bool { return !w.Info().Held })
		time.Sleep(20 * time.Millisecond) // into the hung Acquire
		closeWithin(t, w, 300*time.Millisecond)
		select {
		case <-reg.released:
			t.Fatal("released a worker ID this node no longer held")
		default:
		}
	}
}

// Close is bounded while the supervisor's reservation hangs in the
// registry, and still records the exact time of the last ID.
func TestIssuer_CloseBoundedDuringHungSave(t *testing.T) {
	c := newClock()
	reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, ignoreCtx: true, released: make(chan time.Time, 1)}
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: 5 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	defer close(hang)
	reg.set(func(r *memRegistry) { reg.hangSave = hang })
	time.Sleep(30 * time.Millisecond) // the supervisor's next reservation hangs
	id, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, w, 300*time.Millisecond)
	d := decode(w, id)
	select {
	case last := <-reg.released:
		if !last.Equal(d.Time) {
			t.Fatalf("released %v, the last ID's time is %v", last, d.Time)
		}
	default:
		t.Fatal("the exact last time was not recorded")
	}
}

// Close interrupts a clock wait of the supervisor (a re-acquired ID whose
// last time is ahead of the clock) and, while the ID is held, records the
// exact time of the last ID.
func TestIssuer_CloseInterruptsClockWait(t *testing.T) {
	c := newClock()
	reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, released: make(chan time.Time, 1)}
	// Sleep nil: the real, interruptible wait; the test clock stands still,
	// so the wait would last StartupWait.
	w, err := New(bg, reg, Settings{Now: c.Now, PersistEvery: time.Hour, RetryEvery: time.Millisecond, StartupWait: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.last = time.Unix(0, c.Now()).Add(20 * time.Second) })
	reg.revoke()
	testenv.WaitFor(t, "the re-acquisition", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.acquires >= 2
	})
	time.Sleep(20 * time.Millisecond) // into the wait
	closeWithin(t, w, 300*time.Millisecond)
}

// SIGTERM during the start-up clock wait: New returns when its context ends.
func TestNew_ClockWaitEndsWithContext(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4, last: time.Unix(0, c.Now()).Add(20 * time.Second)}
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	w, err := New(ctx, reg, Settings{Now: c.Now, PersistEvery: time.Hour, StartupWait: time.Minute}, nil)
	if err == nil {
		w.Close(bg)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("New took %v after its context ended", el)
	}
}

// unreachableAtRelease is a registry whose Release finds it unreachable.
type unreachableAtRelease struct{ *memRegistry }

func (r unreachableAtRelease) Release(ctx context.Context, last time.Time) error {
	return fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable)
}

// SIGTERM while the registry is unreachable: the stop is clean (the last
// reservation stands, later than the last ID), not an error that makes the
// process exit 1; a registry that answers with an error still fails it.
func TestIssuer_CloseRegistryUnreachable(t *testing.T) {
	c := newClock()
	reg := unreachableAtRelease{&memRegistry{id: 2}}
	var logs bytes.Buffer
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(bg); err != nil {
		t.Fatalf("Close with the registry unreachable: %v", err)
	}
	if strings.Contains(logs.String(), "snowflake time recorded") {
		t.Fatalf("the log says the time was recorded:\n%s", logs.String())
	}
	d := decode(w, id)
	if reg.last.Before(d.Time) {
		t.Fatalf("the registry holds %v, before the last ID's time %v", reg.last, d.Time)
	}
}

// SIGTERM after the registry took the worker ID back but before the node
// noticed (seen in the chaos suite: a registry cut past the lease, then a
// stop): nothing is left to record, the registry's own time stands, and the
// stop is clean, not an exit 1.
func TestIssuer_CloseAfterUnnoticedLoss(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 2}
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.held = false }) // Lost not closed yet
	if err := w.Close(bg); err != nil {
		t.Fatalf("Close after the worker ID was taken back: %v", err)
	}
}

// budgetRegistry records how long each Save may take (its context's
// deadline).
type budgetRegistry struct {
	*memRegistry
	mu      sync.Mutex
	budgets []time.Duration
}

func (r *budgetRegistry) Save(ctx context.Context, last time.Time) error {
	if dl, ok := ctx.Deadline(); ok {
		r.mu.Lock()
		r.budgets = append(r.budgets, time.Until(dl))
		r.mu.Unlock()
	}
	return r.memRegistry.Save(ctx, last)
}

// A save at run time gives up within the tick: the reservation runs two
// ticks ahead, so a save that hangs (a registry cut off) must give way to
// the local record before the last reservation runs out. It had 1 s, more
// than two ticks of 400 ms: snowflake IDs paused in every second of a
// registry cut (registry_behind in the chaos suite).
func TestIssuer_SaveWithinTick(t *testing.T) {
	c := newClock()
	reg := &budgetRegistry{memRegistry: &memRegistry{id: 2}}
	const every = 50 * time.Millisecond
	w, err := New(bg, reg, Settings{Now: c.Now, Sleep: c.Add, PersistEvery: every}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(bg)
	testenv.WaitFor(t, "saves at run time", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return len(reg.budgets) >= 3
	})
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, b := range reg.budgets[1:] { // the first is New's own
		if b > every {
			t.Fatalf("a save may take %v, more than a tick of %v", b, every)
		}
	}
}

// Close with a context already spent (the shutdown budget used up by the
// segment store) still lets an idle supervisor stop: it is not reported as
// "did not stop in time", which made frond serve exit 1.
func TestIssuer_CloseWithSpentContext(t *testing.T) {
	for range 20 {
		w, err := New(bg, &memRegistry{id: 2}, Settings{Now: newClock().Now, PersistEvery: time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		cancel()
		if err := w.Close(ctx); err != nil {
			t.Fatalf("Close with a spent context: %v", err)
		}
	}
}

// maxRegistry records the largest worker ID the Issuer asked for.
type maxRegistry struct {
	memRegistry
	asked int64
}

func (r *maxRegistry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.asked = maxNode
	return r.memRegistry.Acquire(ctx, maxNode)
}

// With datacenter bits, the registry is asked for a worker ID within the
// datacenter, and the IDs carry the datacenter above it: nodes of two
// datacenters holding the same worker ID issue different IDs.
func TestIssuer_Datacenter(t *testing.T) {
	c := newClock()
	l, _ := snowflake.Preset(snowflake.Twitter)
	l.DatacenterBits = 5
	nodes := map[int64]bool{}
	for _, dc := range []int64{0, 3, 31} {
		reg := &maxRegistry{memRegistry: memRegistry{id: 7}}
		w, err := New(bg, reg, Settings{Layout: l, Datacenter: dc, Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(bg)
		if reg.asked != 31 {
			t.Fatalf("asked the registry for IDs up to %d, want 31", reg.asked)
		}
		id, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		p, _ := l.Decompose(id)
		if p.Node != dc<<5|7 || p.Datacenter != dc || p.Worker != 7 || nodes[p.Node] {
			t.Fatalf("datacenter %d: node %d (%d, %d)", dc, p.Node, p.Datacenter, p.Worker)
		}
		nodes[p.Node] = true
		if in := w.Info(); in.ID != dc<<5|7 || in.Datacenter == nil || *in.Datacenter != dc || in.Worker == nil || *in.Worker != 7 {
			t.Fatalf("Info %+v", in)
		}
	}
	// A registry that answers beyond the datacenter's worker IDs is refused.
	if _, err := New(bg, &memRegistry{id: 32}, Settings{Layout: l, Datacenter: 1, Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, nil); !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("worker 32 of 5 worker bits: %v", err)
	}
	for _, s := range []Settings{
		{Datacenter: 1},             // twitter has no datacenter bits
		{Layout: l, Datacenter: 32}, // 5 bits
		{Layout: l, Datacenter: -1},
	} {
		s.Now = c.Now
		var fe *FieldError
		if err := s.Validate(); !errors.As(err, &fe) || fe.Field != "Datacenter" {
			t.Errorf("%+v: %v", s.Datacenter, err)
		}
	}
	l.DatacenterBits = 10
	if err := (Settings{Layout: l, Now: c.Now}).Validate(); err == nil {
		t.Error("10 datacenter bits of 10 node bits: accepted")
	}
}
