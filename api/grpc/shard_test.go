package grpcapi

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

func TestGRPC_ShardBits(t *testing.T) {
	f := start(t, api.Options{})
	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "orders", MaxID: 1, Step: 100, Mapping: frond.ShardMapping(2)}); err != nil {
		t.Fatal(err)
	}
	got, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "orders", N: 5, ShardKey: "user-42"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range got.Ids {
		if id%4 != 1 {
			t.Fatalf("user-42's IDs %v: want shard 1", got.Ids)
		}
	}
	got, err = f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "orders", Shard: proto.Int64(0)})
	if err != nil || got.Ids[0]%4 != 0 {
		t.Fatalf("shard 0: %v, %v", got, err)
	}
	for _, bad := range []*frondv1.NextSegmentRequest{
		{Tag: "orders"},
		{Tag: "orders", Shard: proto.Int64(4)},
		{Tag: "orders", Shard: proto.Int64(1), ShardKey: "k"},
		{Tag: "order", Shard: proto.Int64(0)},
	} {
		_, err := f.c.NextSegment(bg, bad)
		wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	}
}
