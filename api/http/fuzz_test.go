package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
)

func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"", "1", "10000", "10001", "-1", "0", "abc", "1e3", "+5", " 5", "1;DROP", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if n, err := parseCount(query{}, 10_000); n != 0 || err != nil {
			t.Fatalf("absent: %d %v", n, err)
		}
		n, err := parseCount(query{"n": {raw}}, 10_000)
		v, perr := strconv.ParseInt(raw, 10, 64)
		want := digitsOnly(raw) && perr == nil && v >= 1 && v <= 10_000
		if want != (err == nil) || (want && n != v) {
			t.Fatalf("parseCount(%q) = %d, %v; want %v", raw, n, err, want)
		}
	})
}

func FuzzCallerTimeout(f *testing.F) {
	for _, s := range []string{"", "1", "2000", "600000", "600001", "0", "-1", "+5", "1.5", " 5", "1e3", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if d, err := callerTimeout(raw, false); d != 0 || err != nil {
			t.Fatalf("absent: %v %v", d, err)
		}
		d, err := callerTimeout(raw, true)
		v, perr := strconv.ParseInt(raw, 10, 64)
		want := digitsOnly(raw) && perr == nil && v >= 1 && v <= maxTimeoutMs
		if want != (err == nil) || (want && d != time.Duration(v)*time.Millisecond) {
			t.Fatalf("callerTimeout(%q) = %v, %v; want %v", raw, d, err, want)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "1861083629105360902", "-1", "+1", "9223372036854775808", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := parseID(raw)
		v, perr := strconv.ParseInt(raw, 10, 64)
		if ok := digitsOnly(raw) && perr == nil; ok != (err == nil) || (ok && v != id) {
			t.Fatalf("parseID(%q) = %d, %v; ParseInt gives %d, %v", raw, id, err, v, perr)
		}
	})
}

// snapshot is everything a request could change about which IDs come next:
// each buffer's position and loads, each tag's max_id, and the count of
// snowflake IDs issued. It first waits for background loads (a prefetch an
// earlier, successful request started) to end, so that only the request
// under test can change it.
func (f *fixture) snapshot() string {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
		if !slices.ContainsFunc(f.svc.SegmentStats(), func(st segment.Stats) bool { return st.Loading }) {
			break
		}
	}
	var b strings.Builder
	for _, st := range f.svc.SegmentStats() {
		fmt.Fprintf(&b, "%s %d %d %d %v|", st.Tag, st.Current.Pos, st.Next.Start, st.Loads, st.NextReady)
	}
	tags, err := f.store.Store.Tags(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, t := range tags {
		fmt.Fprintf(&b, "%s=%d|", t.Name, t.MaxID)
	}
	fmt.Fprintf(&b, "snowflake %d", f.svc.SnowflakeIssued())
	if sp := f.svc.Spaces(); sp != nil {
		for _, st := range sp.Stats() {
			fmt.Fprintf(&b, "|space %s %d %d", st.Name, st.Served, st.Raises)
		}
	}
	return b.String()
}

var fuzzPrefixes = []string{"/v1/segment/", "/api/segment/get/", "/v1/snowflake", "/api/snowflake/get/", "/v1/uuid", "/v1/serial/",
	"/v1/decode/", "/decodeSnowflakeId", "/v1/tags/", "/v1/tags", "/v1/reveal", "/readyz", "/readyz/", "/", "/v1/info", "/cache", "/db",
	"/v1/seq/", "/v1/spaces"}

