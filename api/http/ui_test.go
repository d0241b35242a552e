package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
)

// The dashboard's files are embedded and kept to frond's origin; / leads
// to them; the event stream sends snapshots and ends on StopStreams.
func TestDashboard_Server(t *testing.T) {
	f := newFixture(t, api.Options{})
	r := f.do("GET", "/", "")
	if r.code != http.StatusFound || r.hdr.Get("Location") != "/ui/" {
		t.Fatalf("GET /: %d %v", r.code, r.hdr)
	}
	r = f.do("GET", "/ui/", "")
	f.want(r, 200, `<script src="app.js"`)
	if csp := r.hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	f.want(f.do("GET", "/ui/app.js", ""), 200, "EventSource")
	f.want(f.do("GET", "/ui/nope.js", ""), 404)

	srv := httptest.NewServer(f.h)
	defer srv.Close()
	f.do("GET", "/api/segment/get/order", "")
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	var snap snapshot
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			if err := json.Unmarshal([]byte(data), &snap); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(snap.Tags) != 1 || snap.Tags[0].Tag != "order" || snap.Tags[0].Pos != 2 || !snap.Worker.Issuing || snap.Layout.Name != "twitter" {
		t.Fatalf("snapshot %+v", snap)
	}
	// The step's history comes from the server (the page used to keep only
	// what it had seen since it opened).
	if h := snap.Tags[0].StepHistory; len(h) != 1 || h[0] != snap.Tags[0].Step {
		t.Fatalf("step history %v (step %d)", h, snap.Tags[0].Step)
	}
	done := make(chan struct{})
	go func() {
		for {
			if _, err := rd.ReadString('\n'); err != nil {
				close(done)
				return
			}
		}
	}()
	f.h.(*Server).StopStreams()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("StopStreams did not end the event stream")
	}
}

// firstSnapshot reads the first snapshot of url's event stream.
func firstSnapshot(t *testing.T, url string) snapshot {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var snap snapshot
			if err := json.Unmarshal([]byte(data), &snap); err != nil {
				t.Fatal(err)
			}
			return snap
		}
	}
}

// Tag details (names, steps, max_id, descriptions, buffers) go to whoever
// may list tags, on every page and stream, as GET /v1/tags: Leaf's /db and
// /cache and the dashboard's stream listed them to anyone (issue 29, item
// 14).
func TestTagDetails_OneRule(t *testing.T) {
	f := newFixture(t, api.Options{AdminToken: "s3cret"})
	f.do("GET", "/api/segment/get/order", "")
	for _, p := range []string{"/db", "/cache", "/v1/tags"} {
		f.want(f.do("GET", p, ""), 401)
		f.want(f.do("GET", p, "", "Authorization", "Bearer s3cret"), 200, "order")
	}
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	defer f.h.(*Server).StopStreams()
	if snap := firstSnapshot(t, srv.URL+"/ui/events"); !snap.TagsHidden || len(snap.Tags) != 0 {
		t.Fatalf("the stream without the token shows tags: %+v", snap.Tags)
	}
	if snap := firstSnapshot(t, srv.URL+"/ui/events?token=s3cret"); snap.TagsHidden || len(snap.Tags) != 1 {
		t.Fatalf("the stream with the token: hidden %v, %d tags", snap.TagsHidden, len(snap.Tags))
	}
}
