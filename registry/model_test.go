package registry_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
)

// The model test of the worker-ID protocol (registry.Protocol) with the
// local record (package cache) over the in-memory backend: nodes follow the
// service's rules while faults strike at every step, and every tick a node
// issues with a worker ID is recorded; a tick issued twice with one ID (two
// equal snowflake IDs) fails the test with the trace that led to it.
//
// A node's rules, as the service keeps them: it issues at its clock's tick
// only while it believes it holds an ID, past the ID's LastIssued and the
// last tick of its process, and no further than the reservation its
// registry accepted (Save, before issuing). It notices a lost claim only
// when its renewal runs (every TTL/3 of the time it is scheduled, before or
// after it issues: goroutines), and loses the ID when no renewal was
// confirmed for TTL since it was sent. Running from its local record, it
// goes back to the registry whenever it runs.
//
// Faults: a backend call that fails before it applies or applies and then
// fails (a timeout after the server acted; a renewal whose answer is lost),
// a node cut from the backend (its local record carries it), a node paused
// (SIGSTOP) up to twice RecycleAfter, kill -9 and a restart (on its data
// directory, taking over its own claim; as a new identity on a fresh one;
// or with a live node's identity on a fresh one, a configuration mistake),
// a clean stop (whose exact release may apply with its answer lost), clock
// steps of up to 3 s either way, a data directory whose disk fills up (the
// record's writes fail) or turns read-only (its removals fail too), and
// idle spells: a node that holds its ID and keeps reserving ahead of the
// clock but issues nothing, so that its last tick falls far behind its
// reservation.

const (
	modelTTL     = 3 * time.Second
	modelRecycle = 10 * time.Second
	modelLead    = 2 * time.Second
	modelMaxNode = 3
)

var errModelDown = fmt.Errorf("model: %w", frond.ErrStoreUnavailable)

// proc is one process life of a node.
type proc struct {
	life int
	dead bool
	p    *registry.Protocol
	reg  *cache.Registry

	holding   bool
	w         frond.Worker
	sent      time.Time // when the last confirmed renewal (or the claim) was sent
	lastRenew time.Time // when the renewal last ran
	saved     int64     // the reservation accepted, ms
	lastTick  int64     // the last tick this process issued, ms
}

type modelNode struct {
	name     string
	identity int
	dir      string
	offset   time.Duration // the node's clock minus true time
	cut      bool
	idle     bool      // issues nothing (no load); still renews and reserves
	paused   time.Time // runs again from then
	lives    int
	pr       *proc
	disk     *faultyDisk // the data directory's disk
}

type faultyBackend struct {
	*registry.MemoryBackend
	m  *model
	n  *modelNode
	pr *proc
}

// fate decides whether a call fails before it applies or after.
func (f *faultyBackend) fate() (before, after bool) {
	if f.n.cut || f.pr.dead {
		return true, false
	}
	switch r := f.m.rng.IntN(100); {
	case r < f.m.failPct:
		return true, false
	case r < 2*f.m.failPct:
		return false, true
	}
	return false, false
}

func (f *faultyBackend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	if before, _ := f.fate(); before {
		return nil, errModelDown
	}
	return f.MemoryBackend.Own(ctx, maxNode)
}

func (f *faultyBackend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	if before, _ := f.fate(); before {
		return nil, errModelDown
	}
	return f.MemoryBackend.Idle(ctx, maxNode)
}

func (f *faultyBackend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	before, after := f.fate()
	if before {
		return 0, false, errModelDown
	}
	last, ok, err := f.MemoryBackend.New(ctx, maxNode, h)
	if after && ok {
		f.m.logf("  %s: new claim of %d applied, its answer lost", f.n.name, h.ID)
		return 0, false, errModelDown
	}
	return last, ok, err
}

func (f *faultyBackend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	before, after := f.fate()
	if before {
		return errModelDown
	}
	err := f.MemoryBackend.Claim(ctx, s, floor, h)
	if after && err == nil {
		f.m.logf("  %s: claim of %d applied, its answer lost", f.n.name, s.ID)
		return errModelDown
	}
	return err
}

func (f *faultyBackend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	before, after := f.fate()
	if before {
		return false, errModelDown
	}
	ok, err := f.MemoryBackend.Write(ctx, h, ns, exact)
	if after && err == nil {
		return false, errModelDown
	}
	return ok, err
}

