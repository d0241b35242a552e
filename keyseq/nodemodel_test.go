package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
)

// faultyLeases is a LeaseStore that fails some calls before they reach the
// store and loses the answers of others (the call took effect).
type faultyLeases struct {
	inner       keyseq.LeaseStore
	rnd         *rand.Rand
	down        bool   // every call fails (a cut)
	off         bool   // no faults
	slow        func() // a call's latency: advances the clock
	fail, loses int
	// late holds give-backs held in the network (the node gave up on
	// them), each delivered to the store at a later call, after whatever
	// the node did meanwhile: a take of the same section, say (issue 58).
	late    []func()
	delayed int // give-backs delivered late
}

var errDown = fmt.Errorf("%w: cut", frond.ErrStoreUnavailable)

// fault decides a call's fate: 0 as asked, 1 fails before, 2 answer lost.
func (f *faultyLeases) fault() int {
	if len(f.late) > 0 && f.rnd.IntN(30) == 0 {
		deliver := f.late[0]
		f.late = f.late[1:]
		deliver()
	}
	if f.slow != nil {
		f.slow()
	}
	if f.off {
		return 0
	}
	if f.down {
		f.fail++
		return 1
	}
	switch f.rnd.IntN(12) {
	case 0:
		f.fail++
		return 1
	case 1:
		f.loses++
		return 2
	}
	return 0
}

func (f *faultyLeases) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	x := f.fault()
	if x == 1 {
		return nil, errDown
	}
	got, err := f.inner.Take(ctx, space, sections, me, ttl, step)
	if x == 2 {
		return nil, errDown
	}
	return got, err
}

func (f *faultyLeases) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	x := f.fault()
	if x == 1 {
		return nil, errDown
	}
	got, err := f.inner.Renew(ctx, space, me, ttl)
	if x == 2 {
		return nil, errDown
	}
	return got, err
}

func (f *faultyLeases) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	x := f.fault()
	if x == 1 {
		return nil, errDown
	}
	got, err := f.inner.RaiseOwned(ctx, space, sections, step, me)
	if x == 2 {
		return nil, errDown
	}
	return got, err
}

func (f *faultyLeases) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	x := f.fault()
	if x == 1 {
		return errDown
	}
	if !f.off && f.rnd.IntN(3) == 0 {
		give := append([]keyseq.Given(nil), give...)
		f.late = append(f.late, func() {
			f.delayed++
			f.inner.Release(ctx, space, give, me)
		})
		return errDown
	}
	err := f.inner.Release(ctx, space, give, me)
	if x == 2 {
		return errDown
	}
	return err
}

// Place implements frond.PlaceKeeper: the store's lost-data fence.
func (f *faultyLeases) Place(ctx context.Context) (frond.Place, error) {
	if f.fault() == 1 {
		return frond.Place{}, errDown
	}
	return f.inner.(frond.PlaceKeeper).Place(ctx)
}

// SwapPlace implements frond.PlaceKeeper.
func (f *faultyLeases) SwapPlace(ctx context.Context, old, p frond.Place) error {
	if f.fault() == 1 {
		return errDown
	}
	return f.inner.(frond.PlaceKeeper).SwapPlace(ctx, old, p)
}

func (f *faultyLeases) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	if f.fault() != 0 {
		return keyseq.Table{}, errDown
	}
	return f.inner.Read(ctx, space, sections)
}

// simNode is one node of the model: nil when killed.
type simNode struct {
	n           *keyseq.Node
	pausedUntil time.Time
	gen         int
}

// TestModel_Nodes is the model of sections owned across nodes: three nodes
// on one lease store with faults (failed calls, lost answers, cuts), kill
// -9 (no release), clean stops, pauses past the lease (SIGSTOP: the node
// runs no round, then answers a request before its next one), clients
// with stale routes that follow the owner named by a refusal; every key's
// values strictly increase in the order they were answered, and once the
// faults stop every section is served again. Deterministic per seed (one
// goroutine, a simulated clock).
func TestModel_Nodes(t *testing.T) {
	for seed := range uint64(*modelSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if bad := runNodeModel(t, seed, false); bad != "" {
				t.Fatal(bad)
			}
		})
	}
}

