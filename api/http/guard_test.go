package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/service"
)

// The guard over HTTP: 429 with Retry-After over the rate; the probes and
// /metrics are never limited; wrong tokens on any API (JSON, TinyID's)
// count against the address until even the right token is refused.
func TestHTTP_Guard(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, AuthFailures: 3, AuthWindow: time.Minute, Now: func() time.Time { return now }})
	f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g})
	f.want(f.do("GET", "/v1/snowflake", ""), 200)
	f.want(f.do("GET", "/v1/snowflake", ""), 200)
	r := f.do("GET", "/v1/snowflake", "")
	f.want(r, 429, `"code":"rate_limited"`)
	if r.hdr.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
	for _, p := range []string{"/healthz", "/readyz", "/readyz/segment", "/metrics"} {
		f.want(f.do("GET", p, ""), 200)
	}
	now = now.Add(time.Minute)
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer nope"), 401)
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer nope"), 401)
	now = now.Add(2 * time.Second)
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer still wrong"), 401)
	r = f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret")
	f.want(r, 429, "too many wrong tokens")
	if r.hdr.Get("Retry-After") != "58" {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
	now = now.Add(time.Minute)
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret"), 200)
}

// The dashboard's event stream works through the access log's and the
// guard's response writers (it needs Flush): it failed with "streaming is
// not supported" when the access log was on.
func TestDashboard_EventsThroughWrappers(t *testing.T) {
	for _, o := range []api.Options{{AccessLog: true}, {Guard: api.NewGuard(api.GuardOptions{Rate: 100})}} {
		f := newFixture(t, o)
		srv := httptest.NewServer(f.h)
		resp, err := http.Get(srv.URL + "/ui/events")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%+v: %d %q", o, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp.Body.Close()
		f.h.(*Server).StopStreams()
		srv.Close()
	}
}

// The hostile-client findings on the Guard (issue 29, items 7 to 9).
func TestHTTP_GuardHostile(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tokens := func(c *service.Config) { c.Tokens = map[string][]string{"tag-secret": {"order"}} }
	known := func(tok string) bool { return tok == "s3cret" || tok == "tag-secret" }

	// 7: a fresh random token per request gets no bucket of its own.
	g := api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, Now: clock, Known: known})
	f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g}, tokens)
	limited := 0
	for i := range 20 {
		if r := f.do("GET", "/v1/snowflake", "", TokenHeader, fmt.Sprintf("random-%d", i)); r.code == 429 {
			limited++
		}
	}
	if limited < 18 {
		t.Fatalf("20 requests, each with a new random token: %d limited; want all past the burst of 2", limited)
	}

	// 8: wrong tag tokens on Leaf's and TinyID's routes count too.
	// A name %-encoded is the same parameter to the handlers: the guard
	// decodes it too (it skipped queries without the text "token").
	for _, route := range []string{"/api/segment/get/order?token=wrong", "/tinyid/id/nextIdSimple?bizType=order&token=wrong",
		"/tinyid/id/nextId?bizType=order&token=wrong", "/api/segment/get/order?%74oken=wrong", "/ui/tags?%74oken=wrong"} {
		g := api.NewGuard(api.GuardOptions{AuthFailures: 3, AuthWindow: time.Minute, Now: clock, Known: known})
		f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g}, tokens)
		for range 3 {
			f.do("GET", route, "")
		}
		right := strings.Replace(strings.Replace(route, "%74oken", "token", 1), "token=wrong", "token=tag-secret", 1)
		if r := f.do("GET", right, ""); r.code != 429 && !strings.Contains(r.body, "rate_limited") {
			t.Fatalf("%s: after 3 wrong tag tokens the right one got %d %s; want rate_limited", route, r.code, r.body)
		}
	}

	// 9: requests without a token do not lock the admin out.
	g = api.NewGuard(api.GuardOptions{AuthFailures: 3, AuthWindow: time.Minute, Now: clock, Known: known})
	f = newFixture(t, api.Options{AdminToken: "s3cret", Guard: g}, tokens)
	for range 10 {
		f.want(f.do("GET", "/v1/tags", ""), 401)
	}
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret"), 200)
}

