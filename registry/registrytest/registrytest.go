// Package registrytest is the conformance suite every worker registry runs
// against its real server: the rules of frond.WorkerRegistry, the local
// record fallback of package cache, and the clock refusal through a
// worker.Issuer.
package registrytest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
	"github.com/frond-id/frond/worker"
)

// Config describes the registry under test and what it promises.
type Config struct {
	// Open opens a client of the registry in namespace ns, a name unique to
	// the test (a key prefix, a ZooKeeper root, a table name): clients of
	// one namespace share their IDs, and nothing else does. With down, the
	// client must point at an address where nothing answers, in the same
	// namespace; opening must still succeed (Acquire fails with
	// frond.ErrStoreUnavailable). The suite closes what it opens.
	Open func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry
	// SameIDOnRestart: a node that stops cleanly and starts again with the
	// same identity gets the same ID.
	SameIDOnRestart bool
	// Recycles: the ID of a node that is gone goes to another node once the
	// other node's clock is past the ID's last time plus RecycleAfter.
	Recycles bool
	// Lose, when set, makes the registry take r's ID back as an expired
	// lease or session would; the registry must close Worker.Lost.
	Lose func(t *testing.T, r frond.WorkerRegistry)
	// Peers: the registry implements frond.PeerClock.
	Peers bool
	// Layout, when set, is the one layout (its fingerprint) the registry
	// serves, whatever its first node's: CosId's machine IDs serve CosId's.
	Layout string
	// Fixed: the ID comes from configuration (the file registry, and static
	// through it), so assignment, exhaustion, recycling and the local record
	// do not apply; the suite runs Restart and ClockBehindRefuses (set
	// SameIDOnRestart). The registry's own tests check that a second process
	// cannot hold the ID.
	Fixed bool
}

// Run runs the suite.
func Run(t *testing.T, c Config) {
	if c.Fixed {
		t.Run("Restart", func(t *testing.T) { testRestart(t, c) })
		t.Run("ClockBehindRefuses", func(t *testing.T) { testClockBehind(t, c) })
		return
	}
	t.Run("DistinctConcurrent", func(t *testing.T) { testDistinct(t, c) })
	t.Run("Exhaustion", func(t *testing.T) { testExhaustion(t, c) })
	t.Run("DatacentersApart", func(t *testing.T) { testDatacenters(t, c) })

	t.Run("RaceForTheLastIDs", func(t *testing.T) {
		ns := Namespace(t)
		RaceForIDs(t, func(port int) frond.WorkerRegistry { return open(t, c, ns, opts(port)) })
	})
	t.Run("Restart", func(t *testing.T) { testRestart(t, c) })
	if c.SameIDOnRestart {
		t.Run("ClockBehindRefuses", func(t *testing.T) { testClockBehind(t, c) })
	}
	if c.Lose != nil {
		t.Run("LeaseLoss", func(t *testing.T) { testLeaseLoss(t, c) })
	}
	if c.Recycles {
		t.Run("Recycle", func(t *testing.T) { testRecycle(t, c) })
	}
	t.Run("DownAtRestartUsesLocalRecord", func(t *testing.T) { testCache(t, c) })
	probe := c.Open(t, Namespace(t), opts(7000), true)
	_, protocol := probe.(*registry.Protocol)
	probe.Close()
	if protocol {
		t.Run("CrashRestartTakesOver", func(t *testing.T) { testTakeOver(t, c) })
		t.Run("NoRecordNoExactTime", func(t *testing.T) { testNoProof(t, c) })
		t.Run("OneLayout", func(t *testing.T) { testLayout(t, c) })
	}
	if c.Peers {
		t.Run("PeerOffsets", func(t *testing.T) { testPeers(t, c) })
	}
}

// Namespace returns a name no earlier run used (real servers keep state),
// made of letters, digits and underscores, at most 40 characters.
func Namespace(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name())
	suffix := fmt.Sprintf("_%x_%03d", time.Now().UnixNano(), rand.IntN(1000))
	if len(name)+len(suffix) > 40 {
		name = name[len(name)-(40-len(suffix)):]
	}
	return strings.ToLower(name + suffix)
}

