package storetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/benchutil"
	"github.com/frond-id/frond/store/cosidstore"
	"github.com/frond-id/frond/store/etcdstore"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/store/sqlstore"
)

// BenchmarkStores measures each configured store (issue 4; reported, never a
// gate): the latency of one segment fetch on one client (p50, p99), and
// segments per second with 8 clients on one tag and on 8 tags.
//
//	go test -run XXX -bench Stores -benchtime 2000x ./storetest   (with FROND_TEST_* set)
func BenchmarkStores(b *testing.B) {
	ctx := context.Background()
	sqlite := "sqlite://" + filepath.Join(b.TempDir(), "bench.db")
	stores := map[string]func() (frond.SegmentStore, error){
		"sqlite": func() (frond.SegmentStore, error) { return sqlstore.Open(ctx, sqlite, sqlstore.Options{}) },
	}
	if u := os.Getenv("FROND_TEST_MYSQL_URL"); u != "" {
		stores["mysql"] = func() (frond.SegmentStore, error) { return sqlstore.Open(ctx, u, sqlstore.Options{}) }
		stores["cosid-mysql"] = func() (frond.SegmentStore, error) { return cosidstore.Open(ctx, "cosid+"+u) }
	}
	if u := os.Getenv("FROND_TEST_POSTGRES_URL"); u != "" {
		stores["postgres"] = func() (frond.SegmentStore, error) { return sqlstore.Open(ctx, u, sqlstore.Options{}) }
		stores["cosid-postgres"] = func() (frond.SegmentStore, error) { return cosidstore.Open(ctx, "cosid+"+u) }
	}
	if u := os.Getenv("FROND_TEST_REDIS_URL"); u != "" {
		stores["redis"] = func() (frond.SegmentStore, error) {
			return redisstore.Open(ctx, u+"?frond_allow_volatile=true&frond_prefix=frondbench:")
		}
		stores["cosid-redis"] = func() (frond.SegmentStore, error) {
			return cosidstore.Open(ctx, "cosid+"+u+"?frond_allow_volatile=true")
		}
	}
	if ep := os.Getenv("FROND_TEST_ETCD_ENDPOINTS"); ep != "" {
		stores["etcd"] = func() (frond.SegmentStore, error) {
			return etcdstore.Open(ctx, "etcd://"+ep+"?frond_prefix=/frondbench/")
		}
	}
	for _, name := range []string{"sqlite", "mysql", "cosid-mysql", "postgres", "cosid-postgres", "redis", "cosid-redis", "etcd"} {
		open, ok := stores[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) { benchStore(b, open) })
	}
}

func benchStore(b *testing.B, open func() (frond.SegmentStore, error)) {
	ctx := context.Background()
	clients := make([]frond.SegmentStore, 8)
	for i := range clients {
		s, err := open()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		clients[i] = s
	}
	run := fmt.Sprint(time.Now().UnixNano())
	tags := make([]string, 8)
	for i := range tags {
		tags[i] = fmt.Sprintf("bench-%s-%d", run, i)
		if _, err := clients[0].CreateTag(ctx, frond.Tag{Name: tags[i], MaxID: 1, Step: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("1client", func(b *testing.B) {
		var lat benchutil.Latencies
		samples := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if _, err := clients[0].Allocate(ctx, tags[0], 0); err != nil {
				b.Fatal(err)
			}
			samples = append(samples, time.Since(t0))
		}
		lat.Add(samples)
		lat.Report(b)
		if s := b.Elapsed().Seconds(); s > 0 {
			b.ReportMetric(float64(b.N)/s, "segments/s")
		}
	})
	for _, spread := range []int{1, 8} {
		b.Run(fmt.Sprintf("8clients-%dtags", spread), func(b *testing.B) {
			var wg sync.WaitGroup
			per := b.N/8 + 1
			b.ResetTimer()
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < per; j++ {
						if _, err := clients[i].Allocate(ctx, tags[i%spread], 0); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if s := b.Elapsed().Seconds(); s > 0 {
				b.ReportMetric(float64(per*8)/s, "segments/s")
			}
		})
	}
}
