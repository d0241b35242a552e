package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/storetest/dbtest"
)

// Two frond nodes share two stores (MariaDB and PostgreSQL) as residue
// classes. While both take IDs, MariaDB goes away: both carry on from
// PostgreSQL, and no ID is issued twice.
func TestE2E_MultiStore_TwoNodes(t *testing.T) {
	my := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	pg := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
	set := dbtest.PlacedSet(t, openSQL, my, pg) // databases of the test's own, placed as residues 0 and 1
	my, pg = set[0], set[1]
	p := storetest.StartProxy(t, storetest.HostOf(t, my, "3306"))
	stores := storetest.WithHost(t, my, p.Addr()) + "?frond_timeout=1s " + pg
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true")
	a := mustStart(t, t.TempDir(), "--store", stores, "--node", "1")
	b := mustStart(t, t.TempDir(), "--store", stores, "--node", "2")
	tag := "multi-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
	if code, body := a.req("POST", "/v1/tags", `{"name":"`+tag+`","step":40}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var mu sync.Mutex
	all := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	run := func(s *server, name string, rounds int) {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			code, body := s.get("/v1/segment/" + tag + "?n=7")
			if code != 200 {
				errs <- name + ": " + body
				return
			}
			var out struct{ IDs []int64 }
			json.Unmarshal([]byte(body), &out)
			mu.Lock()
			for _, id := range out.IDs {
				if prev, dup := all[id]; dup {
					mu.Unlock()
					errs <- "ID issued twice, by " + prev + " and " + name
					return
				}
				all[id] = name
			}
			mu.Unlock()
		}
	}
	wg.Add(2)
	go run(a, "a", 60)
	go run(b, "b", 60)
	wg.Wait()
	p.Cut() // MariaDB (residue 0) is gone; PostgreSQL (residue 1) carries on
	wg.Add(2)
	go run(a, "a", 60)
	go run(b, "b", 60)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if len(all) != 4*60*7 {
		t.Fatalf("%d IDs", len(all))
	}
	// After the cut and once the buffers of MariaDB's segments ran out,
	// every ID is odd: PostgreSQL's residue.
	code, body := a.get("/v1/segment/" + tag + "?n=50")
	var out struct{ IDs []int64 }
	json.Unmarshal([]byte(body), &out)
	if code != 200 || out.IDs[len(out.IDs)-1]%2 != 1 {
		t.Fatalf("after the cut: %d %s", code, body)
	}
}

// openSQL opens a SQL store (dbtest.PlacedSet).
func openSQL(ctx context.Context, url string) (frond.SegmentStore, error) {
	return sqlstore.Open(ctx, url, sqlstore.Options{})
}

// The set of stores changes while two nodes serve, by the documented
// procedure (frond stores set): MariaDB and PostgreSQL swap residues, then
// MariaDB is retired and PostgreSQL stands alone, then both are a set
// again. The nodes list the stores in opposite orders (the place is the
// store's), never stop, and no ID is issued twice (item 2 of issue 27:
// unmarking and restarting with another list raised no max_id, and a store
// whose residue changed handed out IDs the other store had).
func TestE2E_MultiStore_ChangeTheSet(t *testing.T) {
	my := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	pg := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
	set := dbtest.PlacedSet(t, openSQL, my, pg)
	my, pg = set[0], set[1]
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true")
	a := mustStart(t, t.TempDir(), "--store", my+" "+pg, "--node", "1")
	b := mustStart(t, t.TempDir(), "--store", pg+" "+my, "--node", "2")
	tag := tagName("change-set")
	if code, body := a.req("POST", "/v1/tags", `{"name":"`+tag+`","step":30}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	var mu sync.Mutex
	all := map[int64]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for _, s := range []*server{a, b} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get(s.url + "/v1/segment/" + tag + "?n=5")
				if err != nil {
					errs <- err.Error()
					return
				}
				var out struct{ IDs []int64 }
				json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					continue // fenced for a moment while both stores are: the node's buffers ran out
				}
				mu.Lock()
				for _, id := range out.IDs {
					if prev, dup := all[id]; dup {
						mu.Unlock()
						errs <- fmt.Sprintf("ID %d issued twice, by %s and %s", id, prev, s.url)
						return
					}
					all[id] = s.url
				}
				mu.Unlock()
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(all)
	}
	waitIDs := func(what string) {
		before := count()
		deadline := time.Now().Add(20 * time.Second)
		for count() < before+500 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no IDs served (%d)", what, count())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitIDs("the first set")
	for _, step := range []struct{ set, retire, want string }{
		{pg + " " + my, "", "done: generation 2"},
		{pg, my, "done: generation 3"},
		{my + " " + pg, "", "done: generation 4"},
	} {
		args := []string{"stores", "set", "--data-dir", t.TempDir(), "--store", step.set}
		if step.retire != "" {
			args = append(args, "--retire", step.retire)
		}
		code, out, errOut := runCLI(t, nil, args...)
		if code != exitOK || !strings.Contains(out, step.want) {
			t.Fatalf("frond stores set %q: exit %d\n%s%s", step.set, code, out, errOut)
		}
		waitIDs("after " + step.want)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("%d IDs over three changes of the set", count())
}
