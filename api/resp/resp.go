// Package resp serves frond over the Redis protocol (RESP2), through
// redcon: any Redis client is a frond client. `INCR order` is the next
// segment ID of tag order; docs/resp.md has the whole command table.
//
// Every command that issues IDs builds a service.Request and calls
// service.Take, which checks the whole request before it takes an ID: a
// refused command takes none. Errors are RESP errors whose first word is
// frond's stable error code in capitals (-TAG_NOT_FOUND ...); an unknown
// command or a wrong number of arguments is Redis's -ERR.
//
// Pipelining keeps order (redcon answers the commands of a read in order).
// A request larger than api.Options.MaxRequest, or a malformed one, closes that
// connection only; connections beyond api.Options.Conn.MaxConns are refused
// with Redis's own message. Every connection keeps api.ConnPolicy: a TLS
// handshake, a command from its first byte and a reply each have a
// deadline, and an idle connection is closed.
package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// Defaults of api.Options.
const (
	DefaultMaxRequest = 1 << 20
	DefaultTimeout    = 10 * time.Second
)

// Server is the RESP front end.
type Server struct {
	svc  *service.Service
	o    api.Options
	cmds map[string]command
	// lookup finds a command by its name in lower or upper case (the cases
	// clients send) with one map index and no allocation.
	lookup  map[string]*entry
	unknown *api.Op
	rs      *redcon.Server
	conns   *api.ConnLimit
	once    sync.Once
	// base is the context of ID commands, ended by Close.
	base context.Context
	stop context.CancelFunc
	// mu guards ln and shut: Close may come before Serve.
	mu   sync.Mutex
	ln   net.Listener
	shut bool
}

// New returns a server of svc.
func New(svc *service.Service, o api.Options) *Server {
	o.Conn = o.Conn.WithDefaults()
	if o.MaxRequest <= 0 {
		o.MaxRequest = DefaultMaxRequest
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	o = o.WithLogger()
	s := &Server{svc: svc, o: o, cmds: table(), lookup: map[string]*entry{}, unknown: o.Metrics.Op(api.RESP, "unknown"),
		conns: api.NewConnLimit(o.Conn.MaxConns, o.Conn.MaxConnsPerAddress)}
	s.conns.Log = s.o.Logger
	for name, cmd := range s.cmds {
		e := &entry{command: cmd, name: name, op: o.Metrics.Op(api.RESP, name)}
		s.lookup[name], s.lookup[strings.ToUpper(name)] = e, e
	}
	s.base, s.stop = context.WithCancel(context.Background())
	s.rs = redcon.NewServerNetwork("tcp", "", s.handle, s.accept, s.closed)
	return s
}

// Serve answers the connections of ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shut {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	return s.rs.Serve(&limitListener{Listener: ln, max: s.o.MaxRequest, p: s.o.Conn, conns: s.conns})
}

// Close stops accepting and closes every connection (a command in progress
// finishes first). Called before Serve, it makes Serve return at once.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.shut = true
		ln := s.ln
		s.mu.Unlock()
		s.stop()
		if ln == nil {
			return // Serve has not started: it will see shut
		}
		err = s.rs.Close()
		// Serve may not have handed the listener to redcon yet, which then
		// answers "not serving": close the listener so its Accept ends.
		if lerr := ln.Close(); err != nil && lerr == nil {
			err = nil
		}
	})
	return err
}

// session is a connection's state.
type session struct {
	name   string
	authed bool
	token  string            // the tag token (TOKEN)
	tags   map[string]string // interned tag names
	hungUp bool              // nothing more runs (hangUp)
}

// maxInterned bounds the tag names a connection keeps.
const maxInterned = 64

// What a connection keeps of its client's words is checked before it is
// kept (issue 43, item 3: 64 tag names of a megabyte each, a name and a
// token kept after the commands were refused, held 69 MB a connection):
// a tag name only when valid (128 bytes at most), a client name and a
// token only within these bounds.
const (
	maxClientName = 128
	maxToken      = 512
)

// tag returns b as a string, without an allocation for a tag the
// connection has named before: a connection mostly asks for a few tags.
// Only a valid name is kept; another is the request's to refuse.
func (s *session) tag(b []byte) string {
	if t, ok := s.tags[string(b)]; ok {
		return t
	}
	t := string(b)
	if frond.ValidateTagName(t) != nil {
		return t
	}
	if s.tags == nil {
		s.tags = map[string]string{}
	}
	if len(s.tags) < maxInterned {
		s.tags[t] = t
	}
	return t
}