func opts(port int) registry.Options {
	return registry.Options{Host: "10.1.2.3", Port: port, LeaseTTL: 2 * time.Second}
}

func open(t *testing.T, c Config, ns string, o registry.Options) frond.WorkerRegistry {
	t.Helper()
	r := c.Open(t, ns, o, false)
	t.Cleanup(func() { r.Close() })
	return r
}

// withRecord opens the registry wrapped in the local record kept in dir,
// as frond serve runs every network registry (a Fixed one keeps its own).
func withRecord(t *testing.T, c Config, ns string, o registry.Options, dir string, down bool) frond.WorkerRegistry {
	t.Helper()
	r := c.Open(t, ns, o, down)
	if c.Fixed {
		return r
	}
	o = o.WithDefaults()
	cr, err := cache.New(r, filepath.Join(dir, cache.File), "test "+ns+" as "+o.Identity(), o)
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	return cr
}

func acquire(t *testing.T, r frond.WorkerRegistry, maxNode int64) frond.Worker {
	t.Helper()
	w, err := r.Acquire(testenv.Ctx(t), maxNode)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if w.ID < 0 || w.ID > maxNode {
		t.Fatalf("Acquire gave %d, outside 0..%d", w.ID, maxNode)
	}
	return w
}

func release(t *testing.T, r frond.WorkerRegistry, last time.Time) {
	t.Helper()
	var err error
	if rl, ok := r.(frond.Releaser); ok {
		err = rl.Release(testenv.Ctx(t), last)
	} else {
		err = r.Save(testenv.Ctx(t), last)
	}
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func testDistinct(t *testing.T, c Config) {
	ns := Namespace(t)
	const n = 8
	regs := make([]frond.WorkerRegistry, n)
	for i := range regs {
		regs[i] = open(t, c, ns, opts(7000+i))
	}
	type res struct {
		w   frond.Worker
		err error
	}
	out := make(chan res, n)
	var wg sync.WaitGroup
	for _, r := range regs {
		wg.Go(func() {
			w, err := r.Acquire(testenv.Ctx(t), 1023)
			if err == nil {
				err = r.Save(testenv.Ctx(t), time.Now().Add(time.Second))
			}
			out <- res{w, err}
		})
	}
	wg.Wait()
	close(out)
	seen := map[int64]bool{}
	for r := range out {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if seen[r.w.ID] || r.w.ID < 0 || r.w.ID > 1023 {
			t.Fatalf("ID %d given twice or out of range (%v)", r.w.ID, seen)
		}
		seen[r.w.ID] = true
	}
}

func testExhaustion(t *testing.T, c Config) {
	ns := Namespace(t)
	seen := map[int64]bool{}
	for i := range 3 {
		w := acquire(t, open(t, c, ns, opts(7100+i)), 2)
		if seen[w.ID] {
			t.Fatalf("ID %d given twice", w.ID)
		}
		seen[w.ID] = true
	}
	_, err := open(t, c, ns, opts(7199)).Acquire(testenv.Ctx(t), 2)
	// Not ErrWorkerLost: with every ID live, the node refuses to start.
	if !errors.Is(err, frond.ErrNoWorkerID) || errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("fourth node with IDs 0..2: %v, want ErrNoWorkerID", err)
	}
}

// testDatacenters: nodes of three datacenters share one registry (one
// namespace) with a single worker ID each (maxNode 0): each datacenter's
// worker IDs are its own, so all three hold ID 0, and a second node of a
// datacenter is refused. (Their IDs differ by the layout's datacenter
// bits: the Issuer puts the datacenter above the worker ID.)
func testDatacenters(t *testing.T, c Config) {
	ns := Namespace(t)
	for dc := range int64(3) {
		o := opts(7300 + int(dc))
		o.Datacenter = dc
		if w := acquire(t, open(t, c, ns, o), 0); w.ID != 0 {
			t.Fatalf("datacenter %d: ID %d", dc, w.ID)
		}
	}
	o := opts(7310)
	o.Datacenter = 1
	_, err := open(t, c, ns, o).Acquire(testenv.Ctx(t), 0)
	if !errors.Is(err, frond.ErrNoWorkerID) || errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("a second node of datacenter 1 with one worker ID: %v, want ErrNoWorkerID", err)
	}
}

