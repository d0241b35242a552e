package httpapi

import (
	"testing"
	"time"

	"github.com/frond-id/frond/api"
)

// The rates are over the last rateWindow: against the oldest sample in it,
// so the first snapshot has them; an error code shows only when it
// occurred in the window.
func TestRateRing(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s int, req, notFound float64, sf uint64, seq uint64) counters {
		return counters{at: t0.Add(time.Duration(s) * time.Second),
			counts:    api.Counts{Requests: map[string]float64{"http": req}, Errors: map[string]map[string]float64{"http": {"tag_not_found": notFound, "forbidden": 3}}},
			snowflake: sf, sequences: map[string]uint64{"ticket": seq}}
	}
	var r rateRing
	if got := r.measure(at(0, 0, 0, 0, 0)); got.Window != 0 || len(got.Requests) != 0 {
		t.Fatalf("nothing sampled: %+v", got)
	}
	r.add(at(0, 0, 0, 0, 0))
	got := r.measure(at(2, 100, 4, 50, 10)) // a page opened two seconds after start
	if got.Window != 2 || got.Requests["http"] != 50 || got.Errors["http"]["tag_not_found"] != 2 || got.Snowflake != 25 || got.Sequences["ticket"] != 5 {
		t.Fatalf("after 2 s: %+v", got)
	}
	if _, ok := got.Errors["http"]["forbidden"]; ok {
		t.Fatalf("a code that did not occur in the window: %+v", got.Errors)
	}
	for s := 1; s <= 30; s++ {
		r.add(at(s, float64(10*s), 4, 0, 0))
	}
	got = r.measure(at(31, 310, 4, 0, 0)) // 10 requests a second, no error for long
	if got.Window != rateWindow.Seconds() || got.Requests["http"] != 10 || len(got.Errors) != 0 {
		t.Fatalf("after 31 s: %+v", got)
	}
	if n := len(r.samples); n > int(rateWindow/rateEvery)+2 {
		t.Fatalf("%d samples kept", n)
	}
}
