package api

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strings"
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
// so the ID hot path pays nothing for them. Series per tag are bounded
// (MetricsOptions.MaxTags), however many tags a node serves; the sums over
// all tags are always there (docs/operations.md, "Metrics").
type Metrics struct {
	reg     *prometheus.Registry
	counts  *prometheus.Registry // requests and errors alone: the dashboard reads them every second
	opsMu   sync.Mutex
	ops     []*Op // every operation's requests and latency (ops.go)
	errors  *prometheus.CounterVec
	loads   *prometheus.CounterVec
	loadDur prometheus.Histogram
	opts    MetricsOptions
	pinned  map[string]bool
	svc     *service.Service
}

// DefaultMaxTags is MetricsOptions.MaxTags' default.
const DefaultMaxTags = 100

// MetricsOptions bound the series per tag.
type MetricsOptions struct {
	// MaxTags is how many segment tags, and how many sequence tags, get
	// series of their own: those named in Tags first, then the tags in
	// trouble, then the busiest (RankTags). Zero means DefaultMaxTags;
	// negative, none.
	MaxTags int
	// Tags get series of their own whenever they are in use (within
	// MaxTags).
	Tags []string
}

// NewMetrics returns the metrics with their own registry (no globals).
func NewMetrics(o MetricsOptions) *Metrics {
	if o.MaxTags == 0 {
		o.MaxTags = DefaultMaxTags
	}
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		counts: prometheus.NewRegistry(),
		opts:   o,
		pinned: map[string]bool{},
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frond_errors_total", Help: "Requests that failed, by protocol and stable error code.",
		}, []string{"protocol", "code"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "frond_segment_loads_total", Help: "Segment store calls of all tags, by result (ok, error, not_found: a first load of a tag the store does not have, or lost_data: refused because the store lost acknowledged writes).",
		}, []string{"result"}),
		loadDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "frond_segment_load_seconds", Help: "Latency of the segment store calls of all tags.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
	for _, t := range o.Tags {
		m.pinned[t] = true
	}
	m.counts.MustRegister(opsCollector{mu: &m.opsMu, ops: &m.ops}, m.errors)
	m.reg.MustRegister(opsCollector{mu: &m.opsMu, ops: &m.ops, latency: true}, m.loads, m.loadDur,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Protocols, the values of the protocol label.
const (
	HTTP = "http"
	GRPC = "grpc"
	RESP = "resp"
)

// Failed counts a failed request of protocol by its stable code.
func (m *Metrics) Failed(protocol, code string) {
	if m != nil {
		m.errors.WithLabelValues(protocol, code).Inc()
	}
}

// OnLoad is the segment engine's load hook (segment.Settings.OnLoad): the
// sums over all tags. A tag's own counts are read from the engine at scrape
// time (frond_segment_tag_loads_total), for the tags shown.
func (m *Metrics) OnLoad(_ string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		switch {
		case errors.Is(err, frond.ErrTagNotFound):
			result = "not_found"
		case errors.Is(err, frond.ErrStoreLostData):
			result = "lost_data" // the store lost acknowledged writes: refused until re-armed (FrondSegmentStoreLostData)
		}
	}
	m.loads.WithLabelValues(result).Inc()
	m.loadDur.Observe(took.Seconds())
}

// Attach registers the collectors that read svc at scrape time.
func (m *Metrics) Attach(svc *service.Service) {
	m.svc = svc
	m.reg.MustRegister(&engineCollector{m: m, svc: svc})
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{m.counts, m.reg}, promhttp.HandlerOpts{Registry: m.reg})
}

