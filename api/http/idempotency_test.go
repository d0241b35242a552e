package httpapi

import (
	"testing"

	"github.com/frond-id/frond/api"
)

// Idempotency-Key on every route that issues IDs: a retry gets the first
// answer again, marked Idempotent-Replayed; the same key for another
// request, or a malformed key, is 400 and takes nothing.
func TestHTTP_IdempotencyKey(t *testing.T) {
	f := newFixture(t, api.Options{})
	key := func(k string) []string { return []string{IdempotencyKeyHeader, k} }
	first := f.do("GET", "/v1/segment/order?n=3", "", key("a")...)
	f.want(first, 200, `"ids":[1,2,3]`)
	if first.hdr.Get(ReplayedHeader) != "" {
		t.Fatalf("first answer marked replayed")
	}
	again := f.do("GET", "/v1/segment/order?n=3", "", key("a")...)
	f.want(again, 200, `"ids":[1,2,3]`)
	if again.hdr.Get(ReplayedHeader) != "true" {
		t.Fatalf("replayed answer not marked: %v", again.hdr)
	}
	f.want(f.do("GET", "/v1/segment/order?n=3", ""), 200, `"ids":[4,5,6]`)
	f.want(f.do("GET", "/v1/segment/order?n=2", "", key("a")...), 400, `"code":"invalid_argument"`, "different request")
	f.want(f.do("GET", "/v1/segment/order", "", key("has space")...), 400, `"code":"invalid_argument"`, "printable ASCII")
	f.want(f.do("GET", "/api/segment/get/order", "", key("b")...), 200, "7")
	f.want(f.do("GET", "/api/segment/get/order", "", key("b")...), 200, "7")
	f.want(f.do("GET", "/tinyid/id/nextId?bizType=order&batchSize=2", "", key("c")...), 200, "[8,9]")
	f.want(f.do("GET", "/tinyid/id/nextId?bizType=order&batchSize=2", "", key("c")...), 200, "[8,9]")
	f.want(f.do("GET", "/v1/segment/order", ""), 200, `"id":10,`)
	f.want(f.do("GET", "/metrics", ""), 200, "frond_idempotency_replays_total 3", "frond_idempotency_conflicts_total 1", "frond_idempotency_keys 3")
}
