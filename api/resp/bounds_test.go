package resp

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond/api"
)

func TestRESP_BoundsAndCompose(t *testing.T) {
	addr, _ := start(t, api.Options{})
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer c.Close()
	b, err := c.Do(bg, "BOUNDS", "snowflake", "2026-11-01", "2026-12-01").Int64Slice()
	if err != nil || len(b) != 2 || b[0] <= 0 || b[1] <= b[0] {
		t.Fatalf("BOUNDS snowflake = %v, %v", b, err)
	}
	last, err := c.Do(bg, "DECODE", b[1]).Slice()
	if err != nil || last[5] != "2026-11-30T23:59:59.999Z" {
		t.Fatalf("DECODE of the last = %v, %v", last, err)
	}
	u, err := c.Do(bg, "BOUNDS", "uuid", "2026-11-01", "2026-12-01", "VERSION", "7", "FORM", "typeid", "PREFIX", "user").StringSlice()
	if err != nil || len(u) != 2 || !strings.HasPrefix(u[0], "user_") || u[0] >= u[1] {
		t.Fatalf("BOUNDS uuid typeid = %v, %v", u, err)
	}
	d, err := c.Do(bg, "COMPOSE", "2026-11-29T12:00:00.123Z", "NODE", "5", "SEQUENCE", "7").Slice()
	if err != nil || d[5] != "2026-11-29T12:00:00.123Z" || d[9] != int64(5) || d[11] != int64(7) {
		t.Fatalf("COMPOSE = %v, %v", d, err)
	}
	back, err := c.Do(bg, "DECODE", d[1]).Slice()
	if err != nil || back[9] != int64(5) || back[11] != int64(7) {
		t.Fatalf("DECODE of COMPOSE = %v, %v", back, err)
	}
	for _, bad := range [][]any{
		{"BOUNDS", "snowflake", "2026-12-01", "2026-11-01"},
		{"BOUNDS", "segment", "2026-11-01", "2026-12-01"},
		{"BOUNDS", "uuid", "2026-11-01", "2026-12-01", "VERSION", "4"},
		{"BOUNDS", "snowflake", "soon", "2026-12-01"},
		{"BOUNDS", "snowflake", "2026-11-01", "2026-12-01", "LAYOUT"},
		{"COMPOSE", "2026-11-29", "NODE", "1024"},
		{"COMPOSE", "2026-11-29", "NODE", "-1"},
		{"COMPOSE", "2000-01-01"},
	} {
		if err := c.Do(bg, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
