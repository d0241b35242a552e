package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

// Every HTTP route that takes IDs gives its answer's place in the node's
// answer budget back once the answer is written (issue 43), and a request
// whose answer could not fit in the whole budget is refused before it
// takes an ID.
func TestAnswerBudget_Released(t *testing.T) {
	f := newFixture(t, api.Options{}, func(c *service.Config) { c.AnswerBudget = 1 << 20 })
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	for _, path := range []string{
		"/v1/uuid?version=7&n=10000&form=typeid&prefix=a",
		"/v1/segment/order?n=1000",
		"/api/segment/get/order",
		"/api/snowflake/get/x",
		"/tinyid/id/nextIdSimple?bizType=order&batchSize=100",
		"/tinyid/id/nextSegmentIdSimple?bizType=order",
		"/v1/serial/nope",
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		deadline := time.Now().Add(5 * time.Second)
		for used, _, _ := f.svc.AnswerBudget(); used != 0; used, _, _ = f.svc.AnswerBudget() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d bytes of the answer budget still held after the answer was read", path, used)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// An answer larger than the whole budget: refused, no ID taken.
	f.want(f.do("GET", "/v1/uuid?version=7&n=10000&form=typeid&prefix="+strings.Repeat("a", 63), ""), 400, "answer budget")
	f.want(f.do("GET", "/api/segment/get/order", ""), 200)
}