// The node model finds a take by the store's clock alone: the store's
// clock steps forward, a lease looks run out while its owner still counts
// on it, and another node takes the section (issue 58, item 3: "key k
// answered 101 by b, then 2 by a").
func TestModel_NodesTakeByStoreClockFails(t *testing.T) {
	for seed := range uint64(40) {
		if bad := runNodeModelWith(t, seed, modelBugs{byStoreClock: true}); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("40 seeds with takes by the store's clock alone found nothing: the model proves nothing")
}

// The node model finds a give-back that ends a later lease: one held in
// the network reaches the store after its node took the section again,
// and frees it while the node serves it (issue 58, item 1).
func TestModel_NodesUnfencedReleaseFails(t *testing.T) {
	for seed := range uint64(150) {
		if bad := runNodeModelWith(t, seed, modelBugs{unfencedRelease: true}); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("150 seeds with give-backs unfenced found nothing: the model proves nothing")
}

// The node model finds a space started again on a node under the same
// owner (the code before issue 68): a stop's give-back delivered late ends
// the leases of the restarted space (issue 68, item 2).
func TestModel_NodesSameOwnerFails(t *testing.T) {
	for seed := range uint64(100) {
		if bad := runNodeModelWith(t, seed, modelBugs{sameOwner: true}); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("100 seeds with one owner per node found nothing: the model proves nothing")
}

// The node model finds a taker that waits out only its own lease (the
// code before issue 68): with nodes of different lease lengths and steps
// of the store's clock, it takes a section whose owner still counts on a
// longer lease (issue 68, item 3).
func TestModel_NodesOwnTTLFails(t *testing.T) {
	for seed := range uint64(150) {
		if bad := runNodeModelWith(t, seed, modelBugs{ownTTL: true}); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("150 seeds with takers waiting out their own lease found nothing: the model proves nothing")
}

// The node model finds nodes that keep floors only of the sections they
// raised and fence nothing in the store (the code before issue 68): after
// the store loses data (restarted empty, or from an older copy), a node
// serves another node's former sections again from below (issue 68,
// item 1: "key1 answered 6 before, then 1").
func TestModel_NodesLossLocalFails(t *testing.T) {
	for seed := range uint64(100) {
		if bad := runNodeModelWith(t, seed, modelBugs{lossLocal: true}); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("100 seeds with losses kept local found nothing: the model proves nothing")
}

// The node model finds a broken fence (a node that answers for sections it
// was granted whatever its lease) within a few seeds.
func TestModel_NodesBrokenFenceFails(t *testing.T) {
	for seed := range uint64(5) {
		if bad := runNodeModel(t, seed, true); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("five seeds with an unfenced node found nothing: the model proves nothing")
}

func runNodeModel(t *testing.T, seed uint64, broken bool) string {
	return runNodeModelWith(t, seed, modelBugs{broken: broken})
}

// modelBugs are the mutations the node model must find: broken, nodes
// answer whatever their lease; byStoreClock, nodes take a section as soon
// as the store's clock says its lease ran out (which the store's clock
// steps break); unfencedRelease, a give-back ends whatever lease the node
// holds (which a give-back delivered late breaks).
//
// Issue 68: sameOwner, a space stopped on a node (idle, evicted) and
// started again there leases under the same owner (which a stop's
// give-back delivered late breaks); ownTTL, a taker waits out only its own
// lease (which nodes with different lease lengths and a step of the
// store's clock break).
//
// lossLocal: nodes keep floors only of the sections they raised and write
// no fence into the store (which a store that loses data breaks: the
// model loses it on every third seed, and on every seed of
// TestModel_NodesLossLocalFails).
type modelBugs struct{ broken, byStoreClock, unfencedRelease, sameOwner, ownTTL, lossLocal bool }

func runNodeModelWith(t *testing.T, seed uint64, bugs modelBugs) string {
	broken, byStoreClock := bugs.broken, bugs.byStoreClock
	rnd := rand.New(rand.NewPCG(seed, 49))
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	// The store's clock steps now and then (NTP on the database host, a
	// fail-over to a replica whose clock is ahead): forward past a lease,
	// or back.
	var step time.Duration
	mem := &keyseq.MemLeases{Now: func() time.Time { return now.Add(step) }}
	if bugs.unfencedRelease {
		keyseq.UnfenceReleases(mem)
	}
	st := &faultyLeases{inner: mem, rnd: rand.New(rand.NewPCG(seed, 50))}
	sp := keyseq.Space{Name: "m", Step: int64(3 + seed%20), Sections: int(1 + seed%9), Slots: 1 << (seed % 5)}
	const ttl = 3 * time.Second
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	nodes := make([]*simNode, 3)
	tokens := 0
	// Each node is a process (a new token at each start of the process)
	// whose space is stopped now and then (idle, evicted) and started again
	// in the same process: each start of it is a new owner (LeaseOwner),
	// with a lease length of its own (a rolling change of lease_ttl: 1 or
	// 9 s on odd seeds, and on every seed of TestModel_NodesOwnTTLFails).
	procs, starts := make([]int, len(nodes)), make([]uint64, len(nodes))
	// Each node keeps its floors in its data directory, through restarts
	// of its process; now and then a process starts on a new one, on
	// seeds where the store loses no data (a node with a new data
	// directory that takes a section first after a loss, before any node
	// that kept floors read the store, serves it from the store's maximum:
	// the limit docs/sequences.md states).
	lrnd := rand.New(rand.NewPCG(seed, 51)) // the store's losses and the directories: apart, so other draws stay as they were
	dirs := make([]*keyseq.MemFloors, len(nodes))
	var allDirs []*keyseq.MemFloors
	for k := range dirs {
		dirs[k] = &keyseq.MemFloors{}
		allDirs = append(allDirs, dirs[k])
	}
	ttlOf := func() time.Duration {
		if seed%2 == 0 && !bugs.ownTTL {
			return ttl
		}
		return []time.Duration{time.Second, 3 * ttl}[rnd.IntN(2)]
	}
	start := func(k int) {
		tokens++
		starts[k]++
		if bugs.sameOwner {
			starts[k] = 1
		}
		d := ttlOf()
		me := keyseq.LeaseOwner(keyseq.Owner{Token: fmt.Sprintf("n%d-%d", k, procs[k]), Addr: fmt.Sprint(k)}, starts[k], d)
		n, err := keyseq.NewNode(sp, st, me, keyseq.NodeOptions{TTL: d, Clock: clock, Logger: quiet, Rand: rand.New(rand.NewPCG(seed, uint64(tokens))), Floors: dirs[k]})
		if err != nil {
			t.Fatal(err)
		}
		if broken {
			keyseq.BreakFence(n)
		}
		if byStoreClock {
			keyseq.TakeByStoreClock(n)
		}
		if bugs.ownTTL {
			keyseq.WaitOwnTTL(n)
		}
		if bugs.lossLocal {
			keyseq.LoseLocally(n)
		}
		nodes[k] = &simNode{n: n}
	}
	// The store loses data once on every third seed: at lossAt it goes
	// back to what it held at snapAt (restored from a backup, restarted
	// from an older file), or to nothing (restarted empty). Not in the
	// runs of item 2's and 3's mutations, which find them sooner without.
	snapAt, lossAt, lost := -1, -1, false
	var restore func()
	if seed%3 == 1 && !bugs.ownTTL && !bugs.sameOwner || bugs.lossLocal {
		snapAt = 200 + lrnd.IntN(1300)
		lossAt = snapAt + 1 + lrnd.IntN(1000)
		if lrnd.IntN(2) == 0 {
			restore, snapAt = keyseq.SnapshotLeases(mem), -1 // empty
		}
	}
	restart := func(k int) { // a new process
		procs[k]++
		starts[k] = 0
		if procs[k] > 1 && lrnd.IntN(4) == 0 && lossAt < 0 {
			dirs[k] = &keyseq.MemFloors{} // a new data directory: its floors start empty
			allDirs = append(allDirs, dirs[k])
		}
		start(k)
	}
	for k := range nodes {
		restart(k)
	}
	st.slow = func() { // now and then a slow call, or a node paused in one
		switch rnd.IntN(16) {
		case 0, 1:
			now = now.Add(time.Duration(rnd.Int64N(int64(ttl / 2))))
		case 2:
			now = now.Add(time.Duration(rnd.Int64N(int64(2 * ttl))))
		}
	}
	const keys = 40
	var last [keys]int64
	// Three clients, each with its cache of routes (section -> node): one
	// whose cache is stale asks a node that no longer owns the section.
	routes := []map[int]int{{}, {}, {}}
	answered := 0
	request := func(k int) string {
		key := fmt.Sprintf("k%d", k)
		sec := keyseq.SectionOf(key, sp.Sections)
		route := routes[rnd.IntN(len(routes))]
		to, ok := route[sec]
		if !ok || rnd.IntN(4) == 0 { // no route, or another client's stale one
			to = rnd.IntN(len(nodes))
		}
		for hop := 0; hop < 2; hop++ {
			nd := nodes[to]
			if nd == nil || now.Before(nd.pausedUntil) {
				delete(route, sec)
				return "" // no answer (killed, stopped): the client times out
			}
			n := int64(1) // most requests take one value: a node answers from memory longer
			if rnd.IntN(3) == 0 {
				n = 1 + rnd.Int64N(sp.Step*2)
			}
			first, end, err := nd.n.Next(ctx, key, n)
			var no *keyseq.NotOwnerError
			switch {
			case err == nil:
				if first <= last[k] || end != first+n-1 {
					return fmt.Sprintf("at %v: k%d (section %d) got %d..%d from node %d after %d", now.Sub(time.Unix(1_800_000_000, 0)), k, sec, first, end, to, last[k])
				}
				last[k] = end
				route[sec] = to
				answered++
				return ""
			case errors.As(err, &no) && no.Addr != "":
				fmt.Sscan(no.Addr, &to)
				route[sec] = to
			case errors.Is(err, frond.ErrStoreUnavailable), errors.Is(err, keyseq.ErrNotOwner), errors.Is(err, frond.ErrClosed):
				delete(route, sec)
				return ""
			default:
				return fmt.Sprintf("k%d: %v", k, err)
			}
		}
		return ""
	}
	for k := range 3000 {
		switch k {
		case snapAt:
			restore = keyseq.SnapshotLeases(mem)
		case lossAt:
			restore()
			lost = true
		}
		now = now.Add(time.Duration(rnd.Int64N(int64(ttl / 4))))
		for k, nd := range nodes {
			if nd == nil {
				if rnd.IntN(20) == 0 {
					restart(k)
				}
				continue
			}
			if now.Before(nd.pausedUntil) {
				continue
			}
			switch x := rnd.IntN(200); {
			case x == 0: // kill -9: no release, its leases run out
				nodes[k] = nil
				continue
			case x == 1: // a clean stop
				nd.n.Close(ctx)
				nodes[k] = nil
				continue
			case x < 5: // SIGSTOP past (or short of) the lease
				nd.pausedUntil = now.Add(time.Duration(rnd.Int64N(int64(3 * ttl))))
				continue
			case x < 7: // the space stopped here (idle, evicted), started again by a request
				nd.n.Close(ctx)
				start(k)
				continue
			}
			if rnd.IntN(3) == 0 {
				nd.n.Round(ctx)
			}
		}
		st.down = k%500 > 450 // a cut of the store now and then
		if rnd.IntN(60) == 0 {
			step += time.Duration(rnd.Int64N(int64(3*ttl))) - ttl // the store's clock steps
		}
		for range 1 + rnd.IntN(6) {
			if bad := request(rnd.IntN(keys)); bad != "" {
				return bad
			}
		}
	}
	// Faults stop, every node runs again: every section is served.
	for _, deliver := range st.late {
		deliver()
	}
	st.down, st.off, st.slow, st.late = false, true, nil, nil
	if lost {
		// The operator re-arms the space above every floor of every data
		// directory (frond space rearm, with --above for a node whose
		// directory was replaced) and takes the fence off.
		var above int64
		for _, d := range allDirs {
			f, _ := d.Load(sp.Name, sp.Sections)
			above = max(above, slices.Max(append(f, 1)))
		}
		if err := mem.Rearm(ctx, sp, above); err != nil {
			t.Fatal(err)
		}
		if p, _ := mem.Place(ctx); p.Fenced() {
			frond.LiftLost(ctx, mem, p.Lost)
		}
	}
	for k, nd := range nodes {
		if nd == nil {
			restart(k)
		}
		nodes[k].pausedUntil = time.Time{}
	}
	for range 36 { // 12 s, a round every third of the shortest lease
		now = now.Add(time.Second / 3)
		for _, nd := range nodes {
			nd.n.Round(ctx)
		}
	}
	var served []int
	for _, nd := range nodes {
		served = append(served, nd.n.Held()...)
	}
	slices.Sort(served)
	if len(served) != sp.Sections || (len(served) > 0 && served[len(served)-1] != sp.Sections-1) || len(slices.Compact(served)) != sp.Sections {
		return fmt.Sprintf("after healing, sections served: %v of %d", served, sp.Sections)
	}
	if answered < 100 || st.fail == 0 || st.loses == 0 || st.delayed == 0 && sp.Sections > 1 {
		return fmt.Sprintf("the model did too little: %d answers, %d failed calls, %d lost answers, %d late give-backs", answered, st.fail, st.loses, st.delayed)
	}
	return ""
}
