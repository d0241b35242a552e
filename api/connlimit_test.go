package api

import (
	"bufio"
	"io"
	"net"
	"strings"
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
	l := NewConnLimit(2)
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
