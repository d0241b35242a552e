package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/keyseq/seqstore"
	"github.com/frond-id/frond/store/etcdstore"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest/dbtest"
)

// fencedPair is a keyed sequence store and the segment store on the same
// database, Redis or etcd prefix.
type fencedPair struct {
	keyed   keyseq.LeaseStore
	segment frond.PlacedStore
}

// Issue 68, item 1: a store's lost-data fence is one fact for the keyed
// sequences and the segment tags kept in it. Written by either (a keyed
// node's finding, a segment Guard's), it refuses every take and raise of
// the other's in the same atomic step, and every read of the table shows
// it; lifted, both serve again. Each store gets a database or prefix of
// its own: a fence is the whole store's.
func TestLeaseStores_LostFenceShared(t *testing.T) {
	ctx := context.Background()
	opens := map[string]func(t *testing.T) fencedPair{
		"sqlite": func(t *testing.T) fencedPair {
			return openSQLPair(t, "sqlite://"+filepath.Join(t.TempDir(), "fence.db"))
		},
		"mysql": func(t *testing.T) fencedPair {
			return openSQLPair(t, dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_MYSQL_URL")))
		},
		"postgres": func(t *testing.T) fencedPair {
			return openSQLPair(t, dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")))
		},
		"redis": func(t *testing.T) fencedPair {
			u := redisURL(t)
			k, err := seqstore.OpenRedis(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			s, err := redisstore.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { k.Close(); s.Close() })
			return fencedPair{k, s}
		},
		"etcd": func(t *testing.T) fencedPair {
			ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
			u := fmt.Sprintf("etcd://%s?frond_prefix=/fencetest-%d/", strings.Split(ep, ",")[0], time.Now().UnixNano())
			k, err := seqstore.OpenEtcd(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			s, err := etcdstore.Open(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { k.Close(); s.Close() })
			return fencedPair{k, s}
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			p := open(t)
			runLostFence(t, p)
		})
	}
}

func openSQLPair(t *testing.T, url string) fencedPair {
	k := openSQL(t, url)
	s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return fencedPair{k, s}
}

func runLostFence(t *testing.T, p fencedPair) {
	ctx := testenv.Ctx(t)
	space := fmt.Sprintf("f%d", time.Now().UnixNano())
	me := keyseq.Owner{Token: "aaaa", Addr: "10.0.0.1:8080"}
	pk, ok := p.keyed.(frond.PlaceKeeper)
	if !ok {
		t.Fatalf("%T keeps no place", p.keyed)
	}
	if _, err := p.segment.CreateTag(ctx, frond.Tag{Name: "orders", Step: 10, MaxID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.keyed.Take(ctx, space, []int{0, 1}, me, time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	refused := func(by string) {
		t.Helper()
		_, err := p.keyed.Take(ctx, space, []int{2}, me, time.Minute, 10)
		var f *keyseq.FencedError
		if !errors.As(err, &f) || !errors.Is(err, frond.ErrStoreLostData) {
			t.Fatalf("fenced by %s: a take answered %v", by, err)
		}
		if _, err := p.keyed.RaiseOwned(ctx, space, []int{0}, 10, me); !errors.As(err, &f) {
			t.Fatalf("fenced by %s: a raise answered %v", by, err)
		}
		tab, err := p.keyed.Read(ctx, space, 4)
		if err != nil || keyseq.Fenced(space, tab.Fence) == nil {
			t.Fatalf("fenced by %s: the table reads the place %q (%v)", by, tab.Fence, err)
		}
		if _, err := p.segment.Allocate(ctx, "orders", 0); !errors.Is(err, frond.ErrStoreLostData) {
			t.Fatalf("fenced by %s: the segment store allocated: %v", by, err)
		}
	}
	lift := func(finding string) {
		t.Helper()
		if ok, err := frond.LiftLost(ctx, pk, finding); !ok || err != nil {
			t.Fatalf("lift %q: %v %v", finding, ok, err)
		}
		if _, err := p.keyed.RaiseOwned(ctx, space, []int{0}, 10, me); err != nil {
			t.Fatalf("lifted: %v", err)
		}
		if _, err := p.segment.Allocate(ctx, "orders", 0); err != nil {
			t.Fatalf("lifted: the segment store: %v", err)
		}
	}
	// A keyed node's finding, written through the keyed store.
	keyedFinding := frond.LostFinding(time.Now().Unix(), frond.LostSpace(space))
	if err := frond.FenceLost(ctx, pk, keyedFinding); err != nil {
		t.Fatal(err)
	}
	if got, err := p.segment.Place(ctx); err != nil || got.Lost != keyedFinding {
		t.Fatalf("the segment store reads the place %q (%v), not the keyed finding", got.String(), err)
	}
	refused("a keyed node")
	lift(keyedFinding)
	// A segment Guard's finding, written through the segment store.
	tagFinding := frond.LostFinding(time.Now().Unix(), "orders")
	if err := frond.FenceLost(ctx, p.segment, tagFinding); err != nil {
		t.Fatal(err)
	}
	refused("a segment node")
	lift(tagFinding)
}
