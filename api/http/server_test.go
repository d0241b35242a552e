package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

// downStore is a memstore that can be taken down.
type clock = testclock.Clock

type fixture struct {
	t     testing.TB
	h     http.Handler
	store *storetest.Faulty
	clock *clock
	svc   *service.Service
}

func newFixture(t testing.TB, opts api.Options, configure ...func(*service.Config)) *fixture {
	t.Helper()
	c := testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	st := storetest.NewFaulty()
	m := api.NewMetrics(api.MetricsOptions{})
	cfg := service.Config{
		Now:     c.Now,
		Segment: segment.Settings{FixedStep: true, OnLoad: m.OnLoad, FailFast: -1},
	}
	for _, f := range configure {
		f(&cfg)
	}
	svc := apitest.Service(t, st, cfg, frond.Tag{Name: "order", MaxID: 1, Step: 1000, Description: "orders"})
	m.Attach(svc)
	opts.Metrics = m
	return &fixture{t: t, h: New(svc, opts), store: st, clock: c, svc: svc}
}

type resp struct {
	code int
	hdr  http.Header
	body string
}

func (f *fixture) do(method, path, body string, hdr ...string) resp {
	f.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	// A client on this machine, as an operator's CLI is; ":remote" and
	// ":host" set another.
	req.RemoteAddr, req.Host = "127.0.0.1:40000", "localhost:8080"
	for i := 0; i+1 < len(hdr); i += 2 {
		switch hdr[i] {
		case ":remote":
			req.RemoteAddr = hdr[i+1]
		case ":host":
			req.Host = hdr[i+1]
		default:
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return resp{w.Code, w.Header(), w.Body.String()}
}

// want checks status and that the body contains every fragment.
func (f *fixture) want(r resp, code int, fragments ...string) {
	f.t.Helper()
	if r.code != code {
		f.t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	for _, s := range fragments {
		if !strings.Contains(r.body, s) {
			f.t.Fatalf("body lacks %q: %s", s, r.body)
		}
	}
}

func TestLeafSegment(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/api/segment/get/order", "")
	f.want(r, 200)
	if r.body != "1" || r.hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("body %q, type %q", r.body, r.hdr.Get("Content-Type"))
	}
	f.want(f.do("GET", "/api/segment/get/order", ""), 200)
	f.want(f.do("GET", "/api/segment/get/nope", ""), 500, "error: tag_not_found", "create the tag")
	f.want(f.do("GET", "/api/segment/get/a%20b", ""), 500, "error: invalid_argument")
	f.store.SetDown(true)
	f.want(f.do("GET", "/api/segment/get/order", ""), 200) // served from the buffer
	f.want(f.do("GET", "/api/segment/get/fresh", ""), 500, "error: store_unavailable", "connection refused")
}

func TestLeafSnowflake(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/api/snowflake/get/anything", "")
	f.want(r, 200)
	f.clock.Add(-time.Second)
	r = f.do("GET", "/api/snowflake/get/x", "")
	f.want(r, 500, "error: clock_backwards", "moved backwards by 1s")
	if r.hdr.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
}

func TestLeafDecode(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/decodeSnowflakeId?snowflakeId=1861083629105360902", "")
	f.want(r, 200)
	var m map[string]string
	json.Unmarshal([]byte(r.body), &m)
	if m["timestamp"] != "1732551889097(2024-11-25 16:24:49.097)" || m["workerId"] != "491" || m["sequenceId"] != "6" {
		t.Fatalf("decode %v", m)
	}
	f.want(f.do("GET", "/decodeSnowflakeId?snowflakeId=abc", ""), 200, `"errorMsg"`, "invalid_argument")
	f.want(f.do("GET", "/decodeSnowflakeId", ""), 200, `"errorMsg"`)
}

func TestPages(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.do("GET", "/api/segment/get/order", "")
	f.want(f.do("GET", "/cache", ""), 200, "<td>order</td>", "<td>true</td>")
	f.want(f.do("GET", "/db", ""), 200, "<td>order</td>", "<td>orders</td>")
	f.store.SetDown(true)
	f.want(f.do("GET", "/db", ""), 503, "connection refused")
}

func TestV1Segment(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/segment/order", ""), 200, `"id":1,`, `"id_str":"1"`, `"tag":"order"`)
	f.want(f.do("POST", "/v1/segment/order?n=3", ""), 200, `"ids":[2,3,4]`, `"id_strs":["2","3","4"]`)
	f.want(f.do("GET", "/v1/segment/order?n=2000&format=ranges", ""), 200, `"ranges":[{"start":5,"end":2005,"stride":1,"count":2000,"start_str":"5","end_str":"2005"}]`)
	f.want(f.do("GET", "/v1/segment/order?format=ranges", ""), 200, `"count":1`)
	for _, q := range []string{"n=0", "n=-1", "n=abc", "n=10001", "n=1.5", "format=xml", "n=1000001&format=ranges"} {
		f.want(f.do("GET", "/v1/segment/order?"+q, ""), 400, `"code":"invalid_argument"`)
	}
	f.want(f.do("GET", "/v1/segment/nope", ""), 404, `"code":"tag_not_found"`)
	f.want(f.do("GET", "/v1/segment/bad%20name", ""), 400, `"code":"invalid_argument"`)
	f.store.SetDown(true)
	r := f.do("GET", "/v1/segment/fresh", "")
	f.want(r, 503, `"code":"store_unavailable"`)
	if r.hdr.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
}

func TestV1Snowflake(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/snowflake", ""), 200, `"id":`, `"id_str":"`)
	r := f.do("POST", "/v1/snowflake?n=3", "")
	f.want(r, 200)
	var out struct {
		IDs    []int64
		IDStrs []string `json:"id_strs"`
	}
	json.Unmarshal([]byte(r.body), &out)
	if len(out.IDs) != 3 || len(out.IDStrs) != 3 || !(out.IDs[0] < out.IDs[1] && out.IDs[1] < out.IDs[2]) {
		t.Fatalf("ids %+v", out)
	}
	f.want(f.do("GET", "/v1/snowflake?n=0", ""), 400, `"code":"invalid_argument"`)
	f.clock.Add(-3 * time.Second)
	r = f.do("GET", "/v1/snowflake", "")
	f.want(r, 503, `"code":"clock_backwards"`, "check the clock")
	if r.hdr.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
}

func TestV1Decode(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/decode/1861083629105360902", ""), 200, `"node":491`, `"sequence":6`, `"layout":"twitter"`, `"time":"2024-11-25T16:24:49.097Z"`, `"id_str":"1861083629105360902"`)
	f.want(f.do("GET", "/v1/decode/4194304?layout=sonyflake", ""), 200, `"layout":"sonyflake"`, `"tick":0`)
	f.want(f.do("GET", "/v1/decode/-1", ""), 400, `"code":"invalid_argument"`)
	f.want(f.do("GET", "/v1/decode/99999999999999999999", ""), 400, `"code":"invalid_argument"`)
	f.want(f.do("GET", "/v1/decode/1?layout=nope", ""), 400, `"code":"invalid_argument"`, "no preset")
	f.want(f.do("GET", "/v1/decode/9007199254740992?layout=javascript", ""), 400, `"code":"invalid_argument"`)
	f.want(f.do("GET", "/v1/info", ""), 200, `"worker_id":3`, `"name":"twitter"`, `"max_batch":10000`)
}

func TestV1Tags(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/tags", ""), 200, `"name":"order"`, `"max_id_str":"1"`)
	r := f.do("POST", "/v1/tags", `{"name":"pay","step":500,"description":"payments"}`)
	f.want(r, 201, `"name":"pay"`, `"max_id":1,`, `"step":500`)
	if r.hdr.Get("Location") != "/v1/tags/pay" {
		t.Fatalf("Location %q", r.hdr.Get("Location"))
	}
	f.want(f.do("POST", "/v1/tags", `{"name":"pay","step":500}`), 409, `"code":"tag_exists"`)
	f.want(f.do("POST", "/v1/tags", `{"name":"bad name","step":5}`), 400, `"code":"invalid_argument"`)
	f.want(f.do("POST", "/v1/tags", `{"name":"nostep"}`), 400, "step is required")
	f.want(f.do("POST", "/v1/tags", `{"name":"x","step":5,"color":"red"}`), 400, "unknown field")
	f.want(f.do("POST", "/v1/tags", `{"name":"x","step":5}{}`), 400, "one JSON object")
	f.want(f.do("POST", "/v1/tags", `{"name":"x","step":-5}`), 400, `"code":"invalid_argument"`)
	f.want(f.do("POST", "/v1/tags", `not json`), 400, `"code":"invalid_argument"`)
	f.want(f.do("POST", "/v1/tags", `{"name":"`+strings.Repeat("a", MaxBody)+`","step":1}`), 413, `"code":"request_too_large"`)
	f.want(f.do("GET", "/v1/tags/pay", ""), 200, `"description":"payments"`)
	f.want(f.do("GET", "/v1/tags/nope", ""), 404, `"code":"tag_not_found"`)
	f.want(f.do("PATCH", "/v1/tags/pay", `{"step":800,"max_id":5000}`), 200, `"step":800`, `"max_id":5000`)
	f.want(f.do("PATCH", "/v1/tags/pay", `{"max_id":10}`), 409, `"code":"would_reissue"`, "only be raised")
	f.want(f.do("PATCH", "/v1/tags/pay", `{}`), 400, "nothing to change")
	f.want(f.do("PATCH", "/v1/tags/nope", `{"step":3}`), 404, `"code":"tag_not_found"`)
	f.want(f.do("GET", "/v1/segment/pay", ""), 200, `"id":5000`)
	f.want(f.do("DELETE", "/v1/tags/pay", ""), 204)
	f.want(f.do("DELETE", "/v1/tags/pay", ""), 404, `"code":"tag_not_found"`)
	f.want(f.do("GET", "/v1/segment/pay", ""), 404, `"code":"tag_not_found"`)
}

func TestAdminToken(t *testing.T) {
	f := newFixture(t, api.Options{AdminToken: "s3cret"})
	r := f.do("GET", "/v1/tags", "")
	f.want(r, 401, `"code":"unauthorized"`)
	if r.hdr.Get("WWW-Authenticate") == "" {
		t.Fatal("no WWW-Authenticate")
	}
	f.want(f.do("POST", "/v1/tags", `{"name":"x","step":1}`, "Authorization", "Bearer wrong"), 401)
	f.want(f.do("DELETE", "/v1/tags/order", "", "Authorization", "s3cret"), 401)
	f.want(f.do("GET", "/v1/tags", "", "Authorization", "Bearer s3cret"), 200, `"order"`)
	f.want(f.do("GET", "/v1/segment/order", ""), 200) // IDs need no token
}

func TestHealthReadyMetrics(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/healthz", ""), 200, `"ok"`)
	f.do("GET", "/api/segment/get/order", "")
	f.do("GET", "/api/segment/get/nope", "")
	f.want(f.do("GET", "/readyz", ""), 200, `"status":"ready"`, `"tag":"order"`, `"remaining":999`)
	f.want(f.do("GET", "/metrics", ""), 200,
		`frond_ids_issued_total{kind="segment"} 1`,
		`frond_tag_ids_issued_total{kind="segment",tag="order"} 1`,
		`frond_ids_issued_total{kind="snowflake"} 0`,
		`frond_errors_total{code="tag_not_found",protocol="http"} 1`,
		`frond_requests_total{operation="GET /api/segment/get/{key}",protocol="http"} 2`,
		`frond_segment_loads_total{result="ok"} 1`,
		`frond_segment_tag_loads_total{result="ok",tag="order"} 1`,
		`frond_segment_tags{state="ok"} 1`,
		`frond_metrics_tags_omitted{kind="segment"} 0`,
		`frond_segment_buffer_remaining{tag="order"} 999`,
		`frond_snowflake_clock_backward_steps_total 0`,
		`frond_snowflake_issuing 1`, `frond_snowflake_worker_from_local_record 0`, `frond_snowflake_worker_id `,
		`frond_snowflake_layout_expiry_timestamp_seconds{layout="twitter"} 3.4`)
	f.store.SetDown(true)
	// The buffer of "order" still holds IDs: degraded, still serving.
	f.want(f.do("GET", "/readyz", ""), 200, `"status":"degraded"`, `"name":"store","ok":false`, "connection refused", `"remaining":999`)
	f.want(f.do("GET", "/readyz/segment", ""), 200, `"ready":true`, "serving the 999 IDs buffered for 1 tags")
	f.do("GET", "/v1/segment/order?n=999&format=ranges", "")
	// Segment IDs cannot be served, snowflake IDs can: the overall page is
	// degraded, the segment page says why.
	f.want(f.do("GET", "/readyz", ""), 200, `"status":"degraded"`, `"remaining":0`, `"segment":{"kind":"segment","ready":false`)
	f.want(f.do("GET", "/readyz/segment", ""), 503, `"ready":false`, "no IDs are buffered", "connection refused")
	f.want(f.do("GET", "/readyz/snowflake", ""), 200, `"ready":true`, "worker ID 3")
	f.want(f.do("GET", "/nope", ""), 404, `"code":"not_found"`)
	f.want(f.do("GET", "/debug/pprof/", ""), 404)
	g := newFixture(t, api.Options{Pprof: true})
	g.want(g.do("GET", "/debug/pprof/", ""), 200, "goroutine")
}

// The access log (off by default) logs one line per request with its
// request ID: the caller's X-Request-ID, answered back, or a new one.
func TestAccessLog(t *testing.T) {
	var logs strings.Builder
	f := newFixture(t, api.Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	r := f.do("GET", "/v1/segment/order", "", "X-Request-ID", "req-42")
	f.want(r, 200)
	if r.hdr.Get("X-Request-ID") != "req-42" {
		t.Fatalf("X-Request-ID answered %q", r.hdr.Get("X-Request-ID"))
	}
	r = f.do("GET", "/v1/segment/nope", "")
	if id := r.hdr.Get("X-Request-ID"); len(id) != 16 {
		t.Fatalf("a new request ID: %q", id)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var first, second map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
		t.Fatalf("access log: %q", logs.String())
	}
	if first["request_id"] != "req-42" || first["status"] != 200.0 || first["route"] != "GET /v1/segment/{tag}" || first["protocol"] != "http" {
		t.Fatalf("first line: %v", first)
	}
	if second["status"] != 404.0 || second["request_id"] != r.hdr.Get("X-Request-ID") {
		t.Fatalf("second line: %v", second)
	}
	// Off: no lines, the caller's ID still answered back, none made up.
	var quiet strings.Builder
	g := newFixture(t, api.Options{Logger: slog.New(slog.NewJSONHandler(&quiet, nil))})
	if r := g.do("GET", "/v1/segment/order", "", "X-Request-ID", "req-43"); r.hdr.Get("X-Request-ID") != "req-43" {
		t.Fatalf("access log off: X-Request-ID %q", r.hdr.Get("X-Request-ID"))
	}
	if r := g.do("GET", "/v1/segment/order", ""); r.hdr.Get("X-Request-ID") != "" || quiet.Len() != 0 {
		t.Fatalf("access log off: header %q, log %q", r.hdr.Get("X-Request-ID"), quiet.String())
	}
}
