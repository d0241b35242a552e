package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"syscall"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	grpcapi "github.com/frond-id/frond/api/grpc"
	httpapi "github.com/frond-id/frond/api/http"
	"github.com/frond-id/frond/api/resp"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/tlsconf"
	"github.com/frond-id/frond/registry/cosidregistry"
	"github.com/frond-id/frond/service"
)

// frontEnd is one protocol's listener and server: the one place that
// builds and starts the listeners from configuration.
type frontEnd struct {
	name  string // for logs: "HTTP", "gRPC", "Redis protocol"
	key   string // the configuration key of its address
	ln    net.Listener
	serve func(net.Listener) error
	stop  func(context.Context) error
}

// listen opens the listener of every configured protocol before anything
// else starts, so that a port in use stops the start at once (and the
// registry knows the node by its HTTP port). The HTTP one comes first.
func listen(cfg *config.Config) ([]*frontEnd, error) {
	fes := []*frontEnd{{name: "HTTP", key: "http_addr"}}
	addrs := []string{cfg.HTTPAddr}
	if cfg.GRPCAddr != "" {
		fes = append(fes, &frontEnd{name: "gRPC", key: "grpc_addr"})
		addrs = append(addrs, cfg.GRPCAddr)
	}
	if cfg.RESPAddr != "" {
		fes = append(fes, &frontEnd{name: "Redis protocol", key: "resp_addr"})
		addrs = append(addrs, cfg.RESPAddr)
	}
	for i, fe := range fes {
		ln, err := net.Listen("tcp", addrs[i])
		if err != nil {
			closeListeners(fes)
			return nil, fmt.Errorf("%s: %w", fe.key, err)
		}
		fe.ln = ln
	}
	return fes, nil
}

func closeListeners(fes []*frontEnd) {
	for _, fe := range fes {
		if fe.ln != nil {
			fe.ln.Close()
		}
	}
}

// serveAll builds each protocol's server over svc and serves it; a server
// that stops on its own sends its error to errc.
func serveAll(fes []*frontEnd, svc *service.Service, m *api.Metrics, cfg *config.Config, log *slog.Logger, errc chan<- error) error {
	// TLS: one certificate, reloaded when its files change, for every
	// listener, each with its own application protocols (ALPN).
	var base *tls.Config
	if cfg.TLS.On() {
		certs, err := tlsconf.New(tlsconf.Files{Cert: cfg.TLS.CertFile, Key: cfg.TLS.KeyFile, ClientCA: cfg.TLS.ClientCAFile}, log)
		if err != nil {
			return err
		}
		if base, err = certs.Config(); err != nil {
			return err
		}
		log.Info("TLS on every listener", "cert", cfg.TLS.CertFile, "client_certificates", cfg.TLS.ClientCAFile != "")
	}
	tlsFor := func(protos ...string) *tls.Config {
		if base == nil {
			return nil
		}
		c := base.Clone()
		c.NextProtos = protos
		return c
	}
	// The limits: one Guard for every protocol (rate per token or address,
	// wrong tokens per address), and a bound on each listener's connections.
	// Only tokens frond gave out (the admin token, the tag tokens) get a
	// rate bucket of their own; any other counts as none.
	known := func(tok string) bool {
		if cfg.AdminToken != "" && api.TokenOK(cfg.AdminToken, tok) {
			return true
		}
		_, ok := cfg.Tokens[tok]
		return ok
	}
	guard := api.NewGuard(api.GuardOptions{Rate: cfg.Limits.Rate, Burst: cfg.Limits.Burst,
		AuthFailures: cfg.Limits.AuthFailures, AuthWindow: cfg.Limits.AuthWindow, Known: known,
		LeaseRate: cfg.Limits.LeaseRate, LeaseBurst: cfg.Limits.LeaseBurst,
		StartRate: cfg.Sequences.StartRate, StartBurst: cfg.Sequences.StartBurst})
	if guard.LimitsLeases() {
		svc.SetLeaseLimit(guard) // before any front door serves
	}
	if sp := svc.Spaces(); sp != nil && guard.LimitsStarts() {
		sp.SetStartLimit(guard.AllowStart) // the spaces a request starts, per caller
	}
	// One connection policy for every listener (api.ConnPolicy).
	l := cfg.Limits
	policy := api.ConnPolicy{MaxConns: l.MaxConnections, MaxConnsPerAddress: l.MaxConnectionsPerAddress, HandshakeTimeout: l.HandshakeTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}.WithDefaults()
	policy.MaxConns = reserveFDs(policy.MaxConns, len(fes), log)
	// What every front end takes (api.Options), each adding its own.
	common := api.Options{AdminToken: cfg.AdminToken, Metrics: m, Logger: log, AccessLog: cfg.Log.Access, Guard: guard, Conn: policy}
	if cosidregistry.HasTable(cfg.Registry) {
		// CosId proxy's machine routes, on the table of the node's registry.
		d, err := cosidregistry.OpenDistributor(cfg.Registry)
		if err != nil {
			return err
		}
		common.CosIdMachines = d
	}
	limit := func(ln net.Listener, refuse func(net.Conn)) net.Listener {
		if base != nil {
			refuse = nil // no plain text on a TLS port: the connection is closed
		}
		conns := api.NewConnLimit(policy.MaxConns, policy.MaxConnsPerAddress)
		conns.Log = log
		return api.LimitListener(ln, conns, refuse)
	}
	for _, fe := range fes {
		switch fe.key {
		case "http_addr":
			fe.ln = limit(fe.ln, refuseHTTP)
			o := common
			o.Pprof = cfg.Pprof
			h := httpapi.New(svc, o)
			srv := httpapi.NewHTTPServer(cfg.HTTPAddr, h, log, policy)
			srv.RegisterOnShutdown(h.StopStreams)
			srv.TLSConfig = tlsFor("h2", "http/1.1")
			fe.serve = func(ln net.Listener) error {
				var err error
				if srv.TLSConfig != nil {
					err = srv.ServeTLS(ln, "", "")
				} else {
					err = srv.Serve(ln)
				}
				if !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			}
			fe.stop = func(ctx context.Context) error {
				err := srv.Shutdown(ctx)
				if err != nil {
					srv.Close() // the grace ran out: cut what is still open
				}
				return err
			}
		case "grpc_addr":
			fe.ln = limit(fe.ln, nil) // a gRPC client sees the closed connection as UNAVAILABLE and retries
			o := common
			o.TLS = tlsFor("h2")
			gs := grpcapi.New(svc, o)
			fe.serve, fe.stop = gs.Serve, gs.Shutdown
		case "resp_addr":
			// RESP counts its connections itself, after TLS, so that it can
			// refuse one in Redis's words on a TLS port too.
			rs := resp.New(svc, common)
			fe.serve, fe.stop = rs.Serve, func(context.Context) error { return rs.Close() }
			if c := tlsFor(); c != nil {
				fe.serve = func(ln net.Listener) error { return rs.Serve(tls.NewListener(ln, c)) }
			}
		}
		if fe.key != "http_addr" {
			log.Info("frond listening for "+fe.name, "addr", fe.ln.Addr().String())
		}
		go func() {
			if err := fe.serve(fe.ln); err != nil {
				errc <- fmt.Errorf("%s: %w", fe.name, err)
			}
		}()
	}
	return nil
}

