package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/etcdstore"
	"github.com/frond-id/frond/storetest"
)

// FROND_TEST_ETCD_ENDPOINTS: host:port of an etcd server for the tests.

func TestEtcd_Conformance(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	storetest.RunSegmentStore(t, func(t *testing.T) frond.SegmentStore {
		s, err := etcdstore.Open(context.Background(), "etcd://"+ep+"?frond_prefix=/frondtest/")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestEtcd_Outage(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	storetest.RunOutage(t, ep, func(t *testing.T, addr string, timeout time.Duration) frond.SegmentStore {
		s, err := etcdstore.Open(context.Background(), fmt.Sprintf("etcd://%s?frond_prefix=/frondtest/&frond_timeout=%s", addr, timeout))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpen_BadURL(t *testing.T) {
	for _, bad := range []string{"http://x", "etcd://", "etcd://a:1?frond_timeout=soon", "etcd://a:1?colour=blue", "etcd://a b:1"} {
		if _, err := etcdstore.Open(context.Background(), bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q): %v", bad, err)
		}
	}
}

// The place of a store is its key prefix's: each test of the suite gets a
// prefix of its own.
func TestEtcd_Placed(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener {
		u := fmt.Sprintf("etcd://%s?frond_prefix=/frondtest-place-%d/", ep, time.Now().UnixNano())
		return func(t *testing.T) frond.SegmentStore {
			s, err := etcdstore.Open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
