package service

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
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
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

// waitFor polls cond (the supervisor runs on its own timers) for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func newService(t *testing.T, c *clock, reg frond.WorkerRegistry) (*Service, *memstore.Store) {
	t.Helper()
	st := memstore.New(nil)
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour, RetryEvery: time.Millisecond,
		Segment: segment.Settings{FixedStep: true}}, st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s, st
}

// newFromCacheService runs a service whose registry answers from its "local
// record" (worker ID 6), reserving every 5 ms, an hour ahead.
func newFromCacheService(t *testing.T, c *clock, reg *memRegistry) (*Service, *memstore.Store) {
	t.Helper()
	st := memstore.New(nil)
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: 5 * time.Millisecond, MaxLead: time.Hour}, st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s, st
}

func TestService_IDsAndTags(t *testing.T) {
	c := newClock()
	s, _ := newService(t, c, &memRegistry{id: 5})
	if _, err := s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	if id, err := s.SegmentID(bg, "order"); err != nil || id != 1 {
		t.Fatalf("SegmentID = %d, %v", id, err)
	}
	rs, err := s.SegmentIDs(bg, "order", 150)
	if err != nil || len(rs) != 1 || rs[0].Start != 2 || rs[0].End != 152 {
		t.Fatalf("SegmentIDs = %v, %v", rs, err)
	}
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Decode(id, "")
	if err != nil || d.Node != 5 || d.Layout != "twitter" || !d.Time.Equal(time.Unix(0, c.Now()).UTC()) {
		t.Fatalf("Decode = %+v, %v", d, err)
	}
	ids, err := s.SnowflakeIDs(3)
	if err != nil || len(ids) != 3 || ids[0] <= id || s.SnowflakeIssued() != 4 {
		t.Fatalf("SnowflakeIDs = %v, %v, issued %d", ids, err, s.SnowflakeIssued())
	}
	step := int64(500)
	if tag, err := s.UpdateTag(bg, "order", frond.TagUpdate{Step: &step}); err != nil || tag.Step != 500 {
		t.Fatalf("UpdateTag = %+v, %v", tag, err)
	}
	if _, err := s.UpdateTag(bg, "order", frond.TagUpdate{}); Code(err) != CodeInvalidArgument {
		t.Fatalf("empty update: %v", err)
	}
	if err := s.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SegmentID(bg, "order"); Code(err) != CodeTagNotFound {
		t.Fatalf("after delete: %v", err)
	}
	for _, n := range []int64{0, MaxRangesBatch + 1} {
		if _, err := s.SegmentIDs(bg, "order", n); Code(err) != CodeInvalidArgument {
			t.Errorf("SegmentIDs(%d): %v", n, err)
		}
	}
	for _, n := range []int{0, MaxBatch + 1} {
		if _, err := s.SnowflakeIDs(n); Code(err) != CodeInvalidArgument {
			t.Errorf("SnowflakeIDs(%d): %v", n, err)
		}
	}
	if _, err := s.Decode(-1, ""); Code(err) != CodeInvalidArgument {
		t.Errorf("Decode(-1): %v", err)
	}
	if _, err := s.Decode(1, "nope"); Code(err) != CodeInvalidArgument {
		t.Errorf("Decode layout nope: %v", err)
	}
	if d, err := s.Decode(1<<22, "sonyflake"); err != nil || d.Layout != "sonyflake" {
		t.Errorf("Decode sonyflake: %+v, %v", d, err)
	}
	for _, chk := range s.Ready(bg) {
		if !chk.OK {
			t.Errorf("not ready: %+v", chk)
		}
	}
}