// fdReserve is how many file descriptors the listeners leave to the rest of
// the node: its stores, registry, log and data directory. When every
// listener full would take them (10,000 HTTP and 10,000 gRPC connections
// took all 20,000 of the process, and the registry could not record the
// snowflake time; issue 43), each listener's bound is lowered.
const fdReserve = 256

// reserveFDs returns the bound on each of n listeners' connections: bound,
// or less when n full listeners would leave fewer than fdReserve file
// descriptors of the process's limit (which Go raises to the hard limit
// at start), said once in the log.
func reserveFDs(bound, n int, log *slog.Logger) int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 || n < 1 {
		return bound
	}
	avail := int64(rl.Cur) - fdReserve
	if int64(bound)*int64(n) <= avail {
		return bound
	}
	lowered := int(max(avail/int64(n), 16))
	log.Warn("limits.max_connections lowered: the listeners full would take the file descriptors the stores and the registry need",
		"configured", bound, "per_listener", lowered, "listeners", n, "nofile", rl.Cur, "reserved", fdReserve)
	return lowered
}

// refuseHTTP answers a connection over limits.max_connections on a plain
// HTTP port: 503 with Retry-After and frond's JSON error.
func refuseHTTP(c net.Conn) {
	body := `{"error":{"code":"` + frond.CodeUnavailable + `","message":"too many connections to this listener, or from this address (limits.max_connections, limits.max_connections_per_address): retry, or use another node"}}`
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// stopAll stops every front end at once, each as its protocol allows: HTTP
// and gRPC stop accepting and let requests in flight finish until ctx ends
// (gRPC streams idle between requests end at once); RESP closes its
// connections after the command each is running.
func stopAll(ctx context.Context, fes []*frontEnd) error {
	errs := make([]error, len(fes))
	var wg sync.WaitGroup
	for i, fe := range fes {
		if fe.stop != nil {
			wg.Go(func() { errs[i] = fe.stop(ctx) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
