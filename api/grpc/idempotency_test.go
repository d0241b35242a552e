package grpcapi

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// The idempotency-key metadata: a retry gets the first answer again, with
// idempotent-replayed in the response header; reused for another request,
// INVALID_ARGUMENT.
func TestGRPC_IdempotencyKey(t *testing.T) {
	f := start(t, api.Options{})
	ctx := metadata.AppendToOutgoingContext(bg, IdempotencyMetadata, "k1")
	var hdr metadata.MD
	first, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order", N: 3}, grpc.Header(&hdr))
	if err != nil || len(hdr.Get(ReplayedMetadata)) != 0 {
		t.Fatalf("first: %v, %v, header %v", first, err, hdr)
	}
	again, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order", N: 3}, grpc.Header(&hdr))
	if err != nil || again.Ids[0] != first.Ids[0] || len(again.Ids) != 3 || hdr.Get(ReplayedMetadata)[0] != "true" {
		t.Fatalf("retry: %v (first %v), %v, header %v", again, first, err, hdr)
	}
	other, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: 3})
	if err != nil || other.Ids[0] == first.Ids[0] {
		t.Fatalf("without a key: %v, %v", other, err)
	}
	_, err = f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order", N: 2})
	wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	u1, err1 := f.c.NextUUID(metadata.AppendToOutgoingContext(bg, IdempotencyMetadata, "u"), &frondv1.NextUUIDRequest{N: 2})
	u2, err2 := f.c.NextUUID(metadata.AppendToOutgoingContext(bg, IdempotencyMetadata, "u"), &frondv1.NextUUIDRequest{N: 2})
	if err1 != nil || err2 != nil || u1.Uuids[0] != u2.Uuids[0] {
		t.Fatalf("UUIDs: %v %v, %v %v", u1, err1, u2, err2)
	}
}

// A key belongs to one request, and a stream carries many: a LeaseRanges
// stream whose metadata holds an idempotency key is refused before any
// message is served (every message read the stream's one key, so a second
// identical message got the first range again: the same IDs twice).
func TestGRPC_IdempotencyKeyOnStreamRefused(t *testing.T) {
	f := start(t, api.Options{})
	ctx := metadata.AppendToOutgoingContext(bg, IdempotencyMetadata, "k-stream")
	st, err := f.c.LeaseRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seen []*frondv1.Range
	for range 2 {
		if err := st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: 3}); err != nil {
			break
		}
		rs, err := st.Recv()
		if err != nil {
			wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
			break
		}
		seen = append(seen, rs.Ranges...)
	}
	if len(seen) > 0 {
		t.Fatalf("a keyed stream was served: %v", seen)
	}
	// It took no ID.
	got, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order", N: 1})
	if err != nil || got.Ids[0] != 1 {
		t.Fatalf("after the refused stream: %v, %v; want ID 1", got, err)
	}
}
