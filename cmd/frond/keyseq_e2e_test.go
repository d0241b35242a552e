package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	frondclient "github.com/frond-id/frond/client"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
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
	start := func(node string) *server { return startSeqNode(t, env, t.TempDir(), raw, node) }
	a, b := start("1"), start("2")
	space := fmt.Sprintf("e2e-keys-%d", rand.Int64N(1<<40))
	createSpace(t, a, space, 100, 16)
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
		code, body := s.get("/v1/spaces?sections=true")
		var out struct {
			Spaces []struct {
				Name         string
				HeldSections []int `json:"held_sections"`
			}
		}
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("spaces: %d %s", code, body)
		}
		for _, sp := range out.Spaces {
			if sp.Name == space {
				return len(sp.HeldSections)
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

// Issue 58, item 4: two frond serve on one machine, one store (a shared
// SQLite file), no sequences.advertise and no worker.host: each advertises
// the address its HTTP listener is bound to (127.0.0.1:port), checks at
// start that it reaches itself, and every key is served from either node
// (the other half of the keys answered 503 for ever before: each node
// advertised the machine's address, where nothing listened).
func TestE2E_KeyedSequences_TwoNodesOneMachine(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + dir + "/shared.db"
	env := []string{"FROND_SEQUENCES__LEASE_TTL=1s"}
	start := func(node string) *server { return startSeqNode(t, env, t.TempDir(), db, node) }
	a, b := start("1"), start("2")
	space := fmt.Sprintf("one-machine-%d", rand.Int64N(1<<40))
	createSpace(t, a, space, 100, 8)
	last := map[string]int64{}
	deadline := time.Now().Add(30 * time.Second)
	holds := func(s *server) bool {
		code, body := s.get("/v1/spaces?sections=true")
		return code == 200 && strings.Contains(body, `"held_sections":[`) && strings.Contains(body, `"held":`)
	}
	// Every key from either node, before the nodes share the sections out
	// (one owns them all, the other forwards) and after (each forwards
	// to the other).
	for round := 0; round < 2; round++ {
		for round == 1 && !(holds(a) && holds(b)) {
			if time.Now().After(deadline) {
				t.Fatalf("the nodes never shared the sections out")
			}
			time.Sleep(50 * time.Millisecond)
		}
		requestAll(t, space, last, deadline, a, b)
	}
	for _, s := range []*server{a, b} {
		if log := s.log(); !strings.Contains(log, "the advertised address reaches this node") || !strings.Contains(log, `"advertise":"127.0.0.1:`) {
			t.Fatalf("no line saying the advertised address was checked:\n%s", log)
		}
	}
	// An address that does not reach the node is said at start, loudly.
	c, err := startServerEnv(t, append(env, "FROND_SEQUENCES__ADVERTISE="+a.url[len("http://"):]), t.TempDir(), "--store", db, "--node", "3")
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(c.log(), "KEYED SEQUENCE ADVERTISE ADDRESS DOES NOT REACH THIS NODE") {
		if time.Now().After(deadline) {
			t.Fatalf("a node advertising another's address did not say so:\n%s", c.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requestAll asks each server for the next value of 40 keys, each until
// answered (sections move between owners while nodes share them out),
// and checks that every key's values increase.
func requestAll(t *testing.T, space string, last map[string]int64, deadline time.Time, servers ...*server) {
	t.Helper()
	for _, s := range servers {
		for k := range 40 {
			key := fmt.Sprintf("k%d", k)
			for {
				code, body := s.get("/v1/seq/" + space + "/" + key)
				if code == 200 {
					var v struct{ Value int64 }
					json.Unmarshal([]byte(body), &v)
					if v.Value <= last[key] {
						t.Fatalf("%s: %d after %d", key, v.Value, last[key])
					}
					last[key] = v.Value
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s from %s: %d %s\n%s", key, s.url, code, body, s.log())
				}
				time.Sleep(20 * time.Millisecond) // sections between owners while the nodes share them out
			}
		}
	}
}

// Issue 58, item 5: planned changes of the nodes that serve a space (a node
// joining, a clean stop, a rolling restart) while clients ask every live
// node for keys: a section between owners is waited for, not refused, so
// no request is answered 503; every key's values strictly increase. The
// longest answer is logged.
func TestE2E_KeyedSequences_HandOvers(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + dir + "/shared.db"
	env := []string{"FROND_SEQUENCES__LEASE_TTL=1s"}
	start := func(node, data string) *server { return startSeqNode(t, env, data, db, node) }
	dataA, dataB := t.TempDir(), t.TempDir()
	a := start("1", dataA)
	space := fmt.Sprintf("handover-%d", rand.Int64N(1<<40))
	createSpace(t, a, space, 100, 16)
	var mu sync.Mutex
	var keyLocks [40]sync.Mutex // one request of a key at a time: "after" is the order of the answers
	live := []*server{a}
	last := map[string]int64{}
	refused, answered := map[string]int{}, 0
	var longest time.Duration
	phase := "start"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 58))
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				s, ph := live[rnd.IntN(len(live))], phase
				mu.Unlock()
				k := rnd.IntN(40)
				key := fmt.Sprintf("k%d", k)
				keyLocks[k].Lock()
				t0 := time.Now()
				resp, err := http.Get(s.url + "/v1/seq/" + space + "/" + key)
				if err != nil {
					keyLocks[k].Unlock()
					continue // a node going away: the client tries another
				}
				var v struct{ Value int64 }
				body, _ := io.ReadAll(resp.Body)
				json.Unmarshal(body, &v)
				resp.Body.Close()
				d := time.Since(t0)
				mu.Lock()
				switch {
				case resp.StatusCode == 200:
					if v.Value <= last[key] {
						mu.Unlock()
						keyLocks[k].Unlock()
						t.Errorf("%s: %d after %d", key, v.Value, last[key])
						return
					}
					last[key] = v.Value
					answered++
					longest = max(longest, d)
				default:
					if len(refused) < 10 {
						t.Logf("%s: %s from %s: %d %s", ph, key, s.url, resp.StatusCode, body)
					}
					refused[fmt.Sprintf("%s: %d", ph, resp.StatusCode)]++
				}
				mu.Unlock()
				keyLocks[k].Unlock()
			}
		})
	}
	setPhase := func(p string, servers ...*server) {
		mu.Lock()
		phase, live = p, servers
		mu.Unlock()
	}
	holds := func(s *server) bool {
		code, body := s.get("/v1/spaces")
		return code == 200 && !strings.Contains(body, `"held":0`)
	}
	waitShared := func(what string, servers ...*server) {
		deadline := time.Now().Add(20 * time.Second)
		for _, s := range servers {
			for !holds(s) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the sections were never shared out", what)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	// A node joins.
	b := start("2", dataB)
	setPhase("join", a, b)
	waitShared("join", a, b)
	// A clean stop: the clients keep asking the node that stops until it
	// stops listening (it sends their requests on to the new owners), then
	// the node that stays.
	setPhase("clean stop", a, b)
	if err := b.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("b's clean stop: %v", err)
	}
	setPhase("b stopped", a)
	time.Sleep(1500 * time.Millisecond)
	// A rolling restart: b again, then a stopped and started.
	b = start("2", dataB)
	setPhase("restart b", a, b)
	waitShared("restart b", a, b)
	setPhase("restart a", a, b)
	if err := a.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("a's clean stop: %v", err)
	}
	setPhase("a stopped", b)
	a = start("1", dataA)
	setPhase("a back", a, b)
	waitShared("a back", a, b)
	close(stop)
	wg.Wait()
	t.Logf("%d answers over a join, a clean stop and a rolling restart; refused: %v; the longest answer %v", answered, refused, longest.Round(time.Millisecond))
	// None refused: a request for a section between owners waits (up to a
	// lease) for the taker, and a node that stops sends its requests on
	// until it stops listening (a client whose connection is refused tries
	// another node, as every frond client does). Before the wait, the same
	// run was refused 1,039 times (402 at the join alone); with the wait
	// but before a stopping node sent requests on, 0 to 4.
	if len(refused) > 0 {
		t.Errorf("requests refused during planned changes: %v", refused)
	}
}

