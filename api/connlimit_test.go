package api

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A full listener refuses the next connection with the protocol's words
// and closes it; closing an accepted connection frees its place.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewConnLimit(2, 0)
	lim := LimitListener(ln, l, func(c net.Conn) { io.WriteString(c, "-ERR max number of clients reached\r\n") })
	defer lim.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := lim.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	a1, a2 := <-accepted, <-accepted
	third := dial()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(third).ReadString('\n')
	if !strings.HasPrefix(line, "-ERR max number of clients") {
		t.Fatalf("third connection read %q, %v", line, err)
	}
	if l.Open() != 2 || l.Refused() != 1 {
		t.Fatalf("open %d, refused %d", l.Open(), l.Refused())
	}
	a1.Close()
	a1.Close() // twice: released once
	if l.Open() != 1 {
		t.Fatalf("open %d after a close", l.Open())
	}
	dial()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a freed place was not given to the next connection")
	}
	a2.Close()
	if l.Open() != 0 {
		t.Fatalf("open %d at the end", l.Open())
	}
}

// Issue 43, item 5: one address may hold at most perAddr connections of a
// listener (10,000 HTTP and 10,000 gRPC connections from one address took
// every file descriptor); another address is still served, and a closed
// connection frees its address's place.
func TestConnLimit_PerAddress(t *testing.T) {
	l := NewConnLimit(100, 2)
	a, b, v6a, v6b := "10.0.0.1:1000", "10.0.0.2:1000", "[2001:db8::1]:1", "[2001:db8::2]:2"
	if !l.Acquire(a) || !l.Acquire(a) {
		t.Fatal("two connections from one address refused")
	}
	if l.Acquire("10.0.0.1:2000") {
		t.Fatal("a third connection from one address accepted")
	}
	if !l.Acquire(b) {
		t.Fatal("another address refused")
	}
	// One IPv6 /64 is one address (a host has billions).
	if !l.Acquire(v6a) || !l.Acquire(v6b) || l.Acquire("[2001:db8::3]:3") {
		t.Fatal("an IPv6 /64 is not counted as one address")
	}
	l.Release(a)
	if !l.Acquire(a) {
		t.Fatal("a closed connection did not free its address's place")
	}
	if l.Open() != 5 || l.Refused() != 2 {
		t.Fatalf("open %d, refused %d", l.Open(), l.Refused())
	}
	for _, x := range []string{a, a, b, v6a, v6b} {
		l.Release(x)
	}
	if l.Open() != 0 || l.byAddr.addresses() != 0 {
		t.Fatalf("after every close: open %d, addresses %d", l.Open(), l.byAddr.addresses())
	}
}

// emfileListener fails with EMFILE n times, then accepts.
type emfileListener struct {
	net.Listener
	n int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	c, _ := net.Pipe()
	return c, nil
}

// Issue 43, item 5: with no file descriptor left, accepting waits (5 ms
// doubling) instead of retrying at once, says so once, and goes on.
func TestAcceptBackoff_EMFILE(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var wait time.Duration
	start := time.Now()
	c, err := AcceptBackoff(&emfileListener{Listener: ln, n: 4}, &wait, log)
	if err != nil || c == nil {
		t.Fatalf("after EMFILE: %v, %v", c, err)
	}
	c.Close()
	if d := time.Since(start); d < 5*time.Millisecond+10*time.Millisecond+20*time.Millisecond+40*time.Millisecond {
		t.Fatalf("four EMFILE in %v: no pause between the tries", d)
	}
	if n := strings.Count(logs.String(), "no file descriptor left"); n != 1 || !strings.Contains(logs.String(), "accepting connections again") || wait != 0 {
		t.Fatalf("logged %d times, wait %v:\n%s", n, wait, logs.String())
	}
}
