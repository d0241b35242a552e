package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/redisstore"
	goredis "github.com/redis/go-redis/v9"
)

// redisProc is a redis-server of the test's own with a client of it.
type redisProc struct {
	*testenv.RedisServer
	c *goredis.Client
}

func startRedisProc(t testing.TB, args ...string) *redisProc {
	t.Helper()
	r := &redisProc{RedisServer: testenv.StartRedis(t, args...)}
	r.c = goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	t.Cleanup(func() { r.c.Close() })
	return r
}

// waitLinked waits until primary p counts n replicas online (past their
// first sync: WAIT counts those only).
func waitLinked(t testing.TB, p *redisProc, n int) {
	t.Helper()
	testenv.WaitFor(t, fmt.Sprintf("%d replicas online", n), func() bool {
		info, err := p.c.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, fmt.Sprintf("connected_slaves:%d\r", n)) && strings.Count(info, "state=online") == n
	})
}

// frond_wait=1: an allocation's range is handed out only once a replica
// has it, so a replica promoted after the primary dies holds every range
// handed out; with the replica gone, allocations fail (their ranges are
// skipped), never answered unreplicated (issue 67).
func TestRedis_WaitForReplicas(t *testing.T) {
	primary := startRedisProc(t, "--repl-diskless-sync-delay", "0")
	replica := startRedisProc(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	waitLinked(t, primary, 1)
	ctx := context.Background()
	// A replica that is up acknowledges, however busy the machine (CI runs
	// this beside processes spinning on every core): a long wait; the one
	// that meets no replica, short.
	u := fmt.Sprintf("redis://127.0.0.1:%d/0?frond_wait=1&frond_wait_timeout=20s&frond_timeout=30s", primary.Port)
	s, err := redisstore.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		a, err := s.Allocate(ctx, "order", 0)
		if err != nil {
			t.Fatal(err)
		}
		// Read at once from the replica: it has the raise already.
		got, err := replica.c.Get(ctx, "frond:max:order").Int64()
		if err != nil || got < a.End {
			t.Fatalf("allocation %d ends at %d; the replica has %d (%v)", i, a.End, got, err)
		}
	}
	if _, err := s.AllocateIDs(ctx, "order", 1); err != nil && !errors.Is(err, frond.ErrNotSequence) {
		t.Fatal(err)
	}
	replica.Stop()
	short, err := redisstore.Open(ctx, fmt.Sprintf("redis://127.0.0.1:%d/0?frond_wait=1&frond_wait_timeout=100ms", primary.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	before, _ := primary.c.Get(ctx, "frond:max:order").Int64()
	_, err = short.Allocate(ctx, "order", 0)
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("an allocation no replica acknowledged: %v, want ErrStoreUnavailable", err)
	}
	if after, _ := primary.c.Get(ctx, "frond:max:order").Int64(); after != before+100 {
		t.Fatalf("max_id %d -> %d: the script ran once, its range skipped", before, after)
	}
	for _, bad := range []string{"frond_wait=-1", "frond_wait=17", "frond_wait=x", "frond_wait_timeout=0s", "frond_wait_timeout=2m", "frond_wait=1&frond_wait_timeout=5s", "frond_wait=1&frond_wait_timeout=3s&frond_timeout=2s"} {
		if err := redisstore.Check(fmt.Sprintf("redis://127.0.0.1:%d/0?%s", primary.Port, bad)); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// BenchmarkAllocate_Wait measures what frond_wait=1 costs a segment load:
// go test -run - -bench Allocate_Wait -count 6 ./store/redisstore | benchstat
func BenchmarkAllocate_Wait(b *testing.B) {
	primary := startRedisProc(b, "--repl-diskless-sync-delay", "0")
	startRedisProc(b, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	waitLinked(b, primary, 1)
	for _, wait := range []int{0, 1} {
		b.Run(fmt.Sprintf("wait=%d", wait), func(b *testing.B) {
			ctx := context.Background()
			s, err := redisstore.Open(ctx, fmt.Sprintf("redis://127.0.0.1:%d/0?frond_wait=%d&frond_prefix=b%d:", primary.Port, wait, time.Now().UnixNano()))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 1000}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Allocate(ctx, "order", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
