package grpcapi

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// The guard over gRPC: over the rate, RESOURCE_EXHAUSTED with
// rate_limited and a RetryInfo; after too many wrong admin tokens, the
// address is refused even with the right one.
func TestGRPC_Guard(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := start(t, api.Options{AdminToken: "s3cret", Guard: api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, AuthFailures: 2, AuthWindow: time.Minute, Now: clock})})
	for range 2 {
		if _, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{})
	if retry := wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited); retry <= 0 || retry > time.Second {
		t.Fatalf("retry after %v", retry)
	}
	now = now.Add(time.Minute) // refilled
	wrong := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer nope")
	right := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer s3cret")
	for range 2 {
		_, err := f.c.ListTags(wrong, &frondv1.ListTagsRequest{})
		wantCode(t, err, codes.Unauthenticated, frond.CodeUnauthorized)
	}
	_, err = f.c.ListTags(right, &frondv1.ListTagsRequest{})
	if retry := wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited); retry != time.Minute {
		t.Fatalf("blocked for %v", retry)
	}
	now = now.Add(time.Minute)
	if _, err := f.c.ListTags(right, &frondv1.ListTagsRequest{}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

// A LeaseRanges stream is limited per message, not only when it opens: 500
// messages went through in 99 ms while unary calls were refused (issue 29,
// item 7). A random token per call gets no bucket of its own.
func TestGRPC_GuardStreamsAndRandomTokens(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := start(t, api.Options{Guard: api.NewGuard(api.GuardOptions{Rate: 1, Burst: 3, Now: clock, Known: func(string) bool { return false }})})
	st, err := f.c.LeaseRanges(bg)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for range 20 {
		if err := st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: 1}); err != nil {
			break
		}
		if _, err := st.Recv(); err != nil {
			wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited)
			break
		}
		served++
	}
	if served >= 3 {
		t.Fatalf("%d messages of a stream served with a burst of 3 (the stream's opening took one)", served)
	}
	now = now.Add(time.Minute)
	limited := 0
	for i := range 10 {
		ctx := metadata.AppendToOutgoingContext(bg, "x-frond-token", fmt.Sprintf("random-%d", i))
		if _, err := f.c.NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{}); status.Code(err) == codes.ResourceExhausted {
			limited++
		}
	}
	if limited < 7 {
		t.Fatalf("10 calls with random tokens: %d limited, want all past the burst of 3", limited)
	}
}

// Issue 59, item 7: limits.lease_rate bounds the IDs a caller leases over
// gRPC too (the Go client's leases: NextSegmentRanges, and every message
// of LeaseRanges): past it RESOURCE_EXHAUSTED with the wait.
func TestHostile_GRPCLeaseRate(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g := api.NewGuard(api.GuardOptions{LeaseRate: 1000, LeaseBurst: 2500, Now: clock})
	f := start(t, api.Options{Guard: g})
	f.svc.SetLeaseLimit(g)
	for range 3 { // 2,500, 1,500, 500 left: each allowed
		if _, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: 1000, Lease: true}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: 1000, Lease: true})
	if wait := wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited); wait <= 0 {
		t.Fatalf("no RetryInfo: %v", err)
	}
	st, err := f.c.LeaseRanges(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: 1000, Lease: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err == nil {
		t.Fatal("a stream's lease past the rate was answered")
	} else {
		wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited)
	}
	// Ranges without lease are IDs the client hands out too: limited.
	_, err = f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: 1000})
	wantCode(t, err, codes.ResourceExhausted, frond.CodeRateLimited)
	// IDs themselves, not ranges: answered.
	if _, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: 10}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if _, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "order", N: 1000, Lease: true}); err != nil {
		t.Fatalf("after the rate repaid the debt: %v", err)
	}
}