func (f *faultyBackend) End(h *registry.Hold) {
	if before, _ := f.fate(); !before {
		f.MemoryBackend.End(h)
	}
}

type span struct {
	lo, hi int64 // ticks, ms
	who    string
}

type model struct {
	t       *testing.T
	seed    int
	rng     *rand.Rand
	now     time.Time
	srv     *registry.MemoryServer
	nodes   []*modelNode
	failPct int
	issued  map[int64][]span
	count   int
	trace   []string
	nextID  int
}

var modelBase = time.Unix(1_800_000_000, 0)

func (m *model) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%8.3fs ", m.now.Sub(modelBase).Seconds())+fmt.Sprintf(format, args...))
	if len(m.trace) > 500 {
		m.trace = m.trace[len(m.trace)-400:]
	}
}

func short(err error) string {
	if s := err.Error(); len(s) > 140 {
		return s[:140] + "..."
	}
	return err.Error()
}

// start starts a process of n on its data directory.
func (m *model) start(n *modelNode) {
	n.lives++
	pr := &proc{life: n.lives}
	// A new process has its own load; now and then it starts while the
	// registry is unreachable from it (a restart during a partition), when
	// its local record carries it.
	n.idle = false
	if n.lives > 1 && m.rng.IntN(4) == 0 {
		n.cut = true
	}
	o := registry.Options{Host: "10.0.0.1", Port: n.identity, LeaseTTL: modelTTL, RecycleAfter: modelRecycle,
		Now: func() time.Time { return m.now.Add(n.offset) }}.WithDefaults()
	mb := &registry.MemoryBackend{S: m.srv, Identity: o.Identity(), TTL: modelTTL, Pol: registry.Policy{OwnFirst: true, Recycle: true}}
	pr.p = registry.NewProtocol(&faultyBackend{MemoryBackend: mb, m: m, n: n, pr: pr}, o)
	reg, err := cache.New(pr.p, filepath.Join(n.dir, cache.File), "model "+o.Identity(), o)
	if err != nil {
		m.t.Fatalf("%s: cache: %v", n.name, err)
	}
	reg.SetDisk(n.disk)
	pr.reg = reg
	n.pr = pr
	m.logf("%s starts life %d as %s in %s (cut %v)", n.name, pr.life, o.Identity(), filepath.Base(n.dir), n.cut)
}

// stop ends n's process: kill -9 (nothing more reaches the backend; the
// lock goes with the process) or a clean stop.
func (m *model) stop(n *modelNode, clean bool) {
	pr := n.pr
	if clean && pr.holding {
		// As the service's: the generator's last tick, which is never
		// before the time it started from.
		last := pr.lastTick
		if !pr.w.LastIssued.IsZero() {
			last = max(last, pr.w.LastIssued.UnixMilli())
		}
		err := pr.reg.Release(context.Background(), time.UnixMilli(last))
		m.logf("%s: clean stop, last tick %d: %v", n.name, last, err)
	} else if clean {
		m.logf("%s: clean stop holding no worker ID", n.name)
	} else {
		m.logf("%s: kill -9", n.name)
		pr.dead = true
	}
	pr.reg.Close()
	pr.dead = true
}

