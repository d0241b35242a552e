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
// the Guard has a lease rate, or the request carries an idempotency key
// (the service keeps keys per caller).
func (g *Guard) WantsCaller(idempotent bool) bool { return idempotent || g.LimitsLeases() }

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
	b := g.leases[key]
	if b == nil {
		if len(g.leases) >= maxGuardKeys {
			for k, b := range g.leases {
				if b.tokens+now.Sub(b.at).Seconds()*g.o.LeaseRate >= g.o.LeaseBurst {
					delete(g.leases, k)
				}
			}
			if len(g.leases) >= maxGuardKeys {
				clear(g.leases)
			}
		}
		b = &bucket{tokens: g.o.LeaseBurst, at: now}
		g.leases[key] = b
	}
	b.tokens = min(g.o.LeaseBurst, b.tokens+now.Sub(b.at).Seconds()*g.o.LeaseRate)
	b.at = now
	return b
}
