package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/storetest"
)

// With a real store: while clients take IDs the store goes away. frond
// serves from its buffers without errors until they run out, /readyz says
// "degraded" with the remaining IDs, then requests fail with 503
// store_unavailable, and everything recovers on its own when the store is
// back. No ID is issued twice.
func TestE2E_StoreOutage(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	p := storetest.StartProxy(t, storetest.HostOf(t, raw, "3306"))
	store := storetest.WithHost(t, raw, p.Addr()) + "?frond_timeout=1s"
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true")
	t.Setenv("FROND_SEGMENT__FAIL_FAST", "200ms")
	s := mustStart(t, t.TempDir(), "--store", store)
	tag := "outage-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
	if code, body := s.req("POST", "/v1/tags", `{"name":"`+tag+`","step":1000}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	seen := map[int64]bool{}
	take := func(n string) (int, string) {
		code, body := s.get("/v1/segment/" + tag + "?n=" + n)
		if code == 200 {
			var out struct{ IDs []int64 }
			json.Unmarshal([]byte(body), &out)
			for _, id := range out.IDs {
				if seen[id] {
					t.Fatalf("ID %d issued twice", id)
				}
				seen[id] = true
			}
		}
		return code, body
	}
	if code, body := take("200"); code != 200 { // past 10%: the second segment loads
		t.Fatalf("%d %s", code, body)
	}
	waitReady := func(want string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, body := s.get("/readyz")
			var r map[string]any
			json.Unmarshal([]byte(body), &r)
			if r["status"] == want || time.Now().After(deadline) {
				if r["status"] != want {
					t.Fatalf("readyz %q, want %q: %s", r["status"], want, body)
				}
				return r
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitReady("ready")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(mustGet(t, s, "/readyz"), `"remaining":1800`) {
		if time.Now().After(deadline) {
			t.Fatalf("the second segment did not load: %s", mustGet(t, s, "/readyz"))
		}
		time.Sleep(20 * time.Millisecond)
	}

	p.Cut()
	r := waitReady("degraded")
	if !strings.Contains(mustGet(t, s, "/readyz"), `"horizon_seconds"`) {
		t.Fatalf("no horizon in %v", r)
	}
	// The 1,800 buffered IDs are served without an error while the store is gone.
	for i := 0; i < 18; i++ {
		if code, body := take("100"); code != 200 {
			t.Fatalf("request %d with IDs still buffered: %d %s", i, code, body)
		}
	}
	code, body := take("1")
	if code != 503 || !strings.Contains(body, `"code":"store_unavailable"`) {
		t.Fatalf("buffers empty, store gone: %d %s", code, body)
	}
	if code, body := s.get("/api/segment/get/" + tag); code != 500 || !strings.HasPrefix(body, "error: store_unavailable") {
		t.Fatalf("Leaf API with the store gone: %d %s", code, body)
	}
	// Segment IDs cannot be served; snowflake IDs can: the overall page is
	// degraded, and the segment page, the one a segment load balancer
	// probes, says not ready.
	waitReady("degraded")
	if code, body := s.get("/readyz/segment"); code != 503 || !strings.Contains(body, "no IDs are buffered") {
		t.Fatalf("/readyz/segment, store gone, buffers empty: %d %s", code, body)
	}
	if code, body := s.get("/readyz/snowflake"); code != 200 {
		t.Fatalf("/readyz/snowflake, store gone: %d %s", code, body)
	}

	p.Restore()
	deadline = time.Now().Add(30 * time.Second)
	for {
		code, body := take("10")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the store came back: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitReady("ready")
	if len(seen) != 2010 {
		t.Fatalf("%d IDs", len(seen))
	}
}

func mustGet(t *testing.T, s *server, path string) string {
	t.Helper()
	_, body := s.get(path)
	return body
}
