package resp

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/api/apitest"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/worker"
)

func TestRESP_ShardBits(t *testing.T) {
	addr, svc := start(t, api.Options{})
	if _, err := svc.CreateTag(bg, frond.Tag{Name: "orders", MaxID: 1, Step: 100, Mapping: frond.ShardMapping(2)}); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	ids, err := c.Do(bg, "SEGMENT", "orders", "COUNT", "5", "SHARD-KEY", "user-42").Int64Slice()
	if err != nil || len(ids) != 5 {
		t.Fatalf("SEGMENT SHARD-KEY = %v, %v", ids, err)
	}
	for _, id := range ids {
		if id%4 != 1 {
			t.Fatalf("user-42's IDs %v: want shard 1", ids)
		}
	}
	if id, err := c.Do(bg, "SEGMENT", "orders", "SHARD", "3").Int64(); err != nil || id%4 != 3 {
		t.Fatalf("SEGMENT SHARD 3 = %d, %v", id, err)
	}
	for _, bad := range [][]any{
		{"SEGMENT", "orders"},
		{"INCR", "orders"},
		{"SEGMENT", "orders", "SHARD", "4"},
		{"SEGMENT", "orders", "SHARD", "x"},
		{"SEGMENT", "orders", "SHARD-KEY", ""},
		{"SEGMENT", "order", "SHARD", "1"},
	} {
		if err := c.Do(bg, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// Snowflake IDs with shard bits over RESP: SNOWFLAKE's SHARD and
// SHARD-KEY, DECODE's and COMPOSE's shard.
func TestRESP_SnowflakeShardBits(t *testing.T) {
	plain, _ := snowflake.Preset(snowflake.Twitter)
	l, _ := plain.WithShardBits(2)
	svc := apitest.Service(t, storetest.NewFaulty(), service.Config{Segment: segment.Settings{FixedStep: true},
		Snowflake: worker.Settings{Layout: l, MaxLead: time.Hour}})
	c := dial(t, serve(t, svc, api.Options{}))
	ids, err := c.Do(bg, "SNOWFLAKE", "COUNT", "5", "SHARD-KEY", "user-42").Int64Slice()
	if err != nil || len(ids) != 5 {
		t.Fatalf("SNOWFLAKE SHARD-KEY = %v, %v", ids, err)
	}
	for _, id := range ids {
		if id%4 != 1 {
			t.Fatalf("user-42's IDs %v: want shard 1", ids)
		}
	}
	d, err := c.Do(bg, "DECODE", ids[0]).Slice()
	if err != nil || len(d) != 14 || d[12] != "shard" || d[13] != int64(1) {
		t.Fatalf("DECODE = %v, %v", d, err)
	}
	back, err := c.Do(bg, "COMPOSE", d[5], "NODE", d[9], "SEQUENCE", d[11], "SHARD-KEY", "user-42").Slice()
	if err != nil || back[1] != ids[0] {
		t.Fatalf("COMPOSE = %v, %v: want %d", back, err, ids[0])
	}
	if id, err := c.Do(bg, "SNOWFLAKE", "SHARD", "3").Int64(); err != nil || id%4 != 3 {
		t.Fatalf("SNOWFLAKE SHARD 3 = %d, %v", id, err)
	}
	for _, bad := range [][]any{{"SNOWFLAKE"}, {"SNOWFLAKE", "SHARD", "4"}, {"SNOWFLAKE", "SHARD-KEY", ""}, {"COMPOSE", d[5], "SHARD", "4"}} {
		if err := c.Do(bg, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
