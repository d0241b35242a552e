package grpcapi

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// The guard over gRPC: over the rate, RESOURCE_EXHAUSTED with
// rate_limited and a RetryInfo; after too many wrong admin tokens, the
// address is refused even with the right one.
func TestGRPC_Guard(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := start(t, Options{AdminToken: "s3cret", Guard: api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, AuthFailures: 2, AuthWindow: time.Minute, Now: clock})})
	for range 2 {
		if _, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{})
	if retry := wantCode(t, err, codes.ResourceExhausted, api.CodeRateLimited); retry <= 0 || retry > time.Second {
		t.Fatalf("retry after %v", retry)
	}
	now = now.Add(time.Minute) // refilled
	wrong := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer nope")
	right := metadata.AppendToOutgoingContext(bg, "authorization", "Bearer s3cret")
	for range 2 {
		_, err := f.c.ListTags(wrong, &frondv1.ListTagsRequest{})
		wantCode(t, err, codes.Unauthenticated, api.CodeUnauthorized)
	}
	_, err = f.c.ListTags(right, &frondv1.ListTagsRequest{})
	if retry := wantCode(t, err, codes.ResourceExhausted, api.CodeRateLimited); retry != time.Minute {
		t.Fatalf("blocked for %v", retry)
	}
	now = now.Add(time.Minute)
	if _, err := f.c.ListTags(right, &frondv1.ListTagsRequest{}); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}
