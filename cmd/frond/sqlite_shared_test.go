package main

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
)

// Two frond processes share one SQLite file (each with its own data
// directory, so their worker IDs differ): segment IDs never repeat.
func TestE2E_SQLiteSharedByTwoProcesses(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true")
	a := mustStart(t, t.TempDir(), "--store", db, "--node", "1")
	b := mustStart(t, t.TempDir(), "--store", db, "--node", "2")
	if code, body := a.req("POST", "/v1/tags", `{"name":"shared","step":25}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for _, s := range []*server{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				code, body := s.get("/v1/segment/shared?n=9")
				if code != 200 {
					errs <- body
					return
				}
				var out struct{ IDs []int64 }
				json.Unmarshal([]byte(body), &out)
				mu.Lock()
				for _, id := range out.IDs {
					if seen[id] {
						mu.Unlock()
						errs <- "duplicate ID"
						return
					}
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if len(seen) != 4*40*9 {
		t.Fatalf("%d IDs", len(seen))
	}
}
