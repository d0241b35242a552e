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
	clientv3 "go.etcd.io/etcd/client/v3"
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

// A value under the tags' prefix that does not decode is skipped, and the
// page goes on past it: a short page is the last one to a pager (it
// stopped there, the tags after it never listed).
func TestEtcd_TagsAfter_SkipsUnreadable(t *testing.T) {
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	prefix := fmt.Sprintf("/frondtest-page-%d/", time.Now().UnixNano())
	s, err := etcdstore.Open(context.Background(), "etcd://"+ep+"?frond_prefix="+prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := testenv.Ctx(t)
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := s.CreateTag(ctx, frond.Tag{Name: name, Step: 10}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Put(ctx, prefix+"tags/b2", "not json"); err != nil {
		t.Fatal(err)
	}
	page, err := s.TagsAfter(ctx, "", 3)
	if err != nil || len(page) != 3 || page[0].Name != "a" || page[1].Name != "b" || page[2].Name != "c" {
		t.Fatalf("TagsAfter(\"\", 3) = %+v, %v; want a, b, c", page, err)
	}
	if page, err := s.TagsAfter(ctx, "c", 3); err != nil || len(page) != 1 || page[0].Name != "d" {
		t.Fatalf("TagsAfter(c, 3) = %+v, %v; want d", page, err)
	}
}
