package client

import "github.com/frond-id/frond/segment"

// Stats are what the client has done, for logs and metrics.
type Stats struct {
	// Calls are calls to servers (leases and the other kinds); Retries the
	// attempts that failed and were tried again; Failovers those of them
	// with more than one server configured; Waits the times every server
	// rested and a call waited for the first to be due.
	Calls, Retries, Failovers, Waits uint64
	// Servers says per server whether it is up as the client sees it.
	Servers []ServerStats
	// Tags are the leases per tag: leased (Loads, Step), remaining,
	// callers that had to wait for a lease (Waits), last error.
	Tags []segment.Stats
}

// ServerStats is one server as the client sees it.
type ServerStats struct {
	Addr string
	// Up is false while the server rests after a failure.
	Up bool
	// Failures in a row.
	Failures int
}

// Stats returns the client's statistics.
func (c *Client) Stats() Stats {
	st := Stats{Calls: c.stats.calls.Load(), Retries: c.stats.retries.Load(), Failovers: c.stats.failovers.Load(),
		Waits: c.stats.waits.Load(), Tags: c.engine.Stats()}
	for _, s := range c.servers {
		s.mu.Lock()
		st.Servers = append(st.Servers, ServerStats{Addr: s.addr, Up: s.fails == 0, Failures: s.fails})
		s.mu.Unlock()
	}
	return st
}
