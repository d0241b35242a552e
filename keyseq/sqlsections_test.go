package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/keyseq/seqstore"
)

// sqlTargets are the databases the SQL section store is tested on:
// SQLite always, MariaDB and PostgreSQL from FROND_TEST_*.
func sqlTargets(t *testing.T) map[string]string {
	return map[string]string{
		"sqlite":   "sqlite://" + filepath.Join(t.TempDir(), "seq.db"),
		"mysql":    testenv.Getenv(t, "FROND_TEST_MYSQL_URL"),
		"postgres": testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"),
	}
}

// redisURL is the test Redis with a prefix of the test's own (and the
// CI's Redis keeps no data on disk: accepted).
func redisURL(t *testing.T) string {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return fmt.Sprintf("%s%sfrond_allow_volatile=true&frond_prefix=keyseqtest:%d:", u, sep, time.Now().UnixNano())
}

func openRedis(t *testing.T) *seqstore.RedisSections {
	t.Helper()
	s, err := seqstore.OpenRedis(context.Background(), redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openEtcd(t *testing.T) *seqstore.EtcdSections {
	t.Helper()
	ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
	s, err := seqstore.OpenEtcd(context.Background(), fmt.Sprintf("etcd://%s?frond_prefix=/keyseqtest-%d/", strings.Split(ep, ",")[0], time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openSQL(t *testing.T, url string) *seqstore.SQLSections {
	t.Helper()
	s, err := seqstore.OpenSQL(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Several clients raise overlapping sets of sections at once: each
// section's ranges are disjoint and follow one another from 1.
func TestSQLSections_Concurrent(t *testing.T) {
	for name, url := range sqlTargets(t) {
		t.Run(name, func(t *testing.T) {
			space := fmt.Sprintf("t%d", time.Now().UnixNano())
			ctx := testenv.Ctx(t)
			var mu sync.Mutex
			got := map[int][]frond.Range{}
			var wg sync.WaitGroup
			for c := range 4 {
				st := openSQL(t, url)
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(uint64(c), 7))
					for range 20 {
						var secs []int
						for s := range 8 {
							if rnd.IntN(2) == 0 {
								secs = append(secs, s)
							}
						}
						if len(secs) == 0 {
							continue
						}
						rs, err := st.Raise(ctx, space, secs, 10)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for k, s := range secs {
							got[s] = append(got[s], rs[k])
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			for s, rs := range got {
				slices.SortFunc(rs, func(a, b frond.Range) int { return int(a.Start - b.Start) })
				next := int64(1)
				for _, r := range rs {
					if r.Start != next || r.Len() != 10 {
						t.Fatalf("section %d: %v after %d", s, r, next)
					}
					next = r.End
				}
			}
			if _, err := openSQL(t, url).Raise(ctx, space, []int{1, 1}, 10); !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("a section named twice: %v", err)
			}
		})
	}
}

// An engine on the SQL section store loads all its sections in one raise,
// and a restart continues above every value given.
func TestSQLSections_Engine(t *testing.T) {
	st := openSQL(t, "sqlite://"+filepath.Join(t.TempDir(), "seq.db"))
	sp := keyseq.Space{Name: "msgs", Step: 100, Sections: 64, Slots: 256}
	ctx := context.Background()
	last := map[string]int64{}
	for round := range 3 {
		e := newEngine(t, st, sp)
		if err := e.Load(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if err := e.Load(ctx, []int{3, 1, 3}); err != nil { // loaded already: nothing to do
			t.Fatal(err)
		}
		for i := range 500 {
			key := fmt.Sprintf("k%d", i%97)
			first, end, err := e.Next(ctx, key, 3)
			if err != nil {
				t.Fatal(err)
			}
			if first <= last[key] {
				t.Fatalf("round %d: %s got %d after %d", round, key, first, last[key])
			}
			last[key] = end
		}
		e.Close()
	}
	if err := newEngine(t, st, sp).Load(ctx, []int{64}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("section 64 of 64: %v", err)
	}
}