// Tag administration with no admin token (the default) is answered only
// to this machine, and never to a web page of another origin: a page in an
// operator's browser created tags with a simple cross-site POST, or through
// DNS rebinding (issue 29, item 10).
func TestHTTP_AdminFromWhere(t *testing.T) {
	f := newFixture(t, api.Options{})
	create := func(name string, hdr ...string) resp {
		return f.do("POST", "/v1/tags", `{"name":"`+name+`","step":10}`, hdr...)
	}
	f.want(create("a1", ":remote", "10.1.2.3:5555"), 403, "only from this machine")
	f.want(create("a2", ":host", "evil.example:8080"), 403, "Host")
	f.want(create("a3", "Origin", "https://evil.example", "Content-Type", "text/plain"), 403, "cross-site")
	f.want(create("a4", "Sec-Fetch-Site", "cross-site"), 403, "cross-site")
	f.want(f.do("GET", "/v1/tags/a1", ""), 404) // nothing was created
	f.want(create("ok1"), 201)
	f.want(create("ok2", ":host", "127.0.0.1:8080", "Origin", "http://127.0.0.1:8080"), 201)
	f.want(create("ok3", ":remote", "[::1]:5555", ":host", "[::1]:8080"), 201)

	// With a token: from anywhere, but not cross-site; the scheme is
	// case-insensitive.
	g := newFixture(t, api.Options{AdminToken: "s3cret"})
	g.want(g.do("POST", "/v1/tags", `{"name":"b1","step":10}`, ":remote", "10.1.2.3:5555", ":host", "frond.internal", "Authorization", "bearer s3cret"), 201)
	g.want(g.do("POST", "/v1/tags", `{"name":"b2","step":10}`, "Authorization", "Bearer s3cret", "Origin", "https://evil.example"), 403, "cross-site")
}

// A body on a route that reads the query only was ignored, and the request
// took an ID (issue 29, item 13): it is refused, and takes none.
func TestHTTP_BodyRefused(t *testing.T) {
	f := newFixture(t, api.Options{})
	for _, body := range []string{`{"n":700,"form":"nope"}`, strings.Repeat("x", 70<<10), "{not json"} {
		f.want(f.do("POST", "/v1/segment/order", body, "Content-Type", "application/json"), 400, "reads no body")
	}
	f.want(f.do("POST", "/v1/snowflake", "n=3"), 400, "reads no body")
	f.want(f.do("POST", "/v1/segment/order?n=2", ""), 200, `"ids":[1,2]`)
}

// A key given twice in a JSON body is refused, not read as the last one
// (encoding/json also matches keys in any case) (issue 29, item 15).
func TestHTTP_DuplicateJSONKeys(t *testing.T) {
	f := newFixture(t, api.Options{})
	for _, body := range []string{`{"name":"d1","step":1,"step":1000000}`, `{"name":"d2","step":10,"STEP":5}`, `{"name":"d3","name":"d4","step":1}`} {
		f.want(f.do("POST", "/v1/tags", body), 400, "given twice")
	}
	f.want(f.do("GET", "/v1/tags/d1", ""), 404)
	f.want(f.do("POST", "/v1/tags", `{"name":"d5","step":10,"description":"{\"step\":1,\"step\":2}"}`), 201)
	f.want(f.do("PATCH", "/v1/tags/d5", `{"step":20,"step":30}`), 400, "given twice")
}

func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[{"a":1}],"c":{"a":{"a":1}}}`))
	f.Add([]byte(`{"a":1,"A":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any text, valid or not, is walked without a panic (the token
		// walk asserts key types); TestHTTP_DuplicateJSONKeys checks the
		// answers.
		duplicateKey(b)
	})
}

// Failed TLS handshakes are logged at most once per interval, with a count
// of the others: anyone who can reach the port can fail one (issue 29,
// item 15).
func TestServerLog_Handshakes(t *testing.T) {
	var buf strings.Builder
	l := &serverLog{log: slog.New(slog.NewTextHandler(&buf, nil)), every: time.Hour}
	for range 100 {
		fmt.Fprintf(l, "http: TLS handshake error from 10.0.0.1:5: EOF\n")
	}
	fmt.Fprintf(l, "http: something else\n")
	if n := strings.Count(buf.String(), "TLS handshake error"); n != 1 || !strings.Contains(buf.String(), "something else") {
		t.Fatalf("%d handshake lines:\n%s", n, buf.String())
	}
}

