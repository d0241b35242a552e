package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
)

// A tag with shard bits over the JSON API and Leaf's: the shard given or
// a key's, in the number's low bits.
func TestHTTP_ShardBits(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/v1/tags", `{"name":"orders","step":100,"mapping":"shard:2"}`), 201, `"mapping":"shard:2"`)
	r := f.do("GET", "/v1/segment/orders?shard_key=user-42", "")
	f.want(r, 200, `"shard":1`)
	var one struct{ ID int64 }
	json.Unmarshal([]byte(r.body), &one)
	if one.ID%4 != 1 {
		t.Fatalf("user-42's ID %d: shard %d, want 1", one.ID, one.ID%4)
	}
	r = f.do("GET", "/v1/segment/orders?shard=3&n=5", "")
	f.want(r, 200, `"shard":3`)
	var many struct{ IDs []int64 }
	json.Unmarshal([]byte(r.body), &many)
	for _, id := range many.IDs {
		if id%4 != 3 {
			t.Fatalf("shard=3 answered %v", many.IDs)
		}
	}
	leaf := f.do("GET", "/api/segment/get/orders?shard_key=user-42", "")
	if id, err := strconv.ParseInt(leaf.body, 10, 64); leaf.code != 200 || err != nil || id%4 != 1 {
		t.Fatalf("Leaf's API: %d %q", leaf.code, leaf.body)
	}
	if leaf := f.do("GET", "/api/segment/get/orders", ""); leaf.code != 500 || !strings.Contains(leaf.body, "shard bits") {
		t.Fatalf("Leaf's API without a shard: %d %q", leaf.code, leaf.body)
	}
	for _, bad := range []string{
		"/v1/segment/orders",         // no shard
		"/v1/segment/orders?shard=4", // past 2 bits
		"/v1/segment/orders?shard=x", // not a number
		"/v1/segment/orders?shard=-1",
		"/v1/segment/orders?shard_key=", // empty key
		"/v1/segment/orders?shard=1&shard_key=k",
		"/v1/segment/order?shard=1", // a tag without shard bits
	} {
		f.want(f.do("GET", bad, ""), 400, `"invalid_argument"`)
	}
	f.want(f.do("GET", "/v1/segment/orders?shard=1&format=ranges&n=10", ""), 409, `"form_not_carried"`)
}

// Snowflake IDs with shard bits (snowflake.shard_bits) over the JSON API
// and Leaf's; decode shows the shard, compose takes it.
func TestHTTP_SnowflakeShardBits(t *testing.T) {
	f := newFixture(t, api.Options{}, func(c *service.Config) {
		l, _ := snowflake.Preset(snowflake.Twitter)
		c.Snowflake.Layout, _ = l.WithShardBits(2)
		c.Snowflake.MaxLead = time.Hour
	})
	r := f.do("GET", "/v1/snowflake?shard_key=user-42&n=3", "")
	f.want(r, 200, `"shard":1`)
	var many struct{ IDs []int64 }
	json.Unmarshal([]byte(r.body), &many)
	if len(many.IDs) != 3 {
		t.Fatalf("%s", r.body)
	}
	for _, id := range many.IDs {
		if id%4 != 1 {
			t.Fatalf("user-42's IDs %v: want shard 1", many.IDs)
		}
	}
	id := strconv.FormatInt(many.IDs[0], 10)
	f.want(f.do("GET", "/v1/decode/"+id, ""), 200, `"shard":1`)
	leaf := f.do("GET", "/api/snowflake/get/any?shard=3", "")
	if n, err := strconv.ParseInt(leaf.body, 10, 64); leaf.code != 200 || err != nil || n%4 != 3 {
		t.Fatalf("Leaf's API: %d %q", leaf.code, leaf.body)
	}
	if leaf := f.do("GET", "/api/snowflake/get/any", ""); leaf.code != 500 || !strings.Contains(leaf.body, "shard bits") {
		t.Fatalf("Leaf's API without a shard: %d %q", leaf.code, leaf.body)
	}
	f.want(f.do("GET", "/v1/compose?time=2026-11-22T12:00:00Z&node=5&sequence=7&shard_key=user-42", ""), 200, `"shard":1`)
	for _, bad := range []string{
		"/v1/snowflake",
		"/v1/snowflake?shard=4",
		"/v1/snowflake?shard=1&form=opaque",
		"/v1/snowflake?shard=1&form=friendly",
		"/v1/compose?time=2026-11-22T12:00:00Z&shard=4",
	} {
		f.want(f.do("GET", bad, ""), 400, `"invalid_argument"`)
	}
}

// A lease of counters over HTTP: counters=1 with lease=1 answers the tag's
// counters and its shard_bits; without counters=1 it is refused.
func TestHTTP_LeaseOfCounters(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/v1/tags", `{"name":"orders","step":100,"mapping":"shard:4"}`), 201, `"mapping":"shard:4"`)
	f.want(f.do("GET", "/v1/segment/orders?format=ranges&lease=1&n=10", ""), 409, `"form_not_carried"`)
	r := f.do("GET", "/v1/segment/orders?format=ranges&lease=1&counters=1&n=10", "")
	f.want(r, 200, `"shard_bits":4`)
	var out struct {
		Ranges []struct{ Start, End int64 }
	}
	json.Unmarshal([]byte(r.body), &out)
	if len(out.Ranges) != 1 || out.Ranges[0].End-out.Ranges[0].Start != 10 || out.Ranges[0].Start > 100 {
		t.Fatalf("counters: %s", r.body)
	}
	if r := f.do("GET", "/v1/segment/order?format=ranges&lease=1&counters=1&n=10", ""); r.code != 200 || strings.Contains(r.body, "shard_bits") {
		t.Fatalf("counters of a plain tag: %d %s", r.code, r.body)
	}
	f.want(f.do("GET", "/v1/segment/orders?format=ranges&counters=1&n=10", ""), 400, `"invalid_argument"`)
	f.want(f.do("GET", "/v1/segment/orders?format=ranges&lease=1&counters=x", ""), 400, `"invalid_argument"`)
}
