package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
)

// Issue 68, item 3: nodes with different lease_ttl and a step of the
// store's clock. The owner (a 6 s lease) counts on its lease for 5.4 s
// after a renewal; the store's clock steps forward 20 s, so the lease has
// run out by it at once; a taker with a 1 s lease that waited out only its
// own lease took the section after 1 s while the owner still answered
// from memory below the take's raise.
func TestNode_MixedLeaseTTL(t *testing.T) {
	for _, ownTTL := range []bool{false, true} {
		t.Run(fmt.Sprintf("waits_own_ttl_only=%v", ownTTL), func(t *testing.T) {
			bad := mixedLeaseTTL(t, ownTTL)
			switch {
			case ownTTL && bad == "":
				t.Fatal("a taker that waits out only its own lease (the code before issue 68) went unnoticed: the test proves nothing")
			case !ownTTL && bad != "":
				t.Fatal(bad)
			}
		})
	}
}

func mixedLeaseTTL(t *testing.T, ownTTL bool) string {
	ctx := context.Background()
	base := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	nodeNow, storeNow := base, base
	nodeClock := func() time.Time { mu.Lock(); defer mu.Unlock(); return nodeNow }
	storeClock := func() time.Time { mu.Lock(); defer mu.Unlock(); return storeNow }
	advance := func(d time.Duration) { mu.Lock(); nodeNow, storeNow = nodeNow.Add(d), storeNow.Add(d); mu.Unlock() }
	mem := &keyseq.MemLeases{Now: storeClock}
	sp := keyseq.Space{Name: "mixed", Step: 100, Sections: 1, Slots: 4}
	quiet := slog.New(slog.DiscardHandler)
	node := func(name string, ttl time.Duration) *keyseq.Node {
		n, err := keyseq.NewNode(sp, mem, keyseq.LeaseOwner(keyseq.Owner{Token: name, Addr: name}, 1, ttl),
			keyseq.NodeOptions{TTL: ttl, Clock: nodeClock, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := node("a", 6*time.Second)
	if err := a.Round(ctx); err != nil || len(a.Held()) != 1 {
		t.Fatalf("a takes the section: %v, held %v", err, a.Held())
	}
	b := node("b", time.Second)
	if ownTTL {
		keyseq.WaitOwnTTL(b)
	}
	last, who := int64(0), ""
	ask := func(n *keyseq.Node) string {
		v, _, err := n.Next(ctx, "k", 1)
		var no *keyseq.NotOwnerError
		if errors.As(err, &no) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			return fmt.Sprintf("key k answered %d by %s, then %d by %s", last, who, v, n.Me().Token)
		}
		last, who = v, n.Me().Token
		return ""
	}
	ask(a)
	b.Round(ctx) // b reads a's lease end
	mu.Lock()
	storeNow = storeNow.Add(20 * time.Second) // the store's clock steps forward
	mu.Unlock()
	// b's rounds, every tenth of a second of b's clock, for 5 s: a's gate
	// (its own clock) is open for 5.4 s after its renewal, and a runs no
	// round meanwhile (a pause of its round loop, or its rounds every 2 s
	// landing after b's take).
	for range 50 {
		advance(100 * time.Millisecond)
		b.Round(ctx)
		if bad := ask(b); bad != "" {
			return bad
		}
		if bad := ask(a); bad != "" {
			return bad
		}
	}
	return ""
}

// holdStops is a store whose whole-node give-backs (a clean stop's, an
// idle stop's, an eviction's: Release with no list) are held in the
// network until deliver, as a request the node gave up on.
type holdStops struct {
	keyseq.SpaceStore
	mu   sync.Mutex
	held []func()
}

func (h *holdStops) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if give != nil {
		return h.SpaceStore.Release(ctx, space, give, me)
	}
	h.mu.Lock()
	h.held = append(h.held, func() { h.SpaceStore.Release(context.Background(), space, nil, me) })
	h.mu.Unlock()
	return fmt.Errorf("%w: timeout: the give-back is held in the network", frond.ErrStoreUnavailable)
}

func (h *holdStops) deliver() {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, f := range held {
		f()
	}
}

// Issue 68, item 2: a space stopped on a node (idle, or evicted to make
// room) gives back every lease of its owner; the next request starts the
// space again there. A give-back that reaches the store late, after the
// restart, ended the restarted space's leases too (the same owner): a
// second node took the section at once and answered above, while the
// first still answered from memory below (201 by b, then 102 by a). Each
// start is a new owner now.
func TestSpaces_LateStopGiveBackAcrossRestart(t *testing.T) {
	for _, how := range []string{"idle", "evicted"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			var now atomic.Int64
			now.Store(time.Unix(1_800_000_000, 0).UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()) }
			advance := func(d time.Duration) { now.Add(int64(d)) }
			mem := &keyseq.MemLeases{Now: clock}
			held := &holdStops{SpaceStore: mem}
			quiet := slog.New(slog.DiscardHandler)
			o := keyseq.NodeOptions{TTL: 300 * time.Millisecond, Clock: clock, Logger: quiet, IdleAfter: time.Second, MaxSpaces: 1, MinResidency: -1}
			byAddr := map[string]*keyseq.Spaces{}
			fw := func(ctx context.Context, addr, space, key string, n int64, _ keyseq.Peer) (int64, int64, error) {
				first, last, err := byAddr[addr].Next(ctx, space, key, n, true)
				if err != nil && errors.Is(err, frond.ErrStoreUnavailable) {
					err = fmt.Errorf("%w: %w", keyseq.ErrOwnerMoved, err)
				}
				return first, last, err
			}
			a := keyseq.NewSpaces(held, keyseq.Owner{Token: "ta", Addr: "a"}, o, fw)
			b := keyseq.NewSpaces(mem, keyseq.Owner{Token: "tb", Addr: "b"}, o, fw)
			byAddr["a"], byAddr["b"] = a, b
			defer a.Close(ctx)
			defer b.Close(ctx)
			sp, err := a.Create(ctx, keyseq.Space{Name: "late", Step: 100, Sections: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Create(ctx, keyseq.Space{Name: "other", Step: 100, Sections: 1}); err != nil {
				t.Fatal(err)
			}
			last, who := int64(0), ""
			// ask asks s for key k until it answers (a client retries a
			// refusal: the clock moves on meanwhile, so leases that ran out
			// are taken); a value not above the last is the bug.
			ask := func(s *keyseq.Spaces) string {
				for try := 0; ; try++ {
					v, _, err := s.Next(ctx, sp.Name, "k", 1, false)
					if err == nil {
						if v <= last {
							return fmt.Sprintf("key k answered %d by %s, then %d by %s", last, who, v, s.Me().Addr)
						}
						last, who = v, s.Me().Addr
						return ""
					}
					if !errors.Is(err, frond.ErrStoreUnavailable) || try == 50 {
						t.Fatalf("k from %s: %v", s.Me().Addr, err)
					}
					advance(100 * time.Millisecond)
				}
			}
			if bad := ask(a); bad != "" {
				t.Fatal(bad)
			}
			switch how {
			case "idle":
				advance(2 * time.Second)
				if n := a.StopIdle(ctx); n != 1 {
					t.Fatalf("stopped %d spaces idle", n)
				}
			case "evicted":
				for try := 0; ; try++ { // its own earlier start's leases run out first
					_, _, err := a.Next(ctx, "other", "k", 1, false)
					if err == nil {
						break
					}
					if !errors.Is(err, frond.ErrStoreUnavailable) || try == 50 {
						t.Fatal(err)
					}
					advance(100 * time.Millisecond)
				}
			}
			// The next request starts the space again on a; the stop's
			// give-back, held, reaches the store after.
			if bad := ask(a); bad != "" {
				t.Fatal(bad)
			}
			held.deliver()
			for range 3 {
				for _, s := range []*keyseq.Spaces{b, a} {
					if bad := ask(s); bad != "" {
						t.Fatal(bad)
					}
				}
			}
		})
	}
}

