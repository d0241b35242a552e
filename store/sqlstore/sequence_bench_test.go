package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
)

// A sequence tag's store calls, one ID each (no group commit), from 1, 8
// and 64 callers at once: a sequence object (native) against Leaf's row
// (rows) on the same server, in the same run.
//
//	go test -run XXX -bench AllocateIDs -count 5 ./store/sqlstore
func BenchmarkAllocateIDs(b *testing.B) {
	for name, srv := range sequenceServers(b) {
		for _, callers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/callers-%d", name, callers), func(b *testing.B) {
				ctx := context.Background()
				s := openSeq(b, srv.url, srv.native)
				tag := fmt.Sprintf("bench-%d", time.Now().UnixNano())
				if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.DeleteTag(ctx, tag) })
				if _, err := s.AllocateIDs(ctx, tag, 1); err != nil { // makes the sequence
					b.Fatal(err)
				}
				var left atomic.Int64
				left.Store(int64(b.N))
				var wg sync.WaitGroup
				b.ResetTimer()
				for range callers {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							if _, err := s.AllocateIDs(ctx, tag, 1); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IDs/s")
			})
		}
	}
}