// dir returns a fresh data directory, in memory where the machine has a
// tmpfs (the local record fsyncs every write).
func (m *model) dir() string {
	if d, err := os.MkdirTemp("/dev/shm", "frond-model"); err == nil {
		m.t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return m.t.TempDir()
}

func (m *model) clock(n *modelNode) int64 { return m.now.Add(n.offset).UnixMilli() }

// renew is the renewal goroutine of the claim, when it is due.
func (m *model) renew(n *modelNode) {
	pr := n.pr
	if !pr.holding || pr.w.FromCache || m.now.Sub(pr.lastRenew) < modelTTL/3 {
		return
	}
	pr.lastRenew = m.now
	h := pr.p.Held()
	switch {
	case h == nil || h.IsLost():
		pr.holding = false
	case !m.now.Before(pr.sent.Add(modelTTL)):
		m.logf("%s: claim on %d not renewed for the TTL: lost", n.name, pr.w.ID)
		h.MarkLost()
		pr.holding = false
	case n.cut || m.rng.IntN(100) < 2*m.failPct:
		// not renewed (or renewed and the answer lost: the node does not know)
		if !n.cut && m.rng.IntN(2) == 0 {
			m.srv.Renew(h, modelTTL)
		}
	case m.srv.Renew(h, modelTTL):
		pr.sent = m.now
	default:
		m.logf("%s: renewal of %d refused: lost", n.name, pr.w.ID)
		h.MarkLost()
		pr.holding = false
	}
}

// adopt takes w as the process's worker, as the service does.
func (m *model) adopt(n *modelNode, w frond.Worker, sent time.Time) {
	pr := n.pr
	pr.holding, pr.w, pr.sent, pr.lastRenew = true, w, sent, sent
	pr.lastTick = max(pr.lastTick, m.clock(n)-1) // a generator starts at its clock
	pr.saved = 0
	if !w.LastIssued.IsZero() {
		pr.saved = w.LastIssued.UnixMilli()
	}
	m.logf("%s: holds %d from %d (from the record %v)", n.name, w.ID, pr.saved, w.FromCache)
}

// run is one scheduling of n's process.
func (m *model) run(n *modelNode) {
	ctx := context.Background()
	pr := n.pr
	renewFirst := m.rng.IntN(2) == 0
	if renewFirst {
		m.renew(n)
	}
	switch {
	case !pr.holding:
		sent := m.now
		w, err := pr.reg.Acquire(ctx, modelMaxNode)
		if err != nil {
			m.logf("%s: acquire: %v", n.name, short(err))
			return
		}
		m.adopt(n, w, sent)
	case pr.w.FromCache:
		sent := m.now
		if w, err := pr.reg.Acquire(ctx, modelMaxNode); err == nil && !w.FromCache {
			m.adopt(n, w, sent)
		}
	}
	c := m.clock(n)
	if pr.saved < c+modelLead.Milliseconds()/2 {
		err := pr.reg.Save(ctx, time.UnixMilli(c+modelLead.Milliseconds()))
		switch {
		case err == nil:
			pr.saved = c + modelLead.Milliseconds()
		case errors.Is(err, frond.ErrWorkerLost):
			m.logf("%s: save: %v", n.name, short(err))
			pr.holding = false
			return
		}
	}
	if pr.holding && !n.idle {
		// Under load the generator uses every tick from past its floor up to
		// the clock, within the reservation: the ticks since the last run.
		from := pr.lastTick
		if !pr.w.LastIssued.IsZero() {
			from = max(from, pr.w.LastIssued.UnixMilli())
		}
		if to := min(c, pr.saved); to > from {
			m.issue(n, pr.w.ID, from+1, to)
			pr.lastTick = to
		}
	}
	if !renewFirst {
		m.renew(n)
	}
}

// issue records that n's process issued with worker ID id at ticks lo..hi,
// and fails the test if any of them was issued before by another process.
func (m *model) issue(n *modelNode, id, lo, hi int64) {
	who := fmt.Sprintf("%s life %d", n.name, n.pr.life)
	spans := m.issued[id]
	for _, s := range spans {
		if s.who != who && lo <= s.hi && s.lo <= hi {
			m.logf("%s issues with %d at ticks %d..%d: DUPLICATE of %s's %d..%d", who, id, lo, hi, s.who, s.lo, s.hi)
			m.t.Fatalf("seed %d: worker ID %d: ticks %d..%d issued by %s and %d..%d by %s\nserver: %v\ntrace:\n%s",
				m.seed, id, lo, hi, who, s.lo, s.hi, s.who, m.srv, strings.Join(m.trace, "\n"))
		}
	}
	if k := len(spans) - 1; k >= 0 && spans[k].who == who && spans[k].hi+1 == lo {
		spans[k].hi = hi
	} else {
		spans = append(spans, span{lo, hi, who})
	}
	m.issued[id] = spans
	m.count += int(hi - lo + 1)
}

func (m *model) step() {
	m.now = m.now.Add(time.Duration(m.rng.IntN(400)) * time.Millisecond)
	n := m.nodes[m.rng.IntN(len(m.nodes))]
	switch r := m.rng.IntN(1000); {
	case n.pr.dead:
		if r >= 300 {
			return
		}
		switch k := m.rng.IntN(10); {
		case k < 6: // the same data directory: takes its claim over
		case k < 9: // a new identity on a fresh directory
			m.nextID++
			n.identity, n.dir, n.disk = m.nextID, m.dir(), &faultyDisk{}
		default: // another live node's identity on a fresh directory
			n.identity, n.dir, n.disk = m.nodes[m.rng.IntN(len(m.nodes))].identity, m.dir(), &faultyDisk{}
		}
		m.start(n)
	case m.now.Before(n.paused):
	case r < 10:
		m.stop(n, false)
	case r < 15:
		m.stop(n, true)
	case r < 25:
		d := time.Duration(m.rng.Int64N(int64(2 * modelRecycle)))
		m.logf("%s: paused for %v", n.name, d)
		n.paused = m.now.Add(d)
	case r < 40:
		n.cut = !n.cut
		m.logf("%s: cut %v", n.name, n.cut)
	case r < 44:
		n.idle = !n.idle
		m.logf("%s: idle %v", n.name, n.idle)
	case r < 47:
		full := !n.disk.failWrite.Load()
		n.disk.failWrite.Store(full)
		n.disk.failRemove.Store(full && m.rng.IntN(2) == 0)
		m.logf("%s: disk full %v (read-only %v)", n.name, full, n.disk.failRemove.Load())
	case r < 55:
		step := time.Duration(m.rng.IntN(6000)-3000) * time.Millisecond
		if m.rng.IntN(4) == 0 { // now and then a large step, past RecycleAfter
			step = time.Duration(m.rng.Int64N(int64(3*modelRecycle))) - 3*modelRecycle/2
		}
		n.offset += step
		m.logf("%s: clock steps %v (offset %v)", n.name, step, n.offset)
	default:
		m.run(n)
	}
}

var modelSeeds = flag.Int("model.seeds", 100, "seeds of TestProtocol_Model (from -model.first)")
var modelFirst = flag.Int("model.first", 0, "first seed of TestProtocol_Model")

func TestProtocol_Model(t *testing.T) {
	seeds := *modelSeeds
	if testing.Short() {
		seeds = min(seeds, 20)
	}
	total, lives := 0, 0
	for seed := *modelFirst; seed < *modelFirst+seeds; seed++ {
		m := &model{t: t, seed: seed, rng: rand.New(rand.NewPCG(uint64(seed), 7)), now: modelBase, srv: registry.NewMemoryServer(),
			failPct: []int{0, 2, 10}[seed%3], issued: map[int64][]span{}, nextID: 100}
		m.srv.Now = func() time.Time { return m.now }
		for i := range 4 {
			m.nextID++
			n := &modelNode{name: fmt.Sprintf("node%d", i), identity: m.nextID, dir: m.dir(), disk: &faultyDisk{}}
			m.nodes = append(m.nodes, n)
			m.start(n)
		}
		for range 3000 {
			m.step()
		}
		for _, n := range m.nodes {
			lives += n.lives
			if !n.pr.dead {
				n.pr.reg.Close()
			}
		}
		total += m.count
	}
	t.Logf("%d seeds, %d process lives, %d ticks issued, none twice", seeds, lives, total)
	if total < seeds*100_000 {
		t.Fatalf("only %d ticks issued in %d seeds: the model hardly runs", total, seeds)
	}
}

// usedNew is a backend whose allocator hands out, once, an ID that already
// has a last time (a Redis counter reset by hand).
type usedNew struct {
	*registry.MemoryBackend
	done bool
}

func (u *usedNew) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	_, ok, err := u.MemoryBackend.New(ctx, maxNode, h)
	if ok && !u.done {
		u.done = true
		last := time.Now().UnixNano()
		u.S.SetLast(h.ID, last)
		return last, true, err
	}
	return 0, ok, err
}

// A "new" ID that already has a time is left for recycling: its earlier
// holder may have issued past that time from its local record.
func TestProtocol_NewIDWithATime(t *testing.T) {
	srv := registry.NewMemoryServer()
	o := registry.Options{Host: "10.0.0.1", Port: 1}.WithDefaults()
	p := registry.NewProtocol(&usedNew{MemoryBackend: &registry.MemoryBackend{S: srv, Identity: o.Identity(), TTL: o.LeaseTTL,
		Pol: registry.Policy{OwnFirst: true, Recycle: true}}}, o)
	w, err := p.Acquire(context.Background(), 1023)
	if err != nil || w.ID != 1 || !w.LastIssued.IsZero() {
		t.Fatalf("Acquire: %+v, %v; want ID 1 (0 came with a time) with none", w, err)
	}
}