// A clock far behind the recorded time: the node starts, serves segment
// IDs, and refuses snowflake IDs (saying by how much) until the clock passes
// that time.
func TestNew_ClockBehind(t *testing.T) {
	c := newClock()
	last := time.Unix(0, c.Now()).Add(3 * time.Hour) // more than StartupWait
	s, _ := newService(t, c, &memRegistry{id: 3, last: last})
	if _, err := s.CreateTag(bg, frond.Tag{Name: "t", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SegmentID(bg, "t"); err != nil {
		t.Fatalf("segment IDs with the clock behind: %v", err)
	}
	_, err := s.SnowflakeID()
	var cbe *ClockBehindError
	if !errors.As(err, &cbe) || !errors.Is(err, snowflake.ErrClockBackwards) || cbe.Behind != 3*time.Hour || cbe.Worker != 3 || Code(err) != CodeClockBackwards {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.SnowflakeIDs(2); !errors.As(err, &cbe) {
		t.Fatalf("batch: %v", err)
	}
	if chk := s.Ready(bg)[2]; chk.Name != "clock" || chk.OK || !strings.Contains(chk.Detail, "3h0m0s behind") {
		t.Fatalf("readiness %+v", chk)
	}
	if wi := s.WorkerInfo(); wi.ID != 3 || !wi.Held || !wi.Issuing {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	c.Add(3*time.Hour + time.Millisecond)
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Decode(id, ""); !d.Time.After(last) {
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
	s, _ := newService(t, c, &memRegistry{last: crashLast})
	if waited := time.Duration(c.Now() - start); waited < 1500*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("New waited %v for a 1.5 s gap", waited)
	}
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Decode(id, ""); !d.Time.After(crashLast) {
		t.Fatalf("ID at %v", d.Time)
	}
	for _, chk := range s.Ready(bg) {
		if !chk.OK {
			t.Errorf("not ready: %+v", chk)
		}
	}
}

// Losing the worker ID at run time (an expired lease) stops snowflake IDs
// with worker_unavailable; segment IDs go on; the node acquires an ID again
// and never issues at or before a time it issued with the lost one.
func TestService_LeaseLoss(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4}
	s, _ := newService(t, c, reg)
	s.CreateTag(bg, frond.Tag{Name: "t", Step: 10})
	before, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.acquireErr = fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable) })
	reg.revoke()
	waitFor(t, "the loss", func() bool { return !s.WorkerInfo().Held })
	_, err = s.SnowflakeID()
	if !errors.Is(err, frond.ErrWorkerLost) || Code(err) != CodeWorkerLost {
		t.Fatalf("after the loss: %v", err)
	}
	if _, err := s.SegmentID(bg, "t"); err != nil {
		t.Fatalf("segment IDs after the loss: %v", err)
	}
	// Readiness first says the ID was lost, then, once a retry has failed,
	// why it cannot be taken again.
	waitFor(t, "a failed re-acquisition in readiness", func() bool {
		return strings.Contains(s.Ready(bg)[1].Detail, "connection refused")
	})
	if chk := s.Ready(bg)[1]; chk.Name != "worker" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	// The registry is back but recorded nothing past the reservation of
	// this node (a stale record): the node's own memory keeps it ahead.
	c.Add(time.Millisecond)
	reg.set(func(r *memRegistry) { r.acquireErr, r.last = nil, time.Time{} })
	waitFor(t, "re-acquisition", func() bool { return s.WorkerInfo().Issuing })
	after, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("ID %d after the re-acquisition is not above %d", after, before)
	}
}

// A node whose clock is far from its live peers' average holds its worker
// ID but does not issue until a retry finds it within the threshold.
func TestService_PeerSkew(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 2, peers: []frond.PeerOffset{{Peer: "a", Offset: -8 * time.Second}, {Peer: "b", Offset: -12 * time.Second}}}
	s, _ := newService(t, c, reg)
	_, err := s.SnowflakeID()
	var pse *PeerSkewError
	if !errors.As(err, &pse) || pse.Skew != 10*time.Second || pse.Peers != 2 || Code(err) != CodeClockSkew {
		t.Fatalf("err = %v", err)
	}
	if chk := s.Ready(bg)[2]; chk.Name != "clock" || chk.OK || !strings.Contains(chk.Detail, "10s ahead of") {
		t.Fatalf("readiness %+v", chk)
	}
	if wi := s.WorkerInfo(); !wi.Held || wi.Issuing || wi.ID != 2 || wi.PeerSkew != 10*time.Second || wi.PeerCount != 2 {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	n := reg.acquires
	reg.set(func(r *memRegistry) { r.peers = []frond.PeerOffset{{Peer: "a", Offset: time.Second}} })
	waitFor(t, "the retry", func() bool { return s.WorkerInfo().Issuing })
	if _, err := s.SnowflakeID(); err != nil {
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
	s, _ := newService(t, c, reg)
	if _, err := s.SnowflakeID(); Code(err) != CodeWorkerLost {
		t.Fatalf("with the registry down: %v", err)
	}
	reg.set(func(r *memRegistry) { r.acquireErr = nil })
	waitFor(t, "acquisition", func() bool { return s.WorkerInfo().Issuing })
	if s.Worker() != 1 {
		t.Fatalf("worker %d", s.Worker())
	}

	_, err := New(bg, Config{Now: c.Now}, memstore.New(nil), &memRegistry{acquireErr: fmt.Errorf("%w: all 1024 taken", frond.ErrNoWorkerID)}, nil)
	if !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("exhausted registry: %v", err)
	}
	// Every ID held or used too recently: waiting fixes it, so the node
	// starts and retries.
	later := &memRegistry{id: 2, acquireErr: registry.RecycleLater("all 1024 worker IDs", time.Unix(0, c.Now()).Add(time.Minute), time.Minute)}
	s2, _ := newService(t, c, later)
	later.set(func(r *memRegistry) { r.acquireErr = nil })
	waitFor(t, "acquisition after RecycleLater", func() bool { return s2.WorkerInfo().Issuing })
}

