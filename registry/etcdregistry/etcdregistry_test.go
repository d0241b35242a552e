package etcdregistry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/registrytest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRegistry_Conformance(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	open := func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
		host := ep
		if down {
			host = "127.0.0.1:1"
		}
		r, err := Open(context.Background(), "etcd://"+host+"?frond_timeout=3s&frond_prefix=/frondtest/"+ns+"/", o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	registrytest.Run(t, registrytest.Config{
		Open: open, SameIDOnRestart: true, Recycles: true, Peers: true,
		Lose: func(t *testing.T, wr frond.WorkerRegistry) {
			lease := wr.(*registry.Protocol).Held().Ext.(claim).lease
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Revoke(context.Background(), lease); err != nil {
				t.Fatal(err)
			}
		},
	})
}

func TestOpen_BadURL(t *testing.T) {
	for _, u := range []string{"zk://x", "etcd://", "etcd://a:1?frond_nope=1", "etcd://a:1?frond_timeout=-1s", "etcd://a b"} {
		if _, err := Open(context.Background(), u, registry.Options{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
}

// BenchmarkAcquire measures what a start costs: open, acquire, release.
func BenchmarkAcquire(b *testing.B) {
	ep := testenv.Getenv(b, "FROND_TEST_ETCD_ENDPOINTS")
	prefix := fmt.Sprintf("/frondtest/bench_%d/", time.Now().UnixNano())
	for i := 0; b.Loop(); i++ {
		r, err := Open(context.Background(), "etcd://"+ep+"?frond_prefix="+prefix, registry.Options{Host: "10.9.9.9", Port: 1 + i%500})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Acquire(context.Background(), 1023); err != nil {
			b.Fatal(err)
		}
		if err := r.Release(context.Background(), time.Now()); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// refuser forwards a fixed address to target and can stop listening, so
// that connections are refused, as with an etcd that is down.
type refuser struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func (r *refuser) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", r.target)
			if err != nil {
				in.Close()
				continue
			}
			r.mu.Lock()
			r.conns = append(r.conns, in, out)
			r.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
}

func (r *refuser) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ln.Close()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// After etcd was down for 10 s (past the lease; connections refused) and
// comes back, the registry holds an ID again within about a second: the
// client's reconnect backoff is capped at 1 s. gRPC's default grows by 1.6
// from 1 s to 2 minutes: after 10 s of refusals the next attempt came up to
// 6 s after etcd returned.
func TestAcquire_SoonAfterEtcdReturns(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	fw := &refuser{t: t, addr: "127.0.0.1:0", target: strings.Split(ep, ",")[0]}
	fw.up()
	defer fw.down()
	r, err := Open(context.Background(), "etcd://"+fw.addr+"?frond_timeout=1s&frond_prefix=/frondtest/"+registrytest.Namespace(t)+"/",
		registry.Options{Host: "10.1.1.1", LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := r.Acquire(context.Background(), 1023)
	if err != nil {
		t.Fatal(err)
	}
	fw.down()
	select {
	case <-w.Lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed with etcd down past the lease")
	}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		r.Acquire(ctx, 1023) // fails while down, as the service's retries do
		cancel()
	}
	fw.up()
	back := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := r.Acquire(ctx, 1023)
		cancel()
		if err == nil {
			break
		}
		if time.Since(back) > 20*time.Second {
			t.Fatalf("no ID 20 s after etcd returned: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(back)
	t.Logf("held again %v after etcd returned", took.Round(time.Millisecond))
	if took > 2500*time.Millisecond {
		t.Fatalf("held again only %v after etcd returned; want about a second", took)
	}
}

// A peer killed a moment ago (its live key stays until its lease runs out)
// does not answer the clock ping: the measuring node waits about a second
// for it, not longer (it waited 3 s, holding up a restart).
func TestPeerOffsets_DeadPeerBounded(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	url := "etcd://" + ep + "?frond_prefix=/frondtest/" + registrytest.Namespace(t) + "/"
	open := func(port int) *registry.Protocol {
		r, err := Open(context.Background(), url, registry.Options{Host: "10.2.2.2", Port: port, LeaseTTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if _, err := r.Acquire(context.Background(), 1023); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, dead := open(1), open(2)
	if err := dead.Abandon(); err != nil { // kill -9: the live key stays for 30 s
		t.Fatal(err)
	}
	start := time.Now()
	offs, err := a.PeerOffsets(context.Background())
	took := time.Since(start)
	if err != nil || len(offs) != 0 {
		t.Fatalf("PeerOffsets with only a dead peer: %v, %v", offs, err)
	}
	t.Logf("waited %v for a dead peer", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Fatalf("waited %v for a dead peer; want about %v", took, peerWait)
	}
}
