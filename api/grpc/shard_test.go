package grpcapi

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
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

// Snowflake IDs with shard bits over gRPC: NextSnowflake's shard or key,
// Decode's shard, Compose's.
func TestGRPC_SnowflakeShardBits(t *testing.T) {
	f := start(t, api.Options{}, func(c *service.Config) {
		l, _ := snowflake.Preset(snowflake.Twitter)
		c.Snowflake.Layout, _ = l.WithShardBits(2)
		c.Snowflake.MaxLead = time.Hour
	})
	got, err := f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{N: 5, ShardKey: "user-42"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range got.Ids {
		if id%4 != 1 {
			t.Fatalf("user-42's IDs %v: want shard 1", got.Ids)
		}
	}
	d, err := f.c.Decode(bg, &frondv1.DecodeRequest{Id: got.Ids[0]})
	if err != nil || d.Shard == nil || *d.Shard != 1 {
		t.Fatalf("decode: %v, %v", d, err)
	}
	c, err := f.c.Compose(bg, &frondv1.ComposeRequest{Time: d.Time, Node: d.Node, Sequence: d.Sequence, Shard: 1})
	if err != nil || c.Id != got.Ids[0] {
		t.Fatalf("compose: %v, %v: want %d", c, err, got.Ids[0])
	}
	got, err = f.c.NextSnowflake(bg, &frondv1.NextSnowflakeRequest{Shard: proto.Int64(3)})
	if err != nil || got.Ids[0]%4 != 3 {
		t.Fatalf("shard 3: %v, %v", got, err)
	}
	for _, bad := range []*frondv1.NextSnowflakeRequest{{}, {Shard: proto.Int64(4)}, {Shard: proto.Int64(1), ShardKey: "k"}} {
		_, err := f.c.NextSnowflake(bg, bad)
		wantCode(t, err, codes.InvalidArgument, frond.CodeInvalidArgument)
	}
}

// A lease of counters over gRPC: NextSegmentRanges with lease and
// counters answers the tag's counters and its shard_bits.
func TestGRPC_LeaseOfCounters(t *testing.T) {
	f := start(t, api.Options{})
	if _, err := f.svc.CreateTag(bg, frond.Tag{Name: "orders", MaxID: 1, Step: 100, Mapping: frond.ShardMapping(4)}); err != nil {
		t.Fatal(err)
	}
	_, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "orders", N: 10, Lease: true})
	wantCode(t, err, codes.FailedPrecondition, frond.CodeFormNotCarried)
	got, err := f.c.NextSegmentRanges(bg, &frondv1.NextSegmentRangesRequest{Tag: "orders", N: 10, Lease: true, Counters: true})
	if err != nil || got.ShardBits != 4 || len(got.Ranges) != 1 || got.Ranges[0].Count != 10 {
		t.Fatalf("counters: %v, %v", got, err)
	}
}
