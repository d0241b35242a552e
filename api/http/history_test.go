package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
)

type historyJSON struct {
	Node []point `json:"node"`
	Tag  *struct {
		Name   string  `json:"name"`
		Points []point `json:"points"`
	} `json:"tag"`
}

// The server keeps the last hour, a point a minute, of the node and of the
// tags shown or picked: the rate over each minute, the horizon, store
// outages and steps.
func TestHistory_Points(t *testing.T) {
	f := newFixture(t, api.Options{})
	s := f.h.(*Server)
	s.StopStreams()
	<-s.samplerDone
	s.hist = newHistory() // not the sampler's: this test's clock alone
	t0 := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	f.nextSegment()
	s.sample(t0)
	f.want(f.do("GET", "/v1/segment/order?n=600", ""), 200)
	s.sample(t0.Add(time.Minute))
	f.store.SetDown(true)
	s.sample(t0.Add(2 * time.Minute))
	f.store.SetDown(false)

	var h historyJSON
	r := f.do("GET", "/ui/history?tag=order", "")
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if len(h.Node) != 3 || h.Node[1].Rate != 10 || h.Node[2].Rate != 0 || h.Node[1].StoreDown || !h.Node[2].StoreDown {
		t.Fatalf("node history %+v", h.Node)
	}
	if h.Tag == nil || h.Tag.Name != "order" || len(h.Tag.Points) != 3 || h.Tag.Points[1].Rate != 10 || h.Tag.Points[1].Step != 1000 {
		t.Fatalf("tag history %+v", h.Tag)
	}
	// An hour of points at most.
	for i := range historyLen + 5 {
		s.sample(t0.Add(time.Duration(3+i) * time.Minute))
	}
	r = f.do("GET", "/ui/history", "")
	h = historyJSON{}
	json.Unmarshal([]byte(r.body), &h)
	if len(h.Node) != historyLen || h.Tag != nil || !h.Node[len(h.Node)-1].At.Equal(t0.Add(time.Duration(historyLen+7)*time.Minute)) {
		t.Fatalf("after more than an hour: %d points, last %v", len(h.Node), h.Node[len(h.Node)-1].At)
	}
	f.want(f.do("GET", "/ui/history?tag=bad%20name", ""), 400)
	f.want(f.do("GET", "/ui/history?tag=order", "", ":host", "frond.example"), 403)
	// The tags with a history stay bounded whatever is picked.
	for i := range historyTags + 50 {
		f.do("GET", "/ui/history?tag=picked-"+string(rune('a'+i%26))+time.Duration(i).String(), "")
	}
	if n := len(s.hist.tags); n > historyTags {
		t.Fatalf("%d tags with a history", n)
	}
}