func (s *Server) accept(c redcon.Conn) bool {
	c.SetContext(&session{})
	return true
}

func (s *Server) closed(c redcon.Conn, err error) {
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.o.Logger.Debug("resp connection closed", "remote", c.RemoteAddr(), "err", err)
	}
}

// limitListener wraps each connection so that one command cannot make the
// server buffer more than max bytes, nor redcon spend unbounded memory or
// CPU on a malformed one (framer), and so that redcon handles at most
// maxPipeline whole commands per read: the replies of one read are
// buffered until they are all written, so this bounds what a client that
// pipelines commands and never reads its replies holds.
type limitListener struct {
	net.Listener
	max   int
	p     api.ConnPolicy
	conns *api.ConnLimit
	wait  time.Duration // api.AcceptBackoff's pause
}

// maxPipeline is the most whole commands handed to redcon per read.
const maxPipeline = 32

// Accept counts the connection, or refuses it beyond the bound in Redis's
// words (over TLS, after the handshake) in a goroutine of its own, within a
// second, so that no client holds up the accept loop.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := api.AcceptBackoff(l.Listener, &l.wait, l.conns.Log)
		if err != nil {
			return nil, err
		}
		if !l.conns.Acquire(c.RemoteAddr().String()) {
			go func() {
				c.SetDeadline(time.Now().Add(time.Second))
				c.Write([]byte("-ERR max number of clients reached\r\n"))
				c.Close()
			}()
			continue
		}
		return &limitConn{Conn: c, max: l.max, p: l.p, conns: l.conns, frame: framer{max: int64(l.max)}}, nil
	}
}

// errTooLarge ends a connection whose command is too large.
var errTooLarge = errors.New("request too large")

// limitConn counts the bytes read since the last command was handled,
// follows the framing of what it reads (framer), and keeps the bytes past
// the maxPipeline-th whole command of a read for the next one.
type limitConn struct {
	net.Conn
	max   int
	p     api.ConnPolicy
	conns *api.ConnLimit
	once  sync.Once
	read  atomic.Int64
	// Only redcon's goroutine of the connection uses the fields below.
	started  bool      // the TLS handshake, if any, is done
	cmdStart time.Time // when the command in progress began to arrive
	rdl, wdl time.Time // the read and write deadlines last set
	frame    framer    // only redcon's reading goroutine uses frame, rest and fail
	rest     []byte    // read from the network, not yet handed to redcon
	fail     error     // the framing error to answer once the commands before it are handled
	// held is the place in the node's answer budget of the replies
	// written into redcon's buffer and not yet flushed, all together:
	// released when the flush (one Write) returns, or when the connection
	// closes.
	heldMu sync.Mutex
	held   service.Hold
}

// hold keeps a reply's place in the answer budget until it is flushed.
func (c *limitConn) hold(a *service.Answer) {
	c.heldMu.Lock()
	a.MoveHoldTo(&c.held)
	c.heldMu.Unlock()
}

// release gives back the places of the replies flushed (or never to be).
func (c *limitConn) release() {
	c.heldMu.Lock()
	held := c.held
	c.held = service.Hold{}
	c.heldMu.Unlock()
	held.Release()
}

