package api

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are frond's Prometheus metrics. Counters that the engines already
// keep (IDs issued, buffer contents, clock events) are read at scrape time,
// so the ID hot path pays nothing for them.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	loads    *prometheus.CounterVec
	loadDur  *prometheus.HistogramVec
	svc      *service.Service
}

// NewMetrics returns the metrics with their own registry (no globals).
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frond_requests_total", Help: "Requests answered, by protocol (http, grpc, resp) and operation (route, method or command).",
		}, []string{"protocol", "operation"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frond_errors_total", Help: "Requests that failed, by protocol and stable error code.",
		}, []string{"protocol", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "frond_request_duration_seconds", Help: "Time to answer a request, by protocol and operation.",
			Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"protocol", "operation"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frond_segment_loads_total", Help: "Segment store calls, by tag and result (ok or error).",
		}, []string{"tag", "result"}),
		loadDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "frond_segment_load_seconds", Help: "Latency of segment store calls, by tag.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"tag"}),
	}
	m.reg.MustRegister(m.requests, m.errors, m.latency, m.loads, m.loadDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Protocols, the values of the protocol label.
const (
	HTTP = "http"
	GRPC = "grpc"
	RESP = "resp"
)

// Op is the request metrics of one operation of one protocol. Its series
// are made on its first request (a /metrics page does not list every route
// of every protocol at zero) and then kept, so that a request pays two
// atomic adds and no label lookup.
type Op struct {
	m                   *Metrics
	protocol, operation string
	once                sync.Once
	requests            prometheus.Counter
	latency             prometheus.Observer
}

// Op returns the metrics of an operation. Operations are a fixed set per
// protocol (routes, methods, commands), never a caller's input. A nil
// Metrics returns a nil Op, which records nothing.
func (m *Metrics) Op(protocol, operation string) *Op {
	if m == nil {
		return nil
	}
	return &Op{m: m, protocol: protocol, operation: operation}
}

// Done records a request that began at start.
func (o *Op) Done(start time.Time) {
	if o == nil {
		return
	}
	o.once.Do(func() {
		o.requests = o.m.requests.WithLabelValues(o.protocol, o.operation)
		o.latency = o.m.latency.WithLabelValues(o.protocol, o.operation)
	})
	o.requests.Inc()
	o.latency.Observe(time.Since(start).Seconds())
}

// Failed counts a failed request of protocol by its stable code.
func (m *Metrics) Failed(protocol, code string) {
	if m != nil {
		m.errors.WithLabelValues(protocol, code).Inc()
	}
}

// OnLoad is the segment engine's load hook (segment.Settings.OnLoad). Loads
// of tags the store does not know, and failed first loads (the engine gives
// them no tag), are counted under tag "" so that requests for made-up tags
// cannot create series without bound.
func (m *Metrics) OnLoad(tag string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		if errors.Is(err, frond.ErrTagNotFound) {
			tag, result = "", "not_found"
		}
	}
	m.loads.WithLabelValues(tag, result).Inc()
	m.loadDur.WithLabelValues(tag).Observe(took.Seconds())
}

// OnEvict is the segment engine's eviction hook (segment.Settings.OnEvict):
// the series of a tag whose buffer was dropped go with it.
func (m *Metrics) OnEvict(tag string) {
	m.loads.DeletePartialMatch(prometheus.Labels{"tag": tag})
	m.loadDur.DeleteLabelValues(tag)
}

// Attach registers the collectors that read svc at scrape time.
func (m *Metrics) Attach(svc *service.Service) {
	m.svc = svc
	m.reg.MustRegister(&engineCollector{svc: svc})
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	descIssued    = prometheus.NewDesc("frond_ids_issued_total", "IDs issued since start, by kind and tag.", []string{"kind", "tag"}, nil)
	descRemaining = prometheus.NewDesc("frond_segment_buffer_remaining", "IDs left in both buffers of a tag.", []string{"tag"}, nil)
	descHorizon   = prometheus.NewDesc("frond_segment_buffer_horizon_seconds", "How long the buffered IDs of a tag last at the current rate (-1: no consumption measured).", []string{"tag"}, nil)
	descStep      = prometheus.NewDesc("frond_segment_step", "Step of the last segment load of a tag.", []string{"tag"}, nil)
	descSteps     = prometheus.NewDesc("frond_snowflake_clock_backward_steps_total", "Backward clock steps seen by the snowflake generator.", nil, nil)
	descRefusals  = prometheus.NewDesc("frond_snowflake_clock_refusals_total", "Snowflake requests refused because the clock was behind.", nil, nil)
	descBorrows   = prometheus.NewDesc("frond_snowflake_borrowed_ticks_total", "Ticks the snowflake generator borrowed ahead of the clock.", nil, nil)
	descLead      = prometheus.NewDesc("frond_snowflake_lead_seconds", "How far the last snowflake ID is ahead of the clock.", nil, nil)
	descBehind    = prometheus.NewDesc("frond_snowflake_clock_behind_seconds", "How far the clock is behind the latest time the generator used.", nil, nil)
	descWorker    = prometheus.NewDesc("frond_snowflake_worker_id", "The worker ID this node holds (-1: none).", nil, nil)
	descIssuing   = prometheus.NewDesc("frond_snowflake_issuing", "1 when this node can issue snowflake IDs (a worker ID is held and the peers' clock check passed), else 0.", nil, nil)
	descFromCache = prometheus.NewDesc("frond_snowflake_worker_from_local_record", "1 when the worker ID comes from the local record because the registry is unreachable.", nil, nil)
	descExpiry    = prometheus.NewDesc("frond_snowflake_layout_expiry_timestamp_seconds", "When the snowflake layout's time field runs out (Unix time).", []string{"layout"}, nil)
	descSeqCalls  = prometheus.NewDesc("frond_sequence_store_calls_total", "Store calls of a sequence tag on this node: each serves every request that waited for it (group commit).", []string{"tag"}, nil)
	descSeqGroup  = prometheus.NewDesc("frond_sequence_max_group", "The most requests of a sequence tag one store call has served on this node.", []string{"tag"}, nil)
	descIdemKeys  = prometheus.NewDesc("frond_idempotency_keys", "Idempotency keys whose answers this node remembers.", nil, nil)
	descIdemIDs   = prometheus.NewDesc("frond_idempotency_ids", "IDs (or ranges) held by the remembered answers.", nil, nil)
	descIdemRepl  = prometheus.NewDesc("frond_idempotency_replays_total", "Answers given again to a request with the same idempotency key.", nil, nil)
	descIdemEvict = prometheus.NewDesc("frond_idempotency_evicted_total", "Remembered answers forgotten before their window ended (idempotency.max_entries or max_ids reached).", nil, nil)
	descIdemConfl = prometheus.NewDesc("frond_idempotency_conflicts_total", "Requests refused because their idempotency key came with another request within the window.", nil, nil)
)

