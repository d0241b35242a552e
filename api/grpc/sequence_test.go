package grpcapi

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// A sequence tag over gRPC: CreateTag with mode, IDs one after another,
// and a lease (what the Go client asks for) refused with
// FAILED_PRECONDITION, code not_leasable.
func TestGRPC_SequenceTag(t *testing.T) {
	f := start(t, api.Options{})
	tg, err := f.c.CreateTag(bg, &frondv1.CreateTagRequest{Name: "ticket", Step: ptr(int64(1)), Mode: "sequence"})
	if err != nil || tg.GetMode() != "sequence" {
		t.Fatalf("CreateTag: %v, %v", tg, err)
	}
	for want := int64(1); want <= 3; want++ {
		out, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "ticket"})
		if err != nil || out.Ids[0] != want {
			t.Fatalf("NextSegment: %v, %v; want %d", out, err, want)
		}
	}
	rs, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "ticket", N: 5})
	if err != nil || rs.Ranges[0].Start != 4 || rs.Ranges[0].End != 9 {
		t.Fatalf("NextSegmentRanges: %v, %v", rs, err)
	}
	_, err = f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "ticket", N: 5, Lease: true})
	wantCode(t, err, codes.FailedPrecondition, frond.CodeNotLeasable)
	if got, err := f.c.GetTag(bg, &frondv1.GetTagRequest{Name: "order"}); err != nil || got.GetMode() != "segment" {
		t.Fatalf("a segment tag: %v, %v", got, err)
	}
}
