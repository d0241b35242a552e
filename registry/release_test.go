package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// flakyBackend is an in-memory backend that can be cut off (every call
// fails before it applies) and can lose the answer of an exact write (a
// clean stop's release that the server applied).
type flakyBackend struct {
	*registry.MemoryBackend
	down      atomic.Bool
	loseExact atomic.Bool
}

func (f *flakyBackend) Prepare(ctx context.Context) error {
	if f.down.Load() {
		return errModelDown
	}
	return f.MemoryBackend.Prepare(ctx)
}

func (f *flakyBackend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	if f.down.Load() {
		return nil, errModelDown
	}
	return f.MemoryBackend.Own(ctx, maxNode)
}

func (f *flakyBackend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	if f.down.Load() {
		return 0, false, errModelDown
	}
	return f.MemoryBackend.New(ctx, maxNode, h)
}

func (f *flakyBackend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	if f.down.Load() {
		return nil, errModelDown
	}
	return f.MemoryBackend.Idle(ctx, maxNode)
}

func (f *flakyBackend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	if f.down.Load() {
		return errModelDown
	}
	return f.MemoryBackend.Claim(ctx, s, floor, h)
}

func (f *flakyBackend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	if f.down.Load() {
		return false, errModelDown
	}
	ok, err := f.MemoryBackend.Write(ctx, h, ns, exact)
	if exact && f.loseExact.Load() {
		return false, errModelDown // applied; the answer is lost
	}
	return ok, err
}

// releaseRig runs nodes as frond serve does (a Service over the local
// record over the protocol) on one in-memory registry of a single worker
// ID, so that every ID has been handed out, with a manual clock.
type releaseRig struct {
	t     *testing.T
	clock *testclock.Clock
	srv   *registry.MemoryServer
}

var oneWorker = snowflake.Layout{Name: "one worker", Unit: time.Millisecond, TimeBits: 41, NodeBits: 0, SeqBits: 12, Epoch: snowflake.TwitterEpoch}