// A worker ID from the local record (registry unreachable at start-up)
// issues; once the registry answers, the node holds its ID there again.
func TestService_FromCacheBackToRegistry(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	s, _ := newFromCacheService(t, c, reg)
	if wi := s.WorkerInfo(); !wi.FromCache || !wi.Issuing {
		t.Fatalf("WorkerInfo %+v", wi)
	}
	if chk := s.Ready(bg)[1]; !strings.Contains(chk.Detail, "local record") {
		t.Fatalf("readiness %+v", chk)
	}
	reg.set(func(r *memRegistry) { r.fromCache = false })
	waitFor(t, "the registry", func() bool { return !s.WorkerInfo().FromCache })
	if _, err := s.SnowflakeID(); err != nil || s.Worker() != 6 {
		t.Fatalf("worker %d: %v", s.Worker(), err)
	}
}

// A node running from its local record past the record's bound (every
// reservation fails) still goes back to the registry once it answers.
func TestService_FromCachePastBoundBackToRegistry(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	s, _ := newFromCacheService(t, c, reg)
	reg.set(func(r *memRegistry) { r.pastBound = true })
	c.Add(3 * time.Hour) // past the reservation: IDs stop
	waitFor(t, "snowflake IDs to stop", func() bool { _, err := s.SnowflakeID(); return err != nil })
	reg.set(func(r *memRegistry) { r.fromCache = false })
	waitFor(t, "the registry", func() bool { return !s.WorkerInfo().FromCache })
	waitFor(t, "snowflake IDs", func() bool { _, err := s.SnowflakeID(); return err == nil })
	if s.Worker() != 6 {
		t.Fatalf("worker %d", s.Worker())
	}
}

// Back at the registry with the same worker ID but a later time than this
// node reserved (the ID went to another node while this one ran from its
// local record, and came back recycled): the generator starts again past
// the registry's time instead of going on at its own.
func TestService_BackToRegistrySameIDLaterTime(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 6, fromCache: true}
	s, _ := newFromCacheService(t, c, reg)
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatal(err)
	}
	floor := time.Unix(0, c.Now()).Add(10 * time.Hour)
	reg.set(func(r *memRegistry) { r.fromCache, r.last = false, floor })
	var cbe *ClockBehindError
	waitFor(t, "snowflake IDs refused until the registry's time", func() bool {
		_, err := s.SnowflakeID()
		return errors.As(err, &cbe)
	})
	if cbe.Worker != 6 || cbe.Behind < 9*time.Hour || s.WorkerInfo().FromCache {
		t.Fatalf("%+v, %+v", cbe, s.WorkerInfo())
	}
}

// The reservation: the generator never issues past the time the registry
// recorded; when the registry stops recording, snowflake IDs stop there.
func TestService_Reservation(t *testing.T) {
	c := newClock()
	reg := &memRegistry{}
	s, _ := newService(t, c, reg)
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(0, c.Now()).Add(2 * time.Hour); !reg.last.Equal(want) {
		t.Fatalf("reserved %v, want %v", reg.last, want)
	}
	reg.mu.Lock()
	reg.failErr = errors.New("disk full")
	reg.mu.Unlock()
	if err := s.reserve(bg); err == nil {
		t.Fatal("reserve succeeded")
	}
	if chk := s.Ready(bg)[1]; chk.Name != "worker" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	c.Add(2*time.Hour + time.Millisecond)
	if _, err := s.SnowflakeID(); Code(err) != CodeUnreserved {
		t.Fatalf("past the reservation: %v", err)
	}
	reg.mu.Lock()
	reg.failErr = nil
	reg.mu.Unlock()
	if err := s.reserve(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatalf("after the registry recovered: %v", err)
	}
}

