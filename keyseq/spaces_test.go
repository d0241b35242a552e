package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
)

// Spaces are created once, read back by every node, and served by two
// nodes that forward to each other: a key's values increase whichever
// node is asked.
func TestSpaces(t *testing.T) {
	stores := map[string]func(t *testing.T) keyseq.SpaceStore{
		"memory": func(t *testing.T) keyseq.SpaceStore { return &keyseq.MemLeases{} },
	}
	for name, url := range sqlTargets(t) {
		stores[name] = func(t *testing.T) keyseq.SpaceStore { return openSQL(t, url) }
	}
	stores["redis"] = func(t *testing.T) keyseq.SpaceStore { return openRedis(t) }
	stores["etcd"] = func(t *testing.T) keyseq.SpaceStore { return openEtcd(t) }
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Ctx(t)
			st := open(t)
			quiet := slog.New(slog.DiscardHandler)
			o := keyseq.NodeOptions{TTL: time.Second, Logger: quiet}
			byAddr := map[string]*keyseq.Spaces{}
			forwarded := 0
			fw := func(ctx context.Context, addr, space, key string, n int64, _ keyseq.Peer) (int64, int64, error) {
				forwarded++
				return byAddr[addr].Next(ctx, space, key, n, true)
			}
			a := keyseq.NewSpaces(st, keyseq.Owner{Token: "ta", Addr: "a"}, o, fw)
			b := keyseq.NewSpaces(st, keyseq.Owner{Token: "tb", Addr: "b"}, o, fw)
			byAddr["a"], byAddr["b"] = a, b
			name := fmt.Sprintf("s%d", time.Now().UnixNano())
			sp, err := a.Create(ctx, keyseq.Space{Name: name, Step: 100, Sections: 8})
			if err != nil || sp.Slots != keyseq.DefaultSlots {
				t.Fatalf("create: %+v, %v", sp, err)
			}
			if _, err := b.Create(ctx, keyseq.Space{Name: name}); !errors.Is(err, frond.ErrTagExists) {
				t.Fatalf("create twice: %v", err)
			}
			if _, err := a.Create(ctx, keyseq.Space{Name: "bad name"}); !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("a bad name: %v", err)
			}
			if got, err := b.Lookup(ctx, name); err != nil || got != sp {
				t.Fatalf("lookup: %+v, %v", got, err)
			}
			if _, err := b.Lookup(ctx, "nope"); !errors.Is(err, frond.ErrTagNotFound) {
				t.Fatalf("lookup of none: %v", err)
			}
			if _, _, err := b.Next(ctx, "nope", "k", 1, false); !errors.Is(err, frond.ErrTagNotFound) {
				t.Fatalf("next of no space: %v", err)
			}
			// a took every section at its creation; b's first request
			// starts b's node, which sees a as the owner.
			last := map[string]int64{}
			for i := range 200 {
				key := fmt.Sprintf("k%d", i%17)
				s := []*keyseq.Spaces{a, b}[i%2]
				first, end, err := s.Next(ctx, name, key, 2, false)
				for try := 0; errors.Is(err, frond.ErrStoreUnavailable) && try < 100; try++ {
					// Between owners while b takes its share: a client retries.
					time.Sleep(50 * time.Millisecond)
					first, end, err = s.Next(ctx, name, key, 2, false)
				}
				if err != nil {
					t.Fatalf("%s from %s: %v", key, s.Me().Addr, err)
				}
				if first <= last[key] || end != first+1 {
					t.Fatalf("%s: %d..%d after %d", key, first, end, last[key])
				}
				last[key] = end
			}
			if forwarded == 0 {
				t.Fatal("b answered without a's sections: nothing forwarded")
			}
			// Between them they serve every section once, once b has its share.
			deadline := time.Now().Add(10 * time.Second)
			var held []int
		again:
			held = held[:0]
			for _, s := range []*keyseq.Spaces{a, b} {
				list, err := s.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(list, func(s keyseq.SpaceStatus) bool { return s.Name == name })
				if i < 0 || list[i].Space != sp {
					t.Fatalf("%s's list: %+v", s.Me().Addr, list)
				}
				held = append(held, list[i].Held...)
			}
			slices.Sort(held)
			if !slices.Equal(held, []int{0, 1, 2, 3, 4, 5, 6, 7}) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				goto again
			}
			if !slices.Equal(held, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
				t.Fatalf("sections served by a and b: %v", held)
			}
			a.Close(ctx)
			b.Close(ctx)
			if _, _, err := a.Next(ctx, name, "k", 1, false); !errors.Is(err, frond.ErrClosed) {
				t.Fatalf("next after close: %v", err)
			}
		})
	}
}

