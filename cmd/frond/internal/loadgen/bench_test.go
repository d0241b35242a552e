package loadgen

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond/client/clienttest"
)

func TestDuplicates(t *testing.T) {
	for _, tc := range []struct {
		runs []run
		want int64
	}{
		{nil, 0},
		{[]run{{0, 1, 10}, {0, 11, 5}}, 0},
		{[]run{{0, 11, 5}, {0, 1, 10}}, 0},
		{[]run{{0, 1, 10}, {0, 5, 3}}, 3},
		{[]run{{0, 1, 10}, {0, 8, 10}}, 3},
		{[]run{{0, 1, 1}, {0, 1, 1}, {0, 1, 1}}, 2},
		{[]run{{0, 1, 100}, {0, 10, 5}, {0, 50, 60}}, 5 + 51},
		// Tags are apart: the same IDs of two tags are no duplicates.
		{[]run{{0, 1, 10}, {1, 1, 10}}, 0},
		{[]run{{1, 1, 5}, {0, 1, 10}, {1, 3, 2}, {2, 100, 1}}, 2},
		{[]run{{0, 50, 10}, {1, 1, 5}}, 0}, // a later tag's lower IDs
	} {
		if got := duplicates(tc.runs); got != tc.want {
			t.Errorf("duplicates(%v) = %d, want %d", tc.runs, got, tc.want)
		}
	}
}

// fake hands out IDs from a counter; every 10th request repeats an ID when
// dup is set, and every 7th fails when fail is set.
type fake struct {
	next      atomic.Int64
	calls     atomic.Int64
	dup, fail bool
	delay     time.Duration
	mu        sync.Mutex
	created   []string
	perTag    map[int]int64 // with tags: IDs from 1 per tag
}

func (f *fake) Close() error { return nil }

func (f *fake) create(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, name)
	return nil
}

func (f *fake) taker(int) taker {
	return func(ctx context.Context, tag int, dst []int64) ([]int64, error) {
		if f.perTag != nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.perTag[tag]++
			return append(dst, f.perTag[tag]), nil
		}
		n := f.calls.Add(1)
		if f.delay > 0 {
			time.Sleep(f.delay)
		}
		if f.fail && n%7 == 0 {
			return dst, &codedError{"store_unavailable", "down"}
		}
		if f.dup && n%10 == 0 {
			return append(dst, 1), nil
		}
		return append(dst, f.next.Add(1)), nil
	}
}

func withFake(t *testing.T, f *fake) {
	old := newDriver
	newDriver = func(context.Context, Options) (driver, error) { return f, nil }
	t.Cleanup(func() { newDriver = old })
}

func TestRun_CountsErrorsAndDuplicates(t *testing.T) {
	f := &fake{dup: true, fail: true}
	withFake(t, f)
	res, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 4, Batch: 1, Count: 700})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 700 || res.Errors["store_unavailable"] != 100 || res.IDs != 600 || res.Duplicates == 0 {
		t.Fatalf("%+v", res)
	}
	if res.Latency.P50 < 1 || res.Latency.Max < res.Latency.P99 || res.RequestsPerSecond <= 0 {
		t.Fatalf("latency %+v, %v requests/s", res.Latency, res.RequestsPerSecond)
	}
}

// --tags spreads the requests over the tags in turn (created first), and
// the duplicate check is per tag: every tag's IDs start at 1 here.
func TestRun_SpreadsOverTags(t *testing.T) {
	f := &fake{perTag: map[int]int64{}}
	withFake(t, f)
	res, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Segment, Tag: "t", Tags: 5, CreateTags: true, Concurrency: 3, Batch: 1, Count: 99})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(f.created)
	if !slices.Equal(f.created, []string{"t-0", "t-1", "t-2", "t-3", "t-4"}) {
		t.Fatalf("created %v", f.created)
	}
	// Checked: the 99 measured, the first request, and any a worker sent
	// before the run's start was marked (warm-up, checked, not counted).
	if res.Duplicates != 0 || res.IDs != 99 || res.Tags != 5 || res.Checked < 100 {
		t.Fatalf("%+v", res)
	}
	// Each worker goes round the tags in turn: no tag is more than a
	// request per worker off an even share.
	var sum int64
	for _, n := range f.perTag {
		sum += n
	}
	if sum != res.Checked || len(f.perTag) != 5 {
		t.Fatalf("the tags got %d requests, %d checked: %v", sum, res.Checked, f.perTag)
	}
	for tag, n := range f.perTag {
		if d := n - sum/5; d < -4 || d > 4 {
			t.Fatalf("tag %d got %d of %d requests: %v", tag, n, sum, f.perTag)
		}
	}
	if _, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Snowflake, Tags: 3, Concurrency: 1, Batch: 1, Count: 1}); err == nil {
		t.Fatal("tags with snowflake IDs")
	}
}

// Open loop: the requests go at the rate asked for, and a stall makes the
// requests due behind it slow too (their latency counts from when they
// were due).
func TestRun_OpenLoop(t *testing.T) {
	f := &fake{delay: 20 * time.Millisecond}
	withFake(t, f)
	res, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Snowflake, Concurrency: 2, Batch: 1, Rate: 200, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Two workers of 20 ms each serve at most 100 requests a second; 200
	// are due, so the queue grows and latency far exceeds the 20 ms.
	if res.Requests > 130 || res.Latency.P99 < 200_000 {
		t.Fatalf("open loop over capacity: %d requests, p99 %v us", res.Requests, res.Latency.P99)
	}
	f2 := &fake{}
	withFake(t, f2)
	res, err = Run(context.Background(), Options{Protocol: GRPC, Kind: Snowflake, Concurrency: 4, Batch: 1, Rate: 500, Duration: time.Second})
	if err != nil || res.Requests < 400 || res.Requests > 600 {
		t.Fatalf("open loop at 500/s: %d requests, %v", res.Requests, err)
	}
}