// A worker ID never used before (LastIssued zero) whose first reservation
// fails issues nothing: a kill -9 and a restart with the clock behind would
// otherwise reissue the same IDs (the generator took a zero limit as "no
// limit"). The file registry on a disk where worker.json cannot be written,
// and a fresh etcd, Redis or SQL worker ID with the registry cut, did this.
func TestService_FreshWorkerFirstReservationFails(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 3, failErr: errors.New("read-only file system")}
	s, _ := newService(t, c, reg)
	if id, err := s.SnowflakeID(); Code(err) != CodeUnreserved {
		t.Fatalf("SnowflakeID = %d, %v; want %s", id, err, CodeUnreserved)
	}
	if ids, err := s.SnowflakeIDs(5); Code(err) != CodeUnreserved || len(ids) != 0 {
		t.Fatalf("SnowflakeIDs = %v, %v", ids, err)
	}
	c.Add(time.Second)
	if _, err := s.SnowflakeID(); Code(err) != CodeUnreserved {
		t.Fatalf("a second later: %v", err)
	}
	reg.set(func(r *memRegistry) { r.failErr = nil })
	if err := s.reserve(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatalf("after the reservation: %v", err)
	}
}

// A clean shutdown records the exact last time, so a restart starts at once.
func TestService_CloseReleasesExactTime(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	reg, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour}, memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.SnowflakeID()
	if err := s.Close(bg); err != nil {
		t.Fatal(err)
	}
	reg2, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Close()
	w, _ := reg2.Acquire(bg, 1023)
	d, _ := s.Decode(id, "")
	if !w.LastIssued.Equal(d.Time) {
		t.Fatalf("recorded %v, last ID at %v", w.LastIssued, d.Time)
	}
}

func TestCode(t *testing.T) {
	for err, want := range map[error]string{
		nil:                      "",
		frond.ErrInvalidArgument: CodeInvalidArgument,
		fmt.Errorf("x: %w", frond.ErrTagNotFound): CodeTagNotFound,
		frond.ErrTagExists:                        CodeTagExists,
		frond.ErrWouldReissue:                     CodeWouldReissue,
		frond.ErrTagExhausted:                     CodeTagExhausted,
		frond.ErrStoreUnavailable:                 CodeStoreUnavailable,
		&snowflake.ClockError{}:                   CodeClockBackwards,
		snowflake.ErrUnreserved:                   CodeUnreserved,
		snowflake.ErrLayoutExpired:                CodeLayoutExpired,
		snowflake.ErrInvalidID:                    CodeInvalidArgument,
		frond.ErrNoWorkerID:                       CodeNoWorkerID,
		fmt.Errorf("%w: %w", frond.ErrWorkerLost, frond.ErrStoreUnavailable): CodeWorkerLost,
		&PeerSkewError{}:         CodeClockSkew,
		&ClockBehindError{}:      CodeClockBackwards,
		frond.ErrClosed:          CodeUnavailable,
		context.DeadlineExceeded: CodeUnavailable,
		ErrSerialNotFound:        CodeSerialNotFound,
		errors.New("boom"):       CodeInternal,
	} {
		if got := Code(err); got != want {
			t.Errorf("Code(%v) = %q, want %q", err, got, want)
		}
	}
}

// warnStore is a memstore whose operator accepted a risk.
type warnStore struct{ *memstore.Store }

func (warnStore) Warnings() []string { return []string{"redis keeps nothing on disk"} }

func TestReady_StoreWarnings(t *testing.T) {
	c := newClock()
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour}, warnStore{memstore.New(nil)}, &memRegistry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	chk := s.Ready(bg)[0]
	if chk.Name != "store" || !chk.OK || chk.Detail != "redis keeps nothing on disk" {
		t.Fatalf("store check %+v", chk)
	}
}

