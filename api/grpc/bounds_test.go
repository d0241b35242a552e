package grpcapi

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

func TestGRPC_BoundsAndCompose(t *testing.T) {
	f := start(t, api.Options{})
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b, err := f.c.Bounds(bg, &frondv1.BoundsRequest{From: timestamppb.New(from), To: timestamppb.New(to)})
	if err != nil || b.Kind != "snowflake" || b.Layout != "twitter" || b.FirstId <= 0 || b.LastId <= b.FirstId {
		t.Fatalf("Bounds = %v, %v", b, err)
	}
	d, err := f.c.Decode(bg, &frondv1.DecodeRequest{Id: b.LastId})
	if err != nil || !d.Time.AsTime().Equal(to.Add(-time.Millisecond)) || d.Node != 1023 || d.Sequence != 4095 {
		t.Fatalf("Decode of the last = %v, %v", d, err)
	}
	u, err := f.c.Bounds(bg, &frondv1.BoundsRequest{Kind: "uuid", Form: "typeid", Prefix: "user", From: timestamppb.New(from), To: timestamppb.New(to)})
	if err != nil || !strings.HasPrefix(u.First, "user_") || u.First >= u.Last || u.Version != 7 {
		t.Fatalf("Bounds uuid = %v, %v", u, err)
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 123_000_000, time.UTC)
	c, err := f.c.Compose(bg, &frondv1.ComposeRequest{Time: timestamppb.New(at), Node: 5, Sequence: 7})
	if err != nil || !c.Time.AsTime().Equal(at) || c.Node != 5 || c.Sequence != 7 {
		t.Fatalf("Compose = %v, %v", c, err)
	}
	for _, bad := range []*frondv1.BoundsRequest{
		{To: timestamppb.New(to)},
		{From: timestamppb.New(to), To: timestamppb.New(from)},
		{Kind: "segment", From: timestamppb.New(from), To: timestamppb.New(to)},
		{From: &timestamppb.Timestamp{Seconds: 1 << 62}, To: timestamppb.New(to)},
	} {
		_, err := f.c.Bounds(bg, bad)
		wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	}
	for _, bad := range []*frondv1.ComposeRequest{
		{},
		{Time: timestamppb.New(at), Node: 1024},
		{Time: timestamppb.New(at), Sequence: -1},
	} {
		_, err := f.c.Compose(bg, bad)
		wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	}
}
