// Package clientmetrics exposes a frond client's statistics
// (client.Client.Stats) as Prometheus metrics, read at scrape time: the
// client's hot path pays nothing for them. It is its own package so that
// the client does not make its users import client_golang.
//
//	prometheus.MustRegister(clientmetrics.New(c))
package clientmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frond-id/frond/client"
)

var (
	descCalls     = prometheus.NewDesc("frond_client_calls_total", "Calls to frond servers (leases and other kinds).", nil, nil)
	descRetries   = prometheus.NewDesc("frond_client_retries_total", "Attempts that failed and were tried again.", nil, nil)
	descFailovers = prometheus.NewDesc("frond_client_failovers_total", "Retries on another server.", nil, nil)
	descWaits     = prometheus.NewDesc("frond_client_all_resting_waits_total", "Calls that waited because every server rested after failures.", nil, nil)
	descUp        = prometheus.NewDesc("frond_client_server_up", "1 when the server is up as the client sees it, 0 while it rests after a failure.", []string{"server"}, nil)
	descLeases    = prometheus.NewDesc("frond_client_leases_total", "Ranges leased for a tag.", []string{"tag"}, nil)
	descRemaining = prometheus.NewDesc("frond_client_lease_remaining", "IDs left in a tag's leased ranges.", []string{"tag"}, nil)
	descStep      = prometheus.NewDesc("frond_client_lease_size", "IDs asked for in a tag's last lease.", []string{"tag"}, nil)
	descTagWaits  = prometheus.NewDesc("frond_client_lease_waits_total", "Callers that found a tag's leases used up and waited for the next.", []string{"tag"}, nil)
	descIssued    = prometheus.NewDesc("frond_client_ids_total", "Segment IDs handed out from a tag's leases.", []string{"tag"}, nil)
)

type collector struct{ c *client.Client }

// New returns a collector of c's statistics.
func New(c *client.Client) prometheus.Collector { return collector{c} }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCalls, descRetries, descFailovers, descWaits, descUp, descLeases, descRemaining, descStep, descTagWaits, descIssued} {
		ch <- d
	}
}

func (x collector) Collect(ch chan<- prometheus.Metric) {
	st := x.c.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descCalls, st.Calls)
	counter(descRetries, st.Retries)
	counter(descFailovers, st.Failovers)
	counter(descWaits, st.Waits)
	for _, s := range st.Servers {
		up := 0.0
		if s.Up {
			up = 1
		}
		gauge(descUp, up, s.Addr)
	}
	for _, t := range st.Tags {
		counter(descLeases, t.Loads, t.Tag)
		gauge(descRemaining, float64(t.Remaining), t.Tag)
		gauge(descStep, float64(t.Step), t.Tag)
		counter(descTagWaits, t.Waits, t.Tag)
		counter(descIssued, uint64(t.Issued), t.Tag)
	}
}