// Per-kind readiness: snowflake is not ready whenever a snowflake request
// would fail (the overall page used to say 200 "degraded" while every
// snowflake request failed), and is ready again when it would succeed.
func TestService_SnowflakeReady(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4}
	s, _ := newService(t, c, reg)
	wantReady := func(ready bool, fragment string) {
		t.Helper()
		k := s.SnowflakeReady()
		_, err := s.SnowflakeID()
		if k.Ready != ready || (err == nil) != ready || !strings.Contains(k.Detail, fragment) {
			t.Fatalf("SnowflakeReady %+v, SnowflakeID error %v; want ready %v with %q", k, err, ready, fragment)
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
	waitFor(t, "a failed re-acquisition", func() bool { return strings.Contains(s.SnowflakeReady().Detail, "connection refused") })
	wantReady(false, "connection refused")
	reg.set(func(r *memRegistry) { r.acquireErr = nil })
	waitFor(t, "re-acquisition", func() bool { return s.WorkerInfo().Issuing })
	wantReady(true, "worker ID 4")
	// The reservation runs out while the registry fails to record.
	reg.set(func(r *memRegistry) { r.failErr = errors.New("disk full") })
	c.Add(3 * time.Hour)
	wantReady(false, "has not recorded a time past the clock")
	s.reserve(bg)
	wantReady(false, "disk full")

	// A fresh worker ID whose first reservation fails.
	s2, _ := newService(t, newClock(), &memRegistry{id: 5, failErr: errors.New("read-only file system")})
	if k := s2.SnowflakeReady(); k.Ready || !strings.Contains(k.Detail, "read-only file system") {
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

// closeWithin closes s with a shutdown timeout and fails if it takes much
// longer.
func closeWithin(t *testing.T, s *Service, timeout time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(bg, timeout)
		defer cancel()
		s.Close(ctx)
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
func TestService_CloseBoundedDuringHungAcquire(t *testing.T) {
	for _, ignoreCtx := range []bool{false, true} {
		c := newClock()
		reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, ignoreCtx: ignoreCtx, released: make(chan time.Time, 1)}
		s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour, RetryEvery: time.Millisecond}, memstore.New(nil), reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		hang := make(chan struct{})
		defer close(hang)
		reg.set(func(r *memRegistry) { reg.hangAcquire = hang })
		reg.revoke() // the supervisor acquires again, and hangs
		waitFor(t, "the loss", func() bool { return !s.WorkerInfo().Held })
		time.Sleep(20 * time.Millisecond) // into the hung Acquire
		closeWithin(t, s, 300*time.Millisecond)
		select {
		case <-reg.released:
			t.Fatal("released a worker ID this node no longer held")
		default:
		}
	}
}

// Close is bounded while the supervisor's reservation hangs in the
// registry, and still records the exact time of the last ID.
func TestService_CloseBoundedDuringHungSave(t *testing.T) {
	c := newClock()
	reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, ignoreCtx: true, released: make(chan time.Time, 1)}
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: 5 * time.Millisecond}, memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	defer close(hang)
	reg.set(func(r *memRegistry) { reg.hangSave = hang })
	time.Sleep(30 * time.Millisecond) // the supervisor's next reservation hangs
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, s, 300*time.Millisecond)
	d, _ := s.Decode(id, "")
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
func TestService_CloseInterruptsClockWait(t *testing.T) {
	c := newClock()
	reg := &hangingRegistry{memRegistry: &memRegistry{id: 4}, released: make(chan time.Time, 1)}
	// Sleep nil: the real, interruptible wait; the test clock stands still,
	// so the wait would last StartupWait.
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour, RetryEvery: time.Millisecond, StartupWait: time.Minute},
		memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.last = time.Unix(0, c.Now()).Add(20 * time.Second) })
	reg.revoke()
	waitFor(t, "the re-acquisition", func() bool {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		return reg.acquires >= 2
	})
	time.Sleep(20 * time.Millisecond) // into the wait
	closeWithin(t, s, 300*time.Millisecond)
}

// SIGTERM during the start-up clock wait: New returns when its context ends.
func TestNew_ClockWaitEndsWithContext(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 4, last: time.Unix(0, c.Now()).Add(20 * time.Second)}
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := New(ctx, Config{Now: c.Now, PersistEvery: time.Hour, StartupWait: time.Minute}, memstore.New(nil), reg, nil)
	if err == nil {
		s.Close(bg)
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
func TestService_CloseRegistryUnreachable(t *testing.T) {
	c := newClock()
	reg := unreachableAtRelease{&memRegistry{id: 2}}
	var logs bytes.Buffer
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, memstore.New(nil), reg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(bg); err != nil {
		t.Fatalf("Close with the registry unreachable: %v", err)
	}
	if strings.Contains(logs.String(), "snowflake time recorded") {
		t.Fatalf("the log says the time was recorded:\n%s", logs.String())
	}
	d, _ := s.Decode(id, "")
	if reg.last.Before(d.Time) {
		t.Fatalf("the registry holds %v, before the last ID's time %v", reg.last, d.Time)
	}
}

// SIGTERM after the registry took the worker ID back but before the node
// noticed (seen in the chaos suite: a registry cut past the lease, then a
// stop): nothing is left to record, the registry's own time stands, and the
// stop is clean, not an exit 1.
func TestService_CloseAfterUnnoticedLoss(t *testing.T) {
	c := newClock()
	reg := &memRegistry{id: 2}
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: time.Hour}, memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatal(err)
	}
	reg.set(func(r *memRegistry) { r.held = false }) // Lost not closed yet
	if err := s.Close(bg); err != nil {
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
func TestService_SaveWithinTick(t *testing.T) {
	c := newClock()
	reg := &budgetRegistry{memRegistry: &memRegistry{id: 2}}
	const every = 50 * time.Millisecond
	s, err := New(bg, Config{Now: c.Now, Sleep: c.Add, PersistEvery: every}, memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	waitFor(t, "saves at run time", func() bool {
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
