package resp

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
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
