// Package httpapi serves frond over HTTP: Leaf's API (a drop-in for Leaf's
// clients), the JSON API under /v1, Leaf's monitoring pages, health,
// readiness and Prometheus metrics. Handlers decode the request, call the
// service and encode the answer; errors map to statuses in one place
// (errors.go).
package httpapi

import (
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/service"
)

// MaxBody bounds request bodies.
const MaxBody = 64 << 10

// Server is the HTTP handler of a service.
type Server struct {
	svc  *service.Service
	m    *api.Metrics
	opts api.Options
	mux  *http.ServeMux
	// seq serves GET and POST /v1/seq/{space}/{key} (as routed, counted
	// and logged) for a key the mux would clean away ("." or "..": seqPath).
	seq     map[string]http.HandlerFunc
	started time.Time
	// stopping ends the dashboard's event streams (StopStreams).
	stopping chan struct{}
	stopOnce sync.Once
	hist     *history // the dashboard's plots
	// rates keeps the counters of the dashboard's rates.
	rates rateRing
	// samplerDone is closed when the sampler of hist has stopped.
	samplerDone chan struct{}
	// events is what the dashboard's event streams share (uiEvents).
	events eventStreams
	// probes limits /metrics and the readiness pages per address (costly).
	probes *api.Guard
}

// New returns the handler. m may be nil (no /metrics).
func New(svc *service.Service, opts api.Options) *Server {
	opts = opts.WithLogger()
	m := opts.Metrics
	if m == nil {
		m = api.NewMetrics(api.MetricsOptions{})
	}
	s := &Server{svc: svc, m: m, opts: opts, mux: http.NewServeMux(), started: time.Now(), stopping: make(chan struct{}),
		hist: newHistory(), samplerDone: make(chan struct{}),
		probes: api.NewGuard(api.GuardOptions{Rate: probeRate, Burst: probeBurst, Now: opts.Now})}
	s.events.byAddr.Max = maxStreamsPerAddress
	// The rates' first base, before any request is served: every request
	// counts in the first window (the sampler goroutine took it when it
	// first ran, which could be after the first requests).
	s.rates.add(s.counters(time.Now(), svc.SequenceOverview().Tags))
	go s.sampler()
	mux := routes{s.mux, m, opts.Logger, opts.AccessLog}
	// Leaf's API.
	mux.HandleFunc("GET /api/segment/get/{key}", s.leafSegment)
	mux.HandleFunc("GET /api/snowflake/get/{key}", s.leafSnowflake)
	mux.HandleFunc("GET /decodeSnowflakeId", s.leafDecode)
	mux.HandleFunc("GET /cache", s.admin(s.cachePage))
	mux.HandleFunc("GET /db", s.admin(s.dbPage))
	// TinyID's API: GET and POST (its client posts); HEAD takes no ID.
	for path, h := range map[string]http.HandlerFunc{
		"/tinyid/id/nextId": s.tinyNextID, "/tinyid/id/nextIdSimple": s.tinyNextIDSimple,
		"/tinyid/id/nextSegmentId": s.tinyNextSegmentID, "/tinyid/id/nextSegmentIdSimple": s.tinyNextSegmentIDSimple,
	} {
		mux.HandleFunc("GET "+path, tinyHead(h))
		mux.HandleFunc("POST "+path, h)
	}
	// CosId proxy's API (cosid.go).
	s.cosidRoutes(mux, "")
	s.cosidRoutes(mux, "/cosid/{token}")
	// JSON API.
	mux.HandleFunc("GET /v1/segment/{tag}", s.v1Segment)
	mux.HandleFunc("POST /v1/segment/{tag}", s.noBody(s.v1Segment))
	mux.HandleFunc("GET /v1/snowflake", s.v1Snowflake)
	mux.HandleFunc("POST /v1/snowflake", s.noBody(s.v1Snowflake))
	mux.HandleFunc("GET /v1/decode/{id}", s.v1Decode)
	mux.HandleFunc("GET /v1/compose", s.v1Compose)
	mux.HandleFunc("GET /v1/bounds", s.v1Bounds)
	mux.HandleFunc("GET /v1/info", s.v1Info)
	mux.HandleFunc("GET /v1/uuid", s.v1UUID)
	mux.HandleFunc("POST /v1/uuid", s.noBody(s.v1UUID))
	mux.HandleFunc("GET /v1/serial/{name}", s.v1Serial)
	mux.HandleFunc("POST /v1/serial/{name}", s.noBody(s.v1Serial))
	s.seq = map[string]http.HandlerFunc{
		http.MethodGet:  mux.HandleFunc("GET /v1/seq/{space}/{key}", s.v1Seq),
		http.MethodPost: mux.HandleFunc("POST /v1/seq/{space}/{key}", s.noBody(s.v1Seq)),
	}
	mux.HandleFunc("GET /v1/spaces", s.admin(s.v1ListSpaces))
	mux.HandleFunc("POST /v1/spaces", s.admin(s.v1CreateSpace))
	mux.HandleFunc("POST /v1/spaces/{space}/rearm", s.admin(s.v1RearmSpace))
	mux.HandleFunc("GET /v1/spaces/{space}/floors", s.v1SpaceFloors) // admin or a node of the cluster
	mux.HandleFunc("POST /v1/reveal", s.admin(s.v1Reveal))
	mux.HandleFunc("GET /v1/tags", s.admin(s.v1ListTags))
	mux.HandleFunc("POST /v1/tags", s.admin(s.v1CreateTag))
	mux.HandleFunc("GET /v1/tags/{tag}", s.admin(s.v1GetTag))
	mux.HandleFunc("PATCH /v1/tags/{tag}", s.admin(s.v1UpdateTag))
	mux.HandleFunc("DELETE /v1/tags/{tag}", s.admin(s.v1DeleteTag))
	// The dashboard.
	mux.HandleFunc("GET /{$}", uiRoot)
	mux.HandleFunc("GET /ui/", uiHandler())
	mux.HandleFunc("GET /ui/events", s.uiEvents)
	mux.HandleFunc("GET /ui/tags", s.uiTags)
	mux.HandleFunc("GET /ui/history", s.uiHistory)
	// Operations.
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /readyz/segment", s.readyKind(func(r *http.Request) service.KindCheck { return svc.SegmentReady(r.Context()) }))
	mux.HandleFunc("GET /readyz/snowflake", s.readyKind(func(*http.Request) service.KindCheck { return svc.SnowflakeReady() }))
	if m != nil {
		mux.HandleFunc("GET /metrics", m.Handler().ServeHTTP)
	}
	if opts.Pprof {
		// Behind the admin check, as tag administration (issue 69: the
		// command line carried --admin-token, goroutine dumps and traces
		// what requests hold): the admin token where one is configured,
		// else a client on this machine only; the command line with every
		// secret frond knows masked.
		s.mux.HandleFunc("/debug/pprof/", s.admin(pprof.Index))
		s.mux.HandleFunc("/debug/pprof/cmdline", s.admin(maskedCmdline))
		s.mux.HandleFunc("/debug/pprof/profile", s.admin(pprof.Profile))
		s.mux.HandleFunc("/debug/pprof/symbol", s.admin(pprof.Symbol))
		s.mux.HandleFunc("/debug/pprof/trace", s.admin(pprof.Trace))
	}
	mux.HandleFunc("/", s.notFound)
	return s
}