// testLayout (registries of the protocol, which keep records): the first node records its snowflake layout in the registry,
// for every datacenter; a node of another layout is refused with both
// named, in any datacenter, while nodes of the same layout are served.
func testLayout(t *testing.T, c Config) {
	if c.Layout != "" {
		testFixedLayout(t, c)
		return
	}
	ns := Namespace(t)
	twitter, split := "1+41+10+12 bits of 1ms from 2010-11-04T01:42:54.657Z, 0 datacenter bits", "1+41+10+12 bits of 1ms from 2010-11-04T01:42:54.657Z, 5 datacenter bits"
	o := opts(7401)
	o.Layout = split
	acquire(t, open(t, c, ns, o), 31)
	o = opts(7402)
	o.Layout, o.Datacenter = split, 1
	acquire(t, open(t, c, ns, o), 31)
	for dc := range int64(2) {
		o := opts(7403 + int(dc))
		o.Layout, o.Datacenter = twitter, dc
		_, err := open(t, c, ns, o).Acquire(testenv.Ctx(t), 31)
		if !errors.Is(err, registry.ErrLayoutMismatch) || !strings.Contains(err.Error(), twitter) || !strings.Contains(err.Error(), split) {
			t.Fatalf("datacenter %d, another layout: %v, want ErrLayoutMismatch naming both", dc, err)
		}
	}
}

// testFixedLayout: a registry of one layout serves nodes of that layout and
// refuses any other, naming both.
func testFixedLayout(t *testing.T, c Config) {
	ns := Namespace(t)
	o := opts(7401)
	o.Layout = c.Layout
	acquire(t, open(t, c, ns, o), 31)
	twitter := "1+41+10+12 bits of 1ms from 2010-11-04T01:42:54.657Z, 0 datacenter bits"
	o = opts(7402)
	o.Layout = twitter
	_, err := open(t, c, ns, o).Acquire(testenv.Ctx(t), 31)
	if !errors.Is(err, registry.ErrLayoutMismatch) || !strings.Contains(err.Error(), twitter) || !strings.Contains(err.Error(), c.Layout) {
		t.Fatalf("another layout: %v, want ErrLayoutMismatch naming both", err)
	}
}

// RaceMaxNode is the largest worker ID RaceForIDs asks for: a 5-bit
// worker field, as UidGenerator's and seed 001's, which wrap at 32.
const RaceMaxNode = 31

// RaceForIDs has 33 nodes (each a registry open returns for its port) race
// for the 32 worker IDs 0..RaceMaxNode: 32 must get distinct IDs within the
// layout and the last must be refused with frond.ErrNoWorkerID, never given
// a wrapped or out-of-range ID. A node told to retry retries, as at start.
func RaceForIDs(t *testing.T, open func(port int) frond.WorkerRegistry) {
	t.Helper()
	const nodes = RaceMaxNode + 2
	type res struct {
		id  int64
		err error
	}
	out := make(chan res, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		r := open(9000 + i)
		wg.Go(func() {
			// As a node at start does (worker.New, then its supervisor):
			// an answer that waiting may change (store unavailable: other
			// nodes kept taking the IDs it chose; worker lost: one is held
			// for now) is asked again; only a refusal or an ID counts.
			for try := 0; ; try++ {
				w, err := r.Acquire(testenv.Ctx(t), RaceMaxNode)
				if try < 100 && (errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrWorkerLost)) {
					time.Sleep(time.Duration(try+1) * time.Millisecond)
					continue
				}
				out <- res{w.ID, err}
				return
			}
		})
	}
	wg.Wait()
	close(out)
	seen := map[int64]bool{}
	refused := 0
	for r := range out {
		switch {
		case errors.Is(r.err, frond.ErrNoWorkerID):
			refused++
		case r.err != nil:
			t.Fatal(r.err)
		case r.id < 0 || r.id > RaceMaxNode || seen[r.id]:
			t.Fatalf("ID %d given twice or outside 0..%d", r.id, RaceMaxNode)
		default:
			seen[r.id] = true
		}
	}
	if len(seen) != RaceMaxNode+1 || refused != 1 {
		t.Fatalf("%d IDs given, %d nodes refused; want %d and 1", len(seen), refused, RaceMaxNode+1)
	}
}

