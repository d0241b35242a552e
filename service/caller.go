package service

import (
	"context"
	"net"
	"net/netip"
)

// Caller is who sent a request, as its front door admitted it: the token
// it sent (an admin or a tag token; "" if none) and its address. The
// limits kept per caller read it from the request's context: the lease
// rate (api.Guard) and the memory of idempotency keys.
type Caller struct{ Token, Addr string }

type callerKey struct{}

// WithCaller returns ctx carrying the caller of its request. Every front
// door sets it where it admits a request the per-caller limits apply to (a
// lease under limits.lease_rate, a request with an idempotency key).
func WithCaller(ctx context.Context, token, addr string) context.Context {
	return context.WithValue(ctx, callerKey{}, Caller{Token: token, Addr: addr})
}

// CallerOf is the caller ctx carries; false for an internal call.
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// AddrPrefix is the client a per-address limit applies to: the IPv4
// address, or the /64 of an IPv6 address (one host usually holds a whole
// /64). An address that does not parse (a Unix socket, a test's pipe) is
// one client.
func AddrPrefix(addr string) netip.Prefix {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.WithZone("").Prefix(bits)
	return p
}

// knownToken reports whether token is one this server gave out: the admin
// token or a configured tag token (a made-up one names no caller).
func (s *Service) knownToken(token string) bool {
	if token == "" {
		return false
	}
	if token == s.cfg.AdminToken {
		return true
	}
	_, ok := s.tokens[token]
	return ok
}

// callerScope is the caller whose idempotency keys a request's key is
// among: its token when the server gave it out, else its address (the
// /64 of IPv6); "" for an internal call.
func (s *Service) callerScope(ctx context.Context, r *Request) string {
	switch c, ok := CallerOf(ctx); {
	case s.knownToken(r.Token):
		return "t:" + r.Token
	case ok && s.knownToken(c.Token):
		return "t:" + c.Token
	case ok:
		return "a:" + AddrPrefix(c.Addr).String()
	}
	return ""
}
