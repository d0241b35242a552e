// Package grpcapi serves frond over gRPC: frond.v1.IDService (the
// operations of the JSON API, proto/frond/v1/frond.proto), grpc.health.v1
// with one service per kind of ID, and server reflection, so that grpcurl
// lists and calls everything without the proto file. docs/grpc.md.
//
// Handlers decode a message, call the service and encode its answer: every
// request for IDs goes through service.Take, which checks the whole request
// before it takes an ID. Errors are converted in one place (status.go): a
// canonical code, the message with its hint, and in the details a
// google.rpc.ErrorInfo whose reason is frond's stable code and, when a retry
// may succeed, a google.rpc.RetryInfo.
package grpcapi

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
)

// Defaults of api.Options.
const (
	DefaultMaxRequest = 64 << 10
	DefaultMaxStreams = 1000
)

// Server is the gRPC front end.
type Server struct {
	frondv1.UnimplementedIDServiceServer
	svc     *service.Service
	o       api.Options
	gs      *grpc.Server
	codec   *codec
	answers *answers // the answers not yet written, by connection (answers.go)
	health  *health
	ops     map[string]*api.Op // by full method name
	started time.Time
	// stopping is closed by Shutdown: streams waiting for their client's
	// next request end, so that GracefulStop does not wait for them.
	stopping chan struct{}
	stopOnce sync.Once
}

// adminMethods need the admin token.
var adminMethods = map[string]bool{
	frondv1.IDService_Reveal_FullMethodName:      true,
	frondv1.IDService_ListTags_FullMethodName:    true,
	frondv1.IDService_GetTag_FullMethodName:      true,
	frondv1.IDService_CreateTag_FullMethodName:   true,
	frondv1.IDService_UpdateTag_FullMethodName:   true,
	frondv1.IDService_DeleteTag_FullMethodName:   true,
	frondv1.IDService_CreateSpace_FullMethodName: true,
	frondv1.IDService_ListSpaces_FullMethodName:  true,
}