// Issue 68, item 4: a request that reached a space's node just before it
// was stopped to make room (max_spaces) is served by the space started
// again, not refused after a lease on the stopped node. One node, no
// faults, three spaces asked in turn with max_spaces 2: before, 30 in
// 63,001 requests were refused after 549-666 ms.
func TestSpaces_RequestRacingEviction(t *testing.T) {
	ctx := context.Background()
	mem := &keyseq.MemLeases{}
	quiet := slog.New(slog.DiscardHandler)
	a := keyseq.NewSpaces(mem, keyseq.Owner{Token: "ta", Addr: "a"},
		keyseq.NodeOptions{TTL: 500 * time.Millisecond, Logger: quiet, MaxSpaces: 2, MinResidency: -1}, nil)
	defer a.Close(ctx)
	names := []string{"e0", "e1", "e2"}
	for _, name := range names {
		if _, err := a.Create(ctx, keyseq.Space{Name: name, Step: 100, Sections: 4}); err != nil {
			t.Fatal(err)
		}
	}
	var refused, answered atomic.Int64
	var slowest atomic.Int64
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 400 {
				name := names[(w+i)%len(names)]
				from := time.Now()
				_, _, err := a.Next(ctx, name, fmt.Sprintf("k%d", i%7), 1, false)
				if d := int64(time.Since(from)); d > slowest.Load() {
					slowest.Store(d)
				}
				if err != nil {
					refused.Add(1)
					continue
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d answered, %d refused, slowest %v", answered.Load(), refused.Load(), time.Duration(slowest.Load()).Round(time.Millisecond))
	if refused.Load() > 0 {
		t.Fatalf("%d of %d requests refused with no fault (spaces evicted and started again meanwhile)", refused.Load(), refused.Load()+answered.Load())
	}
}

// A request is answered or refused within about a lease, whatever waits
// on others: a forward to an owner that hangs (SIGSTOP: the connection
// opens, nothing answers) took the forwarder's whole timeout, then a round,
// after the request's lease (5.5 s with a 3 s lease in the chaos suite).
func TestSpaces_HungOwnerBoundedByLease(t *testing.T) {
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	b, hang := hungOwner(t, ttl, 10*ttl, "hung", nil) // the forwarder's own timeout: ten leases
	hang.Store(true)
	from := time.Now()
	_, _, err := b.Next(ctx, "hung", "k", 1, false)
	took := time.Since(from)
	if err == nil {
		t.Fatal("answered while its owner hangs")
	}
	if took > 5*ttl {
		t.Fatalf("refused after %v with a lease of %v (the owner hangs for %v): not bounded by the lease", took, ttl, 10*ttl)
	}
}

// Issue 68, item 5: a node whose floors file is on a full disk serves
// none of the sections it takes (no floor kept, no value answered), and
// says so: the refusal named no node owning the section before.
func TestNode_FullDiskNamed(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here: ", err) // Linux has it
	}
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keyseq"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(dir, "keyseq", "full.floors")); err != nil {
		t.Fatal(err)
	}
	sp := keyseq.Space{Name: "full", Step: 100, Sections: 2, Slots: 4}
	n, err := keyseq.NewNode(sp, &keyseq.MemLeases{}, keyseq.Owner{Token: "a", Addr: "a"},
		keyseq.NodeOptions{TTL: time.Second, Logger: slog.New(slog.DiscardHandler), Floors: keyseq.NewFileFloors(dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(ctx)
	n.Round(ctx)
	_, _, err = n.Next(ctx, "k", 1)
	if err == nil {
		t.Fatal("answered without its floor kept")
	}
	if !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "no node owns it") {
		t.Fatalf("the refusal does not name the full disk: %v", err)
	}
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("not retryable as unavailable: %v", err)
	}
}

// wipeable is a lease store that can lose everything it holds at once (a
// Redis restarted without its data).
type wipeable struct {
	mu sync.Mutex
	keyseq.LeaseStore
}

func (w *wipeable) store() keyseq.LeaseStore  { w.mu.Lock(); defer w.mu.Unlock(); return w.LeaseStore }
func (w *wipeable) wipe(to keyseq.LeaseStore) { w.mu.Lock(); w.LeaseStore = to; w.mu.Unlock() }
func (w *wipeable) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	return w.store().Take(ctx, space, sections, me, ttl, step)
}
func (w *wipeable) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	return w.store().Renew(ctx, space, me, ttl)
}
func (w *wipeable) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	return w.store().RaiseOwned(ctx, space, sections, step, me)
}
func (w *wipeable) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	return w.store().Release(ctx, space, give, me)
}
func (w *wipeable) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	return w.store().Read(ctx, space, sections)
}

