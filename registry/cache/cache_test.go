package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/registry"
)

var bg = context.Background()

// fake is a registry that can be down.
type fake struct {
	id   int64
	last time.Time
	down bool
}

var errDown = fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable)

func (f *fake) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	if f.down {
		return frond.Worker{}, errDown
	}
	return frond.Worker{ID: f.id, LastIssued: f.last}, nil
}

func (f *fake) Save(ctx context.Context, last time.Time) error {
	if f.down {
		return errDown
	}
	f.last = last
	return nil
}

func (f *fake) Close() error { return nil }

// setup makes a fake registry, a clock and a function that starts a node
// on one data directory; wrap, if given, wraps the fake first.
func setup(t *testing.T, wrap ...func(*fake) frond.WorkerRegistry) (*fake, *testclock.Clock, func() *Registry) {
	clk := testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), File)
	f := &fake{id: 9}
	o := registry.Options{RecycleAfter: time.Minute, Now: func() time.Time { return time.Unix(0, clk.Now()) }}
	var prev *Registry
	t.Cleanup(func() { prev.Close() })
	// open starts the node again: the previous run ends (as a process
	// would, even one that crashed) and releases the data directory.
	return f, clk, func() *Registry {
		if prev != nil {
			prev.lock.Unlock()
		}
		var inner frond.WorkerRegistry = f
		for _, w := range wrap {
			inner = w(f)
		}
		r, err := New(inner, path, "etcd://x as 10.0.0.1:8080", o)
		if err != nil {
			t.Fatal(err)
		}
		prev = r
		return r
	}
}

// A registry outage at run time, the ID held there: with a registry that
// may give the ID back to a process of the same identity from its recorded
// time once the lease ran out (not a Resumer), the record carries the node
// up to the confirmed time + LeaseTTL, and /readyz (Warnings) says so.
func TestRegistry_OutageAtRunTime(t *testing.T) {
	f, clk, open := setup(t)
	r := open()
	now := time.Unix(0, clk.Now())
	if _, err := r.Acquire(bg, 1023); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(bg, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	f.down = true
	if err := r.Save(bg, now.Add(2*time.Second+registry.DefaultLeaseTTL-time.Millisecond)); err != nil {
		t.Fatalf("Save within the bound with the registry down: %v", err)
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "local record") || !strings.Contains(w[0], "12:00:12Z") {
		t.Fatalf("Warnings = %q", w)
	}
	err := r.Save(bg, now.Add(2*time.Second+registry.DefaultLeaseTTL))
	if !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "lease_ttl") {
		t.Fatalf("Save at confirmed + lease_ttl: %v", err)
	}
	// Back up: the registry learns the time the node issued up to.
	f.down = false
	if err := r.Save(bg, now.Add(40*time.Second)); err != nil || !f.last.Equal(now.Add(40*time.Second)) {
		t.Fatalf("Save after the outage: %v, registry holds %v", err, f.last)
	}
	if w := r.Warnings(); len(w) != 0 {
		t.Fatalf("Warnings after the outage = %q", w)
	}
}

// The registry answers with an older time than the node used from its
// record: the later time wins.
func TestRegistry_RecordAheadOfRegistry(t *testing.T) {
	f, clk, open := setup(t)
	now := time.Unix(0, clk.Now())
	r := open()
	r.Acquire(bg, 1023)
	r.Save(bg, now)
	f.down = true
	r.Close()

	r = open()
	w, err := r.Acquire(bg, 1023)
	if err != nil || !w.FromCache || w.ID != 9 {
		t.Fatalf("Acquire with the registry down: %+v, %v", w, err)
	}
	if err := r.Save(bg, now.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(bg, now.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	f.down = false
	r = open()
	w, err = r.Acquire(bg, 1023)
	if err != nil || w.FromCache || !w.LastIssued.Equal(now.Add(10*time.Second)) {
		t.Fatalf("Acquire after the outage: %+v, %v; want LastIssued %v from the record", w, err, now.Add(10*time.Second))
	}
}

// The record is not used when it is too old, damaged, for another ID
// space, or for another registry.
func TestRegistry_RecordNotUsable(t *testing.T) {
	f, clk, open := setup(t)
	r := open()
	r.Acquire(bg, 1023)
	r.Save(bg, time.Unix(0, clk.Now()))
	f.down = true

	if _, err := open().Acquire(bg, 5); !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "outside 0..5") {
		t.Fatalf("worker 9 with 0..5: %v", err)
	}
	clk.Add(time.Minute)
	if _, err := open().Acquire(bg, 1023); !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "recycle_after") {
		t.Fatalf("a record older than RecycleAfter: %v", err)
	}
	os.WriteFile(r.path, []byte("{not json"), 0o644)
	if _, err := open().Acquire(bg, 1023); !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "no local record") {
		t.Fatalf("a damaged record: %v", err)
	}
	f.down = false
	if _, err := open().Acquire(bg, 1023); err != nil {
		t.Fatalf("a damaged record with the registry up: %v", err)
	}
}

