package api

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxConns is the default bound on the open connections of one
// listener (as Redis's maxclients).
const DefaultMaxConns = 10_000

// ConnLimit bounds the open connections of one listener: every protocol
// counts its connections with one, so the bound means the same everywhere.
type ConnLimit struct {
	max     int64
	open    atomic.Int64
	refused atomic.Uint64
}

// NewConnLimit returns a bound of max open connections (DefaultMaxConns if
// max <= 0).
func NewConnLimit(max int) *ConnLimit {
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &ConnLimit{max: int64(max)}
}

// Acquire counts a new connection; false means the listener is full and
// the connection must be refused (Release is not called for it).
func (l *ConnLimit) Acquire() bool {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		l.refused.Add(1)
		return false
	}
	return true
}

// Release counts a connection closed.
func (l *ConnLimit) Release() { l.open.Add(-1) }

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
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.Acquire() {
			return &limitedConn{Conn: c, l: ll.l}, nil
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
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.Release)
	return err
}
