package resp

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond/api"
)

// The guard over RESP: over the rate, RATE_LIMITED; wrong AUTHs close the
// connection once the address reaches the limit, and the address is then
// refused on a new connection too.
func TestServer_Guard(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	addr, _ := start(t, api.Options{AdminToken: "s3cret", Guard: api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, AuthFailures: 2, Now: clock})})
	raw := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	send := func(c net.Conn, r *bufio.Reader, cmd string) string {
		t.Helper()
		io.WriteString(c, cmd+"\r\n")
		line, err := r.ReadString('\n')
		if err != nil {
			return "EOF"
		}
		return strings.TrimSpace(line)
	}
	c, r := raw()
	if got := send(c, r, "PING"); got != "+PONG" {
		t.Fatal(got)
	}
	send(c, r, "PING")
	if got := send(c, r, "PING"); !strings.HasPrefix(got, "-RATE_LIMITED ") {
		t.Fatalf("over the rate: %q", got)
	}
	now = now.Add(time.Minute)
	if got := send(c, r, "AUTH nope"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("wrong AUTH: %q", got)
	}
	if got := send(c, r, "AUTH nope"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("second wrong AUTH: %q", got)
	}
	if got := send(c, r, "PING"); got != "EOF" {
		t.Fatalf("the connection stays open after the limit: %q", got)
	}
	c2, r2 := raw()
	if got := send(c2, r2, "AUTH s3cret"); !strings.HasPrefix(got, "-RATE_LIMITED too many wrong tokens") {
		t.Fatalf("a new connection from the address: %q", got)
	}
}

// Admin commands without AUTH are refused but do not count as wrong
// tokens: clients sharing the admin's address cannot lock the admin out
// (issue 29, item 9).
func TestServer_GuardNoTokenNoLockout(t *testing.T) {
	addr, _ := start(t, api.Options{AdminToken: "s3cret", Guard: api.NewGuard(api.GuardOptions{AuthFailures: 2})})
	c := dial(t, addr)
	for range 5 {
		if err := c.Do(bg, "TAG", "LIST").Err(); err == nil || !strings.HasPrefix(err.Error(), "UNAUTHORIZED") {
			t.Fatalf("TAG LIST without AUTH: %v", err)
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer admin.Close()
	if err := admin.Do(bg, "TAG", "LIST").Err(); err != nil {
		t.Fatalf("the admin after 5 token-less commands from the address: %v", err)
	}
}

// Issue 43, item 10: HELLO's AUTH counts a wrong token as AUTH does (2,000
// guesses in 0.02 s went uncounted, the right token working after): the
// connection is closed at the limit and the address refused.
func TestServer_HelloAuthCounts(t *testing.T) {
	addr, _ := start(t, api.Options{AdminToken: "s3cret", Guard: api.NewGuard(api.GuardOptions{AuthFailures: 3})})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for i := range 3 {
		io.WriteString(c, "HELLO 2 AUTH default guess\r\n")
		line, err := r.ReadString('\n')
		if i < 3 && (err != nil || !strings.HasPrefix(line, "-WRONGPASS")) {
			t.Fatalf("wrong HELLO AUTH %d: %q, %v", i, line, err)
		}
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection stays open after the limit of wrong tokens")
	}
	c2 := dial(t, addr)
	if err := c2.Do(bg, "AUTH", "s3cret").Err(); err == nil || !strings.HasPrefix(err.Error(), "RATE_LIMITED") {
		t.Fatalf("the right token after three wrong HELLO AUTH: %v", err)
	}
}
