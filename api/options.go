package api

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"
)

// Options configure a front end: every protocol's New(svc, Options) takes
// them. The zero value of each field means its default; a field that names
// one protocol is ignored by the others.
type Options struct {
	// AdminToken, when set, is required on the admin operations: HTTP's
	// "Authorization: Bearer <token>" on /v1/tags and the pages, gRPC's
	// metadata "authorization: Bearer <token>", RESP's AUTH. ID requests
	// need no authentication.
	AdminToken string
	// Metrics, when set, count requests per operation and errors per code
	// (HTTP serves them on /metrics; without them it keeps its own).
	Metrics *Metrics
	// Logger receives server-side errors; nil discards them.
	Logger *slog.Logger
	// AccessLog logs one line per request (Logger, level info) with its
	// request ID (HTTP's X-Request-ID, gRPC's x-request-id metadata: the
	// caller's, or a new one).
	AccessLog bool
	// Guard, when set, limits the rate per token or address and the wrong
	// tokens per address. Probes and /metrics are never limited; a RESP
	// connection whose address reaches the limit of wrong tokens is closed.
	Guard *Guard
	// CosIdMachines, when set, serves CosId proxy's machine routes (HTTP
	// /machines/{namespace}): registry/cosidregistry's Distributor, on the
	// table of a CosId registry.
	CosIdMachines CosIdMachines
	// Conn is the connection policy (ConnPolicy; zero fields are its
	// defaults) of gRPC and RESP; HTTP takes it in NewHTTPServer.
	Conn ConnPolicy
	// MaxRequest bounds the bytes of one request message or command (gRPC,
	// RESP: their DefaultMaxRequest); HTTP bounds bodies by its MaxBody.
	MaxRequest int

	// Pprof mounts net/http/pprof under /debug/pprof/ (HTTP).
	Pprof bool
	// TLS, when set, serves over TLS; its NextProtos should hold "h2"
	// (gRPC).
	TLS *tls.Config
	// MaxStreams bounds the concurrent calls of one connection (gRPC's
	// DefaultMaxStreams).
	MaxStreams uint32
	// Timeout bounds one admin command, INFO or SERIAL, which call the
	// store (RESP's DefaultTimeout). Segment commands need no timer of
	// their own: a wait for the store is bounded by the segment engine
	// (segment.load_timeout); snowflake and UUID commands never wait.
	Timeout time.Duration
	// Now is the clock of the front ends' own limits (HTTP's rate of
	// probes); nil: time.Now. Tests give one that stands still, so a busy
	// machine cannot spread a burst over a refill.
	Now func() time.Time
}

// WithLogger returns o with a Logger that discards when it has none.
func (o Options) WithLogger() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// CosIdMachines is CosId's machine-ID distributor for CosId applications
// that use CosId proxy's machine routes (registry/cosidregistry.Distributor).
// Distribute answers the machine ID and the time (ms) the instance must
// pass; an overflow wraps frond.ErrNoWorkerID, a lost machine ID
// frond.ErrWorkerLost.
type CosIdMachines interface {
	Distribute(ctx context.Context, ns string, machineBit int, instance string, stable bool, safeGuard time.Duration) (id, last int64, err error)
	Guard(ctx context.Context, ns, instance string, stable bool, safeGuard time.Duration) error
	Revert(ctx context.Context, ns, instance string, stable bool) error
}
