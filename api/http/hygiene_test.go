package httpapi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
)

// nextSegment takes the next ID of order through Leaf's API.
func (f *fixture) nextSegment() int64 {
	f.t.Helper()
	r := f.do("GET", "/api/segment/get/order", "")
	f.want(r, 200)
	id, err := strconv.ParseInt(r.body, 10, 64)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// A request that is refused takes no ID, and HEAD on an issuing route takes
// none: the next ID of the tag, and the count of snowflake IDs, are as they
// were. (Before: n=500&form=bogus answered 400 after taking 500 IDs; HEAD
// took IDs and answered 200 with no body.)
func TestRejectedRequestsTakeNoIDs(t *testing.T) {
	f := newFixture(t, api.Options{})
	if id := f.nextSegment(); id != 1 {
		t.Fatalf("first ID %d", id)
	}
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/segment/order?n=500&form=bogus", 400},
		{"GET", "/v1/segment/order?n=5&form=opaque", 400}, // no obfuscation key
		{"GET", "/v1/segment/order?form=opaque62", 400},
		{"GET", "/v1/segment/order?n=5&format=ranges&form=base62", 400},
		{"GET", "/v1/segment/order?n=5&format=list", 400},
		{"GET", "/v1/segment/order?n=", 400},
		{"GET", "/v1/segment/order?n=+5", 400},
		{"GET", "/v1/segment/order?n=%205", 400},
		{"GET", "/v1/segment/order?n=1;DROP", 400},
		{"GET", "/v1/segment/order?n=1&n=5", 400},
		{"GET", "/v1/segment/order?n=10001", 400},
		{"GET", "/v1/segment/order?n=5&format=ranges&n=6", 400},
		{"HEAD", "/v1/segment/order?n=500", 200},
		{"HEAD", "/v1/segment/order", 200},
		{"HEAD", "/api/segment/get/order", 200},
		{"HEAD", "/v1/segment/order?n=500&form=bogus", 400},
		{"HEAD", "/v1/segment/nope", 404}, // the status a GET would get, without taking an ID
		{"GET", "/v1/snowflake?n=1000&form=bogus", 400},
		{"GET", "/v1/snowflake?n=0", 400},
		{"GET", "/v1/snowflake?n=-1", 400},
		{"GET", "/v1/snowflake?form=opaque", 400},
		{"HEAD", "/v1/snowflake?n=1000", 200},
		{"HEAD", "/api/snowflake/get/x", 200},
		{"GET", "/v1/uuid?version=+7", 400},
		{"GET", "/v1/uuid?version=7&form=base62", 400},
		{"GET", "/v1/serial/nope?n=3", 404},
		{"GET", "/v1/serial/nope?n=x", 400},
	} {
		r := f.do(c.method, c.path, "")
		if r.code != c.code {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, r.code, c.code, r.body)
		}
		if c.method == "HEAD" && r.code == 200 && r.body != "" {
			t.Fatalf("HEAD %s answered a body: %s", c.path, r.body)
		}
		if c.method == "GET" && !strings.Contains(r.body, `"code":`) {
			t.Fatalf("%s: not the JSON error shape: %s", c.path, r.body)
		}
	}
	if id := f.nextSegment(); id != 2 {
		t.Fatalf("next ID %d after the refused requests, want 2", id)
	}
	if n := f.svc.SnowflakeIssued(); n != 0 {
		t.Fatalf("%d snowflake IDs taken by refused and HEAD requests", n)
	}
}

// A wrong method answers 405 with Allow and the JSON error, not 404.
func TestWrongMethod(t *testing.T) {
	f := newFixture(t, api.Options{})
	for path, allow := range map[string]string{
		"/v1/segment/order":      "GET, HEAD, POST",
		"/v1/tags":               "GET, HEAD, POST",
		"/v1/tags/order":         "GET, HEAD, PATCH, DELETE",
		"/api/segment/get/order": "GET, HEAD",
		"/v1/reveal":             "POST",
	} {
		method := "PUT"
		r := f.do(method, path, "")
		f.want(r, 405, `"code":"method_not_allowed"`)
		if got := r.hdr.Get("Allow"); got != allow {
			t.Fatalf("%s %s: Allow %q, want %q", method, path, got, allow)
		}
	}
	f.want(f.do("GET", "/v1/nothing", ""), 404, `"code":"not_found"`)
	if id := f.nextSegment(); id != 1 {
		t.Fatalf("next ID %d", id)
	}
}

// An error message repeats at most a short prefix of the input.
func TestErrorsDoNotEchoInput(t *testing.T) {
	f := newFixture(t, api.Options{})
	big := strings.Repeat("z", 60_000)
	for _, r := range []resp{
		f.do("POST", "/v1/reveal", `{"kind":"segment","form":"base62","value":"`+big+`"}`),
		f.do("POST", "/v1/reveal", `{"kind":"`+big+`","form":"base62","value":"1"}`),
		f.do("POST", "/v1/reveal", `{"`+big+`":1}`),
		f.do("GET", "/v1/segment/order?form="+big, ""),
		f.do("GET", "/v1/segment/order?n="+big, ""),
		f.do("GET", "/v1/decode/"+big, ""),
		f.do("GET", "/"+big, ""),
		f.do("PUT", "/v1/segment/"+big, ""),
	} {
		if r.code < 400 || len(r.body) > 600 {
			t.Fatalf("status %d, %d bytes: %.300s", r.code, len(r.body), r.body)
		}
	}
}

// Made-up tags, on the Leaf API that needs no token, leave no series in
// /metrics, even while the store is down (their buffers and fill goroutines
// used to stay, each a labelled series).
func TestMetrics_MadeUpTagsLeaveNoSeries(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.nextSegment()
	f.store.SetDown(true)
	for i := range 20 {
		f.want(f.do("GET", "/api/segment/get/made-up-"+strconv.Itoa(i), ""), 500, "store_unavailable")
		f.want(f.do("GET", "/v1/segment/made-up-"+strconv.Itoa(i)+"?n=3", ""), 503)
	}
	f.store.SetDown(false)
	for i := range 20 {
		f.want(f.do("GET", "/api/segment/get/gone-"+strconv.Itoa(i), ""), 500, "tag_not_found")
	}
	r := f.do("GET", "/metrics", "")
	f.want(r, 200, `frond_segment_tag_loads_total{result="ok",tag="order"}`)
	if strings.Contains(r.body, "made-up") || strings.Contains(r.body, "gone-") {
		t.Fatalf("series of made-up tags in /metrics")
	}
}

// A deleted tag's series leave /metrics with it, at once (they used to stay
// until the engine's sweep, an hour later).
func TestMetrics_DeletedTagLeavesNoSeries(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/v1/tags", `{"name":"brief","step":10}`), 201)
	f.want(f.do("GET", "/v1/segment/brief", ""), 200)
	f.want(f.do("GET", "/metrics", ""), 200, `tag="brief"`)
	f.want(f.do("DELETE", "/v1/tags/brief", ""), 204)
	if r := f.do("GET", "/metrics", ""); strings.Contains(r.body, `tag="brief"`) {
		t.Fatalf("series of a deleted tag:\n%s", grepLines(r.body, `tag="brief"`))
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
