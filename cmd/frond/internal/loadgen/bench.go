// Package loadgen is frond bench's load generator: workers take IDs from a
// running frond over one protocol (Leaf's HTTP API, the /v1 JSON API, gRPC,
// RESP, or the Go client library), closed loop or open loop at a target
// rate, and the run reports IDs and requests per second, latency from an
// HDR histogram, errors by frond's code, and a duplicate check over every
// ID received.
//
// Open loop: each request has a time it should start at (the rate spread
// over the workers), and its latency is measured from that time, not from
// when it was sent: a server that stalls makes the requests queued behind
// it slow too, as they are for users (no coordinated omission).
package loadgen

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Protocols and kinds.
const (
	Leaf   = "leaf"
	HTTP   = "http"
	GRPC   = "grpc"
	RESP   = "resp"
	Client = "client"

	Segment   = "segment"
	Snowflake = "snowflake"
)

// Options configure a run.
type Options struct {
	// Protocol is Leaf, HTTP, GRPC, RESP or Client.
	Protocol string
	// Server is the protocol's address: an http(s) URL for Leaf and HTTP,
	// host:port for the others.
	Server string
	// Kind is Segment or Snowflake; Tag the segment tag.
	Kind, Tag string
	// Tags, when more than 1, spreads segment requests over that many tags,
	// TagName(0) to TagName(Tags-1), in turn: the tag lookup and its
	// contention are measured, and the server's growth with them.
	Tags int
	// CreateTags creates the tags first (those that exist are kept), with
	// AdminToken when the server has one.
	CreateTags bool
	AdminToken string
	// MetricsURL, when set, is read after the run: the server's RSS and the
	// size and time of a scrape (default: /metrics of an http server).
	MetricsURL string
	// TagToken is sent with segment requests (servers with tokens).
	TagToken string
	// Concurrency is the number of workers; Connections the connections
	// they share (0: one per worker, or 4 for gRPC, whose connections
	// multiplex).
	Concurrency, Connections int
	// Duration of the measured run, or Count requests in all (Count wins
	// when both are set).
	Duration time.Duration
	Count    int64
	// Batch is the IDs per request.
	Batch int
	// Rate, when positive, is the requests per second of an open loop.
	Rate float64
	// Warmup runs before the measured run; its IDs are checked for
	// duplicates too, its requests and latency are not counted.
	Warmup time.Duration
	// Progress, when set, is called about every second.
	Progress func(Progress)
	// TLS, when set, connects over TLS with it (every protocol; an https://
	// server URL alone uses the system's roots).
	TLS *tls.Config
	// Timeline keeps each wall-clock second's requests, errors and
	// latencies (Result.Timeline), by the second each request was due (open
	// loop) or sent: a fault's seconds can be told from the quiet ones.
	Timeline bool
}

// TagName is the name of the i-th tag of a run: Tag itself, or Tag-i when
// the run spreads over Tags tags.
func (o Options) TagName(i int) string {
	if o.Tags <= 1 {
		return o.Tag
	}
	return o.Tag + "-" + strconv.Itoa(i)
}

// tagCount is how many tags the run's requests go to.
func (o Options) tagCount() int { return max(o.Tags, 1) }

// Progress is a run's state so far.
type Progress struct {
	Elapsed           time.Duration
	Warmup            bool
	Requests, IDs     int64
	Errors            int64
	Total             time.Duration // Duration, or 0 with Count
	Count             int64
	RequestsPerSecond float64
}

// Result is a run's outcome; the JSON is frond bench --json's.
type Result struct {
	Protocol          string           `json:"protocol"`
	Kind              string           `json:"kind"`
	Tag               string           `json:"tag,omitempty"`
	Tags              int              `json:"tags,omitempty"`
	Concurrency       int              `json:"concurrency"`
	Batch             int              `json:"batch"`
	Rate              float64          `json:"rate,omitempty"`
	Seconds           float64          `json:"seconds"`
	IDs               int64            `json:"ids"`
	Requests          int64            `json:"requests"`
	Duplicates        int64            `json:"duplicates"`
	Errors            map[string]int64 `json:"errors"`
	IDsPerSecond      float64          `json:"ids_per_second"`
	RequestsPerSecond float64          `json:"requests_per_second"`
	Latency           Latency          `json:"latency_us"`
	// Checked counts the IDs the duplicate check covered: those taken
	// before the measured run (WarmupIDs) and the measured run's (IDs).
	Checked int64 `json:"checked"`
	// WarmupIDs counts the IDs taken before the measured run (not
	// measured): the first request's, which tells a missing tag at once,
	// and the warm-up's.
	WarmupIDs int64 `json:"warmup_ids"`
	// Server is what the server's /metrics said after the run, when read.
	Server *ServerSize `json:"server,omitempty"`
	// Leases is what the Go client did (Protocol Client).
	Leases *Leases `json:"leases,omitempty"`
	// Timeline is the measured run second by second (Options.Timeline).
	Timeline []Second `json:"timeline,omitempty"`
}

