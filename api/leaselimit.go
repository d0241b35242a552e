package api

import (
	"context"
	"fmt"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
)

// WithCaller returns ctx carrying the caller of its request
// (service.WithCaller): the token it sent (admin or tag token; "" if none)
// and its address. Every front door sets it where it admits a request the
// per-caller limits apply to (Guard.Admit, and WantsCaller).
func WithCaller(ctx context.Context, token, addr string) context.Context {
	return service.WithCaller(ctx, token, addr)
}

// WantsCaller reports whether a front door attaches the caller to a
// request's context (WithCaller costs allocations on every request): when
// the Guard has a lease rate, the request carries an idempotency key (the
// service keeps keys per caller), or it asks for a keyed sequence (seq)
// and the Guard limits the spaces a caller starts.
func (g *Guard) WantsCaller(idempotent, seq bool) bool {
	return idempotent || g.LimitsLeases() || seq && g.LimitsStarts()
}

// LimitsLeases reports whether the Guard has a lease rate: only then do the
// front doors attach the caller to a request's context (WithCaller costs
// allocations on every request).
func (g *Guard) LimitsLeases() bool { return g != nil && g.o.LeaseRate > 0 }

// key is the limits' key of a caller: its token when the server gave it
// out (Known), else its address's prefix, as Admit keys the request rate.
func (g *Guard) key(token, addr string) string {
	if token != "" && g.o.Known != nil && g.o.Known(token) {
		return "t:" + token
	}
	return "a:" + prefixOf(addr).String()
}

// AllowLease implements service.LeaseLimit: a request for IDs its caller
// hands out itself (a lease, a TinyID or CosId segment) is refused while
// the caller is past limits.lease_rate (issue 59, item 7: one anonymous
// client leased 3.5e8 IDs a second, 2^53 in about 300 days), and charged
// the n IDs it asks for as it is admitted, so that requests sent at once
// are not all admitted on one burst (issue 69, item 5). A context without
// a caller (an internal call) is not limited.
func (g *Guard) AllowLease(ctx context.Context, n int64) error {
	if !g.LimitsLeases() {
		return nil
	}
	c, ok := service.CallerOf(ctx)
	if !ok {
		return nil
	}
	now := g.o.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.leaseBucket(g.key(c.Token, c.Addr), now)
	if b.tokens > 0 {
		b.tokens -= float64(n) // a request past the rest is admitted once, in debt after
		return nil
	}
	g.refused.Add(1)
	wait := time.Duration(-b.tokens/g.o.LeaseRate*float64(time.Second)) + time.Millisecond
	return &Error{Code: frond.CodeRateLimited, RetryAfter: wait,
		Msg: fmt.Sprintf("over the lease rate of %g IDs per second (burst %g) for this token or address: retry in %s", g.o.LeaseRate, g.o.LeaseBurst, wait.Round(time.Millisecond))}
}

// Leased implements service.LeaseLimit: the settling of a request
// AllowLease admitted, n IDs more than it was charged (negative: fewer,
// given back up to the burst); a caller in debt is refused until the rate
// repays it.
func (g *Guard) Leased(ctx context.Context, n int64) {
	if !g.LimitsLeases() || n == 0 {
		return
	}
	c, ok := service.CallerOf(ctx)
	if !ok {
		return
	}
	now := g.o.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.leaseBucket(g.key(c.Token, c.Addr), now)
	b.tokens = min(g.o.LeaseBurst, b.tokens-float64(n))
}

// leaseBucket is key's lease bucket, refilled to now; the caller holds g.mu.
func (g *Guard) leaseBucket(key string, now time.Time) *bucket {
	return refill(g.leases, key, now, g.o.LeaseRate, g.o.LeaseBurst)
}

// refill is key's bucket of m, refilled at rate up to burst to now (a new
// one full); a table of maxGuardKeys forgets its full buckets first, then
// all. The caller holds g.mu.
func refill(m map[string]*bucket, key string, now time.Time, rate, burst float64) *bucket {
	b := m[key]
	if b == nil {
		if len(m) >= maxGuardKeys {
			for k, b := range m {
				if b.tokens+now.Sub(b.at).Seconds()*rate >= burst {
					delete(m, k)
				}
			}
			if len(m) >= maxGuardKeys {
				clear(m)
			}
		}
		b = &bucket{tokens: burst, at: now}
		m[key] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	return b
}

// LimitsStarts reports whether the Guard bounds the keyed sequence spaces
// a caller starts (GuardOptions.StartRate): the front doors attach the
// caller to a keyed sequence request's context then.
func (g *Guard) LimitsStarts() bool { return g != nil && g.o.StartRate > 0 }

// AllowStart implements keyseq.StartLimit: a request that would start a
// keyed sequence space not running on this node is refused while its
// caller is past sequences.start_rate (issue 69: every start costs a round
// of leases on the store, and past sequences.max_spaces an eviction; one
// anonymous client cycling 70 spaces made 2,937 evictions in 20 s). A
// request for a space already running is never asked; one without a caller
// (an internal call, a node's forward) is not limited.
func (g *Guard) AllowStart(ctx context.Context, space string) error {
	if !g.LimitsStarts() {
		return nil
	}
	c, ok := service.CallerOf(ctx)
	if !ok {
		return nil
	}
	now := g.o.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	b := refill(g.starts, g.key(c.Token, c.Addr), now, g.o.StartRate, float64(g.o.StartBurst))
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	g.refused.Add(1)
	wait := time.Duration((1-b.tokens)/g.o.StartRate*float64(time.Second)) + time.Millisecond
	return &Error{Code: frond.CodeRateLimited, RetryAfter: wait,
		Msg: fmt.Sprintf("keyed sequence space %s is not running on this node, and this token or address has started as many spaces here as sequences.start_rate allows (%g per second, burst %d): retry in %s",
			service.Quote(space), g.o.StartRate, g.o.StartBurst, wait.Round(time.Millisecond))}
}
