package etcdregistry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/registrytest"
	"github.com/frond-id/frond/storetest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRegistry_Conformance(t *testing.T) {
	ep := storetest.SkipUnlessSet(t, "FROND_TEST_ETCD_ENDPOINTS")
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
	ep := storetest.SkipUnlessSet(b, "FROND_TEST_ETCD_ENDPOINTS")
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