type engineCollector struct{ svc *service.Service }

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIssued, descRemaining, descHorizon, descStep, descSteps, descRefusals, descBorrows, descLead, descBehind, descWorker, descIssuing, descFromCache, descExpiry,
		descSeqCalls, descSeqGroup, descIdemKeys, descIdemIDs, descIdemRepl, descIdemEvict, descIdemConfl} {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.svc.SequenceStats() {
		ch <- prometheus.MustNewConstMetric(descIssued, prometheus.CounterValue, float64(q.IDs), "sequence", q.Tag)
		ch <- prometheus.MustNewConstMetric(descSeqCalls, prometheus.CounterValue, float64(q.Trips), q.Tag)
		ch <- prometheus.MustNewConstMetric(descSeqGroup, prometheus.GaugeValue, float64(q.Max), q.Tag)
	}
	idem := c.svc.IdempotencyStats()
	ch <- prometheus.MustNewConstMetric(descIdemKeys, prometheus.GaugeValue, float64(idem.Entries))
	ch <- prometheus.MustNewConstMetric(descIdemIDs, prometheus.GaugeValue, float64(idem.IDs))
	ch <- prometheus.MustNewConstMetric(descIdemRepl, prometheus.CounterValue, float64(idem.Replays))
	ch <- prometheus.MustNewConstMetric(descIdemEvict, prometheus.CounterValue, float64(idem.Evicted))
	ch <- prometheus.MustNewConstMetric(descIdemConfl, prometheus.CounterValue, float64(idem.Conflict))
	for _, b := range c.svc.SegmentStats() {
		ch <- prometheus.MustNewConstMetric(descIssued, prometheus.CounterValue, float64(b.Issued), "segment", b.Tag)
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(b.Remaining), b.Tag)
		h := -1.0
		if b.Horizon >= 0 {
			h = b.Horizon.Seconds()
		}
		ch <- prometheus.MustNewConstMetric(descHorizon, prometheus.GaugeValue, h, b.Tag)
		ch <- prometheus.MustNewConstMetric(descStep, prometheus.GaugeValue, float64(b.Step), b.Tag)
	}
	ch <- prometheus.MustNewConstMetric(descIssued, prometheus.CounterValue, float64(c.svc.SnowflakeIssued()), "snowflake", "")
	st := c.svc.SnowflakeStats()
	ch <- prometheus.MustNewConstMetric(descSteps, prometheus.CounterValue, float64(st.BackwardSteps))
	ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(st.Refusals))
	ch <- prometheus.MustNewConstMetric(descBorrows, prometheus.CounterValue, float64(st.Borrows))
	ch <- prometheus.MustNewConstMetric(descLead, prometheus.GaugeValue, st.Lead.Seconds())
	ch <- prometheus.MustNewConstMetric(descBehind, prometheus.GaugeValue, st.Behind.Seconds())
	wi := c.svc.WorkerInfo()
	ch <- prometheus.MustNewConstMetric(descWorker, prometheus.GaugeValue, float64(wi.ID))
	ch <- prometheus.MustNewConstMetric(descIssuing, prometheus.GaugeValue, b2f(wi.Issuing))
	ch <- prometheus.MustNewConstMetric(descFromCache, prometheus.GaugeValue, b2f(wi.FromCache))
	l := c.svc.Layout()
	ch <- prometheus.MustNewConstMetric(descExpiry, prometheus.GaugeValue, float64(l.Expires().Unix()), l.Name)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Counts are the requests and errors counted so far, per protocol (the
// dashboard's rates are their differences over time).
type Counts struct {
	Requests map[string]float64            `json:"requests"` // by protocol
	Errors   map[string]map[string]float64 `json:"errors"`   // by protocol, then code
}

// Counts gathers the request and error counters.
func (m *Metrics) Counts() Counts {
	c := Counts{Requests: map[string]float64{}, Errors: map[string]map[string]float64{}}
	if m == nil {
		return c
	}
	families, _ := m.reg.Gather()
	for _, f := range families {
		switch f.GetName() {
		case "frond_requests_total", "frond_errors_total":
		default:
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := metric.GetCounter().GetValue()
			if f.GetName() == "frond_requests_total" {
				c.Requests[labels["protocol"]] += v
				continue
			}
			p := labels["protocol"]
			if c.Errors[p] == nil {
				c.Errors[p] = map[string]float64{}
			}
			c.Errors[p][labels["code"]] += v
		}
	}
	return c
}