// Second is one wall-clock second of a run's timeline: the requests due
// (or sent, closed loop) in it, however long they took.
type Second struct {
	// Unix is the second's start, in seconds since 1970 (UTC): runs of
	// several processes line up by it.
	Unix     int64   `json:"unix"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Latency  Latency `json:"latency_us"`
	// Histogram is the second's latencies as [µs, count] pairs, each value
	// the top of its bucket (two significant digits): the seconds of a span
	// merge into that span's percentiles.
	Histogram [][2]int64 `json:"histogram"`
}

// Leases are the Go client's leases over a run (warm-up included).
type Leases struct {
	// Taken counts the leases; Step is the longest of the tags' last ones.
	Taken uint64 `json:"taken"`
	Step  int64  `json:"step"`
	// Waits counts the callers that found both leased ranges used up and
	// waited for the next lease: the latencies far above the rest.
	Waits uint64 `json:"waits"`
}

// ServerSize is a server's size as its /metrics shows it.
type ServerSize struct {
	URL            string  `json:"url"`
	RSSBytes       int64   `json:"rss_bytes"`
	MetricsBytes   int64   `json:"metrics_bytes"`
	MetricsSeconds float64 `json:"metrics_seconds"`
	Error          string  `json:"error,omitempty"`
}

// Latency in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// taker takes one request's IDs of the tag-th tag (Options.TagName),
// appended to dst. Each worker has its own.
type taker func(ctx context.Context, tag int, dst []int64) ([]int64, error)

// driver is a protocol: it makes takers and closes its connections.
type driver interface {
	taker(worker int) taker
	// create creates a segment tag with a step of createStep (Options.CreateTags).
	create(ctx context.Context, name string) error
	Close() error
}

// leaser is a driver that leases (the Go client).
type leaser interface{ leases() Leases }

// Check validates o and fills its defaults.
func (o *Options) Check() error {
	switch o.Protocol {
	case Leaf, HTTP, GRPC, RESP, Client:
	default:
		return fmt.Errorf("protocol %q: leaf, http, grpc, resp or client", o.Protocol)
	}
	switch o.Kind {
	case Segment, Snowflake:
	default:
		return fmt.Errorf("kind %q: segment or snowflake", o.Kind)
	}
	if o.Kind == Segment && o.Tag == "" {
		return errors.New("segment IDs need a tag")
	}
	if o.Tags < 0 || o.Tags > 10_000_000 {
		return fmt.Errorf("tags %d: 1 to 10,000,000", o.Tags)
	}
	if (o.Tags > 1 || o.CreateTags) && o.Kind != Segment {
		return errors.New("tags are for segment IDs")
	}
	if o.MetricsURL == "" && (o.Protocol == Leaf || o.Protocol == HTTP) {
		o.MetricsURL = strings.TrimSuffix(o.Server, "/") + "/metrics"
	}
	if o.Concurrency < 1 {
		return fmt.Errorf("concurrency %d: at least 1", o.Concurrency)
	}
	if o.Batch < 1 || o.Batch > 10_000 {
		return fmt.Errorf("batch %d: 1 to 10,000", o.Batch)
	}
	if o.Protocol == Leaf && o.Batch != 1 {
		return errors.New("Leaf's API answers one ID a request: batch must be 1")
	}
	if o.Count < 0 || o.Duration < 0 || o.Rate < 0 || o.Warmup < 0 {
		return errors.New("count, duration, rate and warm-up cannot be negative")
	}
	if o.Count == 0 && o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Connections <= 0 {
		o.Connections = o.Concurrency
		if o.Protocol == GRPC || o.Protocol == Client {
			o.Connections = min(4, o.Concurrency)
		}
	}
	return nil
}

// maxLatency is the longest latency the histogram tells apart, in µs: an
// open loop far over capacity queues requests for longer than any request
// takes, and they must still count.
const maxLatency = int64(time.Hour / time.Microsecond)

// worker is one worker's record.
type worker struct {
	hist     *hdrhistogram.Histogram
	runs     []run
	ids      []int64 // scratch
	requests int64
	idCount  int64
	errors   map[string]int64
	checked  int64
}

// run is IDs start, start+1, ..., start+n-1 of one tag: consecutive IDs
// received in a row are kept as one run, so millions of segment IDs cost a
// few runs; IDs that do not follow each other (snowflake IDs across ticks,
// several workers' batches, requests spread over tags) cost 24 bytes each,
// about 240 MB for 10 million.
type run struct {
	tag      int
	start, n int64
}

func (w *worker) record(tag int, ids []int64) {
	for _, id := range ids {
		if k := len(w.runs) - 1; k >= 0 && w.runs[k].tag == tag && w.runs[k].start+w.runs[k].n == id {
			w.runs[k].n++
		} else {
			w.runs = append(w.runs, run{tag, id, 1})
		}
	}
	w.checked += int64(len(ids))
}

// Run runs the benchmark.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Check(); err != nil {
		return Result{}, err
	}
	d, err := newDriver(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()

	workers := make([]*worker, o.Concurrency)
	takers := make([]taker, o.Concurrency)
	for i := range workers {
		workers[i] = &worker{hist: hdrhistogram.New(1, maxLatency, 3), errors: map[string]int64{}}
		takers[i] = d.taker(i)
	}
	if o.CreateTags {
		if err := createTags(ctx, d, o); err != nil {
			return Result{}, err
		}
	}
	// The first request tells a missing tag or a server that is not there
	// before the workers start.
	first, err := takers[0](ctx, 0, nil)
	if err != nil {
		return Result{}, fmt.Errorf("first request: %w", err)
	}
	workers[0].record(0, first)
	nTags := o.tagCount()
	var tl *timeline
	if o.Timeline {
		tl = &timeline{secs: map[int64]*second{}}
	}

	var (
		measuring atomic.Bool
		issued    atomic.Int64 // requests started in the measured run (Count)
		done      = make(chan struct{})
		reqs, ids atomic.Int64
		errs      atomic.Int64
		// The warm-up's, for its progress lines and the result (the first
		// request is the warm-up's).
		warmReqs, warmIDs, warmErrs atomic.Int64
	)
	warmReqs.Add(1)
	warmIDs.Add(int64(len(first)))
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	var deadline time.Time
	if o.Count == 0 {
		deadline = measureFrom.Add(o.Duration)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var measuredStart time.Time
	if o.Warmup == 0 { // before the workers start: their first requests are measured
		measuring.Store(true)
		measuredStart = start
	}

	var wg sync.WaitGroup
	for i, w := range workers {
		take := takers[i]
		wg.Go(func() {
			// Open loop: worker i's k-th request is due at
			// start + (k*Concurrency + i) / Rate.
			var interval time.Duration
			due := start
			tag := i % nTags // worker i's requests go to every tag in turn
			if o.Rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(o.Concurrency) / o.Rate)
				due = start.Add(time.Duration(float64(time.Second) * float64(i) / o.Rate))
			}
			for runCtx.Err() == nil {
				now := time.Now()
				if !deadline.IsZero() && now.After(deadline) {
					return
				}
				counted := measuring.Load()
				if counted && o.Count > 0 && issued.Add(1) > o.Count {
					return
				}
				t0 := now
				if o.Rate > 0 {
					if wait := due.Sub(now); wait > 0 {
						select {
						case <-time.After(wait):
						case <-runCtx.Done():
							return
						}
					}
					t0 = due // latency from when the request was due
					due = due.Add(interval)
				}
				var err error
				t := tag
				if tag++; tag == nTags {
					tag = 0
				}
				w.ids, err = take(runCtx, t, w.ids[:0])
				took := time.Since(t0)
				if runCtx.Err() != nil && err != nil {
					return // the run ended while this request was in flight
				}
				if err == nil {
					w.record(t, w.ids)
				}
				if !counted {
					warmReqs.Add(1)
					if err != nil {
						warmErrs.Add(1)
					} else {
						warmIDs.Add(int64(len(w.ids)))
					}
					continue
				}
				w.requests++
				reqs.Add(1)
				w.hist.RecordValue(min(max(1, took.Microseconds()), maxLatency)) // a longer one counts as the longest
				if tl != nil {
					tl.record(t0, took, err != nil)
				}
				if err != nil {
					w.errors[codeOf(err)]++
					errs.Add(1)
					continue
				}
				w.idCount += int64(len(w.ids))
				ids.Add(int64(len(w.ids)))
			}
		})
	}
	go func() {
		wg.Wait()
		close(done)
	}()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	warm := time.NewTimer(o.Warmup)
	for stop := false; !stop; {
		select {
		case <-warm.C:
			if !measuring.Load() {
				measuredStart = time.Now()
				measuring.Store(true)
			}
		case <-tick.C:
			if o.Progress != nil {
				el := time.Since(start)
				p := Progress{Elapsed: el, Warmup: !measuring.Load(), Requests: reqs.Load(), IDs: ids.Load(), Errors: errs.Load(),
					Total: o.Duration, Count: o.Count}
				if p.Warmup { // the warm-up's own counts, not the measured run's zeros
					p.Requests, p.IDs, p.Errors = warmReqs.Load(), warmIDs.Load(), warmErrs.Load()
					p.RequestsPerSecond = float64(p.Requests) / el.Seconds()
				} else if s := time.Since(measuredStart).Seconds(); s > 0 {
					p.RequestsPerSecond = float64(p.Requests) / s
				}
				o.Progress(p)
			}
		case <-done:
			stop = true
		case <-ctx.Done():
			cancel()
			<-done
			stop = true
		}
	}
	elapsed := time.Since(measuredStart)
	if measuredStart.IsZero() {
		elapsed = 0
	}
	res := Result{Protocol: o.Protocol, Kind: o.Kind, Concurrency: o.Concurrency, Batch: o.Batch, Rate: o.Rate,
		Seconds: elapsed.Seconds(), Errors: map[string]int64{}, WarmupIDs: warmIDs.Load()}
	if o.Kind == Segment {
		res.Tag = o.Tag
		if o.Tags > 1 {
			res.Tags = o.Tags
		}
	}
	hist := hdrhistogram.New(1, maxLatency, 3)
	var runs []run
	for _, w := range workers {
		hist.Merge(w.hist)
		res.Requests += w.requests
		res.IDs += w.idCount
		res.Checked += w.checked
		for code, n := range w.errors {
			res.Errors[code] += n
		}
		runs = append(runs, w.runs...)
	}
	res.Duplicates = duplicates(runs)
	if s := elapsed.Seconds(); s > 0 {
		res.IDsPerSecond, res.RequestsPerSecond = float64(res.IDs)/s, float64(res.Requests)/s
	}
	res.Latency = latencyOf(hist)
	if tl != nil {
		res.Timeline = tl.seconds()
	}
	if o.MetricsURL != "" && ctx.Err() == nil {
		res.Server = serverSize(ctx, o)
	}
	if l, ok := d.(leaser); ok {
		ls := l.leases()
		res.Leases = &ls
	}
	return res, ctx.Err()
}

// duplicates counts the IDs received more than once within a tag: the runs
// sorted by tag and start, every ID a run shares with the runs of its tag
// before it.
func duplicates(runs []run) int64 {
	slices.SortFunc(runs, func(a, b run) int {
		return cmp.Or(cmp.Compare(a.tag, b.tag), cmp.Compare(a.start, b.start))
	})
	var dup int64
	var end int64 // the end of the tag's IDs seen so far
	for i, r := range runs {
		e := r.start + r.n
		first := i == 0 || runs[i-1].tag != r.tag
		if !first && r.start < end {
			dup += min(e, end) - r.start
		}
		if first || e > end {
			end = e
		}
	}
	return dup
}

// timeline is a run's latencies second by second, shared by the workers (a
// lock a request: nothing next to a request's own cost).
type timeline struct {
	mu   sync.Mutex
	secs map[int64]*second
}

type second struct {
	requests, errors int64
	hist             *hdrhistogram.Histogram
}

// timelineFigures are a second's histogram's significant figures: two keep
// it at about 26 KB, so an hour's timeline fits in 100 MB.
const timelineFigures = 2

func (t *timeline) record(at time.Time, took time.Duration, failed bool) {
	u := at.Unix()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.secs[u]
	if s == nil {
		s = &second{hist: hdrhistogram.New(1, maxLatency, timelineFigures)}
		t.secs[u] = s
	}
	s.requests++
	if failed {
		s.errors++
	}
	s.hist.RecordValue(min(max(1, took.Microseconds()), maxLatency))
}

// seconds lists the timeline in order, a second with no request included
// (a stall the open loop could not even start requests in shows as such).
func (t *timeline) seconds() []Second {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.secs) == 0 {
		return nil
	}
	first, last := int64(-1), int64(-1)
	for u := range t.secs {
		if first < 0 || u < first {
			first = u
		}
		last = max(last, u)
	}
	out := make([]Second, 0, last-first+1)
	for u := first; u <= last; u++ {
		sec := Second{Unix: u, Histogram: [][2]int64{}}
		if s := t.secs[u]; s != nil {
			sec.Requests, sec.Errors = s.requests, s.errors
			sec.Latency = latencyOf(s.hist)
			for _, b := range s.hist.Distribution() {
				if b.Count > 0 {
					sec.Histogram = append(sec.Histogram, [2]int64{b.To, b.Count})
				}
			}
		}
		out = append(out, sec)
	}
	return out
}

// latencyOf reads a histogram's percentiles.
func latencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{P50: float64(h.ValueAtQuantile(50)), P90: float64(h.ValueAtQuantile(90)),
		P99: float64(h.ValueAtQuantile(99)), P999: float64(h.ValueAtQuantile(99.9)), Max: float64(h.Max())}
}