// routes registers handlers that count their requests and time them under
// the route's pattern (frond_requests_total{protocol="http"}), answer the
// caller's X-Request-ID back, and with the access log on log each request.
type routes struct {
	mux    *http.ServeMux
	m      *api.Metrics
	log    *slog.Logger
	access bool
}

// HandleFunc registers h under pattern and returns it as registered.
func (r routes) HandleFunc(pattern string, h http.HandlerFunc) http.HandlerFunc {
	op := r.m.Op(api.HTTP, pattern)
	wrapped := func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		var caller string
		if v := req.Header[requestIDKey]; len(v) > 0 {
			caller = v[0]
		}
		id := api.RequestID(caller, r.access)
		if id != "" {
			w.Header()[requestIDKey] = []string{id}
		}
		if !r.access {
			h(w, req)
			op.Done(start)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h(sw, req)
		op.Done(start)
		r.log.Info("request", "protocol", api.HTTP, "method", req.Method, "route", pattern, "path", service.Quote(loggedPath(req.URL.Path)),
			"status", sw.status, "bytes", sw.bytes, "duration", time.Since(start), "remote", req.RemoteAddr, "request_id", id)
	}
	r.mux.HandleFunc(pattern, wrapped)
	return wrapped
}

// seqPath routes a keyed sequence request whose key the mux would clean
// away (".", "..", or one with "/./", "/../" or "//" once its escaped
// slashes are read: the mux cleans the decoded path, and answered 404 or a
// redirect for them): any 1 to 255 bytes is a key (issue 59), escaped as
// each byte %XX where it must be (SeqForwarder does: PathSegment). It
// reports whether it served r.
func (s *Server) seqPath(w http.ResponseWriter, r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/seq/")
	h := s.seq[r.Method]
	if !ok || h == nil || path.Clean(r.URL.Path) == r.URL.Path {
		return false
	}
	sp, k, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(k, "/") {
		return false
	}
	space, err1 := url.PathUnescape(sp)
	key, err2 := url.PathUnescape(k)
	if err1 != nil || err2 != nil || space == "" || key == "" {
		return false
	}
	r.SetPathValue("space", space)
	r.SetPathValue("key", key)
	h(w, r)
	return true
}