// A clean stop records an exact time lower than the reservations the
// registry confirmed before; the registry may recycle the ID from that time
// + RecycleAfter, so the record must vouch only up to it too.
func TestRegistry_ReleaseConfirmsTheExactTime(t *testing.T) {
	f, clk, open := setup(t)
	now := time.Unix(0, clk.Now())
	r := open()
	if _, err := r.Acquire(bg, 1023); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(bg, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Release(bg, now); err != nil {
		t.Fatal(err)
	}
	f.down = true
	r = open()
	if w, err := r.Acquire(bg, 1023); err != nil || !w.FromCache || !w.LastIssued.Equal(now) {
		t.Fatalf("Acquire from the record: %+v, %v", w, err)
	}
	if err := r.Save(bg, now.Add(time.Minute-time.Millisecond)); err != nil {
		t.Fatalf("Save up to the released time + RecycleAfter: %v", err)
	}
	if err := r.Save(bg, now.Add(time.Minute)); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("Save past the released time + RecycleAfter: %v; the registry may have given the ID away", err)
	}
}

// Two processes on one data directory would share the record: the second
// is refused while the first runs, and starts once it has stopped.
func TestRegistry_DataDirLocked(t *testing.T) {
	f, _, open := setup(t)
	r := open()
	if _, err := New(f, r.path, "etcd://x as 10.0.0.2:8080", registry.Options{}); !errors.Is(err, frond.ErrNoWorkerID) || !strings.Contains(err.Error(), LockFile) {
		t.Fatalf("a second process on the data directory: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, err := New(f, r.path, "etcd://x as 10.0.0.2:8080", registry.Options{})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	r2.Close()
}

// heldFake answers that the ID is held by another process.
type heldFake struct{ fake }

func (f *heldFake) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	return frond.Worker{}, registry.HeldElsewhere("worker ID 9 of 10.0.0.1:8080")
}

// The registry answered that another process holds this identity's ID (a
// second machine configured with the same host:port): the record must not
// stand in for it, or both would issue with the ID.
func TestRegistry_HeldElsewhereIsNotAnOutage(t *testing.T) {
	_, clk, open := setup(t)
	r := open()
	r.Acquire(bg, 1023)
	r.Save(bg, time.Unix(0, clk.Now()))
	r.Close()
	h := &heldFake{}
	r, err := New(h, r.path, "etcd://x as 10.0.0.1:8080", r.o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := r.Acquire(bg, 1023)
	if !errors.Is(err, frond.ErrWorkerLost) || errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("Acquire while held elsewhere: %+v, %v; want ErrWorkerLost and no record", w, err)
	}
}

// A worker ID the registry gave with no time (never used) and whose first
// Save fails: nothing may be issued, and Warnings says so instead of
// "issuing from the local record, up to 1970-01-01T00:00:10Z".
func TestRegistry_FreshIDFirstSaveFails(t *testing.T) {
	f, clk, open := setup(t)
	r := open()
	if _, err := r.Acquire(bg, 1023); err != nil {
		t.Fatal(err)
	}
	f.down = true
	if err := r.Save(bg, time.Unix(0, clk.Now()).Add(2*time.Second)); err == nil {
		t.Fatal("Save succeeded with nothing confirmed and the registry down")
	}
	w := strings.Join(r.Warnings(), "; ")
	if !strings.Contains(w, "has not yet recorded any time for worker ID 9") || strings.Contains(w, "1970") {
		t.Fatalf("Warnings: %s", w)
	}
}

// resuming is a registry that follows registry.Protocol's rule: without the
// record's proof, an ID goes to anyone only from last + RecycleAfter.
type resuming struct{ *fake }

func (resuming) Resume(string, int64) {}

// With such a registry, an outage at run time is ridden out up to the
// confirmed time + RecycleAfter, as from the record after a restart.
func TestRegistry_OutageAtRunTimeProtocol(t *testing.T) {
	f, clk, open := setup(t, func(f *fake) frond.WorkerRegistry { return resuming{f} })
	r := open()
	now := time.Unix(0, clk.Now())
	if _, err := r.Acquire(bg, 1023); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(bg, now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	f.down = true
	if err := r.Save(bg, now.Add(2*time.Second+time.Minute-time.Millisecond)); err != nil {
		t.Fatalf("Save within confirmed + recycle_after with the registry down: %v", err)
	}
	if err := r.Save(bg, now.Add(2*time.Second+time.Minute)); !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "recycle_after") {
		t.Fatalf("Save at confirmed + recycle_after: %v", err)
	}
}

// badDisk fails the record's writes, and its removals with readOnly.
type badDisk struct{ readOnly bool }

func (badDisk) Write(string, []byte) error { return errors.New("no space left on device") }

func (d badDisk) Remove(path string) error {
	if d.readOnly {
		return errors.New("read-only file system")
	}
	return os.Remove(path)
}

// The registry confirms a reservation the record cannot hold (its write
// fails): the record on disk would let a restart with the registry down
// issue from the older time it holds, the times this run already issued.
// So the record is removed (no fallback); when even that fails, the
// reservation is refused, and the node never issues past what the record
// holds.
func TestRegistry_RecordCannotFollowTheRegistry(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("readOnly=", readOnly), func(t *testing.T) {
			f, clk, open := setup(t)
			now := time.Unix(0, clk.Now())
			r := open()
			if _, err := r.Acquire(bg, 1023); err != nil {
				t.Fatal(err)
			}
			if err := r.Save(bg, now.Add(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			r.SetDisk(badDisk{readOnly})
			err := r.Save(bg, now.Add(4*time.Second))
			if readOnly != (err != nil) {
				t.Fatalf("Save with the record unwritable (read-only %v): %v", readOnly, err)
			}
			issuedTo := now.Add(2 * time.Second)
			if err == nil {
				issuedTo = now.Add(4 * time.Second) // the reservation is in use
			}
			f.down = true
			w, err := open().Acquire(bg, 1023)
			if err == nil && w.LastIssued.Before(issuedTo) {
				t.Fatalf("restarted from the record with the registry down: issues after %v, but the run before may have issued up to %v",
					w.LastIssued, issuedTo)
			}
		})
	}
}

// slowSave is a registry whose calls are serialised (as registry.Protocol's
// are) and whose first Save after arm waits for proceed: a supervisor's save
// in flight when the clean stop's release is sent.
type slowSave struct {
	*fake
	mu        sync.Mutex
	armed     bool
	inSave    chan struct{}
	proceed   chan struct{}
	releasing chan struct{}
}

func (s *slowSave) Save(ctx context.Context, last time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed {
		s.armed = false
		close(s.inSave)
		<-s.proceed
	}
	return s.fake.Save(ctx, last)
}

func (s *slowSave) Release(ctx context.Context, last time.Time) error {
	close(s.releasing)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fake.last = last // exact
	return nil
}

// A save the registry answers after the clean stop's release has lowered
// the record (the supervisor did not stop within the shutdown budget) must
// not raise the record again: the release then lowers the registry to the
// exact time, and a record confirming the later save would vouch past it
// (found by review of issue 28's change).
func TestRegistry_SaveCrossingRelease(t *testing.T) {
	var s *slowSave
	f, clk, open := setup(t, func(f *fake) frond.WorkerRegistry {
		s = &slowSave{fake: f, inSave: make(chan struct{}), proceed: make(chan struct{}), releasing: make(chan struct{})}
		return s
	})
	now := time.Unix(0, clk.Now())
	r := open()
	if _, err := r.Acquire(bg, 1023); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(bg, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.armed = true
	s.mu.Unlock()
	saved := make(chan error, 1)
	go func() { saved <- r.Save(bg, now.Add(5*time.Second)) }()
	<-s.inSave
	released := make(chan error, 1)
	go func() { released <- r.Release(bg, now) }()
	<-s.releasing
	close(s.proceed)
	if err := <-saved; err == nil {
		t.Error("the save that crossed the release was accepted")
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if !f.last.Equal(now) {
		t.Fatalf("registry holds %v, want the exact %v", f.last, now)
	}
	b, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ConfNanos > now.UnixNano() || rec.LastNanos != now.UnixNano() {
		t.Fatalf("record confirmed %v, last %v; the registry holds %v", time.Unix(0, rec.ConfNanos).UTC(), time.Unix(0, rec.LastNanos).UTC(), now.UTC())
	}
}
