package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/storetest"
	goredis "github.com/redis/go-redis/v9"
)

// FROND_TEST_REDIS_URL: a Redis for the tests (its persistence is checked
// by TestOpen_Volatile).

func url(t *testing.T) string {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "frond_allow_volatile=true&frond_prefix=frondtest:"
}

func TestRedis_Conformance(t *testing.T) {
	u := url(t)
	storetest.RunSegmentStore(t, func(t *testing.T) frond.SegmentStore {
		s, err := redisstore.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A Redis without persistence is refused unless the URL accepts the risk;
// accepted, the store says so.
func TestOpen_Volatile(t *testing.T) {
	base := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	ctx := context.Background()
	s, err := redisstore.Open(ctx, url(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	persistent := len(s.Warnings()) == 0
	s2, err := redisstore.Open(ctx, base)
	if persistent {
		if err != nil {
			t.Fatalf("a persistent Redis was refused: %v", err)
		}
		s2.Close()
		return
	}
	if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "frond_allow_volatile=true") {
		t.Fatalf("volatile Redis without the option: %v", err)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "issued again") {
		t.Fatalf("warnings %v", w)
	}
}

func TestOpen_BadURL(t *testing.T) {
	for _, bad := range []string{"http://x", "redis://x?frond_timeout=soon", "redis://x?frond_allow_volatile=maybe"} {
		if _, err := redisstore.Open(context.Background(), bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q): %v", bad, err)
		}
	}
}

func TestRedis_Outage(t *testing.T) {
	raw := url(t)
	storetest.RunOutage(t, storetest.HostOf(t, raw, "6379"), func(t *testing.T, addr string, timeout time.Duration) frond.SegmentStore {
		s, err := redisstore.Open(context.Background(), storetest.WithHost(t, raw, addr)+"&frond_timeout="+timeout.String())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// A counter key lost while its tag remains (eviction, a careless DEL) is
// refused: INCRBY would restart at 0 and hand out the same IDs again.
func TestRedis_MissingCounterRefused(t *testing.T) {
	u := url(t)
	ctx := context.Background()
	s, err := redisstore.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tag := "lost-" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "")
	if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1000, Step: 10}); err != nil {
		t.Fatal(err)
	}
	opts, _ := goredis.ParseURL(strings.Split(u, "?")[0])
	raw := goredis.NewClient(opts)
	defer raw.Close()
	if err := raw.Del(ctx, "frondtest:max:"+tag).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Allocate(ctx, tag, 0); !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Allocate with the counter gone: %v", err)
	}
	maxID := int64(5000)
	if _, err := s.UpdateTag(ctx, tag, frond.TagUpdate{MaxID: &maxID}); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("UpdateTag with the counter gone: %v", err)
	}
}

// A server that does not answer is an outage (a node retries it in the
// background), not a server refused for its configuration.
func TestOpen_Unreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := redisstore.Open(ctx, "redis://127.0.0.1:1/0?frond_timeout=500ms")
	if !errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("unreachable: %v", err)
	}
}

// The server's persistence is read again by Ping (readiness probes): a
// Redis that stops persisting after the store was opened (CONFIG SET
// appendfsync everysec) shows in Warnings, and one that starts persisting
// clears it. The test Redis keeps nothing; the check is replaced.
func TestRedis_PersistenceReadAgain(t *testing.T) {
	s, err := redisstore.Open(context.Background(), url(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Warnings()) != 1 {
		t.Fatalf("the test Redis persists nothing, but no warning: %v", s.Warnings())
	}
	why := ""
	s.SetPersistenceCheck(0, func(context.Context, *goredis.Client) (string, error) { return why, nil })
	if err := s.Ping(context.Background()); err != nil || len(s.Warnings()) != 0 {
		t.Fatalf("persisting now: %v, %v", s.Warnings(), err)
	}
	why = "syncs its AOF only with appendfsync everysec"
	if err := s.Ping(context.Background()); err != nil || len(s.Warnings()) != 1 || !strings.Contains(s.Warnings()[0], "everysec") || !strings.Contains(s.Warnings()[0], "changed since") {
		t.Fatalf("stopped persisting: %v, %v", s.Warnings(), err)
	}
}

// The place of a store is its key prefix's: each test of the suite gets a
// prefix of its own.
func TestRedis_Placed(t *testing.T) {
	base := strings.Replace(url(t), "frond_prefix=frondtest:", "frond_prefix=frondtest-place-", 1)
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener {
		u := fmt.Sprintf("%s%d:", base, time.Now().UnixNano())
		return func(t *testing.T) frond.SegmentStore {
			s, err := redisstore.Open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