// New returns a server of svc.
func New(svc *service.Service, o api.Options) *Server {
	if o.MaxRequest <= 0 {
		o.MaxRequest = DefaultMaxRequest
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	o = o.WithLogger()
	o.Conn = o.Conn.WithDefaults()
	s := &Server{svc: svc, o: o, ops: map[string]*api.Op{}, started: time.Now(), stopping: make(chan struct{})}
	s.health = newHealth(svc)
	var creds []grpc.ServerOption
	if o.TLS != nil {
		creds = append(creds, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	s.codec = newCodec()
	s.answers = &answers{timeout: o.Conn.WriteTimeout}
	s.gs = grpc.NewServer(append(creds,
		grpc.ForceServerCodecV2(s.codec),
		grpc.StatsHandler(s.answers),
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
		grpc.MaxRecvMsgSize(o.MaxRequest),
		grpc.MaxConcurrentStreams(o.MaxStreams),
		// A connection must finish its TLS handshake and HTTP/2 preface
		// within the handshake deadline (grpc-go's default is 120 s), and a
		// stream's metadata is bounded as HTTP's headers are (grpc-go
		// allows 16 MiB: idle streams with that much held 500 MB).
		grpc.ConnectionTimeout(o.Conn.HandshakeTimeout),
		grpc.MaxHeaderListSize(uint32(o.Conn.MaxHeaderBytes)),
		// Idle connections are closed; clients may ping an idle connection
		// every 10 s at most.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: o.Conn.IdleTimeout, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)...)
	frondv1.RegisterIDServiceServer(s.gs, s)
	healthpb.RegisterHealthServer(s.gs, s.health)
	reflection.Register(s.gs)
	for name, info := range s.gs.GetServiceInfo() {
		for _, m := range info.Methods {
			full := "/" + name + "/" + m.Name
			s.ops[full] = o.Metrics.Op(api.GRPC, full)
		}
	}
	return s
}

// Serve answers the connections of ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.gs.Serve(trackListener{ln, s.answers})
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown stops accepting calls, marks every health service NOT_SERVING
// and waits for the calls in progress until ctx ends; then it closes the
// connections still open.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.shutdown()
	s.stopOnce.Do(func() { close(s.stopping) })
	done := make(chan struct{})
	go func() {
		s.gs.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.gs.Stop()
		<-done
		return ctx.Err()
	}
}

// unary is every unary call's way in: the deadline, the admin token,
// metrics and the conversion of errors.
func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	id := s.requestID(ctx, func(md metadata.MD) { grpc.SetHeader(ctx, md) })
	var resp any
	err := s.codec.malformed(req)
	if err == nil {
		err = s.admit(ctx, info.FullMethod)
	}
	if err == nil {
		resp, err = h(ctx, req)
		if err != nil {
			s.codec.drop(resp)
		}
	}
	err = s.done(ctx, info.FullMethod, start, err)
	s.access(ctx, info.FullMethod, start, id, err)
	return resp, err
}

func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := time.Now()
	id := s.requestID(ss.Context(), func(md metadata.MD) { ss.SetHeader(md) })
	err := s.admit(ss.Context(), info.FullMethod)
	if err == nil {
		err = h(srv, checkedStream{ss, s.codec})
	}
	err = s.done(ss.Context(), info.FullMethod, start, err)
	s.access(ss.Context(), info.FullMethod, start, id, err)
	return err
}

// requestMetadata is api.RequestIDHeader as gRPC metadata.
const requestMetadata = "x-request-id"

// requestID is the call's request ID with the access log on (the caller's
// or a new one, sent back in the header); "" with it off.
func (s *Server) requestID(ctx context.Context, setHeader func(metadata.MD)) string {
	if !s.o.AccessLog {
		return ""
	}
	md, _ := metadata.FromIncomingContext(ctx)
	caller := ""
	if v := md.Get(requestMetadata); len(v) > 0 {
		caller = v[0]
	}
	id := api.RequestID(caller, true)
	setHeader(metadata.Pairs(requestMetadata, id))
	return id
}

// access logs a call when the access log is on.
func (s *Server) access(ctx context.Context, method string, start time.Time, id string, err error) {
	if !s.o.AccessLog {
		return
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	s.o.Logger.Info("request", "protocol", api.GRPC, "method", method, "code", status.Code(err).String(),
		"duration", time.Since(start), "remote", remote, "request_id", id)
}

// admit refuses a call whose deadline has passed (it takes no ID) and an
// admin call without the token.
func (s *Server) admit(ctx context.Context, method string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.guard(ctx); err != nil {
		return err
	}
	if !adminMethods[method] {
		return nil
	}
	if s.o.AdminToken == "" {
		return api.AdminWithoutToken(peerAddr(ctx))
	}
	if ok, _ := s.o.Guard.AdminToken(s.o.AdminToken, bearer(ctx), peerAddr(ctx)); !ok {
		return &api.Error{Code: frond.CodeUnauthorized,
			Msg: "this method needs the admin token: send the metadata authorization: Bearer <token>"}
	}
	return nil
}

// guard admits one request of ctx's call (api.Guard).
func (s *Server) guard(ctx context.Context) error {
	if s.o.Guard == nil {
		return nil
	}
	return s.o.Guard.Admit(callToken(ctx), peerAddr(ctx))
}

// callToken is the token of ctx's call: the admin's bearer, else the tag
// token.
func callToken(ctx context.Context) string {
	if token := bearer(ctx); token != "" {
		return token
	}
	return tagToken(ctx)
}

// done records a call and converts its error.
func (s *Server) done(ctx context.Context, method string, start time.Time, err error) error {
	s.ops[method].Done(start)
	if err == nil {
		return nil
	}
	st, code := toStatus(ctx, err)
	s.o.Metrics.Failed(api.GRPC, code)
	if code == frond.CodeForbidden && tagToken(ctx) != "" {
		// A tag token sent and refused; a call without one does not count,
		// and a wrong admin token was counted by its check (admit).
		s.o.Guard.AuthFailed(peerAddr(ctx))
	}
	if st.Code() == codes.Internal {
		s.o.Logger.Warn("request failed", "method", method, "code", code, "err", err)
	}
	return st.Err()
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// TokenMetadata is the metadata key of a tag token (service.Config.Tokens).
const TokenMetadata = "x-frond-token"

// IdempotencyMetadata carries a call's idempotency key
// (service.Request.IdempotencyKey) on the unary ID methods; a response
// given again carries ReplayedMetadata in its header.
const (
	IdempotencyMetadata = "idempotency-key"
	ReplayedMetadata    = "idempotent-replayed"
)

// tagToken is the call's tag token.
// take takes r's IDs with the call's idempotency key (IdempotencyMetadata),
// and says in the response header when the answer is given again.
func (s *Server) take(ctx context.Context, r service.Request) (service.Answer, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(IdempotencyMetadata); len(v) > 0 {
		r.IdempotencyKey = v[0]
	}
	if s.o.Guard.WantsCaller(r.IdempotencyKey != "", r.Kind == service.KindSeq) {
		// Who asks, for the limits kept per caller where the IDs are
		// taken: a lease's rate, the memory of idempotency keys, the
		// keyed sequence spaces it starts.
		ctx = api.WithCaller(ctx, callToken(ctx), peerAddr(ctx))
	}
	a, err := s.svc.Take(ctx, r)
	if err == nil && a.Replayed {
		grpc.SetHeader(ctx, metadata.Pairs(ReplayedMetadata, "true"))
	}
	return a, err
}

func tagToken(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(TokenMetadata); len(v) > 0 {
		return v[0]
	}
	return ""
}

// bearer is the token of the call's authorization metadata.
func bearer(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if t, ok := api.Bearer(v); ok {
			return t
		}
	}
	return ""
}
