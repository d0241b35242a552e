package api

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
)

// GuardOptions are the limits of a Guard.
type GuardOptions struct {
	// Rate is the requests per second allowed per token, or per client
	// address for requests without one; 0 turns the rate limit off.
	Rate float64
	// Burst is how many requests above Rate may come at once (at least 1;
	// 0 means max(1, Rate)).
	Burst int
	// AuthFailures is how many wrong tokens (admin or tag tokens) an
	// address may send within AuthWindow; the next request from it is
	// refused until the window has passed. 0 turns the limit off.
	AuthFailures int
	// AuthWindow is the window of AuthFailures (default one minute).
	AuthWindow time.Duration
	// LeaseRate is the IDs per second a token, or a client address
	// without one, may take to hand out itself (a lease, a TinyID or CosId
	// segment: AllowLease), and LeaseBurst how many at once (0: ten
	// seconds of LeaseRate). 0 turns it off.
	LeaseRate  float64
	LeaseBurst float64
	// StartRate is the keyed sequence spaces per second a token, or a
	// client address without one, may start on this node by asking for a
	// space not running here (AllowStart), and StartBurst how many at once
	// (0: max(1, StartRate)). 0 turns it off.
	StartRate  float64
	StartBurst int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Known reports whether a token is one the server gave out (the admin
	// token or a tag token): only those get a rate bucket of their own.
	// Any other token counts as none, so a client cannot escape the
	// limit of its address by sending a new random token with each
	// request. Nil: no token is known.
	Known func(token string) bool
}

// maxGuardKeys bounds the Guard's memory: when a table holds this many keys
// it forgets the ones that are idle (their bucket full, their failures
// past), and if that is not enough, all of them.
const maxGuardKeys = 1 << 16

// Guard is the abuse limits every front end enforces the same way, whatever
// the protocol: the rate limit per token or address, and the limit on wrong
// tokens per address. A nil *Guard allows everything.
type Guard struct {
	o       GuardOptions
	mu      sync.Mutex
	buckets map[string]*bucket
	leases  map[string]*bucket // IDs leased, by key (AllowLease)
	starts  map[string]*bucket // spaces started, by key (AllowStart)
	fails   map[netip.Prefix]*failures
	swept   time.Time    // when fails was last cleared of past windows
	failing atomic.Int64 // len(fails): with the rate limit off and no failures, Admit takes no lock
	refused atomic.Uint64
}

type bucket struct {
	tokens float64
	at     time.Time
}

type failures struct {
	n     int
	since time.Time // the window's start
}

// NewGuard returns a Guard, or nil when both limits are off.
func NewGuard(o GuardOptions) *Guard {
	if o.Rate <= 0 && o.AuthFailures <= 0 && o.LeaseRate <= 0 && o.StartRate <= 0 {
		return nil
	}
	if o.LeaseBurst <= 0 {
		o.LeaseBurst = 10 * o.LeaseRate
	}
	if o.StartBurst <= 0 {
		o.StartBurst = max(1, int(math.Ceil(o.StartRate)))
	}
	if o.Burst <= 0 {
		o.Burst = max(1, int(math.Ceil(o.Rate)))
	}
	if o.AuthWindow <= 0 {
		o.AuthWindow = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Guard{o: o, buckets: map[string]*bucket{}, leases: map[string]*bucket{}, starts: map[string]*bucket{}, fails: map[netip.Prefix]*failures{}}
}

// Refused is how many requests the Guard has refused.
func (g *Guard) Refused() uint64 {
	if g == nil {
		return 0
	}
	return g.refused.Load()
}

// Admit is called once per request before it is served, with the token it
// carries (admin or tag token; empty if none) and the client's address
// (host:port or host). It returns nil, or an *Error of frond.CodeRateLimited with
// the time to wait.
func (g *Guard) Admit(token, addr string) error {
	if g == nil {
		return nil
	}
	if g.o.Rate <= 0 && g.failing.Load() == 0 {
		return nil // the common case: one atomic load, no lock shared by every request
	}
	now := g.o.Now()
	p := prefixOf(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.o.AuthFailures > 0 && len(g.fails) > 0 {
		if now.Sub(g.swept) >= g.o.AuthWindow {
			g.sweepFails(now)
		}
		if f := g.fails[p]; f != nil && f.n >= g.o.AuthFailures {
			if wait := f.since.Add(g.o.AuthWindow).Sub(now); wait > 0 {
				g.refused.Add(1)
				return &Error{Code: frond.CodeRateLimited, RetryAfter: wait,
					Msg: fmt.Sprintf("too many wrong tokens from this address (%d within %s): wait %s", f.n, g.o.AuthWindow, wait.Round(time.Second))}
			}
		}
	}
	if g.o.Rate <= 0 {
		return nil
	}
	key := g.key(token, addr)
	b := g.buckets[key]
	if b == nil {
		if len(g.buckets) >= maxGuardKeys {
			g.sweepBuckets(now)
		}
		b = &bucket{tokens: float64(g.o.Burst), at: now}
		g.buckets[key] = b
	}
	b.tokens = min(float64(g.o.Burst), b.tokens+now.Sub(b.at).Seconds()*g.o.Rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	g.refused.Add(1)
	wait := time.Duration((1 - b.tokens) / g.o.Rate * float64(time.Second))
	return &Error{Code: frond.CodeRateLimited, RetryAfter: wait,
		Msg: fmt.Sprintf("over the rate limit of %g requests per second (burst %d) for this token or address: retry in %s", g.o.Rate, g.o.Burst, wait.Round(time.Millisecond))}
}

// AdminToken is the one check of an admin token, on every protocol and
// path (issue 43): it reports whether got is want (TokenOK, in constant
// time), and counts a token sent and refused against addr (AuthFailed),
// whatever the path answers then: a 401, a page with the tags hidden, RESP
// WRONGPASS. An empty got is no guess and does not count. limited reports
// that addr has now reached the limit of wrong tokens (a RESP connection
// is closed). The tag tokens' refusals are counted where they are answered
// (frond.CodeForbidden), since the service checks them.
func (g *Guard) AdminToken(want, got, addr string) (ok, limited bool) {
	if TokenOK(want, got) {
		return true, false
	}
	if got == "" {
		return false, false
	}
	return false, g.AuthFailed(addr)
}

// AuthFailed records a wrong token (admin or tag token) from addr. It
// reports whether the address has now reached the limit, so that a
// connection-oriented protocol can close the connection. Only a token that
// was presented and refused counts: a request with no token at all (a
// client that does not know one is needed) does not, or anyone sharing an
// address with the admin (a NAT, a proxy) could lock the admin out.
func (g *Guard) AuthFailed(addr string) bool {
	if g == nil || g.o.AuthFailures <= 0 {
		return false
	}
	now := g.o.Now()
	p := prefixOf(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.fails[p]
	if f == nil || now.Sub(f.since) >= g.o.AuthWindow {
		if f == nil && len(g.fails) >= maxGuardKeys {
			g.sweepFails(now)
		}
		f = &failures{since: now}
		g.fails[p] = f
		g.failing.Store(int64(len(g.fails)))
	}
	f.n++
	return f.n >= g.o.AuthFailures
}

func (g *Guard) sweepBuckets(now time.Time) {
	for k, b := range g.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*g.o.Rate >= float64(g.o.Burst) {
			delete(g.buckets, k)
		}
	}
	if len(g.buckets) >= maxGuardKeys {
		clear(g.buckets)
	}
}

// sweepFails forgets the failures whose window has passed. The caller
// holds g.mu.
func (g *Guard) sweepFails(now time.Time) {
	for k, f := range g.fails {
		if now.Sub(f.since) >= g.o.AuthWindow {
			delete(g.fails, k)
		}
	}
	if len(g.fails) >= maxGuardKeys {
		clear(g.fails)
	}
	g.swept = now
	g.failing.Store(int64(len(g.fails)))
}

// prefixOf is the client a limit applies to (service.AddrPrefix).
func prefixOf(addr string) netip.Prefix { return service.AddrPrefix(addr) }