func TestRun_Real(t *testing.T) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "bench", 1000)
	for _, proto := range []string{GRPC, Client} {
		for _, kind := range []string{Segment, Snowflake} {
			res, err := Run(context.Background(), Options{Protocol: proto, Server: srv.Addr, Kind: kind, Tag: "bench",
				Concurrency: 4, Batch: 10, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond})
			if err != nil || res.IDs < 100 || res.Duplicates != 0 || len(res.Errors) != 0 || res.Checked < res.IDs {
				t.Fatalf("%s %s: %+v, %v", proto, kind, res, err)
			}
			if proto == Client && kind == Segment && (res.Leases == nil || res.Leases.Taken < 1 || res.Leases.Waits < 1) {
				t.Fatalf("the client's leases: %+v (its first call waits for the first lease)", res.Leases)
			}
		}
	}
	_, err := Run(context.Background(), Options{Protocol: GRPC, Server: srv.Addr, Kind: Segment, Tag: "nope", Concurrency: 1, Batch: 1, Count: 1})
	if err == nil || codeOf(errors.Unwrap(err)) != "tag_not_found" {
		t.Fatalf("a missing tag: %v", err)
	}
}

func TestOptions_Check(t *testing.T) {
	for _, o := range []Options{
		{Protocol: "smtp", Kind: Segment, Tag: "t", Concurrency: 1, Batch: 1},
		{Protocol: GRPC, Kind: "uuid", Concurrency: 1, Batch: 1},
		{Protocol: GRPC, Kind: Segment, Concurrency: 1, Batch: 1},
		{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 0, Batch: 1},
		{Protocol: Leaf, Kind: Segment, Tag: "t", Concurrency: 1, Batch: 2},
		{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 1, Batch: 1, Rate: -1},
	} {
		if err := o.Check(); err == nil {
			t.Errorf("%+v passed", o)
		}
	}
}

// The warm-up's progress lines show its own requests (they showed the
// measured run's zeros), and the result says how many IDs came before the
// measured run: checked for duplicates, not measured.
func TestRun_WarmupProgress(t *testing.T) {
	f := &fake{delay: time.Millisecond}
	withFake(t, f)
	var mu sync.Mutex
	var warm []Progress
	res, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 2, Batch: 1,
		Warmup: 1500 * time.Millisecond, Duration: 200 * time.Millisecond,
		Progress: func(p Progress) {
			if p.Warmup {
				mu.Lock()
				warm = append(warm, p)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warm) == 0 || warm[0].Requests == 0 || warm[0].IDs == 0 || warm[0].RequestsPerSecond <= 0 {
		t.Fatalf("warm-up progress %+v", warm)
	}
	if res.WarmupIDs < warm[0].IDs || res.Checked < res.IDs+res.WarmupIDs {
		t.Fatalf("%d IDs before the run (progress said %d), %d measured, %d checked", res.WarmupIDs, warm[0].IDs, res.IDs, res.Checked)
	}
}

// The timeline accounts for every measured request and error once, second
// by second with no gap, and each second's histogram holds its requests.
func TestRun_Timeline(t *testing.T) {
	f := &fake{fail: true, delay: time.Millisecond}
	withFake(t, f)
	res, err := Run(context.Background(), Options{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 3, Batch: 1,
		Rate: 400, Duration: 1500 * time.Millisecond, Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Timeline) < 2 {
		t.Fatalf("timeline %+v", res.Timeline)
	}
	var reqs, errs int64
	for i, s := range res.Timeline {
		if i > 0 && s.Unix != res.Timeline[i-1].Unix+1 {
			t.Fatalf("second %d is %d after %d", i, s.Unix, res.Timeline[i-1].Unix)
		}
		var n int64
		for _, b := range s.Histogram {
			n += b[1]
			if b[0] < 1 || float64(b[0]) > s.Latency.Max {
				t.Fatalf("second %d: bucket %v outside 1..max %v", i, b, s.Latency.Max)
			}
		}
		if n != s.Requests || s.Errors > s.Requests {
			t.Fatalf("second %d: histogram holds %d of %d requests (%d errors)", i, n, s.Requests, s.Errors)
		}
		if s.Requests > 0 && (s.Latency.P50 > s.Latency.P99 || s.Latency.P99 > s.Latency.P999 || s.Latency.P999 > s.Latency.Max) {
			t.Fatalf("second %d: %+v", i, s.Latency)
		}
		reqs += s.Requests
		errs += s.Errors
	}
	if reqs != res.Requests || errs != res.Errors["store_unavailable"] || errs == 0 {
		t.Fatalf("timeline: %d requests, %d errors; the run: %d, %v", reqs, errs, res.Requests, res.Errors)
	}
	res, err = Run(context.Background(), Options{Protocol: GRPC, Kind: Segment, Tag: "t", Concurrency: 1, Batch: 1, Count: 10})
	if err != nil || res.Timeline != nil {
		t.Fatalf("a timeline not asked for: %v, %v", res.Timeline, err)
	}
}
