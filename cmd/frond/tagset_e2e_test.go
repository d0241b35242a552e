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
	"github.com/frond-id/frond/storetest/dbtest"
)

// Issue 57, as an operator following docs/stores.md: a Mist tag lives in
// MariaDB (A) with a node listing A alone; frond stores set moves A into a
// set with PostgreSQL (B); two new nodes list the set while the old node
// keeps running (it restarts later). The tag's mapping is changed to
// plain with the CLI, first through the old node (refused: it lists part
// of the set, and nothing changes), then through a new node, while all
// three serve: every copy changes, and no number is handed out twice. On
// the code before issue 57 the old node changed A alone and 22-26 numbers
// in 131,000 were handed out twice.
func TestE2E_MultiStore_TagChangeOnOldList(t *testing.T) {
	a := dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_MYSQL_URL"))
	b := dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"))
	old := mustStart(t, t.TempDir(), "--store", a, "--node", "1")
	tag := tagName("one-tag")
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, nil, args...)
		if code != want {
			t.Fatalf("frond %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
		}
		return out + errs
	}
	cli(exitOK, "tag", "create", tag, "--step", "50", "--mapping", "mist", "--server", old.url)

	var mu sync.Mutex
	all := map[int64]string{}
	served := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 3)
	load := func(s *server, name string) {
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
					time.Sleep(5 * time.Millisecond) // the old node, refused by A once its buffers ran out; a fence for a moment
					continue
				}
				mu.Lock()
				for _, id := range out.IDs {
					if prev, dup := all[id]; dup {
						mu.Unlock()
						errs <- fmt.Sprintf("number %d handed out twice, by %s and %s", id, prev, name)
						return
					}
					all[id] = name
					served[name]++
				}
				mu.Unlock()
			}
		})
	}
	count := func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return served[name]
	}
	waitFor := func(what, name string, more int) {
		t.Helper()
		before := count(name)
		deadline := time.Now().Add(30 * time.Second)
		for count(name) < before+more {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s served %d numbers, want %d more", what, name, count(name), more)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	load(old, "the old node")
	waitFor("A alone", "the old node", 300)

	cli(exitOK, "stores", "set", "--data-dir", t.TempDir(), "--store", a+" "+b)
	n2 := mustStart(t, t.TempDir(), "--store", a+" "+b, "--node", "2")
	n3 := mustStart(t, t.TempDir(), "--store", b+" "+a, "--node", "3")
	load(n2, "node 2")
	load(n3, "node 3")
	waitFor("the set", "node 2", 300)
	waitFor("the set", "node 3", 300)

	copies := func() []frond.Tag {
		t.Helper()
		var out []frond.Tag
		for _, u := range []string{a, b} {
			s, err := sqlstore.Open(context.Background(), u, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tg, err := s.Tag(context.Background(), tag)
			s.Close()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tg)
		}
		return out
	}
	// Through the node on A alone: refused, for every tag change.
	out := cli(exitServer, "tag", "set", tag, "--mapping", "plain", "--server", old.url)
	if !strings.Contains(out, "every store of the set") {
		t.Fatalf("the refusal does not say what to do:\n%s", out)
	}
	cli(exitServer, "tag", "set", tag, "--step", "70", "--server", old.url)
	cli(exitServer, "tag", "create", tag+"-2", "--step", "10", "--server", old.url)
	for i, c := range copies() {
		if c.Mapping != frond.MappingMist || c.Step != 50 {
			t.Fatalf("store %d after changes refused: %+v", i, c)
		}
	}
	// Through a node on the whole set: every copy, while all three serve.
	cli(exitOK, "tag", "set", tag, "--mapping", "plain", "--server", n2.url)
	for i, c := range copies() {
		if c.Mapping != "" {
			t.Fatalf("store %d after the change: %+v", i, c)
		}
	}
	waitFor("after the change", "node 2", 300)
	waitFor("after the change", "node 3", 300)
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("%d numbers, none twice: %v", len(all), served)
}
