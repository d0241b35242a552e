// Package clienttest runs frond servers in process, for tests of code that
// uses frond's client: the real service and gRPC front end over an
// in-memory store, on a loopback port, with no files outside the test's
// temporary directory.
//
//	srv := clienttest.Start(t)
//	srv.CreateTag(t, "order", 1000)
//	c, _ := client.New(client.Options{Servers: []string{srv.Addr}})
//
// Servers started with the same Store share it, as frond servers share a
// database: their IDs are unique together.
package clienttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	grpcapi "github.com/frond-id/frond/api/grpc"
	httpapi "github.com/frond-id/frond/api/http"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

// Store is an in-memory segment store that tests can slow down, hold or
// take down (SetDelay, Hold, SetDown), shared by the servers started on it.
type Store = storetest.Faulty

// NewStore returns an empty store.
func NewStore() *Store { return storetest.NewFaulty() }

// shared is a server's view of a Store: closing the server leaves the
// store open for the others (and for a restart).
type shared struct{ *Store }

func (shared) Close() error { return nil }

// Server is a frond server in process.
type Server struct {
	// Addr is the gRPC address, for client.Options.Servers.
	Addr string
	// HTTPURL is the HTTP API's root (http://127.0.0.1:port), for
	// client/httpsource and other HTTP callers.
	HTTPURL string
	// Service is the server's service layer.
	Service *service.Service
	// Store is the store it serves from.
	Store *Store

	// Spaces keeps the server's keyed sequence spaces (WithSpaces to share
	// them with other servers).
	Spaces *keyseq.MemLeases

	t       testing.TB
	node    int64
	tokens  map[string][]string
	forms   map[string]string
	dir     string
	mu      sync.Mutex
	srv     *grpcapi.Server
	web     *httptest.Server
	stopped bool
}

// Option configures Start.
type Option func(*Server)

// WithStore serves from st (shared with other servers) instead of a new
// store.
func WithStore(st *Store) Option { return func(s *Server) { s.Store = st } }

// WithNode sets the snowflake worker ID (default 1); servers sharing a
// store need different ones.
func WithNode(n int64) Option { return func(s *Server) { s.node = n } }

// WithSpaces keeps the server's keyed sequence spaces in ls, shared with
// the other servers given it: they own the sections in turn and forward to
// each other, as nodes on one database do.
func WithSpaces(ls *keyseq.MemLeases) Option { return func(s *Server) { s.Spaces = ls } }

// WithTokens makes the server require tag tokens (service.Config.Tokens).
func WithTokens(tokens map[string][]string) Option { return func(s *Server) { s.tokens = tokens } }

// WithForms gives tags configured forms (service.Config.Forms): base62 and
// base32 need no key.
func WithForms(forms map[string]string) Option { return func(s *Server) { s.forms = forms } }

// Start starts a server; it stops with the test.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, node: 1, dir: t.TempDir()}
	for _, o := range opts {
		o(s)
	}
	if s.Store == nil {
		s.Store = NewStore()
	}
	if s.Spaces == nil {
		s.Spaces = &keyseq.MemLeases{}
	}
	s.start("127.0.0.1:0")
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start(addr string) {
	s.t.Helper()
	reg, err := file.Open(s.dir, s.node)
	if err != nil {
		s.t.Fatal(err)
	}
	// The HTTP API first: its address is the one other servers forward
	// keyed sequence requests to.
	h := &handler{}
	web := httptest.NewServer(h)
	quiet := slog.New(slog.DiscardHandler)
	spaces := keyseq.NewSpaces(s.Spaces, keyseq.Owner{Token: newToken(), Addr: web.Listener.Addr().String()},
		keyseq.NodeOptions{TTL: time.Second, Logger: quiet}, httpapi.SeqForwarder(nil, 5*time.Second))
	svc, err := service.New(context.Background(), service.Config{Segment: segment.Settings{FailFast: -1}, Tokens: s.tokens, Forms: s.forms, Spaces: spaces}, shared{s.Store}, reg, nil)
	if err != nil {
		web.Close()
		s.t.Fatal(err)
	}
	h.Store(httpapi.New(svc, api.Options{}))
	var ln net.Listener
	for range 100 { // a port just released may take a moment
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		svc.Close(context.Background())
		s.t.Fatal(err)
	}
	srv := grpcapi.New(svc, api.Options{})
	go srv.Serve(ln)
	s.mu.Lock()
	s.Addr, s.HTTPURL, s.Service, s.srv, s.web, s.stopped = ln.Addr().String(), web.URL, svc, srv, web, false
	s.mu.Unlock()
}

// CreateTag creates a segment tag whose IDs start at 1.
func (s *Server) CreateTag(t testing.TB, name string, step int64) {
	t.Helper()
	if _, err := s.Service.CreateTag(context.Background(), frond.Tag{Name: name, MaxID: 1, Step: step}); err != nil {
		t.Fatal(err)
	}
}

// CreateSpace creates a keyed sequence space with sections sections (0:
// keyseq.DefaultSections) and the default step.
func (s *Server) CreateSpace(t testing.TB, name string, sections int) {
	t.Helper()
	if _, err := s.Service.CreateSpace(context.Background(), keyseq.Space{Name: name, Sections: sections}); err != nil {
		t.Fatal(err)
	}
}

// CreateSequenceTag creates a sequence tag (frond.ModeSequence) whose IDs
// start at 1: every ID is taken from the store when asked for.
func (s *Server) CreateSequenceTag(t testing.TB, name string) {
	t.Helper()
	if _, err := s.Service.CreateTag(context.Background(), frond.Tag{Name: name, MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the server as a crash would: its connections close and the
// IDs it had buffered are never handed out.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace: calls in progress end now
	s.srv.Shutdown(ctx)
	s.web.CloseClientConnections()
	s.web.Close()
	if h := s.web.Config.Handler.(*handler).Load(); h != nil {
		h.StopStreams()
	}
	s.Service.Close(context.Background())
}

// Restart starts a stopped server again on the same address and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start(s.Addr)
}

// handler is the HTTP API, set once the service is made.
type handler struct{ atomic.Pointer[httpapi.Server] }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.Load().ServeHTTP(w, r) }

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
