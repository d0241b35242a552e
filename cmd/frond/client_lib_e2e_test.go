package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	frondclient "github.com/frond-id/frond/client"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/storetest"
)

// The client library against real frond serve processes sharing a MySQL
// store: four clients on two servers, one server killed (kill -9) and
// started again mid-run on the same address, then a store outage shorter
// than the leases last. Every ID is unique, each caller's IDs increase, and
// no call fails.
func TestE2E_ClientLibrary(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	p := storetest.StartProxy(t, storetest.HostOf(t, raw, "3306"))
	store := storetest.WithHost(t, raw, p.Addr()) + "?frond_timeout=1s"
	tag := "client-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
	createTagIn(t, raw, tag, 1, 1000)
	dirA, dirB := t.TempDir(), t.TempDir()
	a := mustStart(t, dirA, "--store", store, "--node", "1", "--grpc-addr", "127.0.0.1:0")
	b := mustStart(t, dirB, "--store", store, "--node", "2", "--grpc-addr", "127.0.0.1:0")
	addrA, addrB := a.listenAddr("gRPC"), b.listenAddr("gRPC")

	var clients []*frondclient.Client
	for i := range 4 {
		servers := []string{addrA, addrB}
		if i%2 == 1 {
			servers = []string{addrB, addrA}
		}
		c, err := frondclient.New(frondclient.Options{Servers: servers, MinLease: 20_000, MaxLease: 20_000,
			BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var (
		mu    sync.Mutex
		seen  = map[int64]bool{}
		wg    sync.WaitGroup
		stop  atomic.Bool
		fails atomic.Int64
	)
	for _, c := range clients {
		for range 2 {
			wg.Go(func() {
				var mine []int64
				tick := time.NewTicker(100 * time.Microsecond) // about 10,000 IDs/s per caller: a lease lasts 2 s
				defer tick.Stop()
				for !stop.Load() {
					<-tick.C
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					id, err := c.Next(ctx, tag)
					cancel()
					if err != nil {
						if fails.Add(1) <= 3 {
							t.Errorf("Next: %v", err)
						}
						continue
					}
					if len(mine) > 0 && id <= mine[len(mine)-1] {
						t.Errorf("a caller got %d after %d", id, mine[len(mine)-1])
						return
					}
					mine = append(mine, id)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range mine {
					if seen[id] {
						t.Errorf("ID %d handed out twice", id)
						return
					}
					seen[id] = true
				}
			})
		}
	}
	time.Sleep(time.Second)
	a.stop(syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond)
	mustStart(t, dirA, "--store", store, "--node", "1", "--grpc-addr", addrA)
	time.Sleep(time.Second)
	p.Cut() // shorter than a lease lasts
	time.Sleep(700 * time.Millisecond)
	p.Restore()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	var failovers uint64
	for _, c := range clients {
		failovers += c.Stats().Failovers
	}
	t.Logf("%d unique IDs, %d failed calls, %d fail-overs", len(seen), fails.Load(), failovers)
	if len(seen) < 10_000 || fails.Load() != 0 {
		t.Fatalf("%d IDs, %d failed calls", len(seen), fails.Load())
	}
}