var (
	descIssued     = prometheus.NewDesc("frond_ids_issued_total", "IDs issued since start, by kind (all tags of a kind together).", []string{"kind"}, nil)
	descTagIssued  = prometheus.NewDesc("frond_tag_ids_issued_total", "IDs issued since the tag's buffer was made, by kind and tag, for the tags shown (metrics.max_tags).", []string{"kind", "tag"}, nil)
	descTags       = prometheus.NewDesc("frond_segment_tags", "Segment tags in use on this node, by state: failing (the last store call failed), low (runs dry within segment.runway at its rate), ok.", []string{"state"}, nil)
	descRunway     = prometheus.NewDesc("frond_segment_runway_seconds", "The store outage every segment tag's buffered IDs should outlast at its rate (segment.runway): a horizon below it is low, and alerted on.", nil, nil)
	descMinHorizon = prometheus.NewDesc("frond_segment_buffer_horizon_min_seconds", "The shortest horizon of any segment tag in use (-1: no consumption measured).", nil, nil)
	descOmitted    = prometheus.NewDesc("frond_metrics_tags_omitted", "Tags in use without series of their own (past metrics.max_tags), by kind.", []string{"kind"}, nil)
	descRemaining  = prometheus.NewDesc("frond_segment_buffer_remaining", "IDs left in both buffers of a tag.", []string{"tag"}, nil)
	descHorizon    = prometheus.NewDesc("frond_segment_buffer_horizon_seconds", "How long the buffered IDs of a tag last at the current rate (-1: no consumption measured).", []string{"tag"}, nil)
	descStep       = prometheus.NewDesc("frond_segment_step", "Step of the last segment load of a tag.", []string{"tag"}, nil)
	descTagLoads   = prometheus.NewDesc("frond_segment_tag_loads_total", "Segment store calls of a tag since its buffer was made, by result (ok or error).", []string{"tag", "result"}, nil)
	descSteps      = prometheus.NewDesc("frond_snowflake_clock_backward_steps_total", "Backward clock steps seen by the snowflake generator.", nil, nil)
	descRefusals   = prometheus.NewDesc("frond_snowflake_clock_refusals_total", "Snowflake requests refused because the clock was behind.", nil, nil)
	descBorrows    = prometheus.NewDesc("frond_snowflake_borrowed_ticks_total", "Ticks the snowflake generator borrowed ahead of the clock.", nil, nil)
	descLead       = prometheus.NewDesc("frond_snowflake_lead_seconds", "How far the last snowflake ID is ahead of the clock.", nil, nil)
	descBehind     = prometheus.NewDesc("frond_snowflake_clock_behind_seconds", "How far the clock is behind the latest time the generator used.", nil, nil)
	descWorker     = prometheus.NewDesc("frond_snowflake_worker_id", "The worker ID this node holds (-1: none).", nil, nil)
	descIssuing    = prometheus.NewDesc("frond_snowflake_issuing", "1 when this node can issue snowflake IDs (a worker ID is held and the peers' clock check passed), else 0.", nil, nil)
	descFromCache  = prometheus.NewDesc("frond_snowflake_worker_from_local_record", "1 when the worker ID comes from the local record because the registry is unreachable.", nil, nil)
	descExpiry     = prometheus.NewDesc("frond_snowflake_layout_expiry_timestamp_seconds", "When the snowflake layout's time field runs out (Unix time).", []string{"layout"}, nil)
	descSeqCalls   = prometheus.NewDesc("frond_sequence_store_calls_total", "Store calls of a sequence tag on this node: each serves every request that waited for it (group commit).", []string{"tag"}, nil)
	descSeqGroup   = prometheus.NewDesc("frond_sequence_max_group", "The most requests of a sequence tag one store call has served on this node.", []string{"tag"}, nil)
	descIdemKeys   = prometheus.NewDesc("frond_idempotency_keys", "Idempotency keys whose answers this node remembers.", nil, nil)
	descIdemIDs    = prometheus.NewDesc("frond_idempotency_ids", "IDs (or ranges) held by the remembered answers.", nil, nil)
	descIdemRepl   = prometheus.NewDesc("frond_idempotency_replays_total", "Answers given again to a request with the same idempotency key.", nil, nil)
	descIdemEvict  = prometheus.NewDesc("frond_idempotency_evicted_total", "Remembered answers forgotten before their window ended (idempotency.max_entries or max_ids reached).", nil, nil)
	descIdemConfl  = prometheus.NewDesc("frond_idempotency_conflicts_total", "Requests refused because their idempotency key came with another request within the window.", nil, nil)
	descBudget     = prometheus.NewDesc("frond_answer_budget_bytes", "Bytes of the node's answer budget held by answers built and not yet read by their clients (limits.answer_budget).", nil, nil)
	descBudgetMax  = prometheus.NewDesc("frond_answer_budget_limit_bytes", "The node's answer budget (limits.answer_budget); 0: no bound.", nil, nil)
	descBudgetRef  = prometheus.NewDesc("frond_answer_budget_refused_total", "Requests refused with overloaded: their answer did not fit in the node's answer budget.", nil, nil)

	// Keyed sequences: series per space, never per key or section.
	descKSections = prometheus.NewDesc("frond_keyseq_sections", "Sections of a keyed sequence space this node serves, by state: held (served by this node now), unowned (no live owner at this node's last read of the table), lost_data (refused because the store lost data: every one while the store is fenced, until frond space rearm), total.", []string{"space", "state"}, nil)
	descKMembers  = prometheus.NewDesc("frond_keyseq_members", "Nodes sharing a keyed sequence space at this node's last read of the table.", []string{"space"}, nil)
	descKLease    = prometheus.NewDesc("frond_keyseq_lease_remaining_seconds", "How long this node may still count on its section leases of a space (0: it answers none of its sections until a renewal succeeds).", []string{"space"}, nil)
	descKValues   = prometheus.NewDesc("frond_keyseq_values_total", "Values of a keyed sequence space this node answered as a section's owner.", []string{"space"}, nil)
	descKForward  = prometheus.NewDesc("frond_keyseq_forwarded_total", "Requests for a keyed sequence space this node forwarded to the owner of the key's section.", []string{"space"}, nil)
	descKRaises   = prometheus.NewDesc("frond_keyseq_raises_total", "Raises of a section's persisted maximum by this node (a step each), takes excluded.", []string{"space"}, nil)
	descKMoves    = prometheus.NewDesc("frond_keyseq_section_moves_total", "Sections this node took (each with a raise), gave back to another node's share, or lost because its lease ran out.", []string{"space", "move"}, nil)
	descKFailures = prometheus.NewDesc("frond_keyseq_lease_round_failures_total", "Rounds of lease renewal and reading of the owners that failed on the store.", []string{"space"}, nil)
)