// dispatch serves r by the mux, but for the keys it would clean away
// (seqPath).
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if !s.seqPath(w, r) {
		s.mux.ServeHTTP(w, r)
	}
}

// requestIDKey is api.RequestIDHeader in canonical form: Header.Get of
// the other form would make its canonical copy on every request.
var requestIDKey = http.CanonicalHeaderKey(api.RequestIDHeader)

// statusWriter records what a handler answered, for the access log.
type statusWriter struct {
	http.ResponseWriter
	status, bytes int
	wrote         bool
	authFailed    bool // refused for a wrong token (Server.count)
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Flush passes a flush on: the dashboard's event stream needs it.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StopStreams ends the dashboard's event streams, which would otherwise
// keep their connections busy through a graceful shutdown: register it with
// http.Server.RegisterOnShutdown.
func (s *Server) StopStreams() { s.stopOnce.Do(func() { close(s.stopping) }) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := cosidJoined(r.URL.Path); ok {
		// Before the guard reads the token in the path, and the router.
		r.URL.Path, r.URL.RawPath = p, ""
	}
	if costly(r.URL.Path) {
		// Exempt from limits.rate, but each costs a store ping (readiness)
		// or milliseconds of CPU (/metrics): a rate of their own per
		// address, far above any orchestrator's or Prometheus's (issue 43).
		if err := s.probes.Admit("", r.RemoteAddr); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	r = s.verifyPeer(r) // once: a node's signature is good for one request
	idempotent := r.Header.Get(IdempotencyKeyHeader) != ""
	if s.opts.Guard == nil && idempotent {
		// Its keys are its caller's (service.Caller), guard or not.
		r = r.WithContext(api.WithCaller(r.Context(), requestToken(r), r.RemoteAddr))
	}
	if s.opts.Guard != nil && !unguarded(r.URL.Path) && !s.fromPeer(r) {
		token := requestToken(r)
		if err := s.opts.Guard.Admit(token, r.RemoteAddr); err != nil {
			s.writeError(w, r, err)
			return
		}
		if s.opts.Guard.WantsCaller(idempotent, strings.HasPrefix(r.URL.Path, "/v1/seq/")) {
			// Who asks, for the limits kept per caller where the IDs are
			// taken: a lease's rate, the memory of idempotency keys, the
			// keyed sequence spaces it starts.
			r = r.WithContext(api.WithCaller(r.Context(), token, r.RemoteAddr))
		}
		if token != "" {
			// A wrong admin or tag token is refused on every API (JSON:
			// 401 or 403; Leaf's: 500; TinyID's: 200 with code 5 or an
			// empty body): count it against the address. A request with
			// no token cannot fail so, and is not wrapped.
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			s.dispatch(sw, r)
			if sw.authFailed {
				s.opts.Guard.AuthFailed(r.RemoteAddr)
			}
			return
		}
	}
	s.dispatch(w, r)
}

// requestToken is the token a request carries, wherever it may: a Bearer,
// the token header, the query, a CosId path.
func requestToken(r *http.Request) string {
	token, _ := api.Bearer(r.Header.Get("Authorization"))
	if token == "" {
		token = r.Header.Get(TokenHeader)
	}
	if token == "" {
		token = queryToken(r)
	}
	if token == "" {
		token, _ = cosidPathToken(r.URL.Path)
	}
	return token
}

// unguarded paths are the probes and the metrics: an orchestrator or a
// Prometheus server must never be limited out.
func unguarded(path string) bool {
	return path == "/healthz" || costly(path)
}

// costly are the unguarded paths that cost the node something each:
// readiness pings the store, /metrics renders every series.
func costly(path string) bool {
	return path == "/metrics" || path == "/readyz" || strings.HasPrefix(path, "/readyz/")
}

// Probes' own rate per address (costly): an orchestrator probes every few
// seconds and Prometheus scrapes every 15; 1,000 requests a second of
// /metrics from one address cost 2.5 cores before.
const (
	probeRate  = 50
	probeBurst = 100
)

// mayReadTags is the one rule of who may read tag details (names, steps,
// max_id, descriptions, buffers): whoever may administer tags (admin), on
// every page and stream that shows them, as GET /v1/tags. token is the
// admin token the request carries.
func (s *Server) mayReadTags(r *http.Request, token string) error {
	if err := crossSite(r); err != nil {
		return err
	}
	if s.opts.AdminToken == "" {
		if err := api.AdminWithoutToken(r.RemoteAddr); err != nil {
			return err
		}
		if !localHost(r.Host) {
			return &api.Error{Code: frond.CodeForbidden, Msg: fmt.Sprintf("tag details without admin_token are answered only to requests for this machine (Host localhost or an IP address), not Host %s", service.Quote(r.Host))}
		}
		return nil
	}
	if ok, _ := s.opts.Guard.AdminToken(s.opts.AdminToken, token, r.RemoteAddr); !ok {
		return &api.Error{Code: frond.CodeUnauthorized, Msg: "tag details need the admin token: send Authorization: Bearer <token>"}
	}
	return nil
}

// maskedCmdline is pprof.Cmdline with the secrets frond knows (its
// tokens, the passwords of its URLs: secret.Remember) masked, and the
// value of every flag whose name says it holds one.
func maskedCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	args := slices.Clone(os.Args)
	for i, a := range args {
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !secretFlag(name) {
			continue
		}
		if inline {
			args[i] = a[:strings.Index(a, "=")+1] + secret.Mask
		} else if i+1 < len(args) {
			args[i+1] = secret.Mask
		}
	}
	fmt.Fprint(w, secret.HideString(strings.Join(args, "\x00")))
}

// secretFlag reports whether a flag's name says its value is a secret.
func secretFlag(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"token", "password", "secret", "key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// admin requires the admin token when one is configured, and otherwise a
// client on this machine whose Host names this machine (api.AdminWithoutToken:
// a DNS-rebinding page in an operator's browser connects to 127.0.0.1 with
// its own name in Host). It refuses cross-site requests in any case: a
// request from a web page of another origin (Origin, Sec-Fetch-Site), which
// a browser sends without preflight for "simple" methods and content types.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, _ := api.Bearer(r.Header.Get("Authorization"))
		if err := s.mayReadTags(r, got); err != nil {
			var e *api.Error
			if errors.As(err, &e) && e.Code == frond.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="frond admin"`)
				e.Msg = "tag administration needs the admin token: send Authorization: Bearer <token>"
			}
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}
}

// noBody refuses a request with a body on a route that reads its
// parameters from the query only: a body ({"n":700,"form":"nope"}) was
// ignored, and the request took an ID its sender did not ask for.
func (s *Server) noBody(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 || r.ContentLength < 0 && hasBody(r) {
			s.writeError(w, r, fmt.Errorf("%w: this route reads no body: send its parameters in the query string (docs/api.md)", frond.ErrInvalidArgument))
			return
		}
		h(w, r)
	}
}

// hasBody reports whether a request of unknown length (chunked) has a byte
// of body.
func hasBody(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	var b [1]byte
	n, _ := io.ReadFull(r.Body, b[:])
	return n > 0
}

// crossSite refuses a request a web page of another origin made: its
// Origin names another host than the request's, or the browser says so.
func crossSite(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return &api.Error{Code: frond.CodeForbidden, Msg: "a cross-site request: tag administration is not answered to web pages of other origins"}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return &api.Error{Code: frond.CodeForbidden, Msg: fmt.Sprintf("a cross-site request (Origin %s, Host %s): tag administration is not answered to web pages of other origins", service.Quote(origin), service.Quote(r.Host))}
	}
	return nil
}

// localHost reports whether a request's Host names this machine or an IP
// address (a DNS name other than localhost could be an attacker's that
// resolves to 127.0.0.1: DNS rebinding).
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// NewHTTPServer returns an http.Server that keeps the connection policy p
// (api.ConnPolicy; zero fields are its defaults), so slow clients cannot
// hold connections forever. net/http bounds a TLS handshake by the least of
// its read and write timeouts; the headers must arrive within the handshake
// deadline, the whole request within the read timeout.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger, p api.ConnPolicy) *http.Server {
	p = p.WithDefaults()
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: min(p.HandshakeTimeout, p.ReadTimeout),
		ReadTimeout:       p.ReadTimeout,
		WriteTimeout:      p.WriteTimeout,
		IdleTimeout:       p.IdleTimeout,
		MaxHeaderBytes:    p.MaxHeaderBytes,
		ErrorLog:          stdlog.New(&serverLog{log: log, every: handshakeLogEvery}, "", 0),
	}
}

// handshakeLogEvery is how often a failed TLS handshake is logged: anyone
// who can reach the port can fail one (a scanner, a plain-text client), and
// a line for each would flood the log.
const handshakeLogEvery = 10 * time.Second

// serverLog is net/http's error log: warnings, with the failed TLS
// handshakes logged at most once per every, with how many were not.
type serverLog struct {
	log   *slog.Logger
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		l.mu.Lock()
		now := time.Now()
		if now.Sub(l.last) < l.every {
			l.suppressed++
			l.mu.Unlock()
			return len(p), nil
		}
		n := l.suppressed
		l.last, l.suppressed = now, 0
		l.mu.Unlock()
		l.log.Warn(msg, "more_not_logged", n, "logged_at_most_every", l.every.String())
		return len(p), nil
	}
	l.log.Warn(msg)
	return len(p), nil
}
