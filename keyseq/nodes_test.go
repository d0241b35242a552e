package keyseq_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
)

// Three nodes on one lease store (SQLite, MariaDB, PostgreSQL, Redis, etcd), running their rounds, clients on
// many keys following the owner each refusal names; one node is killed
// (its leases run out) and one stopped cleanly, and new ones start: every
// key's values strictly increase, and the sections are served again.
func TestNodes_SQL(t *testing.T) {
	targets := map[string]func(t *testing.T) keyseq.LeaseStore{
		"redis": func(t *testing.T) keyseq.LeaseStore { return openRedis(t) },
		"etcd":  func(t *testing.T) keyseq.LeaseStore { return openEtcd(t) },
	}
	for name, url := range sqlTargets(t) {
		targets[name] = func(t *testing.T) keyseq.LeaseStore { return openSQL(t, url) }
	}
	for name, open := range targets {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Ctx(t)
			st := open(t)
			sp := keyseq.Space{Name: fmt.Sprintf("n%d", time.Now().UnixNano()), Step: 50, Sections: 16, Slots: 64}
			// A second (etcd's unit): with 300 ms, a database slowed by a
			// busy machine (.ci/busy.sh: four spinning processes on two
			// cores beside it) answered rounds after their leases ran out,
			// and the nodes churned sections instead of answering
			// (PostgreSQL: fewer than 500 answers in 20 s, on the old
			// code too).
			ttl := time.Second
			quiet := slog.New(slog.DiscardHandler)
			var mu sync.Mutex
			nodes := map[string]*keyseq.Node{}
			seq := 0
			start := func() *keyseq.Node {
				mu.Lock()
				defer mu.Unlock()
				seq++
				me := keyseq.Owner{Token: fmt.Sprintf("t%d", seq), Addr: fmt.Sprintf("n%d", seq)}
				n, err := keyseq.NewNode(sp, st, me, keyseq.NodeOptions{TTL: ttl, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				nodes[me.Addr] = n
				n.Run()
				return n
			}
			pick := func(addr string, rnd *rand.Rand) *keyseq.Node {
				mu.Lock()
				defer mu.Unlock()
				if n, ok := nodes[addr]; ok {
					return n
				}
				for _, n := range nodes {
					if rnd.IntN(2) == 0 {
						return n
					}
				}
				for _, n := range nodes {
					return n
				}
				return nil
			}
			a, b := start(), start()
			start()
			const keys = 200
			var locks [keys]sync.Mutex
			var last [keys]int64
			var answered atomic.Int64
			var bad atomic.Pointer[string]
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for c := range 4 {
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(uint64(c), 3))
					for {
						select {
						case <-stop:
							return
						default:
						}
						k := rnd.IntN(keys)
						n := pick("", rnd)
						locks[k].Lock()
						for hop := 0; hop < 3; hop++ {
							first, end, err := n.Next(ctx, fmt.Sprintf("key-%d", k), 1+rnd.Int64N(3))
							var no *keyseq.NotOwnerError
							if errors.As(err, &no) && no.Addr != "" {
								n = pick(no.Addr, rnd)
								continue
							}
							if err == nil {
								if first <= last[k] {
									msg := fmt.Sprintf("key-%d: %d..%d after %d", k, first, end, last[k])
									bad.CompareAndSwap(nil, &msg)
								}
								last[k] = end
								answered.Add(1)
							} else if !errors.Is(err, keyseq.ErrNotOwner) && !errors.Is(err, frond.ErrClosed) && !errors.Is(err, frond.ErrStoreUnavailable) {
								msg := err.Error()
								bad.CompareAndSwap(nil, &msg)
							}
							break
						}
						locks[k].Unlock()
					}
				})
			}
			// Wait for answers, then kill one, stop one, start two.
			waitFor := func(what string, ok func() bool) {
				deadline := time.Now().Add(20 * time.Second)
				for !ok() {
					if time.Now().After(deadline) {
						t.Fatalf("waited 20s for %s", what)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitFor("answers", func() bool { return answered.Load() > 500 })
			keyseq.Kill(a)
			mu.Lock()
			delete(nodes, "n1")
			mu.Unlock()
			start()
			before := answered.Load()
			waitFor("answers after a kill", func() bool { return answered.Load() > before+500 })
			b.Close(ctx)
			mu.Lock()
			delete(nodes, "n2")
			mu.Unlock()
			start()
			before = answered.Load()
			waitFor("answers after a stop", func() bool { return answered.Load() > before+500 })
			// Every section is served by one live node once the leases settle.
			waitFor("every section served", func() bool {
				mu.Lock()
				defer mu.Unlock()
				seen := map[int]int{}
				for _, n := range nodes {
					for _, s := range n.Held() {
						seen[s]++
					}
				}
				if len(seen) != sp.Sections {
					return false
				}
				for _, c := range seen {
					if c != 1 {
						return false
					}
				}
				return true
			})
			close(stop)
			wg.Wait()
			for _, n := range nodes {
				n.Close(ctx)
			}
			if p := bad.Load(); p != nil {
				t.Fatal(*p)
			}
		})
	}
}

