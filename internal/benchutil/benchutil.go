// Package benchutil helps benchmarks report latency percentiles. It is for
// benchmarks only; nothing in frond's runtime imports it.
package benchutil

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Latencies collects per-call durations from many goroutines.
type Latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

// Add merges one goroutine's samples.
func (l *Latencies) Add(samples []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, samples...)
	l.mu.Unlock()
}

// Report sorts the samples and reports p50, p99 and p99.9 in nanoseconds
// as benchmark metrics.
func (l *Latencies) Report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	at := func(q float64) float64 { return float64(l.all[int(q*float64(len(l.all)-1))]) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(at(0.999), "p99.9-ns")
}

// Rate reports IDs per second over the benchmark's run time.
func Rate(b *testing.B, ids int) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(ids)/s, "ids/s")
	}
}