// Issue 43, item 10: every path that takes a token counts a wrong one
// against the address, whatever it answers then: the JSON API's admin
// routes (401), the dashboard's pages and its event stream (which answers
// 200 with the tags hidden), TinyID's tag token; after the limit even the
// right admin token is refused.
func TestHTTP_EveryTokenPathCounts(t *testing.T) {
	tokens := func(c *service.Config) { c.Tokens = map[string][]string{"tag-secret": {"order"}} }
	for _, p := range []struct{ method, path, body, header string }{
		{"GET", "/v1/tags", "", "Bearer"},
		{"POST", "/v1/tags", `{"name":"x","step":1}`, "Bearer"},
		{"PATCH", "/v1/tags/order", `{"step":5}`, "Bearer"},
		{"DELETE", "/v1/tags/order", "", "Bearer"},
		{"POST", "/v1/reveal", `{"kind":"segment","form":"base62","value":"1"}`, "Bearer"},
		{"GET", "/ui/tags", "", "Bearer"},
		{"GET", "/ui/tags?token=guess", "", ""},
		{"GET", "/ui/events?token=guess", "", ""},
		{"GET", "/ui/events", "", "Bearer"},
		{"GET", "/tinyid/id/nextIdSimple?bizType=order&token=guess", "", ""},
		{"GET", "/v1/segment/order", "", "X-Frond-Token"},
	} {
		g := api.NewGuard(api.GuardOptions{AuthFailures: 3, AuthWindow: time.Minute})
		f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g}, tokens)
		srv := httptest.NewServer(f.h)
		for range 3 {
			req, _ := http.NewRequest(p.method, srv.URL+p.path, strings.NewReader(p.body))
			switch p.header {
			case "Bearer":
				req.Header.Set("Authorization", "Bearer guess")
			case "X-Frond-Token":
				req.Header.Set("X-Frond-Token", "guess")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond) // the event stream never ends
			res, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			cancel()
		}
		req, _ := http.NewRequest("GET", srv.URL+"/v1/tags", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s %s: three wrong tokens, then the right one answered %d, want 429", p.method, p.path, res.StatusCode)
		}
		srv.Close()
		f.h.(*Server).StopStreams()
	}
}

// Issue 43, item 7: one address may hold maxStreamsPerAddress dashboard
// event streams (1,000 from one address cost 36% of a core); another
// address is served; every stream sends the one snapshot of the second.
func TestDashboard_StreamsPerAddress(t *testing.T) {
	f := newFixture(t, api.Options{})
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	defer f.h.(*Server).StopStreams()
	open := func(local string) (*http.Response, error) {
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}).DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		req, _ := http.NewRequest("GET", srv.URL+"/ui/events", nil)
		return (&http.Client{Transport: tr}).Do(req)
	}
	var first []string
	for i := range maxStreamsPerAddress {
		res, err := open("127.0.0.1")
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("stream %d: %v, %v", i, res, err)
		}
		defer res.Body.Close()
		line, _ := bufio.NewReader(res.Body).ReadString('\n')
		first = append(first, line)
	}
	for i, line := range first {
		if line != "event: snapshot\n" {
			t.Fatalf("stream %d began %q", i, line)
		}
	}
	res, err := open("127.0.0.1")
	if err != nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a stream past the bound: %v, %v", res, err)
	}
	res.Body.Close()
	res, err = open("127.0.0.2")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("another address: %v, %v", res, err)
	}
	res.Body.Close()
	e := &f.h.(*Server).events
	e.mu.Lock()
	shared := e.json[0] != nil || e.json[1] != nil
	e.mu.Unlock()
	if !shared {
		t.Fatal("no shared snapshot")
	}
}

// Issue 43, item 7: /metrics (2.5 ms of CPU each) and the readiness pages
// (a store ping each) are exempt from limits.rate, so that an orchestrator
// or Prometheus is never limited out, but have a rate of their own per
// address far above theirs; /healthz costs nothing and has none.
func TestHTTP_ProbesRate(t *testing.T) {
	// A clock that stands still: on a busy machine the burst took more than
	// a second, the bucket refilled and none was limited (issue 44, item 3).
	still := time.Now()
	f := newFixture(t, api.Options{Now: func() time.Time { return still }})
	for _, p := range []string{"/metrics", "/readyz", "/readyz/segment"} {
		limited := 0
		for range probeBurst + 50 {
			if r := f.do("GET", p, ""); r.code == http.StatusTooManyRequests {
				limited++
			}
		}
		if limited == 0 {
			t.Errorf("%s: %d requests at once from one address, none limited", p, probeBurst+50)
		}
	}
	for range probeBurst * 2 {
		f.want(f.do("GET", "/healthz", ""), 200)
	}
}

