package api

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frond-id/frond/internal/stripes"
)

// An operation's request count and latency histogram, recorded on every
// request of every protocol. A prometheus.Histogram shared by both cores
// cost a pipelined RESP command about 120 ns of cache-line traffic (its
// count, sum and bucket, and the requests counter, each an atomic add on
// one line); an Op spreads its counts over opShards lines, picked at
// random per request, and adds them up at scrape time.

// latencyBuckets are frond_request_duration_seconds' upper bounds.
var latencyBuckets = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

const nBuckets = 19 // len(latencyBuckets)

// latencyBounds are latencyBuckets in nanoseconds, for the hot path.
var latencyBounds = func() []int64 {
	if len(latencyBuckets) != nBuckets {
		panic("api: nBuckets is not len(latencyBuckets)")
	}
	out := make([]int64, len(latencyBuckets))
	for i, b := range latencyBuckets {
		out[i] = int64(b * 1e9)
	}
	return out
}()

// opShards is how many shards an Op's counters have (stripes.Count, at
// least 8). Each shard is 240 bytes without pointers.
var opShards = stripes.Count(8)

type opShard struct {
	count   atomic.Uint64
	sum     atomic.Int64                // nanoseconds
	buckets [nBuckets + 1]atomic.Uint64 // and the overflow
	_       [64]byte                    // the next shard on other lines
}

// Op is the request metrics of one operation of one protocol. Its series
// appear with its first request (a /metrics page does not list every route
// of every protocol at zero).
type Op struct {
	protocol, operation string
	shards              []opShard
}

// Op returns the metrics of an operation. Operations are a fixed set per
// protocol (routes, methods, commands), never a caller's input. A nil
// Metrics returns a nil Op, which records nothing.
func (m *Metrics) Op(protocol, operation string) *Op {
	if m == nil {
		return nil
	}
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	for _, o := range m.ops { // the same operation asked for again (two servers on one Metrics): one series
		if o.protocol == protocol && o.operation == operation {
			return o
		}
	}
	o := &Op{protocol: protocol, operation: operation, shards: make([]opShard, opShards)}
	m.ops = append(m.ops, o)
	return o
}

// Done records a request that began at start.
func (o *Op) Done(start time.Time) {
	o.Took(time.Since(start))
}

// Took counts a request that took took.
func (o *Op) Took(took time.Duration) { o.TookN(1, took) }

// TookN counts n requests that took took together, each the same share
// of it: a RESP pipeline's commands, run one after another in one call.
func (o *Op) TookN(n int, took time.Duration) {
	if o == nil || n <= 0 {
		return
	}
	d := int64(took)
	each := d / int64(n)
	s := &o.shards[stripes.Pick(len(o.shards))]
	i := 0
	for i < len(latencyBounds) && each > latencyBounds[i] {
		i++
	}
	s.buckets[i].Add(uint64(n)) // the buckets add up to the count
	s.sum.Add(d)
}

// totals adds up the shards: the count, the sum in seconds and the
// cumulative count of each bucket.
func (o *Op) totals() (count uint64, sum float64, buckets map[float64]uint64) {
	var per [nBuckets + 1]uint64
	var nanos int64
	for i := range o.shards {
		s := &o.shards[i]
		for b := range per {
			per[b] += s.buckets[b].Load()
		}
		nanos += s.sum.Load()
	}
	buckets = make(map[float64]uint64, len(latencyBuckets))
	for b, bound := range latencyBuckets {
		count += per[b]
		buckets[bound] = count
	}
	count += per[len(latencyBuckets)]
	return count, float64(nanos) / 1e9, buckets
}

var (
	descRequests = prometheus.NewDesc("frond_requests_total", "Requests answered, by protocol (http, grpc, resp) and operation (route, method or command).", []string{"protocol", "operation"}, nil)
	descLatency  = prometheus.NewDesc("frond_request_duration_seconds", "Time to answer a request, by protocol and operation.", []string{"protocol", "operation"}, nil)
)

// opsCollector reads the Ops at scrape time.
type opsCollector struct {
	mu  *sync.Mutex
	ops *[]*Op
	// latency: the histograms (the registry of /metrics), or the
	// requests counts (the dashboard's registry, gathered by /metrics too).
	latency bool
}

func (c opsCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.latency {
		ch <- descLatency
	} else {
		ch <- descRequests
	}
}

func (c opsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ops := append([]*Op(nil), *c.ops...)
	c.mu.Unlock()
	for _, o := range ops {
		count, sum, buckets := o.totals()
		if count == 0 {
			continue
		}
		if c.latency {
			ch <- prometheus.MustNewConstHistogram(descLatency, count, sum, buckets, o.protocol, o.operation)
		} else {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(count), o.protocol, o.operation)
		}
	}
}
