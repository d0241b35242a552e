package cosidregistry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/cosidplay"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cosidregistry"
	"github.com/frond-id/frond/registry/registrytest"
)

// holding is one holder's time on a machine ID: the milliseconds it may
// have issued IDs in, from first to last.
type holding struct {
	who         string
	id          int64
	first, last int64
	lapsed      bool // a CosId application that did not guard within the safe guard
}

// ledger collects holdings and checks that two holders of one machine ID
// never had a millisecond in common: the IDs of one machine ID, one
// millisecond and two holders could be equal.
type ledger struct {
	mu  sync.Mutex
	all []holding
}

func (l *ledger) add(h holding) {
	l.mu.Lock()
	l.all = append(l.all, h)
	l.mu.Unlock()
}

func (l *ledger) check(t *testing.T) {
	byID := map[int64][]holding{}
	for _, h := range l.all {
		byID[h.id] = append(byID[h.id], h)
	}
	handovers := 0
	for id, hs := range byID {
		slices.SortFunc(hs, func(a, b holding) int { return int(a.first - b.first) })
		for i := 1; i < len(hs); i++ {
			for j := range i {
				// Two CosId applications are judged by CosId's own
				// guarantee, whichever distributor served them (CosId's
				// JDBC one, or frond's proxy routes): an application
				// starts once now >= last_timestamp, the millisecond its
				// predecessor reverted or guarded at, so the two may share
				// that millisecond and no other (CosId's affair: its
				// revert stamps the last millisecond used). Any pair with
				// a frond node may share none.
				cosids := strings.HasPrefix(hs[i].who, "cosid") && strings.HasPrefix(hs[j].who, "cosid")
				overlap := hs[i].first <= hs[j].last
				if cosids {
					overlap = hs[i].first < hs[j].last
				}
				if overlap && !hs[i].lapsed && !hs[j].lapsed {
					t.Errorf("machine ID %d: %s issued in ms %d..%d and %s from ms %d", id, hs[j].who, hs[j].first, hs[j].last, hs[i].who, hs[i].first)
				}
			}
			if !strings.HasPrefix(hs[i].who, strings.Fields(hs[i-1].who)[0]) {
				handovers++
			}
		}
	}
	t.Logf("%d holdings of %d machine IDs, %d handovers between frond and CosId", len(l.all), len(byID), handovers)
	if handovers == 0 {
		t.Fatal("no machine ID went between frond and CosId: the test proves nothing")
	}
}

// TestSideBySide: CosId applications (its JDBC machine distributor:
// distribute, guard, revert, crash) and frond nodes (acquire, save,
// release, crash, a GC pause past recycle_after) share four machine IDs
// of one namespace for ten seconds, with a 2 s safe guard, each start
// under a new identity (a new pod) now and then; each side starts its
// holdings in waves of its own, so that IDs go from one to the other: no
// two holders of a machine ID ever share a millisecond. It fails when frond
// ignores CosId's rule for CosId's rows.
func TestSideBySide(t *testing.T) {
	for _, db := range targets(t) {
		t.Run(db.name, func(t *testing.T) {
			ns := registrytest.Namespace(t)
			sql := raw(t, db.url)
			jdbc := cosidplay.JDBCMachine{DB: sql.DB, Rebind: sql.Kind.Rebind, Namespace: ns, MachineBit: sideBits, SafeGuard: sideSafeGuard}
			proxied, err := cosidregistry.OpenDistributor("cosid+" + db.url)
			if err != nil {
				t.Fatal(err)
			}
			defer proxied.Close()
			// Three CosId applications on CosId's JDBC distributor, two
			// through frond's (CosId proxy's machine routes).
			testSideBySide(t, "cosid+"+db.url, ns, func(i int) machineSide {
				if i >= 3 {
					return proxy{proxied, ns, sideBits, sideSafeGuard}
				}
				return jdbc
			})
		})
	}
	t.Run("redis", func(t *testing.T) {
		ns := registrytest.Namespace(t)
		c := redisClient(t)
		m := cosidplay.RedisMachine{C: c, Namespace: ns, MachineBit: sideBits, SafeGuard: sideSafeGuard}
		testSideBySide(t, redisURL(t), ns, func(int) machineSide { return m })
	})
}

// The side-by-side runs: four machine IDs for nine holders, CosId's safe
// guard of 2 s.
const (
	sideBits      = 2
	sideSafeGuard = 2 * time.Second
)