func (c *limitConn) Read(p []byte) (int, error) {
	if c.fail != nil {
		// The commands before the malformed one were handled (and their
		// replies written): answer the error, as Redis does, and end.
		c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		c.Conn.Write([]byte("-ERR " + oneLine(c.fail.Error()) + "\r\n"))
		return 0, c.fail
	}
	if c.read.Load() > int64(c.max) {
		return 0, errTooLarge
	}
	if !c.started {
		c.started = true
		if tc, ok := c.Conn.(*tls.Conn); ok {
			tc.SetDeadline(time.Now().Add(c.p.HandshakeTimeout))
			if err := tc.Handshake(); err != nil {
				return 0, err
			}
			tc.SetDeadline(time.Time{})
		}
	}
	var n int
	var err error
	idle := c.frame.atCommandStart()
	if len(c.rest) > 0 {
		n = copy(p, c.rest)
		c.rest = c.rest[n:]
	} else {
		// Between commands the connection may idle; a command, once it
		// began to arrive, must arrive whole within the read timeout,
		// however slowly its bytes come.
		if idle {
			c.readDeadline(time.Now().Add(c.p.IdleTimeout))
		} else {
			c.readDeadline(c.cmdStart.Add(c.p.ReadTimeout))
		}
		n, err = c.Conn.Read(p)
	}
	before := c.frame.commands
	m, ferr := c.frame.feedCommands(p[:n], maxPipeline)
	if !c.frame.atCommandStart() && (idle || c.frame.commands > before) {
		c.cmdStart = time.Now() // a command began in this read
	}
	c.read.Add(int64(m))
	if ferr != nil {
		c.fail, c.rest = ferr, nil
		return m, nil
	}
	if m < n {
		// Past the pipeline bound: the rest waits for the next read, ahead
		// of what remained before.
		c.rest = append(append([]byte(nil), p[m:n]...), c.rest...)
		return m, nil
	}
	return n, err
}

// handled resets the count: the bytes read so far made whole commands.
func (c *limitConn) handled() { c.read.Store(0) }

// deadlineSlack is how far a deadline set before may fall short of the one
// the policy asks for now before it is set again (the connection may end
// up to this much sooner): setting one on every read and write costs the
// pipelined throughput a timer update each.
const deadlineSlack = time.Second

// readDeadline sets the read deadline to at, or leaves one at most
// deadlineSlack before it (an earlier at is always set).
func (c *limitConn) readDeadline(at time.Time) {
	if d := at.Sub(c.rdl); d < 0 || d > deadlineSlack {
		c.rdl = at
		c.Conn.SetReadDeadline(at)
	}
}

// Write writes within the write timeout (less at most deadlineSlack): a
// client that does not read its replies is closed.
func (c *limitConn) Write(p []byte) (int, error) {
	if at := time.Now().Add(c.p.WriteTimeout); at.Sub(c.wdl) > deadlineSlack {
		c.wdl = at
		c.Conn.SetWriteDeadline(at)
	}
	n, err := c.Conn.Write(p)
	c.release() // redcon flushes its buffer in one Write: every reply held is in it
	return n, err
}

// Close closes the connection and frees its place.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	c.once.Do(func() { c.conns.Release(c.RemoteAddr().String()) })
	return err
}
func (s *Server) handle(c redcon.Conn, cmd redcon.Command) {
	if lc, ok := c.NetConn().(*limitConn); ok {
		lc.handled()
	}
	// The commands read with this one (a pipeline) run here, one after
	// another, and share the time they took: each run of commands of one
	// operation is counted at once (Op.TookN), with one clock read at its
	// end, not one per command (a pipeline of INCRs is one run).
	rest := c.ReadPipeline()
	start := time.Now()
	var cur *api.Op
	n := 0
	for {
		op := s.run(c, cmd)
		if op != cur && n > 0 {
			// The clock is read after op's command ran: the run before
			// it is charged that command's time too (a fraction of a
			// microsecond), and the run of op starts here.
			end := time.Now()
			cur.TookN(n, end.Sub(start))
			start, n = end, 0
		}
		cur = op
		n++
		if len(rest) == 0 || sess(c).hungUp {
			cur.TookN(n, time.Since(start))
			return
		}
		cmd, rest = rest[0], rest[1:]
	}
}

// run runs one command; it returns the metrics to count it in.
func (s *Server) run(c redcon.Conn, cmd redcon.Command) *api.Op {
	if httpLike(cmd.Args[0]) {
		// An HTTP request sent to the RESP port: a web page (a form's POST
		// to 127.0.0.1) speaking to frond in another protocol, whose body
		// would run as commands. Redis closes such connections too.
		s.o.Metrics.Failed(api.RESP, frond.CodeForbidden)
		hangUp(c)
		return nil
	}
	e, ok := s.lookup[string(cmd.Args[0])]
	if !ok {
		e, ok = s.lookup[strings.ToLower(string(cmd.Args[0]))]
	}
	if !ok {
		s.o.Metrics.Failed(api.RESP, frond.CodeNotFound)
		c.WriteError(fmt.Sprintf("ERR unknown command '%s'", quote(cmd.Args[0])))
		return s.unknown
	}
	if s.o.Guard != nil {
		if err := s.o.Guard.Admit(sess(c).token, c.RemoteAddr()); err != nil {
			s.writeErr(c, err)
			return e.op
		}
	}
	if n := len(cmd.Args); n < e.min || e.max >= 0 && n > e.max {
		s.o.Metrics.Failed(api.RESP, frond.CodeInvalidArgument)
		c.WriteError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", e.name))
	} else {
		e.run(s, c, cmd.Args)
	}
	return e.op
}

