package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
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
// its own data directory, on a redis-server of the test's own. Node a
// starts first (it raises every section once) and shares them with b;
// both serve; a is killed (kill -9) and the server restarts empty, or from
// the AOF copied earlier. Before, b counted itself alone, took every
// section and served a's former sections again from the store's maximum:
// it kept floors only of the sections it had raised ("key1 answered 6
// before, then 1"; 168 of 224 answers on an emptied Redis). Now no answer
// goes back, nor on a node started after with a new data directory: b
// reads the store below its floors and fences it for every node
// (store_lost_data); a, restarted on its data directory, and b are asked
// for their floors by frond space rearm, and every key is answered again
// above every value before.
func TestE2E_KeyedSequences_StoreGoesBack_Redis(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(map[bool]string{true: "restarted empty", false: "restarted from an older AOF"}[empty], func(t *testing.T) {
			r := testenv.StartRedis(t)
			env := []string{"FROND_SEQUENCES__LEASE_TTL=1s"}
			dirA := t.TempDir()
			a := startSeqNode(t, env, dirA, r.URL(), "1")
			space := fmt.Sprintf("lost-%d", rand.Int64N(1<<40))
			createSpace(t, a, space, 10, 8)
			c := &seqChecker{t: t, space: space, last: map[string]int64{}, by: map[string]string{}}
			const keys = 28
			c.all(keys, map[string]*server{"a": a}) // a takes (raises) every section
			b := startSeqNode(t, env, t.TempDir(), r.URL(), "2")
			nodes := map[string]*server{"a": a, "b": b}
			holds := func(s *server) bool {
				code, body := s.get("/v1/spaces?sections=true")
				return code == 200 && strings.Contains(body, `"held_sections":[`)
			}
			for shared := time.Now().Add(30 * time.Second); !holds(a) || !holds(b); {
				if time.Now().After(shared) {
					t.Fatal("the nodes never shared the sections out")
				}
				c.all(keys, nodes)
			}
			for range 3 {
				c.all(keys, nodes)
			}
			snapshot := copyDir(t, r.Dir)
			for range 6 { // values after the snapshot: the older AOF misses them
				c.all(keys, nodes)
			}
			if c.answered < 9*keys {
				t.Fatalf("only %d answered before the restart (%d refused)", c.answered, c.refused)
			}
			// b's rounds (a third of a lease) read a's last raises; then a
			// is killed and the store goes back.
			time.Sleep(700 * time.Millisecond)
			a.stop(syscall.SIGKILL)
			delete(nodes, "a")
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
				createSpace(t, b, space, 10, 8)
			}
			// Clients on b: nothing goes back, and b comes to refuse every
			// key as lost data (within a round of its reading the store,
			// a third of a lease; on a busy machine, more).
			c.answered, c.refused, c.lost = 0, 0, 0
			for deadline := time.Now().Add(20 * time.Second); ; {
				before := c.lost
				c.all(keys, nodes)
				if c.lost-before == keys {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("20 s after the restart, %d of %d requests refused as lost data (answered %d in all)", c.lost-before, keys, c.answered)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("after the restart: %d answered (above every value before), %d refused, %d of them as lost data", c.answered, c.refused, c.lost)
			if _, m := b.get("/metrics"); !strings.Contains(m, fmt.Sprintf(`frond_keyseq_sections{space=%q,state="lost_data"} 8`, space)) {
				t.Fatalf("b's /metrics does not count the 8 sections refused for lost data (FrondKeyedSequenceStoreLostData)")
			}
			// A node with a new data directory is refused too: the fence
			// is in the store.
			n := startSeqNode(t, env, t.TempDir(), r.URL(), "3")
			for k := range keys {
				if ok, body := c.ask(n, "new", fmt.Sprint("key", k)); ok || !strings.Contains(body, "store_lost_data") {
					t.Fatalf("a node with a new data directory: %v %s", ok, body)
				}
			}
			nodes["new"] = n
			nodes["a"] = startSeqNode(t, env, dirA, r.URL(), "1") // a again, on its data directory
			// a is a member of the space once its space started (at its
			// first request) and its round ran.
			for deadline := time.Now().Add(10 * time.Second); ; {
				c.ask(nodes["a"], "a", "key0")
				if _, body := b.get("/v1/spaces"); strings.Contains(body, `"members":3`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("a did not join the space again")
				}
				time.Sleep(100 * time.Millisecond)
			}
			// Re-armed above every node's floors, gathered by the command.
			code, out, errs := runCLI(t, nil, "space", "rearm", space, "--server", b.url)
			if code != 0 || !strings.Contains(out, "re-armed") {
				t.Fatalf("frond space rearm: %d\n%s%s", code, out, errs)
			}
			if strings.Contains(out, "was not asked") || !strings.Contains(out, "fence") {
				t.Fatalf("frond space rearm:\n%s", out)
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
