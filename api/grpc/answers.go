package grpcapi

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	"github.com/frond-id/frond/service"
)

// Answers not yet read (issue 43): a gRPC handler returns its answer and
// grpc-go queues the encoded bytes on the connection until the client's
// flow-control window lets them go. A client that keeps its window at 0
// and answers pings held every answer it asked for, without bound. Here
// each answer keeps its place in the node's answer budget
// (service.Answer.TakeHold) until the transport has written it:
//
//   - the codec encodes an answer that has a place into a buffer of its
//     own whose release (mem.BufferPool.Put, called by grpc-go once the
//     bytes are written, or the stream is reset) gives the place back;
//   - a connection that closes gives back the places of its answers still
//     queued (grpc-go drops those buffers without releasing them);
//   - an answer not written within the write timeout closes its
//     connection, as a reply on HTTP or RESP that is not read does.

// answerKey is the context key of a connection's answers (TagConn).
type answerKey struct{}

// connAnswers are the answers of one connection not yet written.
type connAnswers struct {
	mu     sync.Mutex
	conn   net.Conn // nil when it could not be found (then no deadline)
	held   map[*service.Hold]*time.Timer
	closed bool
}

// answers tracks the connections of a Server: stats.Handler for their
// ends, and the listener's connections by remote address, so that an
// answer past its write deadline can close its connection.
type answers struct {
	timeout time.Duration
	conns   sync.Map // remote address → net.Conn
}

// TagConn implements stats.Handler: each connection gets its record.
func (a *answers) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	ca := &connAnswers{held: map[*service.Hold]*time.Timer{}}
	if info.RemoteAddr != nil {
		if c, ok := a.conns.Load(info.RemoteAddr.String()); ok {
			ca.conn = c.(net.Conn)
		}
	}
	return context.WithValue(ctx, answerKey{}, ca)
}

// HandleConn implements stats.Handler: a closed connection gives back the
// places of its answers still queued.
func (a *answers) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnEnd); !ok {
		return
	}
	if ca, ok := ctx.Value(answerKey{}).(*connAnswers); ok {
		ca.mu.Lock()
		held := ca.held
		ca.held, ca.closed = nil, true
		ca.mu.Unlock()
		for h, t := range held {
			if t != nil {
				t.Stop()
			}
			h.Release()
		}
	}
}

// TagRPC and HandleRPC implement stats.Handler: nothing per call.
func (a *answers) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (a *answers) HandleRPC(context.Context, stats.RPCStats)                       {}

// hold records h, the place of an answer of the connection of ctx, until
// it is written (done) or the connection ends; past the write timeout the
// connection is closed. It returns nil and true when ctx has no
// connection record (an in-process call: the caller releases h), and
// false when the connection has ended (h is released).
func (a *answers) hold(ctx context.Context, h *service.Hold) (*connAnswers, bool) {
	ca, ok := ctx.Value(answerKey{}).(*connAnswers)
	if !ok {
		return nil, true
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.closed {
		h.Release()
		return nil, false
	}
	var t *time.Timer // nil: no deadline
	if ca.conn != nil && a.timeout > 0 {
		conn := ca.conn
		t = time.AfterFunc(a.timeout, func() { conn.Close() })
	}
	ca.held[h] = t
	return ca, true
}

// done gives h's place back: its answer is written, or never will be. A
// place the connection's end gave back already is not given back again.
func (ca *connAnswers) done(h *service.Hold) {
	if ca == nil {
		h.Release() // an in-process call's: no one else has it
		return
	}
	ca.mu.Lock()
	t, ok := ca.held[h]
	delete(ca.held, h)
	ca.mu.Unlock()
	if ok {
		if t != nil {
			t.Stop()
		}
		h.Release()
	}
}

// minHeldBuffer is just above grpc-go's pooling threshold (1 KiB,
// mem.IsBelowBufferPoolingThreshold): a buffer of no larger capacity is
// kept as a plain slice and never handed back.
const minHeldBuffer = 1<<10 + 1

// heldAnswer is what the codec needs of an answer with a place: the place
// and the connection that holds it.
type heldAnswer struct {
	h  *service.Hold
	ca *connAnswers
}

// Put implements mem.BufferPool: grpc-go hands the answer's buffer back
// once it is written (or its stream reset): the place goes back.
func (p heldAnswer) Put(*[]byte) { p.ca.done(p.h) }

// Get implements mem.BufferPool; the codec never asks.
func (p heldAnswer) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// held registers m, an answer about to be returned by a handler, with its
// place in the answer budget: the codec encodes it into a buffer that
// gives the place back once written.
func (s *Server) held(ctx context.Context, m proto.Message, a service.Answer) {
	h := a.TakeHold()
	if h == nil {
		return
	}
	// Without a connection record (ca nil) the place goes back once the
	// answer is encoded.
	if ca, ok := s.answers.hold(ctx, h); ok {
		s.codec.held.Store(m, heldAnswer{h: h, ca: ca})
	}
}

// marshalHeld encodes v, whose answer has a place, into a buffer whose
// release gives the place back.
func (c *codec) marshalHeld(v proto.Message, p heldAnswer) (mem.BufferSlice, error) {
	// A buffer above mem's pooling threshold (1 KiB), so that grpc-go hands
	// it back (mem.NewBuffer keeps a smaller one as a plain slice, never
	// released): a small answer queued holds its place too.
	b, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 0, max(proto.Size(v), minHeldBuffer)), v)
	if err != nil || p.ca == nil {
		p.ca.done(p.h)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	return mem.BufferSlice{mem.NewBuffer(&b, p)}, nil
}

// trackListener records the connections of a listener by remote address
// (answers.conns), for the write deadline of answers.
type trackListener struct {
	net.Listener
	a *answers
}

func (l trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	key := c.RemoteAddr().String()
	l.a.conns.Store(key, c)
	return &trackedConn{Conn: c, a: l.a, key: key}, nil
}

type trackedConn struct {
	net.Conn
	a    *answers
	key  string
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.a.conns.CompareAndDelete(c.key, c.Conn) })
	return c.Conn.Close()
}