type engineCollector struct {
	m   *Metrics
	svc *service.Service
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIssued, descTagIssued, descTags, descRunway, descMinHorizon, descOmitted, descRemaining, descHorizon, descStep, descTagLoads,
		descSteps, descRefusals, descBorrows, descLead, descBehind, descWorker, descIssuing, descFromCache, descExpiry,
		descSeqCalls, descSeqGroup, descIdemKeys, descIdemIDs, descIdemRepl, descIdemEvict, descIdemConfl, descBudget, descBudgetMax, descBudgetRef,
		descKSections, descKMembers, descKLease, descKValues, descKForward, descKRaises, descKMoves, descKFailures} {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	pinned := func(tag string) bool { return c.m.pinned[tag] }
	max := max(c.m.opts.MaxTags, 0)

	seg := c.svc.SegmentOverview()
	sum, shown := RankTags(seg.Tags, max, pinned)
	counter(descIssued, float64(seg.Issued), "segment")
	gauge(descTags, float64(sum.Failing), TagFailing)
	gauge(descTags, float64(sum.Low), TagLow)
	gauge(descTags, float64(sum.Total-sum.Failing-sum.Low), TagOK)
	gauge(descMinHorizon, seconds(sum.MinHorizon))
	gauge(descRunway, seg.Runway.Seconds())
	gauge(descOmitted, float64(sum.Total-len(shown)), "segment")
	for _, i := range shown {
		b := &seg.Tags[i]
		counter(descTagIssued, float64(b.Issued), "segment", b.Tag)
		gauge(descRemaining, float64(b.Remaining), b.Tag)
		gauge(descHorizon, seconds(b.Horizon), b.Tag)
		gauge(descStep, float64(b.Step), b.Tag)
		counter(descTagLoads, float64(b.Loads), b.Tag, "ok")
		counter(descTagLoads, float64(b.Failures), b.Tag, "error")
	}

	seq := c.svc.SequenceOverview()
	counter(descIssued, float64(seq.IDs), "sequence")
	// The sequence tags shown: the pinned, then those with the most IDs.
	slices.SortFunc(seq.Tags, func(a, b service.SequenceStats) int {
		if pa, pb := pinned(a.Tag), pinned(b.Tag); pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.IDs, a.IDs); c != 0 {
			return c
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	gauge(descOmitted, float64(len(seq.Tags)-min(max, len(seq.Tags))), "sequence")
	for _, q := range seq.Tags[:min(max, len(seq.Tags))] {
		counter(descTagIssued, float64(q.IDs), "sequence", q.Tag)
		counter(descSeqCalls, float64(q.Trips), q.Tag)
		gauge(descSeqGroup, float64(q.Max), q.Tag)
	}

	idem := c.svc.IdempotencyStats()
	gauge(descIdemKeys, float64(idem.Entries))
	gauge(descIdemIDs, float64(idem.IDs))
	counter(descIdemRepl, float64(idem.Replays))
	counter(descIdemEvict, float64(idem.Evicted))
	counter(descIdemConfl, float64(idem.Conflict))

	used, limit, refused := c.svc.AnswerBudget()
	gauge(descBudget, float64(used))
	gauge(descBudgetMax, float64(limit))
	counter(descBudgetRef, float64(refused))

	if sp := c.svc.Spaces(); sp != nil {
		var values uint64
		for _, st := range sp.Stats() {
			values += st.Served
			gauge(descKSections, float64(st.Held), st.Name, "held")
			gauge(descKSections, float64(st.Unowned), st.Name, "unowned")
			gauge(descKSections, float64(st.Sections), st.Name, "total")
			gauge(descKSections, float64(st.Refused), st.Name, "lost_data")
			gauge(descKMembers, float64(st.Members), st.Name)
			gauge(descKLease, st.LeaseLeft.Seconds(), st.Name)
			counter(descKValues, float64(st.Served), st.Name)
			counter(descKForward, float64(st.Forwarded), st.Name)
			counter(descKRaises, float64(st.Raises), st.Name)
			counter(descKMoves, float64(st.Takes), st.Name, "taken")
			counter(descKMoves, float64(st.Releases), st.Name, "given")
			counter(descKMoves, float64(st.Lapses), st.Name, "lost")
			counter(descKFailures, float64(st.RoundFailures), st.Name)
		}
		counter(descIssued, float64(values), "seq")
	}
	counter(descIssued, float64(c.svc.SnowflakeIssued()), "snowflake")
	st := c.svc.SnowflakeStats()
	counter(descSteps, float64(st.BackwardSteps))
	counter(descRefusals, float64(st.Refusals))
	counter(descBorrows, float64(st.Borrows))
	gauge(descLead, st.Lead.Seconds())
	gauge(descBehind, st.Behind.Seconds())
	wi := c.svc.WorkerInfo()
	gauge(descWorker, float64(wi.ID))
	gauge(descIssuing, b2f(wi.Issuing))
	gauge(descFromCache, b2f(wi.FromCache))
	l := c.svc.Layout()
	gauge(descExpiry, float64(l.Expires().Unix()), l.Name)
}

// seconds is a horizon in seconds, -1 when none was measured.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
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
	families, _ := m.counts.Gather()
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