// httpLike reports whether a command's name is the start of an HTTP
// request: "POST" (its first line) or "Host:" (a header).
func httpLike(name []byte) bool {
	return strings.EqualFold(string(name), "POST") || strings.EqualFold(string(name), "HOST:")
}

// entry is a command with its name and metrics.
type entry struct {
	command
	name string
	op   *api.Op
}

// quote cuts a client's input for an error message.
func quote(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, string(b))
}

// writeErr writes err as a RESP error whose first word is its stable code
// in capitals, followed by the message and its hint (api.Fail).
func (s *Server) writeErr(c redcon.Conn, err error) {
	f := api.Fail(err)
	s.o.Metrics.Failed(api.RESP, f.Code)
	c.WriteError(strings.ToUpper(f.Code) + " " + oneLine(f.Message))
	// A tag token sent (TOKEN) and refused counts against the address; an
	// admin command without AUTH does not (AUTH counts its own wrong
	// tokens), nor does a segment command without any token.
	if f.Code == frond.CodeForbidden && sess(c).token != "" {
		s.authFailed(c)
	}
}

// authFailed counts a wrong token against the connection's address, and
// closes the connection once the address has reached the limit.
func (s *Server) authFailed(c redcon.Conn) {
	if s.o.Guard.AuthFailed(c.RemoteAddr()) {
		hangUp(c)
	}
}

// hangUp writes what is pending and closes c, and nothing after it runs:
// the commands a client pipelined behind it (redcon would otherwise go on
// with the rest of the read: "QUIT\r\nSEGMENT t COUNT 10000\r\n" took
// 10,000 IDs it never answered; issue 29).
func hangUp(c redcon.Conn) {
	sess(c).hungUp = true // for handle, which has the rest of the read
	c.ReadPipeline()
	c.Close()
}

// ctx bounds one command.
func (s *Server) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.o.Timeout)
}

// options reads NAME value pairs after the fixed arguments: COUNT n, FORM f,
// VERSION v, LAYOUT l, IDEMPOTENCY-KEY k. It reads them strictly, as /v1
// reads its query: an option given twice is refused (not "the last wins"),
// and so is an empty IDEMPOTENCY-KEY (a key is 1 to 255 bytes: an empty one
// would take IDs with no key at all).
func options(args [][]byte, allowed ...string) (map[string]string, error) {
	if len(args)%2 != 0 {
		return nil, fmt.Errorf("%w: options come in pairs (%s value)", frond.ErrInvalidArgument, strings.Join(allowed, ", "))
	}
	if len(args) == 0 {
		return nil, nil // most commands have none: no map to make (a nil map reads as empty)
	}
	out := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		k := strings.ToUpper(string(args[i]))
		if !contains(allowed, k) {
			return nil, fmt.Errorf("%w: option %q: %s", frond.ErrInvalidArgument, quote(args[i]), strings.Join(allowed, ", "))
		}
		if _, twice := out[k]; twice {
			return nil, fmt.Errorf("%w: option %s given twice", frond.ErrInvalidArgument, k)
		}
		if k == idemKey && len(args[i+1]) == 0 {
			return nil, fmt.Errorf("%w: %s: an empty key (1 to %d bytes)", frond.ErrInvalidArgument, idemKey, service.MaxIdempotencyKey)
		}
		out[k] = string(args[i+1])
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// count parses COUNT: a whole number from 1; 0 when absent.
func count(opts map[string]string) (int64, error) {
	v, ok := opts["COUNT"]
	if !ok {
		return 0, nil
	}
	n, ok := service.Digits(v)
	if !ok || n < 1 {
		return 0, fmt.Errorf("%w: COUNT %q: a whole number from 1", frond.ErrInvalidArgument, quote([]byte(v)))
	}
	return n, nil
}
