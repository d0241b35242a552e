package keyseq_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
			ttl := 300 * time.Millisecond
			if name == "etcd" {
				ttl = time.Second // etcd's unit
			}
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
