package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The dashboard's files are embedded and kept to frond's origin; / leads
// to them; the event stream sends snapshots and ends on StopStreams.
func TestDashboard_Server(t *testing.T) {
	f := newFixture(t, Options{})
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