// Issue 59, item 6: the admin token allows everything a tag token does: used
// as a Bearer on an ID route with tag tokens configured, it is answered and
// never counted as a wrong guess (11 of them locked the admin out of
// /v1/tags before).
func TestHostile_AdminTokenOnIDRoutes(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := api.NewGuard(api.GuardOptions{AuthFailures: 10, AuthWindow: time.Minute, Now: func() time.Time { return now }})
	f := newFixture(t, api.Options{AdminToken: "s3cret", Guard: g}, func(c *service.Config) {
		c.Tokens = map[string][]string{"tok": {"t1"}}
		c.AdminToken = "s3cret"
	})
	f.want(f.do("POST", "/v1/tags", `{"name":"t1","step":10}`, "Authorization", "Bearer s3cret"), 201)
	for range 12 {
		f.want(f.do("GET", "/v1/segment/t1", "", "Authorization", "Bearer s3cret"), 200)
	}
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret"), 200)
	// A wrong token still counts.
	for range 10 {
		f.want(f.do("GET", "/v1/segment/t1", "", "Authorization", "Bearer nope"), 403)
	}
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret"), 429, "too many wrong tokens")
}

// Issue 59, item 7: lease=1 let one anonymous client lease 3.5e8 IDs a
// second that it never used (2^53 in about 300 days). limits.lease_rate
// bounds the IDs a token or address takes to hand out itself, on every
// route that leases (lease=1, TinyID's segments): past it, 429 with the
// wait; another address is not affected; IDs asked one by one are not
// leases; the rate repays the debt.
func TestHostile_LeaseRate(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g := api.NewGuard(api.GuardOptions{LeaseRate: 10_000, LeaseBurst: 25_000, Now: clock})
	f := newFixture(t, api.Options{Guard: g})
	f.svc.SetLeaseLimit(g)
	lease := "/v1/segment/order?format=ranges&lease=1&n=10000"
	f.want(f.do("GET", lease, "", ":remote", "192.0.2.1:1"), 200, `"ranges"`)
	f.want(f.do("GET", lease, "", ":remote", "192.0.2.1:1"), 200, `"ranges"`)
	f.want(f.do("GET", lease, "", ":remote", "192.0.2.1:1"), 200, `"ranges"`) // 5,000 left: allowed, and 5,000 in debt after
	r := f.do("GET", lease, "", ":remote", "192.0.2.1:1")
	f.want(r, 429, "rate_limited", "lease rate")
	if r.hdr.Get("Retry-After") == "" {
		t.Fatalf("429 without Retry-After: %v", r.hdr)
	}
	f.want(f.do("GET", "/tinyid/id/nextSegmentIdSimple?bizType=order", "", ":remote", "192.0.2.1:1"), 429, "lease rate")
	f.want(f.do("GET", "/v1/segment/order?format=ranges&n=10000", "", ":remote", "192.0.2.1:1"), 429, "lease rate") // ranges without lease=1 too
	// Another address leases; IDs asked one by one are no lease.
	f.want(f.do("GET", lease, "", ":remote", "192.0.2.2:1"), 200, `"ranges"`)
	f.want(f.do("GET", "/v1/segment/order?n=100", "", ":remote", "192.0.2.1:1"), 200, `"ids"`)
	// The rate repays the debt: 10,000 IDs a second.
	now = now.Add(2 * time.Second)
	f.want(f.do("GET", lease, "", ":remote", "192.0.2.1:1"), 200, `"ranges"`)
}