// Issue 68, item 1: two nodes, each with its data directory, serve a
// space; the store loses everything. The first node to run a round counts
// itself alone and takes every section: its own former sections were
// refused by its floors, but the other node's had no floor there and were
// served again from the store's maximum ("key1 answered 6 before, then
// 1"). Each node now keeps as floors the maxima it read of every section.
func TestNode_StoreLostDataOthersSections(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	st := &wipeable{LeaseStore: &keyseq.MemLeases{Now: clock}}
	sp := keyseq.Space{Name: "wiped", Step: 10, Sections: 4, Slots: 8}
	quiet := slog.New(slog.DiscardHandler)
	node := func(name string) *keyseq.Node {
		n, err := keyseq.NewNode(sp, st, keyseq.Owner{Token: name, Addr: name},
			keyseq.NodeOptions{TTL: 3 * time.Second, Clock: clock, Logger: quiet, Floors: &keyseq.MemFloors{}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := node("a"), node("b")
	round := func(ns ...*keyseq.Node) {
		for _, n := range ns {
			now = now.Add(100 * time.Millisecond)
			n.Round(ctx)
		}
	}
	round(b, a, b, a) // b takes every section, a joins, b gives two back, a takes them: a never raised b's
	if len(a.Held()) != 2 || len(b.Held()) != 2 {
		t.Fatalf("the sections are not shared: a %v, b %v", a.Held(), b.Held())
	}
	last := map[string]int64{}
	for range 3 {
		for k := range 16 {
			key := fmt.Sprint("key", k)
			for _, n := range []*keyseq.Node{a, b} {
				if v, _, err := n.Next(ctx, key, 1); err == nil {
					last[key] = v
				}
			}
		}
	}
	if len(last) != 16 {
		t.Fatalf("%d of 16 keys answered before the loss", len(last))
	}
	round(a, b) // each reads every section's maximum
	st.wipe(&keyseq.MemLeases{Now: clock})
	round(a, a) // a alone in the store now: it takes every section
	refused := 0
	for k := range 16 {
		key := fmt.Sprint("key", k)
		v, _, err := a.Next(ctx, key, 1)
		switch {
		case err == nil && v <= last[key]:
			t.Fatalf("%s answered %d before the store lost its data, then %d (a served b's former section again)", key, last[key], v)
		case errors.Is(err, keyseq.ErrStoreLostData):
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("nothing refused as lost data")
	}
}

// Place implements frond.PlaceKeeper: the store's own, lost with it.
func (w *wipeable) Place(ctx context.Context) (frond.Place, error) {
	return w.store().(frond.PlaceKeeper).Place(ctx)
}

// SwapPlace implements frond.PlaceKeeper.
func (w *wipeable) SwapPlace(ctx context.Context, old, p frond.Place) error {
	return w.store().(frond.PlaceKeeper).SwapPlace(ctx, old, p)
}

// Issue 68, item 1: a store's loss is one fact for the whole cluster. Node
// a finds the store went back (below its floors) and stops; node c, with
// a new data directory (no floors), takes every section after it. Before,
// c served the keys again from the store's maximum after the loss
// ("key0 answered 40 before the store lost its data, then 11"): only a had
// refused. Now a writes the finding into the store's place, where c's
// takes are refused, until the space is re-armed above every floor.
func TestNode_StoreLostDataFencesEveryNode(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	st := &wipeable{LeaseStore: &keyseq.MemLeases{Now: clock}}
	sp := keyseq.Space{Name: "fenced", Step: 10, Sections: 4, Slots: 8}
	quiet := slog.New(slog.DiscardHandler)
	floorsA := &keyseq.MemFloors{}
	node := func(name string, f keyseq.Floors) *keyseq.Node {
		n, err := keyseq.NewNode(sp, st, keyseq.Owner{Token: name, Addr: name},
			keyseq.NodeOptions{TTL: 3 * time.Second, Clock: clock, Logger: quiet, Floors: f})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	round := func(ns ...*keyseq.Node) {
		for _, n := range ns {
			now = now.Add(100 * time.Millisecond)
			n.Round(ctx)
		}
	}
	a := node("a", floorsA)
	round(a)
	last := map[string]int64{}
	for range 40 {
		for k := range 16 {
			key := fmt.Sprint("key", k)
			v, _, err := a.Next(ctx, key, 1)
			if err != nil {
				t.Fatal(err)
			}
			last[key] = v
		}
	}
	st.wipe(&keyseq.MemLeases{Now: clock})
	round(a)
	for k := range 16 { // a refuses below its floors, and fences the store
		if _, _, err := a.Next(ctx, fmt.Sprint("key", k), 1); !errors.Is(err, keyseq.ErrStoreLostData) {
			t.Fatalf("a answered key%d after the loss: %v", k, err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c := node("c", &keyseq.MemFloors{}) // a new data directory
	round(c, c, c)
	check := func(who string, n *keyseq.Node) {
		t.Helper()
		for k := range 16 {
			key := fmt.Sprint("key", k)
			v, _, err := n.Next(ctx, key, 1)
			switch {
			case err == nil && v <= last[key]:
				t.Fatalf("%s answered %d before the store lost its data, then %d (by %s)", key, last[key], v, who)
			case err == nil:
				t.Fatalf("%s answered %s while the store is fenced", who, key)
			case !errors.Is(err, keyseq.ErrStoreLostData) || !errors.Is(err, frond.ErrStoreLostData):
				t.Fatalf("%s refused %s as %v, not as lost data", who, key, err)
			}
		}
	}
	check("c", c)
	p, err := st.Place(ctx)
	if err != nil || !p.Fenced() || frond.LostFindingSpace(p.Lost) != sp.Name {
		t.Fatalf("the store's place is %q (%v), not fenced for space %q", p.String(), err, sp.Name)
	}
	// Re-armed above a's floors: served again, above every value answered.
	fl, _ := floorsA.Load(sp.Name, sp.Sections)
	if err := st.store().(keyseq.SpaceStore).Rearm(ctx, sp, slices.Max(fl)); err != nil {
		t.Fatal(err)
	}
	if ok, err := frond.LiftLost(ctx, st, p.Lost); !ok || err != nil {
		t.Fatalf("fence not lifted: %v %v", ok, err)
	}
	round(c, c, c)
	for k := range 16 {
		key := fmt.Sprint("key", k)
		v, _, err := c.Next(ctx, key, 1)
		if err != nil || v <= last[key] {
			t.Fatalf("%s after the re-arm: %d, %v (answered %d before)", key, v, err, last[key])
		}
	}
}

// A node finds a loss at its next round, from the maxima it reads, not
// only when it takes or raises a section: here a node that holds no
// section (its memory budget holds none) but read the space before the
// store lost its data fences the store at its first round after. Before,
// nothing was found until some node took or raised a section.
func TestNode_LostDataFoundByRead(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	st := &wipeable{LeaseStore: &keyseq.MemLeases{Now: clock}}
	sp := keyseq.Space{Name: "read", Step: 10, Sections: 4, Slots: 8}
	quiet := slog.New(slog.DiscardHandler)
	node := func(name string, b *keyseq.Budget) *keyseq.Node {
		n, err := keyseq.NewNode(sp, st, keyseq.Owner{Token: name, Addr: name},
			keyseq.NodeOptions{TTL: 3 * time.Second, Clock: clock, Logger: quiet, Floors: &keyseq.MemFloors{}, Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, r := node("a", nil), node("r", keyseq.NewBudget(1))
	a.Round(ctx)
	for k := range 16 {
		if _, _, err := a.Next(ctx, fmt.Sprint("key", k), 1); err != nil {
			t.Fatal(err)
		}
	}
	r.Round(ctx)
	if len(r.Held()) != 0 {
		t.Fatalf("the reader holds %v", r.Held())
	}
	st.wipe(&keyseq.MemLeases{Now: clock})
	now = now.Add(100 * time.Millisecond)
	r.Round(ctx)
	p, err := st.Place(ctx)
	if err != nil || frond.LostFindingSpace(p.Lost) != sp.Name {
		t.Fatalf("after the reader's round the store's place is %q (%v): the loss was not found", p.String(), err)
	}
}

// Issue 69, item 1: a node forwards a request only to a live member's
// address: an owner row whose address is no member's (written by hand, a
// wrong advertise) gets nothing sent to it; the request is refused as
// unavailable once the wait for an owner runs out.
func TestSpaces_ForwardsOnlyToMembers(t *testing.T) {
	ctx := context.Background()
	mem := &keyseq.MemLeases{}
	sp := keyseq.Space{Name: "fw", Step: 10, Sections: 1, Slots: 8}
	if err := mem.CreateSpace(ctx, sp); err != nil {
		t.Fatal(err)
	}
	// Section 0 held by an owner that is no member (no renewal, no membership).
	if _, err := mem.Take(ctx, sp.Name, []int{0}, keyseq.Owner{Token: "x", Addr: "203.0.113.66:80"}, time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	var sent []string
	var mu sync.Mutex
	fw := func(_ context.Context, addr, _, _ string, _ int64, _ keyseq.Peer) (int64, int64, error) {
		mu.Lock()
		sent = append(sent, addr)
		mu.Unlock()
		return 1, 1, nil
	}
	s := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "10.0.0.1:80"}, keyseq.NodeOptions{TTL: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, fw)
	defer s.Close(ctx)
	if _, _, err := s.Next(ctx, sp.Name, "k", 1, false); err == nil {
		t.Fatal("answered: forwarded to an address that is no member's")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 0 {
		t.Fatalf("forwarded to %v, no member's address", sent)
	}
}

// Issue 69, item 2: a space's sections are bounded by what the store takes
// in one round. A node taking every section of a space of 17,000 on
// SQLite failed every round ("too many SQL variables": one statement named
// them all), and on etcd a take of 64 sections or more ("too many
// operations in txn request", etcd's default bound of 128). A node now
// takes them in calls of what its store holds (keyseq.BatchOf).
func TestNode_TakesWhatTheStoreHolds(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		st       func(t *testing.T) keyseq.LeaseStore
		sections int
	}{
		// 17,000 sections: past SQLite's 32,766 variables in the old
		// statements. Under the race detector SQLite (C translated to Go)
		// is too slow for that many within the store's timeout on a busy
		// machine: 3,000 there (still two calls), and etcd's case shows
		// the old code's failure in every run.
		"sqlite": {func(t *testing.T) keyseq.LeaseStore {
			return openSQL(t, "sqlite://"+filepath.Join(t.TempDir(), "big.db")+"?frond_timeout=2m") // a busy machine: a call of 2,000 sections takes seconds under -race
		}, map[bool]int{false: 17000, true: 3000}[raceOn]},
		"etcd": {func(t *testing.T) keyseq.LeaseStore { return openEtcd(t) }, 300},
	} {
		t.Run(name, func(t *testing.T) {
			st := tc.st(t)
			sp := keyseq.Space{Name: fmt.Sprintf("big%d", time.Now().UnixNano()), Step: 10, Sections: tc.sections, Slots: 1}
			n, err := keyseq.NewNode(sp, st, keyseq.Owner{Token: "a", Addr: "a"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close(ctx)
			if err := n.Round(ctx); err != nil {
				t.Fatalf("a round taking %d sections: %v", tc.sections, err)
			}
			if err := n.Round(ctx); err != nil {
				t.Fatalf("a renewal of %d sections: %v", tc.sections, err)
			}
			if got := len(n.Held()); got != tc.sections {
				t.Fatalf("holds %d of %d sections", got, tc.sections)
			}
			if v, _, err := n.Next(ctx, "k", 1); err != nil || v != 1 {
				t.Fatalf("first value: %d, %v", v, err)
			}
		})
	}
}

// A forward to an owner that hangs takes at most half the request's
// window, so that the table is read again and the section's new owner (a
// node that took it when the hung owner's lease ran out) is asked within
// the same request: the whole window went to the hung owner before, and
// the chaos suite's sections went unanswered for 6.1 s through a 6 s
// SIGSTOP (bound: a lease + 2 s).
func TestSpaces_HungOwnerLeavesHalfTheWindow(t *testing.T) {
	ctx := context.Background()
	const ttl = 2 * time.Second
	b, hang := hungOwner(t, ttl, 0, "half", nil)
	hang.Store(true)
	from := time.Now()
	_, _, err := b.Next(ctx, "half", "k", 1, false)
	took := time.Since(from)
	if err == nil {
		t.Fatal("answered while its owner hangs and holds its lease")
	}
	if took >= ttl*4/5 {
		t.Fatalf("refused after %v with a lease of %v: the forward to the hung owner took the request's whole window, none was left to read the table again", took, ttl)
	}
	t.Logf("refused after %v (lease %v)", took, ttl)
}

// A caller that waits less than a lease is answered "try again" before its
// own deadline, with time left to read it (and its Retry-After), not left
// to time out while the node still waits on a hung owner: a lease of 4 s
// gave the forward 2 s, past a client's 1 s (issue 72: the clients' 2 s
// attempts against a node whose lease_ttl is longer).
func TestSpaces_AnswersWithinTheCallersDeadline(t *testing.T) {
	ctx := context.Background()
	const ttl = 4 * time.Second
	b, hang := hungOwner(t, ttl, 0, "patience", nil)
	hang.Store(true)
	const patience = 1500 * time.Millisecond
	cctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	from := time.Now()
	_, _, err := b.Next(cctx, "patience", "k", 1, false)
	took := time.Since(from)
	if err == nil {
		t.Fatal("answered while its owner hangs and holds its lease")
	}
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("refused with %v, not store_unavailable (a 503 with Retry-After)", err)
	}
	if cctx.Err() != nil {
		t.Fatalf("refused after %v, when the caller had given up (its deadline %v): the caller read a timeout, not the refusal", took, patience)
	}
	t.Logf("refused after %v (the caller's deadline %v, lease %v)", took, patience, ttl)
	// Without a deadline of the caller's, the window is still the lease's
	// (half of it for the forward): not cut short.
	from = time.Now()
	_, _, err = b.Next(ctx, "patience", "k", 1, false)
	if took := time.Since(from); err == nil || took < ttl/2-100*time.Millisecond {
		t.Fatalf("without a caller's deadline: %v after %v, want a refusal after the forward's half lease (%v)", err, took, ttl/2)
	}
}

// hungOwner starts nodes a and b on one lease store with a space of one
// section that a owns (b's first request is forwarded to a and answered),
// and the switch that makes a hang: a forward to a then waits for its
// context (or hold, when not 0: a forwarder's own timeout), nothing
// answering, and fails as unreachable. It answers b. log is the nodes'
// (nil: discarded).
func hungOwner(t *testing.T, ttl, hold time.Duration, space string, log *slog.Logger) (*keyseq.Spaces, *atomic.Bool) {
	t.Helper()
	ctx := context.Background()
	mem := &keyseq.MemLeases{}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := keyseq.NodeOptions{TTL: ttl, Logger: log}
	hang := new(atomic.Bool)
	byAddr := map[string]*keyseq.Spaces{}
	fw := func(ctx context.Context, addr, space, key string, n int64, _ keyseq.Peer) (int64, int64, error) {
		if hang.Load() && addr == "a" {
			var timeout <-chan time.Time
			if hold > 0 {
				timeout = time.After(hold)
			}
			select { // the connection open, nothing answers
			case <-ctx.Done():
			case <-timeout:
			}
			return 0, 0, fmt.Errorf("%w: %w: no answer", frond.ErrStoreUnavailable, keyseq.ErrOwnerUnreachable)
		}
		return byAddr[addr].Next(ctx, space, key, n, true)
	}
	a := keyseq.NewSpaces(mem, keyseq.Owner{Token: "ta", Addr: "a"}, o, fw)
	b := keyseq.NewSpaces(mem, keyseq.Owner{Token: "tb", Addr: "b"}, o, fw)
	byAddr["a"], byAddr["b"] = a, b
	t.Cleanup(func() {
		a.Close(ctx)
		b.Close(ctx)
	})
	if _, err := a.Create(ctx, keyseq.Space{Name: space, Step: 100, Sections: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Next(ctx, space, "k", 1, false); err != nil { // forwarded to a
		t.Fatal(err)
	}
	return b, hang
}

// A caller whose own time runs out during a forward (Frond-Timeout: 1)
// learns nothing of the owner: the node logs no warning and reads nothing
// again for it (one anonymous request a warning, before), and the refusal
// is store_unavailable, naming no address.
func TestSpaces_ShortCallerDeadlineLogsNothing(t *testing.T) {
	var logs lockedLog
	const ttl = 4 * time.Second
	b, hang := hungOwner(t, ttl, 0, "short", slog.New(slog.NewTextHandler(&logs, nil)))
	hang.Store(true)
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, _, err := b.Next(ctx, "short", "k", 1, false)
		cancel()
		if err == nil || !errors.Is(err, frond.ErrStoreUnavailable) {
			t.Fatalf("with 1 ms to answer: %v, want store_unavailable", err)
		}
		if strings.Contains(err.Error(), `"a"`) || strings.Contains(err.Error(), "owner=a") {
			t.Fatalf("the refusal names the owner's address: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "could not be asked"); n > 0 {
		t.Fatalf("%d warnings for 20 callers whose own time ran out:\n%s", n, logs.String())
	}
}

// lockedLog is a log's text, written by any goroutine.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