// Whole requests from outside (method, path, query, body) go through the
// handler: no panic, every error in the route's shape, and no answer other
// than 2xx, and no HEAD, ever changes what the next ID of a tag is (or takes
// a snowflake ID).
func FuzzHandlers(f *testing.F) {
	f.Add("GET", uint8(0), "order", "n=5", "")
	f.Add("GET", uint8(0), "order", "n=500&form=bogus", "")
	f.Add("HEAD", uint8(0), "order", "n=500", "")
	f.Add("GET", uint8(0), "order", "n=1;DROP", "")
	f.Add("POST", uint8(0), "order", "n=+5", "")
	f.Add("GET", uint8(0), "a b", "n=-1", "")
	f.Add("GET", uint8(1), "../../etc", "", "")
	f.Add("GET", uint8(0), strings.Repeat("x", 200), "n=10001", "")
	f.Add("GET", uint8(2), "", "n=1000&form=bogus", "")
	f.Add("HEAD", uint8(3), "x", "", "")
	f.Add("POST", uint8(9), "", "", `{"name":"new","step":10}`)
	f.Add("PATCH", uint8(8), "order", "", `{"max_id":5}`)
	f.Add("DELETE", uint8(8), "order", "", "")
	f.Add("POST", uint8(10), "", "", `{"kind":"segment","form":"base62","value":"zzzzzzzzzzzzzzzzzzzzzzzz"}`)
	f.Add("PUT", uint8(0), "order", "", "")
	f.Add("GET", uint8(6), "1861083629105360902", "layout=sonyflake", "")
	f.Add("GET", uint8(7), "", "snowflakeId=-1", "")
	f.Add("GET", uint8(0), "order", "form=mist&prefix=ord", "")
	f.Add("GET", uint8(0), "order", "form=base62&prefix=a_b_", "")
	f.Add("GET", uint8(2), "", "form=friendly&prefix=evt&n=3", "")
	f.Add("GET", uint8(4), "", "version=5&namespace=dns&name=%00%ff", "")
	f.Add("GET", uint8(4), "", "version=7&form=typeid&prefix=User", "")
	f.Add("POST", uint8(10), "", "", `{"kind":"uuid","form":"typeid","value":"user_01h455vb4pex5vsknk084sn02q","prefix":"user"}`)
	f.Add("POST", uint8(10), "", "", `{"kind":"snowflake","form":"friendly","value":"20240103152415876-5-16","tag":"order"}`)
	f.Add("GET", uint8(17), "msgs/conv-1", "n=3", "")
	f.Add("POST", uint8(17), "msgs/a%2Fb", "n=0", "")
	f.Add("GET", uint8(17), "nope/k", "form=base62", "")
	f.Add("POST", uint8(18), "", "", `{"name":"more","slots":3}`)
	fx := newFixture(f, api.Options{}, func(c *service.Config) {
		c.Spaces = keyseq.NewSpaces(&keyseq.MemLeases{}, keyseq.Owner{Token: "fuzz", Addr: "127.0.0.1:1"},
			keyseq.NodeOptions{TTL: time.Hour, Logger: slog.New(slog.DiscardHandler)}, nil)
	})
	if _, err := fx.svc.CreateSpace(context.Background(), keyseq.Space{Name: "msgs", Sections: 4, Slots: 16}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method string, route uint8, path, query, body string) {
		fx.t = t
		req, err := http.NewRequest(method, "http://frond.test/", strings.NewReader(body))
		if err != nil {
			return // not a method a server would let through
		}
		req.URL.Path = fuzzPrefixes[int(route)%len(fuzzPrefixes)] + path
		if strings.HasPrefix(path, "ui/events") || strings.HasPrefix(req.URL.Path, "/ui/events") {
			return // the dashboard's event stream lasts as long as its client (TestDashboard_Server)
		}
		req.URL.RawQuery = query
		req.RequestURI = req.URL.RequestURI()
		before := fx.snapshot()
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, req)
		if method != "HEAD" && w.Code >= 200 && w.Code < 300 {
			return
		}
		if after := fx.snapshot(); after != before { // HEAD never takes IDs, whatever it answers
			t.Fatalf("%s %s?%s answered %d and changed the next IDs:\n before %s\n after  %s", method, req.URL.Path, query, w.Code, before, after)
		}
		ct := w.Header().Get("Content-Type")
		switch {
		case redirect(w.Code): // ServeMux cleans paths with "." or ".." or "//"
		case w.Code >= 500 && w.Code != 500 && w.Code != 503:
			t.Fatalf("%s %s: status %d", method, req.URL.Path, w.Code)
		case strings.HasPrefix(req.URL.Path, "/api/") && w.Code == 500:
			if !strings.HasPrefix(w.Body.String(), "error: ") && method != "HEAD" {
				t.Fatalf("Leaf API error body %q", w.Body.String())
			}
		case w.Code == 500:
			t.Fatalf("%s %s: 500 %s", method, req.URL.Path, w.Body.String())
		case !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/html") && !strings.HasPrefix(ct, "text/plain"):
			t.Fatalf("%s %s: %d with content type %q", method, req.URL.Path, w.Code, ct)
		}
	})
}

func redirect(code int) bool { return code == 301 || code == 307 || code == 308 }

// FuzzRawHTTP sends whole byte streams, as a client could, to a running
// http.Server (the policy's timeouts, the real parser) over TCP: the
// server never answers 500 for input, stays up, and answers a probe after
// each stream (issue 29). That a refused request takes no ID is
// FuzzHandlers' check: here the client's half-close ends each request's
// context, and a request cut short by its client may skip IDs (a gap).
func FuzzRawHTTP(f *testing.F) {
	for _, seed := range []string{
		"GET /v1/segment/order?n=3 HTTP/1.1\r\nHost: localhost\r\n\r\n",
		"POST /v1/segment/order HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{\"n\":700,\"form\":1}",
		"POST /v1/tags HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\nContent-Type: text/plain\r\nContent-Length: 24\r\n\r\n{\"name\":\"x\",\"step\":10}",
		"GET /api/segment/get/order HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: b\r\n", 100) + "\r\n",
		"GET /tinyid/id/nextIdSimple?bizType=order&batchSize=100000 HTTP/1.0\r\n\r\n",
		"\x16\x03\x01\x00\x05hello",
		"GET /v1/snowflake HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/uuid HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	fx := newFixture(f, api.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := NewHTTPServer("", fx.h, slog.New(slog.DiscardHandler), api.ConnPolicy{})
	go srv.Serve(ln)
	f.Cleanup(func() {
		fx.h.(*Server).StopStreams()
		srv.Close()
	})
	send := func(t *testing.T, in []byte) string {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		tc := c.(*net.TCPConn)
		tc.SetLinger(0) // no TIME_WAIT: a fuzz run opens 100,000 connections
		defer tc.Close()
		tc.SetDeadline(time.Now().Add(2 * time.Second)) // an event stream never ends by itself
		tc.Write(in)
		tc.CloseWrite()
		out, _ := io.ReadAll(tc)
		return string(out)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fx.t = t
		out := send(t, in)
		if strings.Contains(out, "HTTP/1.1 500") && !strings.Contains(out, "error: ") {
			// Leaf's API answers its errors 500 with "error: <code>"; no
			// other 500 is an answer to input.
			t.Fatalf("a 500 for %q:\n%s", in, out)
		}
		if probe := send(t, []byte("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")); !strings.HasPrefix(probe, "HTTP/1.1 200") {
			t.Fatalf("after %q the server does not answer: %q", in, probe)
		}
	})
}
