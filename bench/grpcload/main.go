// Command grpcload is the gRPC load generator of bench/grpc.sh: -c callers
// share -conns connections and call frond.v1.IDService/NextSegment with n
// IDs per call, back to back, for -d; it prints calls/s, IDs/s and the
// latency percentiles of every call (no sampling).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:19090", "server address")
	callers := flag.Int("c", 32, "concurrent callers")
	conns := flag.Int("conns", 4, "connections the callers share")
	dur := flag.Duration("d", 10*time.Second, "how long")
	n := flag.Int64("n", 1, "IDs per call")
	tag := flag.String("tag", "bench", "segment tag")
	flag.Parse()

	clients := make([]frondv1.IDServiceClient, *conns)
	for i := range clients {
		cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatal(err)
		}
		defer cc.Close()
		clients[i] = frondv1.NewIDServiceClient(cc)
		if _, err := clients[i].NextSegment(context.Background(), &frondv1.NextSegmentRequest{Tag: *tag, N: *n}); err != nil {
			log.Fatalf("warm-up call: %v", err)
		}
	}
	var (
		mu     sync.Mutex
		lat    []time.Duration
		ids    atomic.Int64
		errs   atomic.Int64
		wg     sync.WaitGroup
		start  = time.Now()
		finish = start.Add(*dur)
	)
	for i := range *callers {
		c := clients[i%len(clients)]
		wg.Go(func() {
			mine := make([]time.Duration, 0, 1<<16)
			req := &frondv1.NextSegmentRequest{Tag: *tag, N: *n}
			for {
				t0 := time.Now()
				if t0.After(finish) {
					break
				}
				out, err := c.NextSegment(context.Background(), req)
				mine = append(mine, time.Since(t0))
				if err != nil {
					errs.Add(1)
					continue
				}
				ids.Add(int64(len(out.GetIds())))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	fmt.Printf("calls/s %.0f  ids/s %.0f  p50 %.0fus  p99 %.0fus  p99.9 %.0fus  max %.0fus  errors %d\n",
		float64(len(lat))/el, float64(ids.Load())/el, pct(0.50), pct(0.99), pct(0.999), float64(lat[len(lat)-1].Microseconds()), errs.Load())
}
