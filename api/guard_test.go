package api

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
)

func newFakeClock() testclock.Wall {
	return testclock.NewWall(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
}

func limited(err error) (time.Duration, bool) {
	var e *Error
	ok := errors.As(err, &e) && e.Code == frond.CodeRateLimited
	if !ok {
		return 0, false
	}
	return e.RetryAfter, true
}

func TestGuard_Off(t *testing.T) {
	if g := NewGuard(GuardOptions{}); g != nil {
		t.Fatal("a guard without limits")
	}
	var g *Guard
	if g.Admit("t", "1.2.3.4:5") != nil || g.AuthFailed("1.2.3.4:5") || g.Refused() != 0 {
		t.Fatal("a nil guard limits")
	}
}

// The rate is per token, or per address without one, with a burst; a
// refusal says when to retry, and waiting that long is enough.
func TestGuard_Rate(t *testing.T) {
	c := newFakeClock()
	g := NewGuard(GuardOptions{Rate: 10, Burst: 3, Now: c.Now, Known: func(tok string) bool { return tok == "tok" }})
	for i := range 3 {
		if err := g.Admit("", "10.0.0.1:1000"); err != nil {
			t.Fatalf("request %d of the burst: %v", i, err)
		}
	}
	wait, ok := limited(g.Admit("", "10.0.0.1:2000")) // another port, same host
	if !ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("fourth request: retry after %v, %v", wait, ok)
	}
	if err := g.Admit("", "10.0.0.2:1000"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	if err := g.Admit("tok", "10.0.0.1:1000"); err != nil {
		t.Fatalf("a token has its own bucket: %v", err)
	}
	// A token the server never gave out has no bucket of its own: a fresh
	// random token per request did not escape the address's limit.
	if _, ok := limited(g.Admit("random-1", "10.0.0.1:1000")); !ok {
		t.Fatal("an unknown token escaped the address's limit")
	}
	c.Add(wait)
	if err := g.Admit("", "10.0.0.1:1000"); err != nil {
		t.Fatalf("after the advised wait: %v", err)
	}
	if _, ok := limited(g.Admit("", "10.0.0.1:1000")); !ok {
		t.Fatal("no token left, yet admitted")
	}
	c.Add(time.Hour) // the bucket refills to the burst, no more
	for i := range 3 {
		if err := g.Admit("", "10.0.0.1:1000"); err != nil {
			t.Fatalf("refilled burst %d: %v", i, err)
		}
	}
	if _, ok := limited(g.Admit("", "10.0.0.1:1000")); !ok || g.Refused() != 4 {
		t.Fatalf("burst above its size; refused %d", g.Refused())
	}
	// IPv6: one /64 is one client.
	g6 := NewGuard(GuardOptions{Rate: 1, Burst: 1, Now: c.Now})
	if g6.Admit("", "[2001:db8::1]:5") != nil {
		t.Fatal("first IPv6 request refused")
	}
	if _, ok := limited(g6.Admit("", "[2001:db8::ffff]:6")); !ok {
		t.Fatal("the same /64 has its own bucket")
	}
	if g6.Admit("", "[2001:db8:0:1::1]:5") != nil {
		t.Fatal("another /64 shares a bucket")
	}
}

// After AuthFailures wrong tokens within the window, every request from
// the address is refused, even one with the right token, until the window
// has passed.
func TestGuard_AuthFailures(t *testing.T) {
	c := newFakeClock()
	g := NewGuard(GuardOptions{AuthFailures: 3, AuthWindow: time.Minute, Now: c.Now})
	addr := "192.0.2.7:4000"
	for i := range 2 {
		if g.AuthFailed(addr) {
			t.Fatalf("failure %d reached the limit", i+1)
		}
		if err := g.Admit("", addr); err != nil {
			t.Fatalf("after %d failures: %v", i+1, err)
		}
	}
	if !g.AuthFailed(addr) {
		t.Fatal("third failure did not reach the limit")
	}
	c.Add(20 * time.Second)
	wait, ok := limited(g.Admit("right token", addr))
	if !ok || wait != 40*time.Second {
		t.Fatalf("blocked address: retry after %v, %v", wait, ok)
	}
	if err := g.Admit("", "192.0.2.8:4000"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	c.Add(wait)
	if err := g.Admit("", addr); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if g.AuthFailed(addr) {
		t.Fatal("a new window starts from zero")
	}
	// Once every window has passed, requests are admitted without the
	// lock again (the failures are forgotten).
	c.Add(time.Minute)
	if err := g.Admit("", addr); err != nil || g.failing.Load() != 0 {
		t.Fatalf("after the last window: %v, %d addresses still failing", err, g.failing.Load())
	}
}

// The tables stay bounded whatever the number of addresses.
func TestGuard_Bounded(t *testing.T) {
	c := newFakeClock()
	g := NewGuard(GuardOptions{Rate: 1000, Burst: 1, AuthFailures: 5, Now: c.Now})
	for i := range 3 * maxGuardKeys {
		addr := fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)
		g.Admit("", addr)
		g.AuthFailed(addr)
		if i%1000 == 0 {
			c.Add(time.Second)
		}
	}
	if len(g.buckets) > maxGuardKeys || len(g.fails) > maxGuardKeys {
		t.Fatalf("%d buckets, %d failure records", len(g.buckets), len(g.fails))
	}
}
