package api

import "time"

// ConnPolicy is how every listener (HTTP, gRPC, RESP) treats a
// connection, written once: a client, friendly or not, holds a connection,
// a slot among MaxConns and memory only while it makes progress.
// docs/security.md lists what each bound stops.
type ConnPolicy struct {
	// MaxConns bounds the open connections of one listener
	// (DefaultMaxConns).
	MaxConns int
	// MaxConnsPerAddress bounds the open connections of one listener from
	// one client address (an IPv4 address, an IPv6 /64), so that one
	// address cannot take every slot (DefaultMaxConnsPerAddress; negative:
	// no bound).
	MaxConnsPerAddress int
	// HandshakeTimeout bounds a TLS handshake (and gRPC's HTTP/2 preface)
	// from the accept: a client that connects and never finishes it is
	// closed (DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// ReadTimeout bounds the arrival of one request from its first byte
	// (HTTP: its headers and body; RESP: one command; gRPC: the headers of
	// a stream), so that one sent a byte at a time cannot hold the
	// connection (DefaultReadTimeout).
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of one reply: a client that does not
	// read what it asked for is closed, and the memory its replies held is
	// freed (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a connection with no request in progress after
	// this long (DefaultIdleTimeout). Pooled clients (go-redis, gRPC,
	// net/http) open a new connection when they find one closed.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds HTTP request headers and gRPC metadata
	// (DefaultMaxHeaderBytes).
	MaxHeaderBytes int
}

// Defaults of ConnPolicy.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultReadTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 30 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultMaxHeaderBytes   = 16 << 10
)

// WithDefaults returns p with its zero fields set to their defaults.
func (p ConnPolicy) WithDefaults() ConnPolicy {
	if p.MaxConns <= 0 {
		p.MaxConns = DefaultMaxConns
	}
	if p.MaxConnsPerAddress == 0 {
		p.MaxConnsPerAddress = DefaultMaxConnsPerAddress
	}
	if p.HandshakeTimeout <= 0 {
		p.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if p.ReadTimeout <= 0 {
		p.ReadTimeout = DefaultReadTimeout
	}
	if p.WriteTimeout <= 0 {
		p.WriteTimeout = DefaultWriteTimeout
	}
	if p.IdleTimeout <= 0 {
		p.IdleTimeout = DefaultIdleTimeout
	}
	if p.MaxHeaderBytes <= 0 {
		p.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return p
}