func testSideBySide(t *testing.T, base, ns string, cosid func(i int) machineSide) {
	const (
		bits      = sideBits
		safeGuard = sideSafeGuard
		wave      = 2500 * time.Millisecond // CosId's applications start holdings in even waves, frond's nodes in odd ones
		run       = 4 * wave
	)
	url := with(base, "frond_timeout=3s&frond_safe_guard="+safeGuard.String()+"&frond_namespace="+ns)
	ctx := testenv.Ctx(t)
	start := time.Now()
	stop := start.Add(run)
	turn := func(side int) bool { return int(time.Since(start)/wave)%2 == side }
	var l ledger
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	nowMs := func() int64 { return time.Now().UnixMilli() }

	// frond's table exists before the CosId applications start.
	warm, err := cosidregistry.Open(url, registry.Options{Host: "10.0.0.1", Port: 1, LeaseTTL: 600 * time.Millisecond, RecycleAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Backend().Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	warm.Close()

	for i := range 5 { // CosId applications
		machine := cosid(i)
		wg.Go(func() {
			stable := i%2 == 0
			for n := 0; time.Now().Before(stop); n++ {
				instance := fmt.Sprintf("10.1.%d.%d:8080", n/2, i) // a new instance every other start
				if !turn(0) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				id, last, err := machine.Distribute(ctx, instance, stable)
				if errors.Is(err, cosidplay.ErrMachineOverflow) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("CosId %s: %w", instance, err)
					return
				}
				for nowMs() < last { // ClockBackwardsSynchronizer.sync: on once now >= last_timestamp, as CosId (getBackwardsTimeStamp <= 0)
					time.Sleep(time.Millisecond)
				}
				h := holding{who: "cosid " + instance, id: id, first: max(nowMs(), last)}
				end := time.Now().Add(time.Duration(100+rand.IntN(400)) * time.Millisecond)
				guarded := time.Now()
				lost := false
				for time.Now().Before(end) {
					pause := 100 * time.Millisecond
					if rand.IntN(4) == 0 {
						pause = 1200 * time.Millisecond // a GC pause: past recycle_after, within the safe guard
						end = end.Add(pause)
					}
					time.Sleep(pause)
					if gap := time.Since(guarded); gap > safeGuard*4/5 {
						// A machine too busy to run the application's guard
						// in time: CosId's contract (guard within the safe
						// guard, clocks within a fifth of it) is broken by
						// the application itself, and CosId would issue on
						// regardless. Not frond's to answer for.
						h.lapsed = true
					}
					guarded = time.Now()
					if err := machine.Guard(ctx, instance, id, nowMs()); err != nil {
						lost = true // MachineIdLostException: it stops
						break
					}
				}
				h.last = nowMs()
				l.add(h)
				if lost && !h.lapsed {
					errs <- fmt.Errorf("CosId %s lost machine ID %d while guarding it within the safe guard", instance, id)
					return
				}
				if lost {
					continue
				}
				if rand.IntN(3) > 0 {
					if err := machine.Revert(ctx, instance, stable, h.last); err != nil {
						errs <- err
						return
					}
				} // else a crash: the row is left as it is
			}
		})
	}
	for i := range 4 { // frond nodes
		wg.Go(func() {
			var prev frond.Worker // the last run's, on the same data directory
			for n := 0; time.Now().Before(stop); n++ {
				o := registry.Options{Host: "10.2.0.1", Port: 9000 + 10*(n/2) + i, LeaseTTL: 600 * time.Millisecond, RecycleAfter: time.Second}
				if !turn(1) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				r, err := cosidregistry.Open(url, o)
				if err != nil {
					errs <- err
					return
				}
				if n%2 == 1 && prev.Claim != "" {
					// A restart on the same data directory (every other
					// start keeps the identity): its record's claim,
					// taken back at once from its exact last time.
					r.Resume(prev.Claim, prev.ID)
				}
				prev = frond.Worker{}
				w, err := r.Acquire(ctx, 1<<bits-1)
				if err != nil {
					r.Close()
					if errors.Is(err, frond.ErrNoWorkerID) || errors.Is(err, frond.ErrWorkerLost) {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					errs <- fmt.Errorf("frond %d: %w", i, err)
					return
				}
				prev = w
				h := holding{who: fmt.Sprintf("frond %d", i), id: w.ID, first: max(nowMs(), w.LastIssued.UnixMilli())}
				for w.LastIssued.UnixMilli() > nowMs() {
					time.Sleep(time.Millisecond)
				}
				saved := time.Now()
				end := time.Now().Add(time.Duration(100+rand.IntN(500)) * time.Millisecond)
				lost := false
				for !lost && time.Now().Before(end) {
					time.Sleep(50 * time.Millisecond)
					next := time.Now().Add(100 * time.Millisecond) // a reservation, as the service saves before issuing
					if err := r.Save(ctx, next); err != nil {
						lost = true // a busy machine: the lease lapsed; the node stops, within its reservation
						break
					}
					saved = next
					select {
					case <-w.Lost:
						lost = true
					default:
					}
				}
				if !lost && rand.IntN(3) > 0 {
					// The last ID's time, up to 30 ms ahead of the clock
					// now and then (a sequence that ran out borrows the
					// next milliseconds): the next holder, this node's
					// next start taking its own ID back at once among
					// them, starts after it, not in it.
					last := time.Now().Add(time.Duration(rand.IntN(2)*rand.IntN(30)) * time.Millisecond)
					h.last = last.UnixMilli()
					if err := r.Release(ctx, last); err != nil {
						errs <- err
						return
					}
					r.Close()
				} else {
					h.last = saved.UnixMilli() // a crash: it may have issued up to its reservation
					r.Abandon()
				}
				l.add(h)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l.check(t)
}

// machineSide is how a CosId application takes its machine ID: CosId's
// JDBC distributor (cosidplay), or frond's for the proxy's routes.
type machineSide interface {
	Distribute(ctx context.Context, instance string, stable bool) (int64, int64, error)
	Guard(ctx context.Context, instance string, id, last int64) error
	Revert(ctx context.Context, instance string, stable bool, last int64) error
}

// proxy is frond's Distributor as the proxy's routes call it.
type proxy struct {
	d         *cosidregistry.Distributor
	ns        string
	bits      int
	safeGuard time.Duration
}

func (p proxy) Distribute(ctx context.Context, instance string, stable bool) (int64, int64, error) {
	id, last, err := p.d.Distribute(ctx, p.ns, p.bits, instance, stable, p.safeGuard)
	if errors.Is(err, cosidregistry.ErrMachineOverflow) {
		err = fmt.Errorf("%w: %w", cosidplay.ErrMachineOverflow, err)
	}
	return id, last, err
}

func (p proxy) Guard(ctx context.Context, instance string, _, _ int64) error {
	return p.d.Guard(ctx, p.ns, instance, false, p.safeGuard)
}

func (p proxy) Revert(ctx context.Context, instance string, stable bool, _ int64) error {
	return p.d.Revert(ctx, p.ns, instance, stable)
}
