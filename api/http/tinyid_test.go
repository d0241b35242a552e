package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/service"
)

type tinyBody struct {
	Data    json.RawMessage
	Code    int
	Message string
}

func (f *fixture) tiny(method, path string, form url.Values) (tinyBody, resp) {
	f.t.Helper()
	var r resp
	if method == "POST" {
		req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		r = resp{w.Code, w.Header(), w.Body.String()}
	} else {
		r = f.do(method, path+"?"+form.Encode(), "")
	}
	var b tinyBody
	if r.code != 200 {
		f.t.Fatalf("%s %s: status %d %s", method, path, r.code, r.body)
	}
	if strings.HasPrefix(r.hdr.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal([]byte(r.body), &b); err != nil {
			f.t.Fatalf("%s: %v in %s", path, err, r.body)
		}
	}
	return b, r
}

// tinyClient hands out the IDs of a segment as TinyID's client does
// (SegmentId.init and nextId): from currentId, aligned to remainder modulo
// delta, in steps of delta up to maxId.
func tinyClient(t *testing.T, simple string) []int64 {
	t.Helper()
	f := strings.Split(simple, ",")
	if len(f) != 5 {
		t.Fatalf("simple segment %q", simple)
	}
	v := make([]int64, 5)
	for i := range f {
		var err error
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			t.Fatalf("simple segment %q: %v", simple, err)
		}
	}
	cur, loading, maxID, delta, rem := v[0], v[1], v[2], v[3], v[4]
	if loading <= cur || loading > maxID {
		t.Fatalf("loadingId %d outside (%d, %d]", loading, cur, maxID)
	}
	if cur%delta != rem {
		for i := int64(0); i <= delta; i++ {
			cur++
			if cur%delta == rem {
				cur -= delta
				break
			}
		}
	}
	var ids []int64
	for id := cur + delta; id <= maxID; id += delta {
		ids = append(ids, id)
	}
	return ids
}

func TestTinyID(t *testing.T) {
	f := newFixture(t, api.Options{})
	b, _ := f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}})
	if b.Code != 200 || string(b.Data) != "[1]" || b.Message != "" {
		t.Fatalf("nextId: %+v", b)
	}
	b, _ = f.tiny("POST", "/tinyid/id/nextId", url.Values{"bizType": {"order"}, "batchSize": {"3"}})
	if b.Code != 200 || string(b.Data) != "[2,3,4]" {
		t.Fatalf("nextId batchSize=3 (POST form): %+v", b)
	}
	_, r := f.tiny("GET", "/tinyid/id/nextIdSimple", url.Values{"bizType": {"order"}, "batchSize": {"2"}})
	if r.body != "5,6" {
		t.Fatalf("nextIdSimple: %q", r.body)
	}
	_, r = f.tiny("POST", "/tinyid/id/nextIdSimple?bizType=order", nil)
	if r.body != "7" {
		t.Fatalf("nextIdSimple (query on a POST): %q", r.body)
	}
	// batchSize beyond TinyID's maximum is cut to it.
	b, _ = f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}, "batchSize": {"250000"}})
	var many []int64
	if json.Unmarshal(b.Data, &many); len(many) != TinyIDMaxBatch || many[0] != 8 {
		t.Fatalf("nextId batchSize=250000: %d IDs from %v", len(many), many[:1])
	}

	// A segment for TinyID's client: the tag's step (1000), one run.
	_, r = f.tiny("POST", "/tinyid/id/nextSegmentIdSimple", url.Values{"bizType": {"order"}})
	ids := tinyClient(t, r.body)
	if len(ids) == 0 || ids[0] != 100_008 || !slices.IsSorted(ids) {
		t.Fatalf("nextSegmentIdSimple %q: %d IDs from %v", r.body, len(ids), ids[:min(1, len(ids))])
	}
	b, _ = f.tiny("GET", "/tinyid/id/nextSegmentId", url.Values{"bizType": {"order"}})
	var seg tinySegment
	if json.Unmarshal(b.Data, &seg); b.Code != 200 || seg.Delta != 1 || seg.Remainder != 0 || seg.CurrentID+1 != ids[len(ids)-1]+1 || seg.MaxID-seg.CurrentID != 1000 {
		t.Fatalf("nextSegmentId after %v: %+v %s", ids[len(ids)-1], b, b.Data)
	}

	// HEAD takes no ID; methods other than GET and POST are refused.
	next, _ := f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}})
	f.want(f.do("HEAD", "/tinyid/id/nextIdSimple?bizType=order", ""), 200)
	f.want(f.do("PUT", "/tinyid/id/nextIdSimple?bizType=order", ""), 405)
	after, _ := f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}})
	var a, b2 []int64
	json.Unmarshal(next.Data, &a)
	json.Unmarshal(after.Data, &b2)
	if b2[0] != a[0]+1 {
		t.Fatalf("HEAD or PUT took IDs: %v then %v", a, b2)
	}

	// Errors: TinyID's code 6 with frond's code; the simple routes answer
	// the error's status and the error as text (never an empty 200), its
	// code in a header too.
	b, _ = f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"nope"}})
	if b.Code != 6 || !strings.HasPrefix(b.Message, "tag_not_found: ") || string(b.Data) != "null" {
		t.Fatalf("nextId nope: %+v", b)
	}
	r = f.do("GET", "/tinyid/id/nextSegmentIdSimple?bizType=nope", "")
	if r.code != 404 || !strings.HasPrefix(r.body, "error: tag_not_found: ") || r.hdr.Get("X-Frond-Error") != "tag_not_found" {
		t.Fatalf("nextSegmentIdSimple nope: %q %v", r.body, r.hdr)
	}
	for _, bad := range []string{"0", "-1", "many", "1e3"} {
		b, _ = f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}, "batchSize": {bad}})
		if b.Code != 6 || !strings.HasPrefix(b.Message, "invalid_argument: ") {
			t.Fatalf("batchSize=%s: %+v", bad, b)
		}
	}
}