func newReleaseRig(t *testing.T) *releaseRig {
	c := testclock.New(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	srv := registry.NewMemoryServer()
	srv.Now = func() time.Time { return time.Unix(0, c.Now()) }
	return &releaseRig{t: t, clock: c, srv: srv}
}

// node starts a node of identity port on data directory dir; the record's
// writes go through write when it is set.
func (g *releaseRig) node(port int, dir string, fb **flakyBackend, disk cache.Disk) *worker.Issuer {
	t := g.t
	o := registry.Options{Host: "10.0.0.1", Port: port, RecycleAfter: 10 * time.Minute, LeaseTTL: time.Hour, // leases are not renewed here
		Now: func() time.Time { return time.Unix(0, g.clock.Now()) }}.WithDefaults()
	b := &flakyBackend{MemoryBackend: &registry.MemoryBackend{S: g.srv, Identity: o.Identity(), TTL: o.LeaseTTL,
		Pol: registry.Policy{OwnFirst: true, Recycle: true}}}
	if fb != nil {
		if *fb != nil {
			b.down.Store((*fb).down.Load())
		}
		*fb = b
	}
	reg, err := cache.New(registry.NewProtocol(b, o), filepath.Join(dir, cache.File), "test "+o.Identity(), o)
	if err != nil {
		t.Fatal(err)
	}
	if disk != nil {
		reg.SetDisk(disk)
	}
	s, err := worker.New(context.Background(), reg, worker.Settings{Now: g.clock.Now, Sleep: g.clock.Add, Layout: oneWorker,
		PersistEvery: 5 * time.Millisecond, MaxLead: time.Minute, RetryEvery: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// idle moves the clock on by d while the node issues nothing: its
// reservations follow the clock (the supervisor's), its last ID stays.
func (g *releaseRig) idle(id int64, d time.Duration) {
	for end := g.clock.Now() + int64(d); g.clock.Now() < end; {
		g.clock.Add(20 * time.Second)
		want := g.clock.Now() + int64(time.Minute)
		for deadline := time.Now().Add(10 * time.Second); g.srv.Last(id) < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				g.t.Fatalf("no reservation past %v recorded (registry: %v)", time.Unix(0, want), g.srv)
			}
		}
	}
}

// assertAlone checks that a, restarted from its record while the registry
// is unreachable to it, issues no ID at the tick b issues at.
func (g *releaseRig) assertAlone(a, b *worker.Issuer) {
	t := g.t
	idB, err := b.Next()
	if err != nil {
		t.Fatalf("B, holding the recycled worker ID: %v", err)
	}
	if idA, err := a.Next(); err == nil {
		t.Fatalf("A, restarted from its local record with the registry unreachable, issued %d while B holds the worker ID and issued %d (worker %d and %d)",
			idA, idB, a.Info().ID, b.Info().ID)
	} else if !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("A: %v, want ErrWorkerLost (its record no longer vouches for the ID)", err)
	}
}

// An idle node stops cleanly: its exact last time L, well before its last
// reservation H, is applied by the registry but the answer is lost. The ID
// goes to B from L + recycle_after; A restarts on its data directory with
// the registry unreachable. Its record must not let it issue from H: it
// vouched for H while the registry held L (issue 28, item 1).
func TestRelease_AppliedAnswerLost(t *testing.T) {
	g := newReleaseRig(t)
	dir := t.TempDir()
	var fa *flakyBackend
	a := g.node(1, dir, &fa, nil)
	if _, err := a.Next(); err != nil {
		t.Fatal(err)
	}
	g.idle(0, 5*time.Minute)
	fa.loseExact.Store(true)
	a.Close(context.Background())
	L := g.srv.Last(0)
	g.clock.Add(5*time.Minute + 5*time.Second)

	b := g.node(2, t.TempDir(), nil, nil)
	if b.Info().ID != 0 {
		t.Fatalf("B holds %d; the only worker ID, 0, should have been recycled (registry: %v)", b.Info().ID, g.srv)
	}
	fa.down.Store(true)
	a2 := g.node(1, dir, &fa, nil)
	g.assertAlone(a2, b)
	if got := g.srv.Last(0); got < L {
		t.Fatalf("registry time %d went back from %d", got, L)
	}
}

// faultyDisk is the record's disk, whose writes and removals can fail (a
// full disk fails writes; a read-only one both).
type faultyDisk struct{ failWrite, failRemove atomic.Bool }

var errDiskFull = errors.New("no space left on device")

func (d *faultyDisk) Write(path string, b []byte) error {
	if d.failWrite.Load() {
		return errDiskFull
	}
	return cache.OSDisk{}.Write(path, b)
}

func (d *faultyDisk) Remove(path string) error {
	if d.failRemove.Load() {
		return errors.New("read-only file system")
	}
	return cache.OSDisk{}.Remove(path)
}

// The same with the record's write failing at the clean stop (a full or
// read-only disk; or a kill between the release and the write, which leaves
// what a failed write leaves): the exact release must not reach the
// registry while the record still vouches past it.
func TestRelease_RecordWriteFails(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "DiskFull", true: "ReadOnly"}[readOnly], func(t *testing.T) {
			g := newReleaseRig(t)
			dir := t.TempDir()
			disk := &faultyDisk{}
			var fa *flakyBackend
			a := g.node(1, dir, &fa, disk)
			if _, err := a.Next(); err != nil {
				t.Fatal(err)
			}
			g.idle(0, 5*time.Minute)
			H := g.srv.Last(0)
			disk.failWrite.Store(true)
			disk.failRemove.Store(readOnly)
			err := a.Close(context.Background())
			if readOnly != errors.Is(err, cache.ErrNotReleased) {
				t.Fatalf("Close: %v", err)
			}
			if readOnly && g.srv.Last(0) != H {
				t.Fatalf("the registry holds %d, not the last reservation %d: an exact release was sent", g.srv.Last(0), H)
			}
			g.clock.Add(5*time.Minute + 5*time.Second)

			b := g.node(2, t.TempDir(), nil, nil)
			fa.down.Store(true)
			a2 := g.node(1, dir, &fa, nil)
			switch {
			case b.Info().ID == 0:
				g.assertAlone(a2, b)
			case readOnly:
				// The reservation stood: B waits for it; A runs from its
				// record.
				if _, err := a2.Next(); err != nil {
					t.Fatalf("A from its record, the only holder: %v", err)
				}
			default:
				t.Fatalf("B holds %d: the release was sent, the ID should be B's (registry %v)", b.Info().ID, g.srv)
			}
		})
	}
}
