package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/storetest"
)

// scrape returns the series of /metrics (the lines that are not comments).
func scrape(t *testing.T, m *api.Metrics) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func tagged(series []string) []string {
	var out []string
	for _, s := range series {
		if strings.Contains(s, `tag="`) {
			out = append(out, s)
		}
	}
	return out
}

func serving(t *testing.T, o api.MetricsOptions, tags int) (*service.Service, *storetest.Faulty, *api.Metrics) {
	t.Helper()
	st := storetest.NewFaulty()
	m := api.NewMetrics(o)
	svc := apitest.Service(t, st, service.Config{Segment: segment.Settings{OnLoad: m.OnLoad, FixedStep: true, FailFast: -1}})
	m.Attach(svc)
	ctx := context.Background()
	for i := range tags {
		name := fmt.Sprintf("t%05d", i)
		if _, err := svc.CreateTag(ctx, frond.Tag{Name: name, Step: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Take(ctx, service.Request{Kind: service.KindSegment, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	return svc, st, m
}

// The series per tag are bounded by metrics.max_tags however many tags are
// in use, and the sums over all tags count every tag.
func TestMetrics_BoundedAsTagsGrow(t *testing.T) {
	var counts []int
	for _, n := range []int{5, 60, 1500} {
		_, _, m := serving(t, api.MetricsOptions{MaxTags: 20}, n)
		series := scrape(t, m)
		perTag := tagged(series)
		shown := map[string]bool{}
		for _, s := range perTag {
			shown[s[strings.Index(s, `tag="`):]] = true
		}
		// Six series per segment tag: issued, remaining, horizon, step, loads ok and error.
		if len(perTag) > 6*20 {
			t.Fatalf("%d tags: %d series with a tag label, over 6 x max_tags", n, len(perTag))
		}
		for _, want := range []string{
			fmt.Sprintf(`frond_ids_issued_total{kind="segment"} %d`, n),
			fmt.Sprintf(`frond_segment_tags{state="ok"} %d`, n),
			fmt.Sprintf(`frond_metrics_tags_omitted{kind="segment"} %d`, max(n-20, 0)),
			fmt.Sprintf(`frond_segment_loads_total{result="ok"} %d`, n),
		} {
			if !slices.Contains(series, want) {
				t.Fatalf("%d tags: no %s in\n%s", n, want, strings.Join(series, "\n"))
			}
		}
		counts = append(counts, len(series))
	}
	// 60 and 1,500 tags: the same number of series, the per-tag ones
	// capped at 20 tags (the Go runtime's own series do not change).
	if counts[1] != counts[2] {
		t.Fatalf("series: %v for 5, 60 and 1,500 tags", counts)
	}
	_, _, m := serving(t, api.MetricsOptions{MaxTags: -1}, 50)
	if perTag := tagged(scrape(t, m)); len(perTag) != 0 {
		t.Fatalf("max_tags negative: %d series with a tag label", len(perTag))
	}
}

// Tags in trouble and the pinned tags (metrics.tags) have series of their
// own even when many busier tags are in use: the alert that names a tag
// sees it.
func TestMetrics_TroubleAndPinnedTagsShown(t *testing.T) {
	svc, st, m := serving(t, api.MetricsOptions{MaxTags: 3, Tags: []string{"t00007"}}, 30)
	ctx := context.Background()
	// t00011's loads fail from now on (the store refuses that row alone).
	st.BeforeAllocate(func(_ context.Context, tag string, _ int64) error {
		if tag == "t00011" {
			return fmt.Errorf("%w: row locked", frond.ErrStoreUnavailable)
		}
		return nil
	})
	for range 12 { // into the prefetched segment: the next load is asked for
		svc.Take(ctx, service.Request{Kind: service.KindSegment, Name: "t00011"})
	}
	testenv.WaitFor(t, "the failed load", func() bool {
		for _, b := range svc.SegmentStats() {
			if b.Tag == "t00011" {
				return b.LastError != "" // it keeps retrying
			}
		}
		return false
	})
	series := scrape(t, m)
	if !slices.ContainsFunc(series, func(s string) bool {
		return strings.HasPrefix(s, `frond_segment_tag_loads_total{result="error",tag="t00011"} `) && !strings.HasSuffix(s, " 0")
	}) {
		t.Fatalf("no failed loads of t00011 in\n%s", strings.Join(tagged(series), "\n"))
	}
	for _, want := range []string{
		`frond_segment_tags{state="failing"} 1`,
		`frond_tag_ids_issued_total{kind="segment",tag="t00007"} 1`,
		`frond_metrics_tags_omitted{kind="segment"} 27`,
		`frond_segment_runway_seconds 300`, // segment.runway, which FrondSegmentHorizonLow compares with
	} {
		if !slices.Contains(series, want) {
			t.Fatalf("no %s in\n%s", want, strings.Join(tagged(series), "\n"))
		}
	}
}

func stats(tag string, rate float64, horizon time.Duration, lastErr string) segment.Stats {
	// Low as the engine sets it with the default segment.runway.
	return segment.Stats{Tag: tag, Rate: rate, Horizon: horizon, LastError: lastErr, Low: horizon >= 0 && horizon < segment.DefaultRunway}
}

func TestRankTags(t *testing.T) {
	in := []segment.Stats{
		stats("idle", 0, -1, ""),
		stats("busy", 500, time.Hour, ""),
		stats("busier", 900, time.Hour, ""),
		stats("low", 10, time.Minute, ""),
		stats("lower", 10, 10*time.Second, ""),
		stats("failing", 0, -1, "store unavailable"),
		stats("pinned", 0, -1, ""),
	}
	pinned := func(tag string) bool { return tag == "pinned" }
	sum, idx := api.RankTags(in, -1, pinned)
	var got []string
	for _, i := range idx {
		got = append(got, in[i].Tag)
	}
	want := []string{"pinned", "failing", "lower", "low", "busier", "busy", "idle"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if sum.Total != 7 || sum.Failing != 1 || sum.Low != 2 || sum.MinHorizon != 10*time.Second {
		t.Fatalf("summary %+v", sum)
	}
	// The first n of many: the same as the first n of the whole order.
	var many []segment.Stats
	for i := range 5000 {
		many = append(many, stats(fmt.Sprintf("m%04d", i), float64(i%977), time.Hour, ""))
	}
	_, all := api.RankTags(many, -1, nil)
	for _, n := range []int{0, 1, 7, 100, 4999, 5000, 6000} {
		_, first := api.RankTags(many, n, nil)
		if !slices.Equal(first, all[:min(n, len(all))]) {
			t.Fatalf("first %d differ from the whole order's", n)
		}
	}
}
