package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
)

// Keyed sequences across two frond serve processes on one MariaDB: a
// space created on one, served by both (each its share of the sections,
// requests forwarded to the owner), the owner of half the sections killed
// with kill -9: the other serves them again once their leases run out, and
// every key's values strictly increase throughout, the restarted node's
// too. The time the moved sections took to come back is logged (measured,
// not asserted: the machine may be busy).
func TestE2E_KeyedSequences(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	const lease = time.Second
	env := []string{"FROND_SEQUENCES__LEASE_TTL=" + lease.String(), "FROND_WORKER__HOST=127.0.0.1"}
	start := func(node string) *server {
		s, err := startServerEnv(t, env, t.TempDir(), "--store", raw, "--node", node)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := start("1"), start("2")
	space := fmt.Sprintf("e2e-keys-%d", rand.Int64N(1<<40))
	if code, body := a.req("POST", "/v1/spaces", fmt.Sprintf(`{"name":%q,"step":100,"sections":16}`, space)); code != 201 {
		t.Fatalf("create space: %d %s", code, body)
	}
	last := map[string]int64{}
	// next asks s for key's next value; false when s refused (503).
	next := func(s *server, key string) bool {
		t.Helper()
		code, body := s.get("/v1/seq/" + space + "/" + key)
		if code == 503 {
			return false
		}
		var v struct{ Value int64 }
		if code != 200 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("%s: %d %s", key, code, body)
		}
		if v.Value <= last[key] {
			t.Fatalf("%s: %d after %d", key, v.Value, last[key])
		}
		last[key] = v.Value
		return true
	}
	held := func(s *server) int {
		code, body := s.get("/v1/spaces")
		var out struct {
			Spaces []struct {
				Name string
				Held []int
			}
		}
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("spaces: %d %s", code, body)
		}
		for _, sp := range out.Spaces {
			if sp.Name == space {
				return len(sp.Held)
			}
		}
		return 0
	}
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("conversation-%d", i)
	}
	// Both nodes take requests until each holds its share.
	deadline := time.Now().Add(30 * time.Second)
	for held(a) != 8 || held(b) != 8 {
		if time.Now().After(deadline) {
			t.Fatalf("sections not shared after 30s: a %d, b %d", held(a), held(b))
		}
		for i, k := range keys {
			next([]*server{a, b}[i%2], k)
		}
	}
	// Both answer every key (forwarding to the owner), once the giver has
	// read who took what it gave back: within a round (a third of a lease).
	deadline = time.Now().Add(10 * time.Second)
	for _, k := range keys {
		for j, s := range []*server{a, b} {
			for !next(s, k) {
				if time.Now().After(deadline) {
					t.Fatalf("%s still refuses %s with both nodes up", "ab"[j:j+1], k)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	// kill -9 a: its sections come back on b once their leases run out.
	a.cmd.Process.Kill()
	a.wait()
	killed := time.Now()
	pending := map[string]bool{}
	for _, k := range keys {
		pending[k] = true
	}
	var back time.Duration
	for len(pending) > 0 {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("30s after a kill -9 of the other node, %d keys still refused", len(pending))
		}
		for k := range pending {
			if next(b, k) {
				delete(pending, k)
			}
		}
		back = time.Since(killed)
		time.Sleep(20 * time.Millisecond)
	}
	if held(b) != 16 {
		t.Fatalf("b holds %d sections after a's kill", held(b))
	}
	t.Logf("kill -9 of the owner of half the sections: every key answered again by the other node after %v (lease %v)", back.Round(time.Millisecond), lease)
	// a again: it takes its share back, and the values go on increasing.
	a = start("1")
	deadline = time.Now().Add(30 * time.Second)
	for held(a) == 0 || held(b) == 16 {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node took no section in 30s: a %d, b %d", held(a), held(b))
		}
		for i, k := range keys {
			next([]*server{a, b}[i%2], k)
		}
	}
	for _, k := range keys {
		for !next(a, k) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !strings.Contains(a.log(), `"msg":"keyed sequences"`) {
		t.Fatalf("no keyed sequences line at start:\n%s", a.log())
	}
}
