package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/service"
)

// manyTags makes n tags (t0000, t0001, ...) and takes an ID of each.
func (f *fixture) manyTags(n int) {
	f.t.Helper()
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("t%04d", i)
		if _, err := f.svc.CreateTag(ctx, frond.Tag{Name: name, Step: 10}); err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.svc.Take(ctx, service.Request{Kind: service.KindSegment, Name: name}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// Every view of the tags in use is bounded, whatever their number: the
// dashboard's snapshot, /readyz and Leaf's /cache list a bounded few (the
// ones in trouble first), count the rest, and find any by name.
func TestViews_BoundedAsTagsGrow(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.manyTags(300)
	// t0123's loads fail from now on: it must come first everywhere.
	f.store.BeforeAllocate(func(_ context.Context, tag string, _ int64) error {
		if tag == "t0123" {
			return fmt.Errorf("%w: row locked", frond.ErrStoreUnavailable)
		}
		return nil
	})
	for range 12 {
		f.do("GET", "/api/segment/get/t0123", "")
	}
	testenv.WaitFor(t, "the failed load", func() bool {
		for _, b := range f.svc.SegmentStats() {
			if b.Tag == "t0123" {
				return b.LastError != ""
			}
		}
		return false
	})

	snap := f.h.(*Server).snapshot(context.Background(), true)
	if len(snap.Tags) != uiMaxTags || snap.Tags[0].Tag != "t0123" {
		t.Fatalf("snapshot: %d tags, the first %q", len(snap.Tags), snap.Tags[0].Tag)
	}
	if c := snap.TagCounts; c == nil || c.Total != 300 || c.Failing != 1 || c.Shown != uiMaxTags {
		t.Fatalf("snapshot counts %+v", c)
	}

	r := f.do("GET", "/readyz", "")
	var ready struct {
		Segments []horizonJSON `json:"segments"`
		Total    int           `json:"segments_total"`
	}
	if err := json.Unmarshal([]byte(r.body), &ready); err != nil {
		t.Fatal(err)
	}
	if len(ready.Segments) != readyTags || ready.Total != 300 || ready.Segments[0].Tag != "t0123" || ready.Segments[0].LastError == "" {
		t.Fatalf("/readyz: %d tags of %d, the first %+v", len(ready.Segments), ready.Total, ready.Segments[0])
	}

	// Any tag by name, a page at a time.
	r = f.do("GET", "/ui/tags?q=t01&offset=90&limit=20", "")
	var page tagPage
	if err := json.Unmarshal([]byte(r.body), &page); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if page.Total != 300 || page.Matched != 100 || len(page.Tags) != 10 || page.Tags[0].Tag != "t0190" {
		t.Fatalf("/ui/tags: %+v", page)
	}
	f.want(f.do("GET", "/ui/tags?limit=201", ""), 400, `limit=\"201\": must be a whole number from 1 to 200`)
	f.want(f.do("GET", "/ui/tags", "", ":host", "frond.example"), 403)

	r = f.do("GET", "/cache?limit=25&offset=25", "")
	f.want(r, 200, "300 tags, 26 to 50 shown", `href="/cache?limit=25"`, `href="/cache?limit=25&amp;offset=50"`, "<td>t0025</td>")
	if n := strings.Count(r.body, "<tr><td>t"); n != 25 {
		t.Fatalf("/cache page: %d rows", n)
	}
	f.want(f.do("GET", "/cache?q=t029", ""), 200, "tags containing <code>t029</code>: 10 of 300, 1 to 10 shown")
	r = f.do("GET", "/db?limit=100&after=t0150", "")
	f.want(r, 200, "100 tags after <code>t0150</code>, by name.", `href="/db?after=t0250&amp;limit=100"`, "<td>t0151</td>", "<td>t0250</td>")
	f.want(f.do("GET", "/db?after=t0250", ""), 200, "49 tags after <code>t0250</code>", "<td>t0299</td>")
	if r := f.do("GET", "/db?after=t0250", ""); strings.Contains(r.body, "next page") {
		t.Fatal("the last page of /db links a next one")
	}
	f.want(f.do("GET", "/v1/tags?limit=2&after=t0296", ""), 200, `"name":"t0297"`, `"name":"t0298"`, `"next":"t0298"`)
	if r := f.do("GET", "/v1/tags?limit=2&after=t0297", ""); !strings.Contains(r.body, `"name":"t0299"`) || strings.Contains(r.body, `"next"`) {
		t.Fatalf("the last page of /v1/tags: %s", r.body)
	}
	f.want(f.do("GET", "/v1/tags?limit=10001", ""), 400, "from 1 to 10000")
	f.want(f.do("GET", "/v1/tags?after=no%20such", ""), 400, "the page's cursor is not a tag name")
	f.want(f.do("GET", "/cache?limit=0", ""), 400, `limit=\"0\": must be a whole number from 1 to 10000`)
}