// Issue 69, item 7: with --pprof, /debug/pprof/* answered anyone: the
// command line with --admin-token unmasked (which then opened GET
// /v1/tags), goroutine dumps, traces and profiles. Now behind the admin
// check (the token where one is configured, else a client on this machine
// only), with the command line's secrets masked.
func TestHostile_PprofBehindAdmin(t *testing.T) {
	const token = "s3cret-pprof-admin"
	args := os.Args
	os.Args = append(slices.Clone(args), "--admin-token", token, "--registry", "etcd://u:pw-in-url-123@10.0.0.1:2379")
	defer func() { os.Args = args }()
	secret.RememberURLs("etcd://u:pw-in-url-123@10.0.0.1:2379")
	f := newFixture(t, api.Options{AdminToken: token, Pprof: true})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2", "/debug/pprof/symbol", "/debug/pprof/trace?seconds=0", "/debug/pprof/profile?seconds=0"} {
		f.want(f.do("GET", p, ""), 401)
		f.want(f.do("GET", p, "", "Authorization", "Bearer wrong"), 401)
	}
	r := f.do("GET", "/debug/pprof/cmdline", "", "Authorization", "Bearer "+token)
	f.want(r, 200, "--admin-token")
	if strings.Contains(r.body, token) || strings.Contains(r.body, "pw-in-url-123") {
		t.Fatalf("the command line shows a secret: %q", r.body)
	}
	f.want(f.do("GET", "/debug/pprof/goroutine?debug=1", "", "Authorization", "Bearer "+token), 200, "goroutine")
	// Without an admin token: a client on this machine only.
	g := newFixture(t, api.Options{Pprof: true})
	g.want(g.do("GET", "/debug/pprof/cmdline", "", ":remote", "192.0.2.1:1"), 403)
	g.want(g.do("GET", "/debug/pprof/goroutine?debug=2", "", ":remote", "192.0.2.1:1"), 403)
	g.want(g.do("GET", "/debug/pprof/cmdline", ""), 200)
}

// Issue 69, item 5: a leasing request was admitted while its caller's
// bucket was above 0 and charged after its answer, so requests sent at
// once were all admitted on one burst: with lease_rate 1,000 and burst
// 1,000, 500 connections asking n=10^6 got 129-224 admitted (1.3-2.2 ×
// 10^8 IDs in under a second). Each is now charged what it asks for as it
// is admitted: one of the requests sent at once is answered, the rest are
// refused until the rate repays the debt.
func TestHostile_LeaseRateConcurrent(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	g := api.NewGuard(api.GuardOptions{LeaseRate: 1000, LeaseBurst: 1000, Now: func() time.Time { return now }})
	f := newFixture(t, api.Options{Guard: g})
	f.svc.SetLeaseLimit(g)
	const clients = 64
	start := make(chan struct{})
	codes := make(chan int, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			<-start
			codes <- f.do("GET", "/v1/segment/order?format=ranges&n=1000000", "", ":remote", "192.0.2.7:1").code
		})
	}
	close(start)
	wg.Wait()
	close(codes)
	admitted := 0
	for c := range codes {
		switch c {
		case 200:
			admitted++
		case 429:
		default:
			t.Fatalf("status %d", c)
		}
	}
	if admitted != 1 {
		t.Fatalf("%d of %d requests for 10^6 IDs sent at once admitted under a burst of 1,000: want 1", admitted, clients)
	}
	// A request refused, or answered fewer than it asked for, gives back
	// what it was charged: the next caller's bucket is its own.
	f.want(f.do("GET", "/v1/segment/order?format=ranges&n=1000", "", ":remote", "192.0.2.8:1"), 200)
}

// Issue 69, item 6: one memory of idempotency keys per node, shared by
// every anonymous caller: 101 anonymous GET /v1/snowflake?n=10000 with
// made-up keys flushed it (1,000,000 IDs), and a victim's retry with its
// key took new IDs instead of its first answer; and a caller sending the
// victim's key got the victim's answer. Keys are now each caller's (its
// token, or its address), each caller's bounded to a share of the node's.
func TestHostile_IdempotencyPerCaller(t *testing.T) {
	f := newFixture(t, api.Options{})
	victim := f.do("GET", "/v1/segment/order?n=10", "", ":remote", "192.0.2.10:1", "Idempotency-Key", "victim-key-1")
	f.want(victim, 200, `"ids"`)
	for i := range 101 {
		f.want(f.do("GET", "/v1/segment/order?n=10000", "", ":remote", "198.51.100.7:1", "Idempotency-Key", fmt.Sprint("flood-", i)), 200)
	}
	again := f.do("GET", "/v1/segment/order?n=10", "", ":remote", "192.0.2.10:1", "Idempotency-Key", "victim-key-1")
	f.want(again, 200)
	if again.body != victim.body {
		t.Fatalf("the victim's retry after another caller's flood took new IDs:\nfirst %s\nretry %s", victim.body, again.body)
	}
	// Another caller with the victim's key gets an answer of its own.
	other := f.do("GET", "/v1/segment/order?n=10", "", ":remote", "198.51.100.7:1", "Idempotency-Key", "victim-key-1")
	f.want(other, 200)
	if other.body == victim.body {
		t.Fatalf("another address sending the victim's key got the victim's answer: %s", other.body)
	}
}
