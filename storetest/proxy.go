package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on 127.0.0.1 that a test can cut: the server seems
// gone (connections dropped, new ones accepted but never answered) without
// stopping it.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	drop  bool // answers are dropped (see DropAnswers)
	conns map[net.Conn]struct{}
}

// StartProxy forwards a local port to target (host:port) until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.closeAll()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut drops every connection and holds new ones unanswered: requests hang
// until the client's timeout, as with a server behind a dead network.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// Restore drops the held connections and forwards again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut, p.drop = false, false
	p.mu.Unlock()
	p.closeAll()
}

// DropAnswers forwards requests to the server but drops its answers, on
// the connections open and new ones: the server acts on a request and the
// client never hears back (a timeout after the server applied a write, a
// connection cut at the wrong moment). Restore ends it.
func (p *Proxy) DropAnswers() {
	p.mu.Lock()
	p.drop = true
	p.mu.Unlock()
}

func (p *Proxy) dropping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drop
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[c] = struct{}{}
	return p.cut
}

func (p *Proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.track(in) {
			continue // held: never answered, closed by Restore
		}
		go func() {
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				return
			}
			if p.track(out) {
				in.Close()
				out.Close()
				return
			}
			go func() { io.Copy(out, in); out.Close() }()
			buf := make([]byte, 32<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 && !p.dropping() {
					if _, werr := in.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			in.Close()
		}()
	}
}

// WithHost returns rawURL with its host:port replaced by addr.
func WithHost(t testing.TB, rawURL, addr string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// HostOf returns the host:port of rawURL.
func HostOf(t testing.TB, rawURL, defaultPort string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), defaultPort)
	}
	return u.Host
}