// Issue 58, item 6: the Go client sends a key to its section's owner, as
// the servers' answers told it (keyseq.RouteHeader), so that once it knows
// the sections a key costs one hop: the nodes forward almost nothing,
// where a client asking any server has about half its requests forwarded.
func TestE2E_KeyedSequences_GoClientRoutes(t *testing.T) {
	a, b, space, last := sharedSpace(t, time.Second, "routes")
	time.Sleep(time.Second) // the last hand-overs done
	forwarded := func() int {
		n := 0
		for _, s := range []*server{a, b} {
			_, body := s.get("/metrics")
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, `frond_keyseq_forwarded_total{space="`+space+`"}`) {
					v, _ := strconv.Atoi(strings.Fields(line)[1])
					n += v
				}
			}
		}
		return n
	}
	run := func(c *frondclient.Client, calls int) int {
		before := forwarded()
		for i := range calls {
			key := fmt.Sprintf("k%d", i%200)
			first, _, err := c.Seq(context.Background(), space, key, 1)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if first <= last[key] {
				t.Fatalf("%s: %d after %d", key, first, last[key])
			}
			last[key] = first
		}
		return forwarded() - before
	}
	c, err := frondclient.New(frondclient.Options{Servers: []string{a.listenAddr("gRPC"), b.listenAddr("gRPC")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	learning := run(c, 400) // the client learns the 16 sections
	routed := run(c, 2000)  // then sends each key to its owner
	t.Logf("forwarded: %d of the first 400 calls, %d of the next 2,000", learning, routed)
	if routed > 20 {
		t.Errorf("%d of 2,000 calls forwarded once the client knew the sections (about 1,000 without routing)", routed)
	}
}

// startSeqNode starts a frond serve node of keyed sequences: on store, as
// node, with its data directory data and the environment env.
func startSeqNode(t *testing.T, env []string, data, store, node string, args ...string) *server {
	t.Helper()
	s, err := startServerEnv(t, env, data, append([]string{"--store", store, "--node", node}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// createSpace creates the keyed sequence space name through s.
func createSpace(t *testing.T, s *server, name string, step, sections int) {
	t.Helper()
	if code, body := s.req("POST", "/v1/spaces", fmt.Sprintf(`{"name":%q,"step":%d,"sections":%d}`, name, step, sections)); code != 201 {
		t.Fatalf("create space: %d %s", code, body)
	}
}

// Issue 72: the Go client rides through the kill -9 of one of two servers
// while 4 callers ask one value of each of 64 keys in turn: no caller sees
// an error (the survivor's 503s while the dead owner's lease runs out are
// asked again, within SeqWait), every key's values increase, and each
// caller's answers come again within 2 s of the survivor taking the dead
// owner's sections (its log says when: about the lease after the kill; the
// bound is on the client, whatever a busy machine does to the servers).
// The lease is 5 s, longer than the default 3 s, so that a call's attempts
// alone (6 on two servers, each resting a second or more) run out before
// the sections are taken: without SeqWait a caller got store_unavailable.
// Every answer over HTTP names the key's section too (Frond-Seq-Section),
// for the other clients.
func TestE2E_KeyedSequences_GoClientRidesThroughAKill(t *testing.T) {
	const lease = 5 * time.Second
	a, b, space, _ := sharedSpace(t, lease, "ride")
	resp, err := http.Get(b.url + "/v1/seq/" + space + "/k1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r, ok := keyseq.ParseRoute(resp.Header.Get("Frond-Seq-Section")); !ok || r.Sections != 16 || r.Section != keyseq.SectionOf("k1", 16) {
		t.Fatalf("an HTTP answer's Frond-Seq-Section: %q", resp.Header.Get("Frond-Seq-Section"))
	}

	c, err := frondclient.New(frondclient.Options{Servers: []string{a.listenAddr("gRPC"), b.listenAddr("gRPC")}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var (
		mu     sync.Mutex
		values = map[string][]int64{}
		gaps   []time.Duration
		errs   []error
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			prev, gap := time.Now(), time.Duration(0)
			defer func() {
				mu.Lock()
				gaps = append(gaps, gap)
				mu.Unlock()
			}()
			for {
				for k := w; k < 64; k += 4 {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("conv-%d", k)
					first, _, err := c.Seq(context.Background(), space, key, 1)
					if err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s: %w", key, err))
						mu.Unlock()
						return
					}
					now := time.Now()
					gap, prev = max(gap, now.Sub(prev)), now
					mu.Lock()
					values[key] = append(values[key], first)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond)
	killed := time.Now()
	a.stop(syscall.SIGKILL)
	time.Sleep(lease + 5*time.Second)
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("callers saw errors through the kill: %v", errs)
	}
	for key, vs := range values {
		for i := 1; i < len(vs); i++ {
			if vs[i] <= vs[i-1] {
				t.Fatalf("%s: %d after %d", key, vs[i], vs[i-1])
			}
		}
	}
	taken := takenAfter(t, b, killed)
	longest := slices.Max(gaps)
	t.Logf("the longest wait of a caller through the kill: %v; the survivor took the sections %v after it", longest, taken)
	if len(gaps) != 4 || longest >= taken+2*time.Second {
		t.Fatalf("callers' longest waits %v: past the sections' take (%v after the kill) and 2 s", gaps, taken)
	}
}

// sharedSpace starts two nodes of keyed sequences on one SQLite file, with
// gRPC, lease_ttl lease, creates a space (16 sections) named after prefix,
// and returns once both serve it and hold a share of its sections, with
// the values each key got meanwhile.
func sharedSpace(t *testing.T, lease time.Duration, prefix string) (a, b *server, space string, last map[string]int64) {
	t.Helper()
	db := "sqlite://" + t.TempDir() + "/shared.db"
	env := []string{"FROND_SEQUENCES__LEASE_TTL=" + lease.String()}
	start := func(node string) *server {
		return startSeqNode(t, env, t.TempDir(), db, node, "--grpc-addr", "127.0.0.1:0")
	}
	a, b = start("1"), start("2")
	space = fmt.Sprintf("%s-%d", prefix, rand.Int64N(1<<40))
	createSpace(t, a, space, 1000, 16)
	// Both nodes serve the space and share the sections out.
	last = map[string]int64{}
	deadline := time.Now().Add(30 * time.Second)
	requestAll(t, space, last, deadline, a, b)
	holds := func(s *server) bool {
		code, body := s.get("/v1/spaces")
		return code == 200 && !strings.Contains(body, `"held":0`)
	}
	for !(holds(a) && holds(b)) {
		if time.Now().After(deadline) {
			t.Fatalf("the nodes never shared the sections out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return a, b, space, last
}

// takenAfter is how long after since s's log first says it took sections.
func takenAfter(t *testing.T, s *server, since time.Time) time.Duration {
	t.Helper()
	for _, line := range strings.Split(s.log(), "\n") {
		var rec struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "keyed sequence: sections taken" && rec.Time.After(since) {
			return rec.Time.Sub(since)
		}
	}
	t.Fatalf("%s never took sections after %v:\n%s", s.url, since, s.log())
	return 0
}