// A store down at start: the spaces answer unavailable, then serve once
// the store opens.
func TestSpaces_LazyStore(t *testing.T) {
	ctx := testenv.Ctx(t)
	mem := &keyseq.MemLeases{}
	if err := mem.CreateSpace(ctx, keyseq.Space{Name: "msgs", Sections: 4}); err != nil {
		t.Fatal(err)
	}
	var up atomic.Bool
	lazy := keyseq.NewLazy(func(context.Context) (keyseq.ClosingStore, error) {
		if !up.Load() {
			return nil, fmt.Errorf("%w: down", frond.ErrStoreUnavailable)
		}
		return mem, nil
	})
	sp := keyseq.NewSpaces(lazy, keyseq.Owner{Token: "a", Addr: "a"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	defer sp.Close(ctx)
	if _, _, err := sp.Next(ctx, "msgs", "k", 1, false); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("a request with the store down: %v", err)
	}
	up.Store(true)
	if v, _, err := sp.Next(ctx, "msgs", "k", 1, false); err != nil || v != 1 {
		t.Fatalf("a request once the store is up: %d, %v", v, err)
	}
	list, err := sp.List(ctx)
	if err != nil || len(list) != 1 || len(list[0].Held) != 4 {
		t.Fatalf("the space once started: %+v, %v", list, err)
	}
}

// countingStore counts the space lookups that reach the store.
type countingStore struct {
	*keyseq.MemLeases
	lookups atomic.Int64
}

func (c *countingStore) LookupSpace(ctx context.Context, name string) (keyseq.Space, error) {
	c.lookups.Add(1)
	return c.MemLeases.LookupSpace(ctx, name)
}

// Issue 59, items 3 and 7: requests naming every space start at most
// MaxSpaces of them on a node (the one asked for least recently is stopped,
// its sections given back); a name that is no space costs one store read a
// second, not one a request.
func TestSpaces_Bounded(t *testing.T) {
	ctx := testenv.Ctx(t)
	st := &countingStore{MemLeases: &keyseq.MemLeases{}}
	for i := range 5 {
		if err := st.CreateSpace(ctx, keyseq.Space{Name: fmt.Sprintf("s%d", i), Step: 10, Sections: 2, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	sp := keyseq.NewSpaces(st, keyseq.Owner{Token: "a", Addr: "a"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler), MaxSpaces: 2, MinResidency: -1}, nil)
	defer sp.Close(ctx)
	for i := range 5 {
		if _, _, err := sp.Next(ctx, fmt.Sprintf("s%d", i), "k", 1, false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct times of use
	}
	stats := sp.Stats()
	if len(stats) != 2 || stats[0].Name != "s3" || stats[1].Name != "s4" {
		t.Fatalf("spaces served: %+v, want the last two asked for", stats)
	}
	// s0 was stopped cleanly: its sections are free for another node.
	tb, err := st.Read(ctx, "s0", 2)
	if err != nil || tb.Owners[0].Token != "" || tb.Owners[1].Token != "" {
		t.Fatalf("s0's sections after it was stopped: %+v, %v", tb, err)
	}
	before := st.lookups.Load()
	for range 100 {
		if _, _, err := sp.Next(ctx, "nope", "k", 1, false); !errors.Is(err, keyseq.ErrSpaceNotFound) {
			t.Fatal(err)
		}
	}
	if n := st.lookups.Load() - before; n != 1 {
		t.Fatalf("100 requests for a space that does not exist read the store %d times", n)
	}
}

// Issue 58, item 5: a node that stops cleanly gives its sections back
// (Leave) while it still listens; a request that reaches it meanwhile is
// sent on to whoever owns the key's section now (read from the store),
// not refused: a clean stop answers no 503. Close (the store closed too)
// answers ErrClosed.
func TestSpaces_LeftNodeSendsOn(t *testing.T) {
	ctx := testenv.Ctx(t)
	st := &keyseq.MemLeases{}
	o := keyseq.NodeOptions{TTL: time.Second, Logger: slog.New(slog.DiscardHandler)}
	byAddr := map[string]*keyseq.Spaces{}
	var forwards atomic.Int64
	fw := func(ctx context.Context, addr, space, key string, n int64, _ keyseq.Peer) (int64, int64, error) {
		forwards.Add(1)
		return byAddr[addr].Next(ctx, space, key, n, true)
	}
	a := keyseq.NewSpaces(st, keyseq.Owner{Token: "ta", Addr: "a"}, o, fw)
	b := keyseq.NewSpaces(st, keyseq.Owner{Token: "tb", Addr: "b"}, o, fw)
	byAddr["a"], byAddr["b"] = a, b
	defer a.Close(ctx)
	sp, err := a.Create(ctx, keyseq.Space{Name: "left", Step: 100, Sections: 8})
	if err != nil {
		t.Fatal(err)
	}
	// b serves keys of its own sections first.
	last := map[string]int64{}
	for i := range 64 {
		key := fmt.Sprintf("k%d", i)
		first, _, err := b.Next(ctx, sp.Name, key, 1, false)
		if err != nil {
			t.Fatalf("%s from b: %v", key, err)
		}
		last[key] = first
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	before := forwards.Load()
	for key, prev := range last {
		first, _, err := b.Next(ctx, sp.Name, key, 1, false)
		if err != nil {
			t.Fatalf("%s from b after it left: %v", key, err)
		}
		if first <= prev {
			t.Fatalf("%s: %d after %d", key, first, prev)
		}
	}
	if forwards.Load() == before {
		t.Fatal("b answered after it left: nothing sent on")
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Next(ctx, sp.Name, "k1", 1, false); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("next after close: %v", err)
	}
}

// Issue 59, item 3: a space asked nothing on a node for IdleAfter is
// stopped there (its sections given back), so that lease rounds run only
// for the spaces in use, not for every space ever asked for; the next
// request starts it again, its values above the earlier ones.
func TestSpaces_IdleStopped(t *testing.T) {
	ctx := testenv.Ctx(t)
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var sp *keyseq.Spaces
	// Time passes as the rounds run: every 10 s, a round of each space
	// still running (a round is no request: it does not keep a space).
	advance := func(d time.Duration) {
		for step := time.Duration(0); step < d; step += 10 * time.Second {
			mu.Lock()
			now = now.Add(10 * time.Second)
			mu.Unlock()
			for _, st := range sp.Stats() {
				keyseq.RoundSpace(ctx, sp, st.Name)
			}
		}
	}
	st := &keyseq.MemLeases{Now: clock}
	sp = keyseq.NewSpaces(st, keyseq.Owner{Token: "a", Addr: "a"}, keyseq.NodeOptions{TTL: time.Minute, Clock: clock, IdleAfter: 10 * time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	defer sp.Close(ctx)
	last := map[string]int64{}
	next := func(space string) {
		t.Helper()
		first, _, err := sp.Next(ctx, space, "k", 1, false)
		if err != nil {
			t.Fatalf("%s: %v", space, err)
		}
		if first <= last[space] {
			t.Fatalf("%s: %d after %d", space, first, last[space])
		}
		last[space] = first
	}
	for _, name := range []string{"idle", "busy"} {
		if _, err := sp.Create(ctx, keyseq.Space{Name: name, Step: 10, Sections: 2, Slots: 4}); err != nil {
			t.Fatal(err)
		}
		next(name)
	}
	advance(6 * time.Minute)
	next("busy")
	if n := sp.StopIdle(ctx); n != 0 {
		t.Fatalf("%d spaces stopped before any was idle for 10 minutes", n)
	}
	advance(5 * time.Minute) // idle: 11 minutes; busy: 5
	if n := sp.StopIdle(ctx); n != 1 {
		t.Fatalf("%d spaces stopped, want 1", n)
	}
	if stats := sp.Stats(); len(stats) != 1 || stats[0].Name != "busy" {
		t.Fatalf("spaces running: %+v, want busy alone", stats)
	}
	tb, err := st.Read(ctx, "idle", 2)
	if err != nil || tb.Owners[0].Token != "" || tb.Owners[1].Token != "" {
		t.Fatalf("idle's sections after it stopped: %+v, %v", tb, err)
	}
	next("idle") // started again
	next("busy")
	if stats := sp.Stats(); len(stats) != 2 {
		t.Fatalf("spaces running: %+v, want both", stats)
	}
}

// cuttableStore is a node's way to a shared store, which the test cuts:
// every lease call fails meanwhile (the space itself is read once, before).
type cuttableStore struct {
	keyseq.SpaceStore
	cut atomic.Bool
}

var errCut = fmt.Errorf("%w: cut from the node", frond.ErrStoreUnavailable)

func (c *cuttableStore) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.SpaceStore.Take(ctx, space, sections, me, ttl, step)
}

func (c *cuttableStore) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.SpaceStore.Renew(ctx, space, me, ttl)
}

func (c *cuttableStore) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.SpaceStore.RaiseOwned(ctx, space, sections, step, me)
}

func (c *cuttableStore) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if c.cut.Load() {
		return errCut
	}
	return c.SpaceStore.Release(ctx, space, give, me)
}

func (c *cuttableStore) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	if c.cut.Load() {
		return keyseq.Table{}, errCut
	}
	return c.SpaceStore.Read(ctx, space, sections)
}

// A node cut from the store (its rounds fail) while the other nodes reach
// it: once they took its sections, a request that reaches it for one of
// them is sent to the members it last saw, and answered by the one that
// took it. Before, it waited a lease for a round that could not run and
// refused (the chaos suite's 7 s outages of a section during a 9 s cut:
// clients that asked the cut node waited 3 s each, then were refused).
func TestSpaces_CutNodeRelays(t *testing.T) {
	ctx := testenv.Ctx(t)
	mem := &keyseq.MemLeases{}
	o := keyseq.NodeOptions{TTL: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	byAddr := map[string]*keyseq.Spaces{}
	fw := func(ctx context.Context, addr, space, key string, n int64, _ keyseq.Peer) (int64, int64, error) {
		first, last, err := byAddr[addr].Next(ctx, space, key, n, true)
		if err != nil && errors.Is(err, frond.ErrStoreUnavailable) {
			err = fmt.Errorf("%w: %w", keyseq.ErrOwnerMoved, err) // as SeqForwarder reads a 503
		}
		return first, last, err
	}
	cstore := &cuttableStore{SpaceStore: mem}
	a := keyseq.NewSpaces(mem, keyseq.Owner{Token: "ta", Addr: "a"}, o, fw)
	b := keyseq.NewSpaces(mem, keyseq.Owner{Token: "tb", Addr: "b"}, o, fw)
	c := keyseq.NewSpaces(cstore, keyseq.Owner{Token: "tc", Addr: "c"}, o, fw)
	byAddr["a"], byAddr["b"], byAddr["c"] = a, b, c
	for _, s := range []*keyseq.Spaces{a, b, c} {
		defer s.Close(ctx)
	}
	sp, err := a.Create(ctx, keyseq.Space{Name: "cut", Step: 100, Sections: 6})
	if err != nil {
		t.Fatal(err)
	}
	held := func(s *keyseq.Spaces) []int {
		list, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range list {
			if st.Name == sp.Name {
				return st.Held
			}
		}
		return nil
	}
	// Every node serves its share, 2 sections each.
	last := map[string]int64{}
	next := func(s *keyseq.Spaces, key string) error {
		first, _, err := s.Next(ctx, sp.Name, key, 1, false)
		if err != nil {
			return err
		}
		if first <= last[key] {
			t.Fatalf("%s from %s: %d after %d", key, s.Me().Addr, first, last[key])
		}
		last[key] = first
		return nil
	}
	waitFor := func(what string, ok func() bool) {
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within 20 s: %s (held: a %v, b %v, c %v)", what, held(a), held(b), held(c))
			}
			for _, s := range []*keyseq.Spaces{a, b, c} {
				next(s, "warm") // starts the space on each node; refusals are fine here
			}
		}
	}
	waitFor("every node holds 2 sections", func() bool { return len(held(a)) == 2 && len(held(b)) == 2 && len(held(c)) == 2 })
	var keys []string // a key of each of c's sections
	for _, i := range held(c) {
		for k := 0; ; k++ {
			if key := fmt.Sprintf("k%d", k); keyseq.SectionOf(key, sp.Sections) == i {
				keys = append(keys, key)
				break
			}
		}
	}
	for _, key := range keys {
		if err := next(c, key); err != nil {
			t.Fatalf("%s from c before the cut: %v", key, err)
		}
	}
	cstore.cut.Store(true)
	waitFor("a and b took c's sections", func() bool { return len(held(a))+len(held(b)) == 6 })
	for _, key := range keys {
		for _, s := range []*keyseq.Spaces{c, a, b} {
			if err := next(s, key); err != nil {
				t.Fatalf("%s from %s, c cut from the store and its section taken by another: %v", key, s.Me().Addr, err)
			}
		}
	}
}

func TestSectionsText(t *testing.T) {
	many := make([]int, 65536)
	for i := range many {
		many[i] = i
	}
	var odd []int
	for i := 1; i < 100; i += 2 {
		odd = append(odd, i)
	}
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{7}, "7"},
		{[]int{3, 1, 2, 2, 9, 5, 6}, "1-3 5-6 9"},
		{many, "0-65535"},
		{odd, "1 3 5 7 9 11 13 15 17 19 21 23 25 27 29 31 and 34 more"},
	} {
		if got := keyseq.SectionsText(c.in); got != c.want {
			t.Errorf("SectionsText(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Issue 69: a space of 65,536 sections under a 1 s lease had its rounds
// read 196,608 sections a second from SQLite: they ran past their
// deadline, every lease lapsed, and every key answered 503. What the
// rounds of a node's spaces read a second is bounded
// (NodeOptions.MaxSectionReads): a space past it alone is refused at
// creation and not started; past it with the others running, the one
// asked least recently is stopped first, unless asked within
// MinResidency.
func TestSpaces_SectionReadsBounded(t *testing.T) {
	ctx := testenv.Ctx(t)
	st := &keyseq.MemLeases{}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := keyseq.NewSpaces(st, keyseq.Owner{Token: "a", Addr: "a"}, keyseq.NodeOptions{TTL: 3 * time.Second, Clock: clock,
		Logger: slog.New(slog.DiscardHandler), MaxSectionReads: 100}, nil)
	defer sp.Close(ctx)
	// 101 sections under a 3 s lease: 101 a second.
	_, err := sp.Create(ctx, keyseq.Space{Name: "big", Step: 10, Sections: 101})
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_section_reads") || !strings.Contains(err.Error(), "at most 100 sections") {
		t.Fatalf("a space past max_section_reads created: %v", err)
	}
	// Made by a node with a higher limit: not started here.
	if err := st.CreateSpace(ctx, keyseq.Space{Name: "big", Step: 10, Sections: 101, Slots: 4}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sp.Next(ctx, "big", "k", 1, false); !errors.Is(err, frond.ErrStoreUnavailable) || len(sp.Stats()) != 0 {
		t.Fatalf("a space past max_section_reads started: %v, %d running", err, len(sp.Stats()))
	}
	for _, name := range []string{"a", "b"} {
		if err := st.CreateSpace(ctx, keyseq.Space{Name: name, Step: 10, Sections: 60, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := sp.Next(ctx, "a", "k", 1, false); err != nil {
		t.Fatal(err)
	}
	// a and b together: 120 a second. a was asked just now: b is refused.
	if _, _, err := sp.Next(ctx, "b", "k", 1, false); !errors.Is(err, keyseq.ErrSpacesFull) || !strings.Contains(err.Error(), "max_section_reads") {
		t.Fatalf("b started past max_section_reads while a was in use: %v", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if _, _, err := sp.Next(ctx, "b", "k", 1, false); err != nil {
		t.Fatal(err)
	}
	if s := sp.Stats(); len(s) != 1 || s[0].Name != "b" {
		t.Fatalf("running: %+v, want b alone (a stopped to make room)", s)
	}
}