// Issue 58, item 5: a node killed (kill -9) and started again as a new
// member: its sections are taken by the nodes that watched its leases run
// out, beyond their share, rather than left to the new node, which has
// watched them for no lease yet (a lease more: 5.3-5.6 s unanswered with a
// 3 s lease in the chaos run). Served again within a lease and a third of
// the kill; the shares even out afterwards.
func TestNodes_KilledOwnerRescued(t *testing.T) {
	ctx := testenv.Ctx(t)
	const ttl = 3 * time.Second
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	mem := &keyseq.MemLeases{Now: clock}
	sp := keyseq.Space{Name: "rescue", Step: 100, Sections: 12}
	if err := mem.CreateSpace(ctx, sp); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	node := func(name string) *keyseq.Node {
		n, err := keyseq.NewNode(sp, mem, keyseq.Owner{Token: name, Addr: name}, keyseq.NodeOptions{TTL: ttl, Clock: clock, Logger: quiet, Rand: rand.New(rand.NewPCG(1, uint64(len(name))))})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b, c := node("a"), node("b"), node("c")
	live := []*keyseq.Node{a, b, c}
	// Rounds every tenth of a lease (as often as a node short of its
	// share runs them) until the three hold 4 sections each.
	step := func() {
		now = now.Add(ttl / 10)
		for _, n := range live {
			n.Round(ctx)
		}
	}
	for range 100 {
		step()
		if len(a.Held()) == 4 && len(b.Held()) == 4 && len(c.Held()) == 4 {
			break
		}
	}
	gone := c.Held()
	if len(gone) != 4 {
		t.Fatalf("held: a %v, b %v, c %v", a.Held(), b.Held(), c.Held())
	}
	killed := now
	keyseq.Kill(c)
	live = live[:2]
	served := func() bool {
		for _, s := range gone {
			if !slices.Contains(a.Held(), s) && !slices.Contains(b.Held(), s) && (len(live) < 3 || !slices.Contains(live[2].Held(), s)) {
				return false
			}
		}
		return true
	}
	for !served() {
		if now.Sub(killed) >= 2*time.Second && len(live) == 2 {
			live = append(live, node("c2")) // restarted: a new member
		}
		if now.Sub(killed) > 2*ttl {
			t.Fatalf("c's sections %v not served %v after the kill: a %v, b %v", gone, now.Sub(killed), a.Held(), b.Held())
		}
		step()
	}
	if d := now.Sub(killed); d > ttl+ttl/3 {
		t.Fatalf("c's sections served again %v after the kill: at most a lease and a third (%v)", d, ttl+ttl/3)
	}
	t.Logf("c's sections served again %v after the kill", now.Sub(killed))
	// The shares even out: 4 each again.
	for range 100 {
		step()
		if len(a.Held()) == 4 && len(b.Held()) == 4 && len(live[2].Held()) == 4 {
			return
		}
	}
	t.Fatalf("shares never evened out: a %v, b %v, c2 %v", a.Held(), b.Held(), live[2].Held())
}
