// Package faultproxy is a TCP proxy that plays a store's faults between a
// service and its store, as the service sees them over the network: every
// query slowed, the store stopped (SIGSTOP: connections are accepted by
// the kernel and held, nothing is answered), cut (every connection reset
// and new ones refused) and restarted (cut, then back). The fault benchmark
// (bench/faults) puts one in front of each store; tests can too.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards every connection made to Addr to the target.
type Proxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	delay  time.Duration
	held   bool
	resume chan struct{} // closed when a hold ends
	closed bool
	wg     sync.WaitGroup
}

// Start listens on listen (host:port; port 0 picks one) and forwards to
// target.
func Start(listen, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}, resume: make(chan struct{})}
	p.wg.Add(1)
	go p.serve(ln)
	return p, nil
}

// Addr is the address the proxy listens on (kept through a cut).
func (p *Proxy) Addr() string { return p.addr }

// Delay slows every chunk a client sends (a query) by d before it goes on
// to the store; 0 ends it.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Hold stops every byte both ways, as a store stopped with SIGSTOP: new
// connections are accepted (the kernel does that for a stopped process)
// and held too. Release ends it.
func (p *Proxy) Hold() {
	p.mu.Lock()
	if !p.held {
		p.held = true
		p.resume = make(chan struct{})
	}
	p.mu.Unlock()
}

// Release lets the held bytes go on, in order.
func (p *Proxy) Release() {
	p.mu.Lock()
	if p.held {
		p.held = false
		close(p.resume)
	}
	p.mu.Unlock()
}

// Cut resets every connection and refuses new ones until Restore, as a
// store whose host is gone or whose process died.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a goodbye
		}
		c.Close()
	}
}

// Restore listens again after a Cut, on the same address.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil || p.closed {
		return nil
	}
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.ln = ln
	p.wg.Add(1)
	go p.serve(ln)
	return nil
}

// Close stops the proxy and every connection.
func (p *Proxy) Close() error {
	p.Release()
	p.Cut()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.ln != ln { // cut while accepting
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	if err := p.gate(false); err != nil {
		return
	}
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if _, ok := p.conns[c]; !ok { // cut while dialing
		p.mu.Unlock()
		s.Close()
		return
	}
	p.conns[s] = struct{}{}
	p.mu.Unlock()
	defer p.drop(s)
	done := make(chan struct{}, 2)
	go func() { p.pipe(s, c, true); done <- struct{}{} }()
	go func() { p.pipe(c, s, false); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	<-done
}

// pipe copies src to dst, chunk by chunk, each through the gate (and the
// delay, for queries: client to store).
func (p *Proxy) pipe(dst, src net.Conn, query bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.gate(query) != nil {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			return
		}
	}
}

var errClosed = errors.New("faultproxy: closed")

// gate waits while the proxy holds, then for the delay of a query.
func (p *Proxy) gate(query bool) error {
	for {
		p.mu.Lock()
		held, resume, delay, closed := p.held, p.resume, p.delay, p.closed
		p.mu.Unlock()
		if closed {
			return errClosed
		}
		if held {
			<-resume
			continue
		}
		if query && delay > 0 {
			time.Sleep(delay)
		}
		return nil
	}
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
