package zkregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/registrytest"
	"github.com/go-zookeeper/zk"
)

// FROND_TEST_ZK_SERVERS: a ZooKeeper for the tests, e.g. 127.0.0.1:2181.
// Every test works under its own root /frondtest/{namespace}.

// raw is a plain session on the test ZooKeeper that deletes root, with
// everything under it, when the test ends.
// makeForever creates root and its forever node (and /frondtest), as a Leaf
// cluster leaves them.
func makeForever(t *testing.T, c *zk.Conn, root string) {
	t.Helper()
	for _, p := range []string{"/frondtest", root, root + "/forever"} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

func raw(t testing.TB, servers, root string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkLogger{slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteAll(c, root); err != nil {
			t.Logf("delete %s: %v", root, err)
		}
		c.Close()
	})
	return c
}

func deleteAll(c *zk.Conn, p string) error {
	children, _, err := c.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := deleteAll(c, p+"/"+ch); err != nil {
			return err
		}
	}
	if err := c.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// be is the ZooKeeper backend of a registry this package opened.
func be(r *registry.Protocol) *Backend { return r.Backend().(*Backend) }

func openT(t testing.TB, rawURL string, o registry.Options) *registry.Protocol {
	t.Helper()
	r, err := Open(rawURL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRegistry_Conformance(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	var (
		mu   sync.Mutex
		conn = map[string]*zk.Conn{}
	)
	open := func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
		root := "/frondtest/" + ns
		mu.Lock()
		if conn[root] == nil {
			conn[root] = raw(t, servers, root)
		}
		mu.Unlock()
		host := servers
		if down {
			host = "127.0.0.1:1"
		}
		r, err := Open("zk://"+host+root+"?frond_timeout=3s", o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	registrytest.Run(t, registrytest.Config{
		Open: open, SameIDOnRestart: true, Recycles: true, Peers: true,
		Lose: func(t *testing.T, wr frond.WorkerRegistry) {
			p := wr.(*registry.Protocol)
			r := be(p)
			live := r.livePath(p.Held().ID)
			mu.Lock()
			c := conn[r.cfg.Root]
			mu.Unlock()
			if err := c.Delete(live, -1); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// A root Leaf has used: frond takes the ID of its identity's forever node,
// starts after Leaf's timestamp + 3 s, and writes Leaf's JSON exactly.
func TestLeafCompatibility(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	c := raw(t, servers, root)
	leafTS := time.Now().Add(time.Minute).UnixMilli()
	makeForever(t, c, root)
	for i, id := range []string{"10.0.0.1:8080", "10.0.0.2:8080"} {
		host, port, _ := strings.Cut(id, ":")
		data := fmt.Sprintf(`{"ip":%q,"port":%q,"timestamp":%d}`, host, port, leafTS)
		created, err := c.Create(root+"/forever/"+id+"-", []byte(data), zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil || !strings.HasSuffix(created, fmt.Sprintf("-%010d", i)) {
			t.Fatalf("Leaf's node %d: %q %v", i, created, err)
		}
	}
	r := openT(t, "zk://"+servers+root, registry.Options{Host: "10.0.0.2", Port: 8080})
	w, err := r.Acquire(testenv.Ctx(t), 1023)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.UnixMilli(leafTS).Add(LeafReportLag); w.ID != 1 || !w.LastIssued.Equal(want) {
		t.Fatalf("acquired %+v; want ID 1 with LastIssued %v (Leaf's timestamp + 3 s)", w, want)
	}
	saved := time.UnixMilli(leafTS).Add(5 * time.Second)
	if err := r.Save(testenv.Ctx(t), saved); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get(root + "/forever/10.0.0.2:8080-0000000001")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ep struct {
		IP        string `json:"ip"`
		Port      string `json:"port"`
		Timestamp int64  `json:"timestamp"`
	}
	if err := dec.Decode(&ep); err != nil || ep.IP != "10.0.0.2" || ep.Port != "8080" || ep.Timestamp != saved.UnixMilli() {
		t.Fatalf("forever node %s: %+v %v; want Leaf's fields only, timestamp %d", data, ep, err, saved.UnixMilli())
	}
	// frond's exact time wins over Leaf's once frond wrote last (for the
	// process that continues the claim).
	if err := r.Release(testenv.Ctx(t), saved.Add(123*time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	r2 := openT(t, "zk://"+servers+root, registry.Options{Host: "10.0.0.2", Port: 8080})
	r2.Resume(w.Claim, w.ID)
	w2, err := r2.Acquire(testenv.Ctx(t), 1023)
	if err != nil || w2.ID != 1 || !w2.LastIssued.Equal(saved.Add(123*time.Microsecond)) {
		t.Fatalf("restart: %+v %v; want ID 1 with the exact released time", w2, err)
	}
}

// A Leaf node's ID is never recycled, however old its timestamp: Leaf
// keeps issuing while cut off from ZooKeeper and has no live node to show
// it is alive.
func TestRecycle_LeafNodesKept(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	c := raw(t, servers, root)
	makeForever(t, c, root)
	data := fmt.Sprintf(`{"ip":"10.0.0.1","port":"8080","timestamp":%d}`, time.Now().Add(-time.Hour).UnixMilli())
	if _, err := c.Create(root+"/forever/10.0.0.1:8080-", []byte(data), zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r := openT(t, "zk://"+servers+root, registry.Options{Host: "10.0.0.9", Port: 8080, RecycleAfter: time.Minute})
	if w, err := r.Acquire(testenv.Ctx(t), 0); !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("the only ID is a Leaf node's, last written an hour ago: %+v, %v; want ErrNoWorkerID", w, err)
	}
}

// A node of this identity whose sequence is past the layout (a claim past
// the layout whose delete failed) does not block it.
func TestAcquire_OwnNodePastTheLayout(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	c := raw(t, servers, root)
	makeForever(t, c, root)
	if _, err := c.Create(root+"/forever/10.0.0.9:8080-0000000050", []byte(`{}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r := openT(t, "zk://"+servers+root, registry.Options{Host: "10.0.0.9", Port: 8080})
	if w, err := r.Acquire(testenv.Ctx(t), 3); err != nil || w.ID > 3 {
		t.Fatalf("with a stale node at sequence 50 and IDs 0..3: %+v, %v", w, err)
	}
}

// A Save that timed out on the client but was applied leaves the live node
// a version ahead: the next Save catches up instead of reporting a loss.
func TestSave_AfterAnAppliedTimeout(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	c := raw(t, servers, root)
	r := openT(t, "zk://"+servers+root, registry.Options{Host: "10.0.0.9", Port: 8080})
	w, err := r.Acquire(testenv.Ctx(t), 1023)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(be(r).livePath(w.ID), []byte(`{}`), -1); err != nil { // the applied write
		t.Fatal(err)
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatalf("Save after an applied write: %v", err)
	}
	select {
	case <-w.Lost:
		t.Fatal("reported lost")
	default:
	}
}

// Leaf's bug: nodes starting together on a fresh root all took ID 0.
func TestFreshRoot_ConcurrentStartsDistinct(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	raw(t, servers, root)
	const n = 8
	ids := make(chan int64, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		r := openT(t, "zk://"+servers+root, registry.Options{Host: "10.4.0.1", Port: 9000 + i})
		wg.Go(func() {
			w, err := r.Acquire(testenv.Ctx(t), 1023)
			if err != nil {
				errs <- err
				return
			}
			ids <- w.ID
		})
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("ID %d given twice", id)
		}
		seen[id] = true
	}
}

// A second session with the same identity cannot continue the first one's
// claim: it takes another ID, never the held one. Once the first one stops,
// a process that continues its claim gets the ID back from its exact time.
func TestAcquire_SecondSessionOfIdentity(t *testing.T) {
	servers := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
	root := "/frondtest/" + registrytest.Namespace(t)
	raw(t, servers, root)
	o := registry.Options{Host: "10.6.0.1", Port: 8080}
	a := openT(t, "zk://"+servers+root, o)
	w, err := a.Acquire(testenv.Ctx(t), 1023)
	if err != nil {
		t.Fatal(err)
	}
	b := openT(t, "zk://"+servers+root, o)
	if w2, err := b.Acquire(testenv.Ctx(t), 1023); err != nil || w2.ID == w.ID {
		t.Fatalf("the same identity while held: %+v, %v; want another ID than %d", w2, err, w.ID)
	}
	last := time.Now()
	if err := a.Release(testenv.Ctx(t), last); err != nil {
		t.Fatal(err)
	}
	c := openT(t, "zk://"+servers+root, o)
	c.Resume(w.Claim, w.ID)
	if w3, err := c.Acquire(testenv.Ctx(t), 1023); err != nil || w3.ID != w.ID || !w3.LastIssued.Equal(time.Unix(0, last.UnixNano())) {
		t.Fatalf("continuing the first claim: %+v %v; want ID %d from %v", w3, err, w.ID, last)
	}
}

func TestParseURL(t *testing.T) {
	c, err := ParseURL("zk://a:1,b/snowflake/leaf?frond_session_timeout=6s&frond_timeout=2s")
	if err != nil || strings.Join(c.Servers, ",") != "a:1,b:2181" || c.Root != "/snowflake/leaf" || c.SessionTimeout != 6*time.Second || c.Timeout != 2*time.Second {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := ParseURL("zk://h"); err != nil || c.Root != DefaultRoot || c.Timeout != DefaultTimeout {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for _, u := range []string{"etcd://h", "zk://", "zk://h:0", "zk://h:x", "zk://,h", "zk://h/a//b", "zk://h/a/", "zk://h/a/../b",
		"zk://h/zookeeper", "zk://h?frond_timeout=0s", "zk://h?frond_session_timeout=x", "zk://h?frond_nope=1", "zk://h?a=%zz", "zk://u@h/x"} {
		if _, err := ParseURL(u); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("ParseURL(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"zk://a:1,b/snowflake/leaf?frond_session_timeout=6s", "zk://h", "zk://[::1]:2181/x", "zk://h/%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseURL(s)
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("ParseURL(%q): %v", s, err)
			}
			return
		}
		if len(c.Servers) == 0 || !validPath(c.Root) || c.Timeout <= 0 || c.SessionTimeout < 0 {
			t.Fatalf("ParseURL(%q) accepted %+v", s, c)
		}
	})
}

func TestParseForever(t *testing.T) {
	for name, want := range map[string]node{
		"10.0.0.1:8080-0000000007": {name: "10.0.0.1:8080-0000000007", identity: "10.0.0.1:8080", seq: 7},
		"[::1]:80-0000000123":      {name: "[::1]:80-0000000123", identity: "[::1]:80", seq: 123},
	} {
		if got, ok := parseForever(name); !ok || got != want {
			t.Errorf("parseForever(%q) = %+v %v", name, got, ok)
		}
	}
	for _, name := range []string{"x", "a-1", "a-00000000x1", "a-000000000-1"} {
		if _, ok := parseForever(name); ok {
			t.Errorf("parseForever(%q) accepted", name)
		}
	}
}

// BenchmarkAcquire measures what a start costs: open (connect), acquire,
// release, close.
func BenchmarkAcquire(b *testing.B) {
	servers := testenv.Getenv(b, "FROND_TEST_ZK_SERVERS")
	root := fmt.Sprintf("/frondtest/bench_%d", time.Now().UnixNano())
	raw(b, servers, root)
	for i := 0; b.Loop(); i++ {
		r, err := Open("zk://"+servers+root, registry.Options{Host: "10.9.9.9", Port: 1 + i%500})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Acquire(context.Background(), 1023); err != nil {
			b.Fatal(err)
		}
		if err := r.Release(context.Background(), time.Now()); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
