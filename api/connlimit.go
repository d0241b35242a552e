package api

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxConns is the default bound on the open connections of one
// listener (as Redis's maxclients).
const DefaultMaxConns = 10_000

// DefaultMaxConnsPerAddress is the default bound on the open connections
// of one listener from one client address (issue 43: 10,000 HTTP and
// 10,000 gRPC connections from one address took every file descriptor of
// the process).
const DefaultMaxConnsPerAddress = 1000

// ConnLimit bounds the open connections of one listener, all together and
// from each client address: every protocol counts its connections with
// one, so the bounds mean the same everywhere.
type ConnLimit struct {
	// Log, when set, is told once when accepting stops for want of file
	// descriptors (AcceptBackoff).
	Log     *slog.Logger
	max     int64
	perAddr int // <= 0: no bound per address
	open    atomic.Int64
	refused atomic.Uint64
	mu      sync.Mutex
	byAddr  map[netip.Prefix]int
}

// NewConnLimit returns a bound of max open connections (DefaultMaxConns if
// max <= 0), and of perAddr from one address (an IPv4 address, an IPv6
// /64; <= 0: none).
func NewConnLimit(max, perAddr int) *ConnLimit {
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &ConnLimit{max: int64(max), perAddr: perAddr, byAddr: map[netip.Prefix]int{}}
}

// Acquire counts a new connection from addr (host:port); false means the
// listener is full, or full for that address, and the connection must be
// refused (Release is not called for it).
func (l *ConnLimit) Acquire(addr string) bool {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		l.refused.Add(1)
		return false
	}
	if l.perAddr > 0 {
		p := prefixOf(addr)
		l.mu.Lock()
		n := l.byAddr[p]
		if n >= l.perAddr {
			l.mu.Unlock()
			l.open.Add(-1)
			l.refused.Add(1)
			return false
		}
		l.byAddr[p] = n + 1
		l.mu.Unlock()
	}
	return true
}

// Release counts a connection from addr closed.
func (l *ConnLimit) Release(addr string) {
	l.open.Add(-1)
	if l.perAddr > 0 {
		p := prefixOf(addr)
		l.mu.Lock()
		if n := l.byAddr[p]; n <= 1 {
			delete(l.byAddr, p)
		} else {
			l.byAddr[p] = n - 1
		}
		l.mu.Unlock()
	}
}

// Open is the number of open connections.
func (l *ConnLimit) Open() int64 { return l.open.Load() }

// Refused is the number of connections refused.
func (l *ConnLimit) Refused() uint64 { return l.refused.Load() }

// LimitListener returns ln bounded by l: a connection over the bound gets
// refuse (which may write the protocol's refusal; it has a second) and is
// closed, and Accept goes on with the next one. Closing an accepted
// connection releases its place.
func LimitListener(ln net.Listener, l *ConnLimit, refuse func(net.Conn)) net.Listener {
	return &limitListener{Listener: ln, l: l, refuse: refuse}
}

type limitListener struct {
	net.Listener
	l      *ConnLimit
	refuse func(net.Conn)
	wait   time.Duration // AcceptBackoff's pause
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := AcceptBackoff(ll.Listener, &ll.wait, ll.l.Log)
		if err != nil {
			return nil, err
		}
		if addr := c.RemoteAddr().String(); ll.l.Acquire(addr) {
			return &limitedConn{Conn: c, l: ll.l, addr: addr}, nil
		}
		if ll.refuse != nil {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			ll.refuse(c)
		}
		c.Close()
	}
}

type limitedConn struct {
	net.Conn
	l    *ConnLimit
	addr string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.Release(c.addr) })
	return err
}

// AcceptBackoff accepts the next connection of ln. When the process (or
// the system) has no file descriptor left (EMFILE, ENFILE) it waits and
// tries again, 5 ms doubling up to a second, instead of returning: an
// accept loop that retried at once kept a core busy for as long as one
// connection was pending (issue 43). *wait is the current pause; log, when
// set, is told once when the descriptors run out (not at every retry).
func AcceptBackoff(ln net.Listener, wait *time.Duration, log *slog.Logger) (net.Conn, error) {
	for {
		c, err := ln.Accept()
		if err == nil {
			if *wait > 0 && log != nil {
				log.Info("accepting connections again", "addr", ln.Addr().String())
			}
			*wait = 0
			return c, nil
		}
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) {
			return nil, err
		}
		if *wait == 0 && log != nil {
			log.Warn("no file descriptor left: connections wait until some close (limits.max_connections, limits.max_connections_per_address, the process's nofile limit)",
				"addr", ln.Addr().String(), "err", err)
		}
		*wait = min(max(2**wait, 5*time.Millisecond), time.Second)
		time.Sleep(*wait)
	}
}