// testRestart: a clean stop and a start on the same data directory (the
// local record) give the same ID (SameIDOnRestart), never below its time.
func testRestart(t *testing.T, c Config) {
	ns := Namespace(t)
	dir := t.TempDir()
	r := withRecord(t, c, ns, opts(7200), dir, false)
	w := acquire(t, r, 1023)
	last := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	if err := r.Save(testenv.Ctx(t), last.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	release(t, r, last)
	r2 := withRecord(t, c, ns, opts(7200), dir, false)
	defer r2.Close()
	w2 := acquire(t, r2, 1023)
	if c.SameIDOnRestart && w2.ID != w.ID {
		t.Fatalf("restart got ID %d, had %d", w2.ID, w.ID)
	}
	if w2.ID == w.ID && w2.LastIssued.Before(last) {
		t.Fatalf("restart with ID %d: LastIssued %v, recorded %v", w.ID, w2.LastIssued, last)
	}
}

// testClockBehind runs an Issuer: a node issues, stops, and starts again
// with its clock an hour back: snowflake IDs are refused, saying by how
// much.
func testClockBehind(t *testing.T, c Config) {
	ns := Namespace(t)
	clk := testclock.New(time.Now())
	dir := t.TempDir()
	newIssuer := func() *worker.Issuer {
		o := opts(7300)
		o.Now = func() time.Time { return time.Unix(0, clk.Now()) }
		w, err := worker.New(testenv.Ctx(t), withRecord(t, c, ns, o, dir, false), worker.Settings{Now: clk.Now, Sleep: clk.Add, PersistEvery: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := newIssuer()
	if _, err := w.Next(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(testenv.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	clk.Add(-time.Hour)
	w = newIssuer()
	defer w.Close(testenv.Ctx(t))
	_, err := w.Next()
	var cbe *worker.ClockBehindError
	if !errors.As(err, &cbe) || cbe.Behind < time.Hour-time.Second {
		t.Fatalf("Next with the clock an hour back: %v", err)
	}
}

func testLeaseLoss(t *testing.T, c Config) {
	ns := Namespace(t)
	r := open(t, c, ns, opts(7400))
	w := acquire(t, r, 1023)
	if w.Lost == nil {
		t.Fatal("Worker.Lost is nil: a leased ID must say when it is lost")
	}
	c.Lose(t, r)
	select {
	case <-w.Lost:
	case <-time.After(30 * time.Second):
		t.Fatal("Lost not closed 30 s after the registry took the ID back")
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("Save after the loss: %v, want ErrWorkerLost", err)
	}
	w2 := acquire(t, r, 1023)
	if err := r.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatalf("Save after acquiring again: %v", err)
	}
	select {
	case <-w2.Lost:
		t.Fatal("the new hold is already lost")
	default:
	}
}

func testRecycle(t *testing.T, c Config) {
	ns := Namespace(t)
	base := time.Now()
	a := c.Open(t, ns, opts(7500), false)
	w := acquire(t, a, 0)
	last := base.Add(time.Second).Truncate(time.Millisecond)
	release(t, a, last)

	clk := testclock.New(base)
	o := opts(7501)
	o.RecycleAfter = time.Minute
	o.Now = func() time.Time { return time.Unix(0, clk.Now()) }
	b := open(t, c, ns, o)
	clk.Add(30 * time.Second) // before last + RecycleAfter
	// ErrNoWorkerID, and ErrWorkerLost: waiting fixes it, so the service
	// retries rather than refusing to start; not ErrStoreUnavailable: the
	// registry answered, and a local record must not stand in for it.
	if _, err := b.Acquire(testenv.Ctx(t), 0); !errors.Is(err, frond.ErrNoWorkerID) || !errors.Is(err, frond.ErrWorkerLost) || errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("ID taken before last + RecycleAfter: %v", err)
	}
	clk.Add(time.Minute)
	w2 := acquire(t, b, 0)
	// From last + RecycleAfter: the old holder's local record may vouch
	// for times up to just before it.
	if from := last.Add(o.RecycleAfter); w2.ID != w.ID || w2.LastIssued.Before(from) {
		t.Fatalf("recycled %+v, want ID %d with LastIssued >= %v", w2, w.ID, from)
	}

	// The new holder stops before its first save (a crash; Close here
	// drops the hold without recording a time). The registry must already
	// hold the time the new holder was told, last + RecycleAfter: from
	// the old time, a third node could take the ID while the new holder,
	// restarting from its local record (which vouches up to that time +
	// RecycleAfter), still issues.
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	o3 := opts(7502)
	o3.RecycleAfter, o3.Now = o.RecycleAfter, o.Now
	c3 := open(t, c, ns, o3)
	clk.Add(o.RecycleAfter / 2) // past last + RecycleAfter, before last + 2 × RecycleAfter
	if w3, err := c3.Acquire(testenv.Ctx(t), 0); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("third node at %v: %+v, %v; want the ID refused until %v (the recycled time + RecycleAfter)",
			time.Unix(0, clk.Now()).Sub(last), w3, err, last.Add(2*o.RecycleAfter))
	}
}

func testCache(t *testing.T, c Config) {
	ns := Namespace(t)
	dir := t.TempDir()
	o := opts(7600).WithDefaults()
	o.RecycleAfter = time.Hour
	path := filepath.Join(dir, cache.File)
	up, err := cache.New(c.Open(t, ns, o, false), path, "test "+ns, o)
	if err != nil {
		t.Fatal(err)
	}
	w := acquire(t, up, 1023)
	if w.FromCache {
		t.Fatal("FromCache with the registry up")
	}
	last := time.Now().Add(time.Second)
	if err := up.Save(testenv.Ctx(t), last); err != nil {
		t.Fatal(err)
	}
	// A crash: no release (the lease lapses); the registry is then down.
	if err := up.Close(); err != nil {
		t.Fatal(err)
	}
	down, err := cache.New(c.Open(t, ns, o, true), path, "test "+ns, o)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	w2 := acquire(t, down, 1023)
	if !w2.FromCache || w2.ID != w.ID || w2.LastIssued.Before(last) {
		t.Fatalf("registry down: %+v, want ID %d from the local record with LastIssued >= %v", w2, w.ID, last)
	}
	if err := down.Save(testenv.Ctx(t), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("Save within RecycleAfter of the confirmed time: %v", err)
	}
	if err := down.Save(testenv.Ctx(t), last.Add(2*time.Hour)); err == nil {
		t.Fatal("Save past the confirmed time + RecycleAfter succeeded with the registry down")
	}
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	// A different key (another registry or identity) must not use the record.
	other, err := cache.New(c.Open(t, ns, o, true), path, "other "+ns, o)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if w3, err := other.Acquire(testenv.Ctx(t), 1023); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("another registry's record used: %+v, %v", w3, err)
	}
}

func testPeers(t *testing.T, c Config) {
	ns := Namespace(t)
	a := open(t, c, ns, opts(7700))
	ob := opts(7701)
	ob.Now = func() time.Time { return time.Now().Add(30 * time.Second) }
	b := open(t, c, ns, ob)
	acquire(t, a, 1023)
	acquire(t, b, 1023)
	if err := a.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(testenv.Ctx(t), ob.Now()); err != nil {
		t.Fatal(err)
	}
	pa, pb := a.(frond.PeerClock), b.(frond.PeerClock)
	offA, err := pa.PeerOffsets(testenv.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	offB, err := pb.PeerOffsets(testenv.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(offA) != 1 || (offA[0].Offset-30*time.Second).Abs() > 3*time.Second {
		t.Fatalf("a sees %+v, want one peer about 30 s ahead", offA)
	}
	if len(offB) != 1 || (offB[0].Offset+30*time.Second).Abs() > 3*time.Second {
		t.Fatalf("b sees %+v, want one peer about 30 s behind", offB)
	}
}

// testTakeOver: a process killed while it holds its ID (its claim's lease
// still running) restarts on its data directory: the local record's lock
// proves the old run has ended, so it takes the same ID back at once
// (registries that give a restart its ID), not when the lease runs out,
// from no earlier than what it saved.
func testTakeOver(t *testing.T, c Config) {
	ns := Namespace(t)
	dir := t.TempDir()
	o := opts(7800)
	o.LeaseTTL = 20 * time.Second // far longer than the restart may take
	r := withRecord(t, c, ns, o, dir, false)
	w := acquire(t, r, 1023)
	last := time.Now().Add(2 * time.Second)
	if err := r.Save(testenv.Ctx(t), last); err != nil {
		t.Fatal(err)
	}
	kill(t, r)
	start := time.Now()
	r2 := withRecord(t, c, ns, o, dir, false)
	defer r2.Close()
	w2 := acquire(t, r2, 1023)
	took := time.Since(start)
	if c.SameIDOnRestart && w2.ID != w.ID || w2.ID == w.ID && w2.LastIssued.Before(last) || took > 5*time.Second {
		t.Fatalf("restart after kill -9: %+v in %v; want ID %d (same ID on restart %v) from >= %v at once (the lease runs 20 s)",
			w2, took, w.ID, c.SameIDOnRestart, last)
	}
	if err := r2.Save(testenv.Ctx(t), last.Add(time.Second)); err != nil {
		t.Fatalf("Save after the takeover: %v", err)
	}
	// Another process of the same identity, without the record, waits or
	// takes another ID: never the taken-over one.
	other := open(t, c, ns, o)
	if w3, err := other.Acquire(testenv.Ctx(t), 1023); err == nil && w3.ID == w.ID {
		t.Fatalf("a second process of the identity got the held ID %d", w3.ID)
	}
}

// kill stops a registry wrapped with the local record as kill -9 would:
// the claim stands, the record's lock goes.
func kill(t *testing.T, r frond.WorkerRegistry) {
	t.Helper()
	cr := r.(*cache.Registry)
	if err := cr.Inner().(*registry.Protocol).Abandon(); err != nil {
		t.Fatal(err)
	}
	if err := cr.Close(); err != nil {
		t.Fatal(err)
	}
}

// testNoProof: the time a registry holds is exact only for the process
// whose record names the last claim. A process of the same identity on a
// fresh data directory (a second process, a pod without its volume) gets
// another ID, or this one from last + RecycleAfter: the first process may
// have issued past what it saved, from its local record.
func testNoProof(t *testing.T, c Config) {
	ns := Namespace(t)
	o := opts(7900)
	o.RecycleAfter = time.Hour
	a := withRecord(t, c, ns, o, t.TempDir(), false)
	w := acquire(t, a, 1023)
	last := time.Now().Add(-time.Second)
	release(t, a, last)
	b := withRecord(t, c, ns, o, t.TempDir(), false)
	defer b.Close()
	w2, err := b.Acquire(testenv.Ctx(t), 1023)
	if !c.Recycles && errors.Is(err, frond.ErrWorkerLost) {
		return // a registry that keeps IDs for their identities waits for it
	}
	if err != nil {
		t.Fatal(err)
	}
	if w2.ID == w.ID && w2.LastIssued.Before(last.Add(o.RecycleAfter)) {
		t.Fatalf("same identity, fresh data directory: ID %d from %v; want another ID, or from %v", w2.ID, w2.LastIssued, last.Add(o.RecycleAfter))
	}
}
