package faultproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo is a line echo server: the store.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// ask sends a line and reads the answer, or fails by the deadline.
func ask(c net.Conn, line string, within time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	s, err := bufio.NewReader(c).ReadString('\n')
	return s, err
}

func TestProxy_Faults(t *testing.T) {
	p, err := Start("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s, err := ask(c, "a", 5*time.Second); err != nil || s != "a\n" {
		t.Fatalf("through the proxy: %q, %v", s, err)
	}

	// Slowed: each query waits the delay before it reaches the store.
	p.Delay(100 * time.Millisecond)
	t0 := time.Now()
	if s, err := ask(c, "b", 5*time.Second); err != nil || s != "b\n" || time.Since(t0) < 100*time.Millisecond {
		t.Fatalf("slowed: %q, %v after %v", s, err, time.Since(t0))
	}
	p.Delay(0)

	// Held: nothing comes back, on this connection or a new one, until the
	// release; then the held query is answered.
	p.Hold()
	if _, err := ask(c, "c", 200*time.Millisecond); err == nil {
		t.Fatal("answered while held")
	}
	c2, err := net.Dial("tcp", p.Addr()) // accepted, as by a stopped process's kernel
	if err != nil {
		t.Fatalf("a new connection while held: %v", err)
	}
	defer c2.Close()
	if _, err := ask(c2, "d", 200*time.Millisecond); err == nil {
		t.Fatal("a new connection answered while held")
	}
	p.Release()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	if s, err := bufio.NewReader(c2).ReadString('\n'); err != nil || s != "d\n" {
		t.Fatalf("after the release: %q, %v", s, err)
	}

	// Cut: the connections are reset and new ones refused, until restored.
	p.Cut()
	if _, err := ask(c2, "e", 2*time.Second); err == nil {
		t.Fatal("a connection outlived the cut")
	}
	if c3, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c3.Close()
		t.Fatal("a connection accepted while cut")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	c4, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	defer c4.Close()
	if s, err := ask(c4, "f", 5*time.Second); err != nil || s != "f\n" {
		t.Fatalf("after the restore: %q, %v", s, err)
	}
}
