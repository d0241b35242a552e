package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TinyID's client against frond serve with tokens: it leases segments from
// /tinyid/id/nextSegmentIdSimple with its token and hands out
// currentId+delta ... maxId; every ID is unique and they continue across
// segments; a wrong token is refused, in text on the simple routes (not
// TinyID's empty 200: issue 31).
func TestE2E_TinyID(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "frond.yaml")
	os.WriteFile(cfg, []byte("tokens:\n  0f673adf80504e2eaa552f5d791b644c: [test, test_odd]\n"), 0o644)
	s := mustStart(t, filepath.Join(dir, "data"), "--config", cfg)
	if code, body := s.req("POST", "/v1/tags", `{"name":"test","step":100}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	const token = "0f673adf80504e2eaa552f5d791b644c"
	if code, body := s.get("/tinyid/id/nextSegmentIdSimple?bizType=test&token=wrong"); code != 403 || !strings.HasPrefix(body, "error: forbidden: ") {
		t.Fatalf("wrong token: %d %q", code, body)
	}
	if code, body := s.get("/tinyid/id/nextId?bizType=test"); code != 200 || !strings.Contains(body, `"code":5`) {
		t.Fatalf("no token: %d %s", code, body)
	}
	seen := map[int64]bool{}
	last := int64(0)
	for range 5 { // five segments, as TinyID's client fetches them
		code, body := s.req("POST", "/tinyid/id/nextSegmentIdSimple?token="+token+"&bizType=test", "")
		f := strings.Split(body, ",")
		if code != 200 || len(f) != 5 {
			t.Fatalf("segment: %d %q", code, body)
		}
		var v [5]int64
		for i := range f {
			v[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		cur, maxID, delta := v[0], v[2], v[3]
		for id := cur + delta; id <= maxID; id += delta {
			if seen[id] || id <= last {
				t.Fatalf("ID %d again or out of order (after %d)", id, last)
			}
			seen[id], last = true, id
		}
	}
	if len(seen) != 500 {
		t.Fatalf("%d IDs from 5 segments of 100", len(seen))
	}
	code, body := s.get("/tinyid/id/nextIdSimple?bizType=test&batchSize=3&token=" + token)
	if code != 200 || body != "501,502,503" {
		t.Fatalf("nextIdSimple: %d %q", code, body)
	}
}
