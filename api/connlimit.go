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
	open    atomic.Int64
	refused atomic.Uint64
	byAddr  PerAddress
}

// PerAddress counts what each client address holds (its connections, its
// streams), at most Max each (<= 0: no bound): the one count per address
// of every listener and stream (an IPv4 address, an IPv6 /64: prefixOf, as the Guard counts).
// The zero value counts without a bound; it is safe for concurrent use.
type PerAddress struct {
	Max int
	mu  sync.Mutex
	n   map[netip.Prefix]int
}

// Acquire counts one more for addr (host:port), or reports false when addr
// holds Max already (Release is not called then).
func (p *PerAddress) Acquire(addr string) bool {
	if p.Max <= 0 {
		return true
	}
	k := prefixOf(addr)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[k] >= p.Max {
		return false
	}
	if p.n == nil {
		p.n = map[netip.Prefix]int{}
	}
	p.n[k]++
	return true
}

// Release counts one less for addr.
func (p *PerAddress) Release(addr string) {
	if p.Max <= 0 {
		return
	}
	k := prefixOf(addr)
	p.mu.Lock()
	if p.n[k] <= 1 {
		delete(p.n, k)
	} else {
		p.n[k]--
	}
	p.mu.Unlock()
}

// addresses is how many addresses hold something.
func (p *PerAddress) addresses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.n)
}

// NewConnLimit returns a bound of max open connections (DefaultMaxConns if
// max <= 0), and of perAddr from one address (an IPv4 address, an IPv6
// /64; <= 0: none).
func NewConnLimit(max, perAddr int) *ConnLimit {
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &ConnLimit{max: int64(max), byAddr: PerAddress{Max: perAddr}}
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
	if !l.byAddr.Acquire(addr) {
		l.open.Add(-1)
		l.refused.Add(1)
		return false
	}
	return true
}

// Release counts a connection from addr closed.
func (l *ConnLimit) Release(addr string) {
	l.open.Add(-1)
	l.byAddr.Release(addr)
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
