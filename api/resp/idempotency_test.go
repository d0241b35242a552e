package resp

import (
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
)

// IDEMPOTENCY-KEY on SEGMENT, RANGES, SNOWFLAKE, UUID and SERIAL: a retry
// gets the first answer again; reused for another request, INVALID_ARGUMENT.
func TestServer_IdempotencyKey(t *testing.T) {
	addr, _ := start(t, api.Options{})
	c := dial(t, addr)
	first, err := c.Do(bg, "SEGMENT", "order", "COUNT", "3", "IDEMPOTENCY-KEY", "k").Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Do(bg, "SEGMENT", "order", "COUNT", "3", "idempotency-key", "k").Int64Slice()
	if err != nil || again[0] != first[0] || len(again) != 3 {
		t.Fatalf("retry: %v (first %v), %v", again, first, err)
	}
	if id, err := c.Incr(bg, "order").Result(); err != nil || id != first[2]+1 {
		t.Fatalf("INCR after: %d, %v", id, err)
	}
	if err := c.Do(bg, "SEGMENT", "order", "COUNT", "2", "IDEMPOTENCY-KEY", "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
		t.Fatalf("reused key: %v", err)
	}
	r1, err1 := c.Do(bg, "RANGES", "order", "5", "IDEMPOTENCY-KEY", "r").Slice()
	r2, err2 := c.Do(bg, "RANGES", "order", "5", "IDEMPOTENCY-KEY", "r").Slice()
	if err1 != nil || err2 != nil || r1[0].([]any)[0] != r2[0].([]any)[0] {
		t.Fatalf("RANGES: %v %v, %v %v", r1, err1, r2, err2)
	}
	if err := c.Do(bg, "RANGES", "order", "5", "KEY").Err(); err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT ") {
		t.Fatalf("RANGES with a lone option: %v", err)
	}
	s1, err1 := c.Do(bg, "SNOWFLAKE", "IDEMPOTENCY-KEY", "s").Int64()
	s2, err2 := c.Do(bg, "SNOWFLAKE", "IDEMPOTENCY-KEY", "s").Int64()
	if err1 != nil || err2 != nil || s1 != s2 {
		t.Fatalf("SNOWFLAKE: %d %v, %d %v", s1, err1, s2, err2)
	}
}
