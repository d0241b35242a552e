package api

import (
	"testing"
	"time"
)

// An Op's shards add up to the requests and the histogram Prometheus
// shows: the count, the sum, and each bucket cumulative.
func TestOp_Totals(t *testing.T) {
	m := NewMetrics(MetricsOptions{})
	op := m.Op(RESP, "incr")
	for range 1000 {
		op.Done(time.Now()) // a few µs at most, even under -race: the first buckets
	}
	now := time.Now()
	op.Done(now.Add(-3 * time.Second)) // 3 s: the bucket of 5
	op.Done(now.Add(-time.Minute))     // past the last bound
	count, sum, buckets := op.totals()
	if count != 1002 || sum < 63 || sum > 64 {
		t.Fatalf("count %d, sum %v", count, sum)
	}
	if buckets[2.5] != 1000 || buckets[5] != 1001 || buckets[10] != 1001 {
		t.Fatalf("buckets %v", buckets)
	}
	if m.Op(RESP, "incr") != op {
		t.Fatal("the same operation asked for twice got two Ops: two series of one name")
	}
	var nilOp *Op
	nilOp.Done(now) // a nil Metrics' Op records nothing
	if c := m.Counts(); c.Requests[RESP] != 1002 {
		t.Fatalf("the dashboard's counts: %+v", c)
	}
}

// TookN counts n requests that shared a time: each in the bucket of its
// share, the sum the whole time.
func TestOp_TookN(t *testing.T) {
	op := NewMetrics(MetricsOptions{}).Op(RESP, "incr")
	op.TookN(16, 16*30*time.Microsecond) // 30 µs each: the bucket of 50 µs
	op.TookN(0, time.Second)             // nothing
	op.Took(2 * time.Millisecond)
	count, sum, buckets := op.totals()
	if count != 17 || sum < 0.00247 || sum > 0.00249 {
		t.Fatalf("count %d, sum %v", count, sum)
	}
	if buckets[0.000025] != 0 || buckets[0.00005] != 16 || buckets[0.001] != 16 || buckets[0.0025] != 17 {
		t.Fatalf("buckets %v", buckets)
	}
}

// BenchmarkOpDone is a request's metrics from two cores at once (the
// clock reads of the request's start and end included).
func BenchmarkOpDone(b *testing.B) {
	op := NewMetrics(MetricsOptions{}).Op(RESP, "incr")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			op.Done(time.Now())
		}
	})
}
