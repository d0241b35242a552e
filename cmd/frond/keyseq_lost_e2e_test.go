package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
)

// seqChecker asks nodes for keys of a space and checks every answer
// against the last value each key was answered: a value at or below it
// fails the test, wherever and whenever it was answered.
type seqChecker struct {
	t     *testing.T
	space string
	last  map[string]int64
	by    map[string]string
	// answered and refused count the requests; lost those refused with
	// store_lost_data.
	answered, refused, lost int
}

// ask asks s once for the next value of key.
func (c *seqChecker) ask(s *server, who, key string) (ok bool, body string) {
	c.t.Helper()
	code, body := s.get("/v1/seq/" + c.space + "/" + key)
	if code != 200 {
		c.refused++
		if strings.Contains(body, `"store_lost_data"`) {
			c.lost++
		}
		return false, body
	}
	var v struct{ Value int64 }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		c.t.Fatal(err)
	}
	if v.Value <= c.last[key] {
		c.t.Fatalf("%s answered %d by %s before, then %d by %s", key, c.last[key], c.by[key], v.Value, who)
	}
	c.last[key], c.by[key] = v.Value, who
	c.answered++
	return true, body
}

// all asks every node for every key once.
func (c *seqChecker) all(keys int, nodes map[string]*server) {
	for k := range keys {
		for who, s := range nodes {
			c.ask(s, who, fmt.Sprint("key", k))
		}
	}
}

// Issue 68, item 1, with real processes: two frond serve nodes, each with
// its own data directory, on a redis-server of the test's own; the server
// restarts empty, or from the AOF copied earlier. Before, the first node to
// run a round took every section and the other node's former sections
// were served again from the store's maximum: 168 of 224 answers repeated
// or went back on an emptied Redis ("key1 answered 6 before, then 1"), 3
// from an older AOF ("key7 answered 412 before, then 201"). Now no answer
// goes back on either node, nor on a node started after with a new data
// directory: the first node to read the store below its floors fences it
// for every node (store_lost_data); frond space rearm gathers both nodes'
// floors and every key is answered again above every value before.
func TestE2E_KeyedSequences_StoreGoesBack_Redis(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(map[bool]string{true: "restarted empty", false: "restarted from an older AOF"}[empty], func(t *testing.T) {
			r := testenv.StartRedis(t)
			env := []string{"FROND_SEQUENCES__LEASE_TTL=1s"}
			a := startSeqNode(t, env, t.TempDir(), r.URL(), "1")
			b := startSeqNode(t, env, t.TempDir(), r.URL(), "2")
			nodes := map[string]*server{"a": a, "b": b}
			space := fmt.Sprintf("lost-%d", rand.Int64N(1<<40))
			createSpace(t, a, space, 10, 8)
			c := &seqChecker{t: t, space: space, last: map[string]int64{}, by: map[string]string{}}
			const keys = 28
			// Both nodes serve (the sections shared out), then more after
			// the snapshot: the older AOF misses those.
			for shared := time.Now().Add(30 * time.Second); !(strings.Contains(a.log(), "sections taken") && strings.Contains(b.log(), "sections taken")); {
				if time.Now().After(shared) {
					t.Fatal("the nodes never shared the sections out")
				}
				c.all(keys, nodes)
			}
			for range 3 {
				c.all(keys, nodes)
			}
			snapshot := copyDir(t, r.Dir)
			for range 6 {
				c.all(keys, nodes)
			}
			if c.answered < 9*keys {
				t.Fatalf("only %d of %d answered before the restart (%d refused)", c.answered, 9*2*keys, c.refused)
			}
			r.Stop()
			os.RemoveAll(r.Dir)
			if empty {
				os.MkdirAll(r.Dir, 0o755)
			} else if out, err := exec.Command("cp", "-a", snapshot, r.Dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			r.Start()
			if empty {
				// The space is gone with the data: created again, as an
				// operator (or a client that creates what it needs) would.
				createSpace(t, a, space, 10, 8)
			}
			// Three leases of clients on both nodes: nothing goes back,
			// and the nodes come to refuse every key as lost data.
			c.answered, c.refused, c.lost = 0, 0, 0
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				c.all(keys, nodes)
			}
			before := c.lost
			c.all(keys, nodes)
			if c.lost-before != 2*keys {
				t.Fatalf("3 s after the restart, %d of %d requests refused as lost data (answered %d)", c.lost-before, 2*keys, c.answered)
			}
			t.Logf("after the restart: %d answered (above every value before), %d refused, %d of them as lost data", c.answered, c.refused, c.lost)
			// A node with a new data directory is refused too: the fence
			// is in the store.
			n := startSeqNode(t, env, t.TempDir(), r.URL(), "3")
			nodes["new"] = n
			for k := range keys {
				if ok, body := c.ask(n, "new", fmt.Sprint("key", k)); ok || !strings.Contains(body, "store_lost_data") {
					t.Fatalf("a node with a new data directory: %v %s", ok, body)
				}
			}
			// Re-armed above every node's floors, gathered by the command.
			code, out, errs := runCLI(t, nil, "space", "rearm", space, "--server", a.url)
			if code != 0 || !strings.Contains(out, "re-armed") || !strings.Contains(out, "fence") {
				t.Fatalf("frond space rearm: %d\n%s%s", code, out, errs)
			}
			if strings.Contains(out, "was not asked") {
				t.Fatalf("a node was not asked:\n%s", out)
			}
			t.Logf("%s", out)
			deadline := time.Now().Add(15 * time.Second)
			for k := range keys {
				key := fmt.Sprint("key", k)
				for who, s := range nodes {
					for {
						ok, body := c.ask(s, who, key)
						if ok {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("%s from %s 15 s after the re-arm: %s", key, who, body)
						}
						time.Sleep(50 * time.Millisecond)
					}
				}
			}
		})
	}
}
