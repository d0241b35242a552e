package httpapi

import (
	"testing"

	"github.com/frond-id/frond/api"
)

// A sequence tag over HTTP: created with "mode", shown with it, served by
// every ID endpoint one ID after another, and refused where it would be
// leased (TinyID's segments: 409 not_leasable).
func TestHTTP_SequenceTag(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("POST", "/v1/tags", `{"name":"ticket","step":1,"mode":"sequence"}`), 201, `"mode":"sequence"`)
	f.want(f.do("GET", "/v1/tags/ticket", ""), 200, `"mode":"sequence"`)
	f.want(f.do("GET", "/v1/tags/order", ""), 200, `"mode":"segment"`)
	f.want(f.do("POST", "/v1/tags", `{"name":"bad","step":1,"mode":"stream"}`), 400, `"code":"invalid_argument"`, "segment or sequence")
	f.want(f.do("GET", "/v1/segment/ticket", ""), 200, `"id":1,`)
	f.want(f.do("GET", "/api/segment/get/ticket", ""), 200, "2")
	f.want(f.do("GET", "/v1/segment/ticket?n=3", ""), 200, `"ids":[3,4,5]`)
	f.want(f.do("GET", "/v1/segment/ticket?n=2&format=ranges", ""), 200, `"start":6,"end":8`)
	f.want(f.do("GET", "/tinyid/id/nextId?bizType=ticket", ""), 200, "[8]")
	f.want(f.do("GET", "/tinyid/id/nextSegmentId?bizType=ticket", ""), 200, `"data":null`, "not_leasable")
	f.want(f.do("HEAD", "/v1/segment/ticket", ""), 200)
	// HEAD answers what GET would: 503 while the store is down.
	f.store.SetDown(true)
	f.want(f.do("HEAD", "/v1/segment/ticket", ""), 503)
	f.want(f.do("GET", "/v1/segment/ticket", ""), 503, "store_unavailable")
	f.store.SetDown(false)
	f.want(f.do("GET", "/v1/tags/ticket", ""), 200, `"max_id":9,`)
	f.want(f.do("GET", "/metrics", ""), 200, `frond_ids_issued_total{kind="sequence"} 8`, `frond_tag_ids_issued_total{kind="sequence",tag="ticket"} 8`, `frond_sequence_store_calls_total{tag="ticket"} 6`,
		`frond_sequence_max_group{tag="ticket"} 1`)
}

// A lease over HTTP (lease=1 with format=ranges, for clients that lease
// over HTTP: the Java and TypeScript clients) has gRPC's LeaseRanges
// semantics: ranges of a segment tag; a sequence tag refuses it
// (not_leasable), so does a tag whose IDs are not plain numbers
// (form_not_carried); lease=1 without ranges is a bad request.
func TestHTTP_Lease(t *testing.T) {
	f := newFixture(t, api.Options{})
	f.want(f.do("GET", "/v1/segment/order?n=100&format=ranges&lease=1", ""), 200, `"start":1,"end":101`)
	f.want(f.do("POST", "/v1/tags", `{"name":"ticket","step":1,"mode":"sequence"}`), 201)
	f.want(f.do("GET", "/v1/segment/ticket?n=2&format=ranges&lease=1", ""), 409, `"code":"not_leasable"`)
	f.want(f.do("GET", "/v1/segment/ticket?n=2&format=ranges&lease=0", ""), 200, `"start":1,"end":3`)
	f.want(f.do("POST", "/v1/tags", `{"name":"misty","step":100,"mapping":"mist"}`), 201)
	f.want(f.do("GET", "/v1/segment/misty?n=2&format=ranges&lease=1", ""), 409, `"code":"form_not_carried"`)
	f.want(f.do("GET", "/v1/segment/order?n=2&lease=1", ""), 400, "needs format=ranges")
	f.want(f.do("GET", "/v1/segment/order?n=2&format=ranges&lease=yes", ""), 400, "lease=")
}