// With tokens configured, TinyID's token (and frond's header) must allow
// the tag, on TinyID's routes and on frond's own.
func TestTinyID_Tokens(t *testing.T) {
	f := newFixture(t, api.Options{}, func(c *service.Config) {
		c.Tokens = map[string][]string{"0f673adf": {"order"}, "other": {"invoice"}}
	})
	for _, token := range []string{"", "other", "nope"} {
		b, _ := f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}, "token": {token}})
		if b.Code != 5 || b.Message != "token is error" {
			t.Fatalf("token %q: %+v", token, b)
		}
	}
	b, _ := f.tiny("GET", "/tinyid/id/nextId", url.Values{"bizType": {"order"}, "token": {"0f673adf"}})
	if b.Code != 200 || string(b.Data) != "[1]" {
		t.Fatalf("the right token: %+v", b)
	}
	f.want(f.do("GET", "/v1/segment/order", ""), http.StatusForbidden, `"code":"forbidden"`)
	f.want(f.do("GET", "/v1/segment/order?token=0f673adf", ""), 200, `"id":2`)
	f.want(f.do("GET", "/v1/segment/order", "", TokenHeader, "0f673adf"), 200, `"id":3`)
	f.want(f.do("GET", "/api/segment/get/order?token=0f673adf", ""), 200)
	f.want(f.do("GET", "/api/segment/get/order", ""), 500, "forbidden")
	f.want(f.do("GET", "/v1/snowflake", ""), 200) // snowflake IDs need no token
}

var tinyRoutes = []string{"/tinyid/id/nextId", "/tinyid/id/nextIdSimple", "/tinyid/id/nextSegmentId", "/tinyid/id/nextSegmentIdSimple"}

// TinyID's routes with any query and body: no panic; TinyID's 200 on the JSON
// routes, an error status and text on the simple ones (never an empty 200);
// an answer that is an error (the X-Frond-Error header) took no ID.
func FuzzTinyID(f *testing.F) {
	f.Add(uint8(0), "bizType=order&batchSize=3", "")
	f.Add(uint8(1), "bizType=order&batchSize=0", "")
	f.Add(uint8(2), "bizType=nope", "")
	f.Add(uint8(3), "bizType=order&token=x", "")
	f.Add(uint8(0), "bizType=order&batchSize=1e9", "")
	f.Add(uint8(1), "%zz", "")
	f.Add(uint8(3), "", "bizType=order")
	fx := newFixture(f, api.Options{})
	f.Fuzz(func(t *testing.T, route uint8, query, body string) {
		fx.t = t
		req := httptest.NewRequest("POST", "http://frond.test/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.URL.Path = tinyRoutes[int(route)%len(tinyRoutes)]
		req.URL.RawQuery = query
		before := fx.snapshot()
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, req)
		failed := w.Header().Get("X-Frond-Error")
		simple := strings.HasSuffix(req.URL.Path, "Simple")
		switch {
		case failed == "" && w.Code != 200, failed != "" && !simple && w.Code != 200:
			t.Fatalf("%s?%s: status %d %s", req.URL.Path, query, w.Code, w.Body.String())
		case failed != "" && simple && (w.Code < 400 || !strings.HasPrefix(w.Body.String(), "error: "+failed+": ")):
			// never an empty 200
			t.Fatalf("%s?%s failed (%s): status %d %q", req.URL.Path, query, failed, w.Code, w.Body.String())
		}
		if failed == "" {
			return
		}
		if after := fx.snapshot(); after != before {
			t.Fatalf("%s?%s failed (%s) and changed the next IDs:\n before %s\n after  %s", req.URL.Path, query, w.Header().Get("X-Frond-Error"), before, after)
		}
	})
}
