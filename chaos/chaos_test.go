//go:build chaos

// Package chaos is frond's reliability suite: three real frond serve
// processes share segment stores and a worker registry, each reached
// through TCP proxies the test cuts, while clients take IDs of every kind
// from all three and faults strike at random (seeded): kill -9, SIGTERM,
// SIGSTOP past the registry lease, store and registry cuts, clock steps.
// A checker then proves DESIGN.md's guarantees held:
//
//   - no segment ID twice per tag, no snowflake ID twice across the nodes;
//   - one process's snowflake IDs increase (a sequential client per node);
//   - no request took longer than 5 s, except to a stopped process;
//   - every error is an honest code with its documented status (no
//     internal error, no malformed body);
//   - a node that served a tag keeps serving it from its buffers through a
//     store cut (a probe tag at 5 requests/s against 1,000-ID segments);
//   - every node serves both kinds again once the faults end;
//   - a sequence tag's IDs are unique and, on one store (redis-zk),
//     linearizable: an answer that arrived before another request was sent
//     has smaller IDs (docs/kinds.md#sequence-tags).
//
// The registry runs with lease_ttl 3 s and recycle_after 10 s, and all but
// three of the javascript layout's 64 worker IDs are reserved (etcd: used
// IDs with a last time a day ahead; ZooKeeper: Leaf nodes), so a new
// identity must take a gone node's ID. Half the SIGSTOPs and a third of the
// single-node registry cuts last past recycle_after while another node
// restarts as a new identity and takes the away node's ID (steal_hit in the
// summary); the away node must not issue with it after SIGCONT or the cut.
//
// Segment order is not checked: with several stores a node's IDs may step
// back once after a fail-over (docs/stores.md).
//
// Run it (the servers' addresses as for the other real-server tests):
//
//	go test -tags chaos -run TestChaos ./chaos -count=1 -v -timeout 20m \
//	    -chaos.duration=2m -chaos.seed=0 -chaos.variant=sql-etcd
//
// The seed fixes the schedule of faults and the clients' choices; the
// interleaving with the processes is up to the machine, so a seed makes a
// failure likely to recur, not certain. Each process's log is written to
// tmp/chaos-<variant>-<seed>/ in the module root, and kept when the run
// fails (or with -chaos.keeplogs). -chaos.faults picks the faults
// (kill9,sigterm,sigstop,store_cut,registry_cut,clock_step,fresh_dir,
// set_change: frond stores set with the stores in a random order), and
// -chaos.sabotage gives every node the same worker ID, to see the checker
// fail.
//
// Keyed sequences: the run reports, per fault kind, the longest a section
// went unanswered (a refusal to the next answer) while that fault alone was
// in effect, and during several at once. With -chaos.serial the faults come
// one at a time, each a lease and 2 s after the last healed, and an outage
// of a single fault longer than a lease and 2 s fails the run (issue 58,
// item 5; counted from the heal when no node could reach the keyed store).
package chaos

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/storetest/dbtest"
)

var (
	durationFlag = flag.Duration("chaos.duration", 2*time.Minute, "how long the faults run")
	seedFlag     = flag.Uint64("chaos.seed", 0, "seed of the faults and the clients' choices; 0: from the clock (printed)")
	variantFlag  = flag.String("chaos.variant", "sql-etcd", "sql-etcd: MariaDB + PostgreSQL stores, etcd registry; redis-zk: Redis store, ZooKeeper registry")
	sabotageFlag = flag.Bool("chaos.sabotage", false, "give every node worker ID 1 (registry static:1): the run must fail with duplicate snowflake IDs, which shows the checker catches them")
	keepLogsFlag = flag.Bool("chaos.keeplogs", false, "keep the processes' logs of a run that passed (a failed run's are always kept)")
	serialFlag   = flag.Bool("chaos.serial", false, "one fault at a time, each struck a lease and 2 s after the last healed: every keyed sequence outage is a single fault's, and held to its bound")
	faultsFlag   = flag.String("chaos.faults", "kill9,sigterm,sigstop,store_cut,registry_cut,clock_step,fresh_dir,set_change", "the faults to inject, comma-separated")
)

// The worker registry's timing, short so that leases run out and worker IDs
// are recycled within a run.
const (
	leaseTTL     = 3 * time.Second
	recycleAfter = 10 * time.Second
	// layout has 64 worker IDs; the suite reserves all but poolSize,
	// one per node: a new identity must take a recycled ID (a node stopped
	// or cut off past recycle_after loses its ID to the next one).
	layout   = "javascript"
	maxNode  = 63
	poolSize = 3
)

// numTags tags take the mixed clients' requests; one more is the probe tag.
const numTags = 4

// The tags: numTags segment tags, then the horizon's probe tag (index
// numTags), then a sequence tag (seqTag): its IDs must be unique and, on a
// single store, linearizable.
const (
	probeTag = numTags
	seqTag   = numTags + 1
)

// harness is the cluster under test and what it recorded.
type harness struct {
	t       *testing.T
	variant string
	stores  int // how many stores each node combines
	binary  string
	logDir  string
	dataDir string
	ns      string // this run's name in the shared servers
	tags    []string
	nodes   []*node
	http    *http.Client
	faults  map[string]bool

	storeURL    func(i int, addr string) string
	registryURL func(addr string) string
	setURLs     []string // the stores, reached directly (set_change); nil: one store
	space       string   // the keyed sequence space; "" when the variant has no SQL store

	mu           sync.Mutex
	counts       map[string]int // faults injected
	startRetries int
	holders      map[int64]string // worker ID -> identity that last held it
	recycled     int
	lost         int                // log lines saying a node lost the worker ID it held
	storeCuts    map[int][]interval // per node: when any of its stores was cut
	faultErrs    []string
	nextIdentity int
	changing     sync.Mutex  // set_change: one at a time
	spans        []faultSpan // every fault, when it struck and healed (the keyed sequences' outages by fault)
}

// faultSpan is one fault: from when it struck to when it healed (a node
// up again, a cut restored, a clock back). keyedDown: no node could reach
// the keyed sequence store meanwhile (its store cut on every node), so its
// sections may go unanswered for the whole fault.
type faultSpan struct {
	kind      string
	from, to  time.Time
	keyedDown bool
}

// span records a fault that struck at from and healed now.
func (h *harness) span(kind string, from time.Time, keyedDown bool) {
	h.mu.Lock()
	h.spans = append(h.spans, faultSpan{kind: kind, from: from, to: time.Now(), keyedDown: keyedDown})
	h.mu.Unlock()
}

func (h *harness) count(p *int) {
	h.mu.Lock()
	*p++
	h.mu.Unlock()
}

func (h *harness) tally(fault string) {
	h.mu.Lock()
	h.counts[fault]++
	h.mu.Unlock()
}

func (h *harness) faultErr(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.t.Log("FAULT ERROR: " + msg)
	h.mu.Lock()
	h.faultErrs = append(h.faultErrs, msg)
	h.mu.Unlock()
}

func (h *harness) lostID() {
	h.mu.Lock()
	h.lost++
	h.mu.Unlock()
}

// held records a node's log line saying it holds a worker ID: a holder other
// than the ID's last one means the ID was recycled.
func (h *harness) held(worker int64, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.holders[worker]; ok && prev != owner {
		h.recycled++
	}
	h.holders[worker] = owner
}

func (h *harness) newIdentity() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextIdentity++
	return h.nextIdentity
}

func (h *harness) newDataDir() string {
	dir, err := os.MkdirTemp(h.dataDir, "node")
	if err != nil {
		h.t.Fatal(err)
	}
	return dir
}

func (h *harness) logf(format string, args ...any) {
	h.t.Logf("%s "+format, append([]any{time.Now().UTC().Format("15:04:05.000")}, args...)...)
}

// cutter cuts a proxy for overlapping faults: it forwards again only when
// the last cut ends.
type cutter struct {
	p     *storetest.Proxy
	mu    sync.Mutex
	cuts  int // cuts in force
	began int // cuts begun, ever
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.began++
	if c.cuts++; c.cuts == 1 {
		c.p.Cut()
	}
}

// state says whether the proxy is cut now and how many cuts began so far.
func (c *cutter) state() (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cuts > 0, c.began
}

// cutDuring runs f and reports whether the proxy was cut at any time meanwhile.
func (c *cutter) cutDuring(f func()) bool {
	before, n := c.state()
	f()
	after, m := c.state()
	return before || after || m != n
}

func (c *cutter) restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cuts--; c.cuts == 0 {
		c.p.Restore()
	}
}

func withParams(rawURL, params string) string {
	if strings.Contains(rawURL, "?") {
		return rawURL + "&" + params
	}
	return rawURL + "?" + params
}

// moduleRoot is the directory of go.mod.
func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("go env GOMOD: %v %s", err, out)
	}
	return filepath.Dir(string(bytes.TrimSpace(out)))
}

func TestChaos(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	h := &harness{t: t, variant: *variantFlag, counts: map[string]int{}, holders: map[int64]string{},
		storeCuts: map[int][]interval{}, faults: map[string]bool{}, nextIdentity: 17300,
		ns: fmt.Sprintf("chaos_%d", time.Now().UnixNano())}
	for _, f := range strings.Split(*faultsFlag, ",") {
		h.faults[strings.TrimSpace(f)] = true
	}
	t.Logf("chaos: seed %d, variant %s, duration %v, faults %s (rerun with -chaos.seed=%d)", seed, h.variant, *durationFlag, *faultsFlag, seed)

	var storeTargets []string
	var registryTarget string
	switch h.variant {
	case "sql-etcd":
		my := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
		pg := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
		ep := testenv.Getenv(t, "FROND_TEST_ETCD_ENDPOINTS")
		storeTargets = []string{storetest.HostOf(t, my, "3306"), storetest.HostOf(t, pg, "5432")}
		registryTarget = strings.Split(ep, ",")[0]
		// Databases of the run's own, placed as one set (frond stores set):
		// the set changes during the run (set_change), and nodes list the
		// stores in different orders (node.start): the place is the store's.
		raw := dbtest.PlacedSet(t, func(ctx context.Context, url string) (frond.SegmentStore, error) {
			return sqlstore.Open(ctx, url, sqlstore.Options{})
		}, my, pg)
		h.setURLs = raw
		h.storeURL = func(i int, addr string) string {
			return withParams(storetest.WithHost(t, raw[i], addr), "frond_timeout=2s")
		}
		h.registryURL = func(addr string) string {
			return "etcd://" + addr + "?frond_prefix=/frondtest/" + h.ns + "/&frond_timeout=2s"
		}
		h.space = strings.ReplaceAll(h.ns, "_", "-") + "-keys"
		reserveEtcdIDs(t, strings.Split(ep, ","), "/frondtest/"+h.ns+"/")
	case "redis-zk":
		rd := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
		zk := testenv.Getenv(t, "FROND_TEST_ZK_SERVERS")
		storeTargets = []string{storetest.HostOf(t, rd, "6379")}
		registryTarget = strings.Split(zk, ",")[0]
		h.storeURL = func(_ int, addr string) string {
			// The CI's Redis runs without persistence: accept it (IDs
			// would repeat after a Redis crash, which this suite does not
			// inject).
			return withParams(storetest.WithHost(t, rd, addr), "frond_allow_volatile=true&frond_prefix=frondtest:"+h.ns+":&frond_timeout=2s")
		}
		h.registryURL = func(addr string) string {
			return "zk://" + addr + "/frondtest/" + h.ns + "?frond_timeout=2s"
		}
		reserveZKIDs(t, strings.Split(zk, ","), "/frondtest/"+h.ns)
	default:
		t.Fatalf("-chaos.variant=%q: sql-etcd or redis-zk", h.variant)
	}

	h.stores = len(storeTargets)
	if *sabotageFlag {
		h.registryURL = func(string) string { return "static:1" }
	}

	root := moduleRoot(t)
	h.binary = filepath.Join(root, "tmp", "frond")
	build := exec.Command("go", "build", "-o", h.binary, "./cmd/frond")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/frond: %v\n%s", err, out)
	}
	h.logDir = filepath.Join(root, "tmp", fmt.Sprintf("chaos-%s-%d", h.variant, seed))
	os.RemoveAll(h.logDir)
	if err := os.MkdirAll(h.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.dataDir = t.TempDir()
	h.http = &http.Client{Timeout: clientTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	for i := range 3 {
		n := &node{h: h, idx: i, offsetFile: filepath.Join(h.dataDir, fmt.Sprintf("offset%d", i)),
			dataDir: h.newDataDir(), identity: h.newIdentity()}
		for _, target := range storeTargets {
			n.stores = append(n.stores, &cutter{p: storetest.StartProxy(t, target)})
		}
		n.reg = &cutter{p: storetest.StartProxy(t, registryTarget)}
		if err := n.setOffset(0); err != nil {
			t.Fatal(err)
		}
		h.nodes = append(h.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range h.nodes {
			n.signal(syscall.SIGCONT)
			n.stop(syscall.SIGKILL)
		}
	})
	for _, n := range h.nodes {
		if err := n.startRetry(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range seqTag + 1 {
		step, mode := 100, "segment"
		switch i {
		case probeTag:
			step = 2000 // 1,000 IDs a segment per store
		case seqTag:
			step, mode = 1, "sequence"
		}
		h.tags = append(h.tags, fmt.Sprintf("%s-%d", strings.ReplaceAll(h.ns, "_", "-"), i))
		h.createTag(h.tags[i], step, mode)
	}
	t.Cleanup(h.deleteTags)
	if h.space != "" {
		h.createSpace()
	}
	h.logf("nodes up, tags %v, keyed sequence space %q; logs in %s", h.tags, h.space, h.logDir)

	// Clients.
	stop := make(chan struct{})
	results := make(chan *result)
	clients := 0
	spawn := func(f func(c *client)) {
		clients++
		c := &client{h: h, rng: rand.New(rand.NewPCG(seed, uint64(clients))), res: newResult()}
		go func() { f(c); results <- c.res }()
	}
	const maxRequests = 50_000_000
	for range 4 {
		spawn(func(c *client) { c.mixed(stop, maxRequests) })
	}
	for _, n := range h.nodes {
		spawn(func(c *client) { c.sequential(n, stop, maxRequests) })
		spawn(func(c *client) { c.horizon(n, stop, maxRequests) })
	}
	for range 2 {
		spawn(func(c *client) { c.sequence(stop, maxRequests) })
	}
	if h.space != "" {
		for range 4 { // a request held by a node stopped as it was asked holds its client: the others still ask
			spawn(func(c *client) { c.keyed(stop, maxRequests) })
		}
	}

	// Faults.
	deadline := time.Now().Add(*durationFlag)
	var fw sync.WaitGroup
	workers, rest := 2, time.Duration(0)
	if *serialFlag {
		// Faults do not overlap: each outage has one cause.
		workers, rest = 1, keyedBound
	}
	for w := range workers {
		fw.Add(1)
		rng := rand.New(rand.NewPCG(seed, 1000+uint64(w)))
		go func() {
			defer fw.Done()
			// Serial: the start is a cause too (no keyed section is owned
			// until the nodes' first rounds), so the first fault waits as
			// every later one does; a fault at the very start measured the
			// start's outage with it (6.6 s with a store cut at 0 ms, on
			// 9db6f9c as on issue 67's code: -chaos.seed=1795939728104403555).
			if *serialFlag {
				time.Sleep(rest)
			}
			for time.Now().Before(deadline) {
				h.fault(rng)
				time.Sleep(rest + time.Duration(500+rng.IntN(2000))*time.Millisecond)
			}
		}()
	}
	fw.Wait()
	h.logf("faults over; every node must serve both kinds again")
	final := &client{h: h, rng: rand.New(rand.NewPCG(seed, 999)), res: newResult()}
	h.recover(final)
	close(stop)
	all := []*result{final.res}
	for range clients {
		all = append(all, <-results)
	}
	h.deleteTags()
	for _, n := range h.nodes {
		if err := n.stop(syscall.SIGTERM); err != nil {
			h.faultErr("node %d: exit after the final SIGTERM: %v", n.idx, err)
		}
	}
	h.check(seed, all)
}

// reserveEtcdIDs marks worker IDs poolSize..maxNode as used in the run's
// etcd namespace, with a last time a day ahead: they are never taken, so
// once poolSize identities have held IDs a new identity must take a
// recycled one. (The keys are the etcd registry's: docs/registries.md.)
func reserveEtcdIDs(t *testing.T, endpoints []string, prefix string) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	last := time.Now().Add(24 * time.Hour).UnixNano()
	for id := poolSize; id <= maxNode; id++ {
		v := fmt.Sprintf(`{"owner":"chaos-reserved:%d","last_ns":%d}`, id, last)
		if _, err := c.Put(ctx, fmt.Sprintf("%sworkers/ids/%d", prefix, id), v); err != nil {
			t.Fatalf("reserve worker IDs in etcd: %v", err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Delete(ctx, prefix, clientv3.WithPrefix())
		c.Close()
	})
}

// reserveZKIDs creates sequence numbers 0..maxNode-poolSize as Leaf nodes
// under root/forever (Leaf's layout: frond never recycles a Leaf node's
// ID), so that the run's nodes get the last poolSize IDs and a new identity
// must take over a gone frond node's ID. The run's tree is deleted at the end.
func reserveZKIDs(t *testing.T, servers []string, root string) {
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	path := ""
	for _, part := range strings.Split(strings.TrimPrefix(root+"/forever", "/"), "/") {
		path += "/" + part
		if _, err := conn.Create(path, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s in ZooKeeper: %v", path, err)
		}
	}
	data := fmt.Sprintf(`{"ip":"10.255.0.1","port":"1","timestamp":%d}`, time.Now().Add(24*time.Hour).UnixMilli())
	for range maxNode + 1 - poolSize {
		if _, err := conn.Create(path+"/10.255.0.1:1-", []byte(data), zk.FlagSequence, acl); err != nil {
			t.Fatalf("reserve worker IDs in ZooKeeper: %v", err)
		}
	}
	t.Cleanup(func() {
		var remove func(p string)
		remove = func(p string) {
			children, _, err := conn.Children(p)
			if err != nil {
				return
			}
			for _, c := range children {
				remove(p + "/" + c)
			}
			conn.Delete(p, -1)
		}
		// Ephemeral nodes of killed processes outlive them by a session
		// timeout.
		for try := 0; try < 4; try++ {
			if remove(root); try == 3 {
				break
			}
			if ok, _, err := conn.Exists(root); err != nil || !ok {
				break
			}
			time.Sleep(3 * time.Second)
		}
		conn.Close()
	})
}

func (h *harness) liveURL() string {
	for _, n := range h.nodes {
		if u, _ := n.current(); u != "" {
			return u
		}
	}
	return ""
}

// createSpace creates the run's keyed sequence space.
func (h *harness) createSpace() {
	body := fmt.Sprintf(`{"name":%q,"step":1000,"sections":%d}`, h.space, keySections)
	resp, err := h.http.Post(h.liveURL()+"/v1/spaces", "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		h.t.Fatalf("create space %s: %d %s", h.space, resp.StatusCode, b)
	}
}

func (h *harness) createTag(name string, step int, mode string) {
	body := fmt.Sprintf(`{"name":%q,"step":%d,"mode":%q}`, name, step, mode)
	resp, err := h.http.Post(h.liveURL()+"/v1/tags", "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		h.t.Fatalf("create tag %s: %d", name, resp.StatusCode)
	}
}

// deleteTags removes the run's tags from the shared stores.
func (h *harness) deleteTags() {
	u := h.liveURL()
	if u == "" {
		return // the nodes have stopped: the run's tags stay (unique names)
	}
	for _, tag := range h.tags {
		req, _ := http.NewRequest("DELETE", u+"/v1/tags/"+tag, nil)
		if resp, err := h.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// changeSet changes the set of stores while the nodes run, by the
// documented procedure (frond stores set, docs/stores.md): the stores in a
// random order, so that each store's residue changes half of the time.
// Half of the time a first run is killed (SIGKILL) at a random moment, and
// then rerun with another list (refused while its change is recorded), or
// abandoned, before the change is run to the end (issue 42).
func (h *harness) changeSet(rng *rand.Rand) {
	if len(h.setURLs) < 2 {
		return
	}
	order := slices.Clone(h.setURLs)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	h.changing.Lock() // one change at a time, as an operator would
	defer h.changing.Unlock()
	h.tally("set_change")
	defer h.span("set_change", time.Now(), false)
	if rng.IntN(2) == 0 {
		h.killChange(rng, order)
	}
	h.logf("changing the set of stores (frond stores set), new order: %d stores", len(order))
	if out, err := h.storesSet("--store", strings.Join(order, " ")); err != nil {
		h.faultErr("frond stores set: %v\n%s", err, out)
		return
	}
	h.logf("the set of stores changed")
}

// storesSet runs frond stores set with args.
func (h *harness) storesSet(args ...string) ([]byte, error) {
	cmd := exec.Command(h.binary, append([]string{"stores", "set", "--data-dir", h.dataDir}, args...)...)
	cmd.Env = append(os.Environ(), "FROND_CONFIG=")
	return cmd.CombinedOutput()
}

// killChange runs frond stores set with order and kills it at a random
// moment, then reruns it with another list (a store left out, or another
// order), which must be refused unless the killed run had fenced nothing
// or had finished, or abandons it.
func (h *harness) killChange(rng *rand.Rand, order []string) {
	cmd := exec.Command(h.binary, "stores", "set", "--data-dir", h.dataDir, "--store", strings.Join(order, " "))
	cmd.Env = append(os.Environ(), "FROND_CONFIG=")
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		h.faultErr("frond stores set: %v", err)
		return
	}
	if err := cmd.Start(); err != nil {
		h.faultErr("frond stores set: %v", err)
		return
	}
	// It prints a line at each write (fenced, raised, placed): killed
	// after a random one of them, before the last.
	after := 1 + rng.IntN(3*len(order))
	lines := bufio.NewScanner(pipe)
	var last string
	for n := 0; n < after && lines.Scan(); {
		if last = lines.Text(); strings.HasPrefix(last, "fenced ") || strings.HasPrefix(last, "raised ") || strings.Contains(last, " is now ") {
			n++
		}
	}
	cmd.Process.Kill()
	go io.Copy(io.Discard, pipe)
	cmd.Wait()
	show := exec.Command(h.binary, "stores", "show", "--data-dir", h.dataDir, "--store", strings.Join(order, " "))
	show.Env = cmd.Env
	out, _ := show.CombinedOutput()
	fenced := bytes.Contains(out, []byte("fenced: change"))
	if fenced {
		h.tally("set_change_killed_midway")
	}
	h.logf("frond stores set killed after its line %q (stores fenced: %v)", last, fenced)
	switch rng.IntN(3) {
	case 0:
		other := slices.Clone(order)
		if rng.IntN(2) == 0 {
			other = other[:len(other)-1] // a store left out
		} else {
			other[0], other[1] = other[1], other[0]
		}
		out, err := h.storesSet("--store", strings.Join(other, " "))
		switch {
		case err == nil && fenced:
			h.faultErr("frond stores set with another list was accepted while a change was recorded:\n%s", out)
		case err != nil && !bytes.Contains(out, []byte("is fenced by change")) && !bytes.Contains(out, []byte("not among the stores given")):
			h.faultErr("frond stores set with another list: %v\n%s", err, out)
		}
		h.logf("the rerun with another list: %v", err)
	case 1:
		out, err := h.storesSet("--abandon", "--store", strings.Join(order, " "))
		if err != nil && !bytes.Contains(out, []byte("nothing to abandon")) {
			h.faultErr("frond stores set --abandon: %v\n%s", err, out)
		}
		h.logf("the abandon: %v, %s", err, bytes.TrimSpace(out))
	}
}

// fault injects one random fault among those enabled and heals it.
func (h *harness) fault(rng *rand.Rand) {
	kinds := []string{"kill9", "kill9", "sigterm", "sigstop", "sigstop", "store_cut", "store_cut", "store_cut", "registry_cut", "registry_cut", "clock_step", "clock_step", "set_change"}
	k := kinds[rng.IntN(len(kinds))]
	if !h.faults[k] {
		return
	}
	if k == "set_change" {
		h.changeSet(rng)
		return
	}
	// Cuts of every node's connections at once need no node to themselves.
	all := (k == "store_cut" || k == "registry_cut") && rng.IntN(4) == 0
	n := h.nodes[rng.IntN(len(h.nodes))]
	if !all {
		if !n.busy.TryLock() {
			return
		}
		defer n.busy.Unlock()
	}
	d := time.Duration(2000+rng.IntN(8000)) * time.Millisecond // cuts: 2-10 s
	switch k {
	case "kill9":
		h.restart(n, syscall.SIGKILL, rng)
	case "sigterm":
		h.restart(n, syscall.SIGTERM, rng)
	case "sigstop":
		h.tally("sigstop")
		// Past the lease: the node's worker ID may be taken meanwhile.
		// Past recycle_after (plus the 2 s a save reserves): another node
		// with a new identity takes a recycled ID while this one sleeps.
		steal := rng.IntN(2) == 0 && h.faults["fresh_dir"]
		pause := leaseTTL + time.Duration(1000+rng.IntN(5000))*time.Millisecond
		if steal {
			pause = recycleAfter + 4*time.Second + time.Duration(rng.IntN(2000))*time.Millisecond
		}
		h.logf("sigstop node %d for %v (steal %v)", n.idx, pause, steal)
		from := time.Now()
		n.pause()
		if steal {
			h.steal(n, from, rng)
		}
		time.Sleep(time.Until(from.Add(pause)))
		n.resume()
		h.span("sigstop", from, false)
		h.logf("sigcont node %d", n.idx)
	case "store_cut", "registry_cut":
		h.tally(k)
		// A partition from the registry past recycle_after, while another
		// node takes a recycled ID: the cut node must have stopped issuing
		// with its ID by then.
		partition := k == "registry_cut" && !all && h.faults["fresh_dir"] && rng.IntN(3) == 0
		if partition {
			h.tally("registry_partition")
			d = recycleAfter + 4*time.Second + time.Duration(rng.IntN(2000))*time.Millisecond
		}
		nodes := []*node{n}
		if all {
			nodes = h.nodes
		}
		var cs []*cutter
		what := "registry"
		if k == "store_cut" {
			// One store (a multi-store fails over) or all of them.
			which := rng.IntN(len(n.stores) + 1)
			what = "all stores"
			if which < len(n.stores) && len(n.stores) > 1 {
				what = fmt.Sprintf("store %d", which)
			}
			for _, m := range nodes {
				for i, c := range m.stores {
					if what == "all stores" || i == which {
						cs = append(cs, c)
					}
				}
			}
		} else {
			for _, m := range nodes {
				cs = append(cs, m.reg)
			}
		}
		h.logf("cut %s of %s for %v", what, nodeNames(nodes), d)
		from := time.Now()
		for _, c := range cs {
			c.cut()
		}
		if partition {
			h.steal(n, from, rng)
		}
		time.Sleep(time.Until(from.Add(d)))
		for _, c := range cs {
			c.restore()
		}
		if k == "store_cut" {
			h.mu.Lock()
			for _, m := range nodes {
				h.storeCuts[m.idx] = append(h.storeCuts[m.idx], interval{from, time.Now()})
			}
			h.mu.Unlock()
		}
		// The keyed sequences live on the first store: cut on every node,
		// no node can take or renew a section.
		h.span(k, from, k == "store_cut" && all && (what == "all stores" || what == "store 0"))
		h.logf("restored %s of %s", what, nodeNames(nodes))
	case "clock_step":
		h.tally(k)
		step := -2 * time.Second
		if rng.IntN(2) == 0 {
			step = 3 * time.Second
		}
		hold := time.Duration(3000+rng.IntN(2000)) * time.Millisecond
		// A third of the steps back come with a crash: kill -9 and a
		// restart behind the times the node recorded.
		behind := step < 0 && h.faults["kill9"] && rng.IntN(3) == 0
		h.logf("node %d: clock %v for %v, then back (kill -9 and restart behind: %v)", n.idx, step, hold, behind)
		from := time.Now()
		defer func() {
			kind := "clock_step"
			if behind {
				kind = "restart_behind"
			}
			h.span(kind, from, false)
		}()
		if behind {
			h.tally("restart_behind")
			h.tally("kill9")
			n.stop(syscall.SIGKILL)
		}
		if err := n.setOffset(step); err != nil {
			h.faultErr("%v", err)
		}
		if behind {
			if err := n.startRetry(); err != nil {
				h.faultErr("restart node %d behind: %v", n.idx, err)
			}
		}
		time.Sleep(hold)
		if err := n.setOffset(0); err != nil {
			h.faultErr("%v", err)
		}
	}
}

// steal waits until recycle_after + 2.5 s after from, when n (stopped or
// cut from the registry since from) has had its worker ID recyclable for
// half a second, then restarts another node with a fresh data directory as a
// new identity, which takes a recycled ID: n's if it is the first free one.
func (h *harness) steal(n *node, from time.Time, rng *rand.Rand) {
	victim := n.held()
	time.Sleep(time.Until(from.Add(recycleAfter + 2500*time.Millisecond)))
	m := h.nodes[(n.idx+1+rng.IntN(2))%len(h.nodes)]
	if !m.busy.TryLock() {
		return
	}
	defer m.busy.Unlock()
	h.tally("steal")
	h.logf("node %d: kill -9 and a new identity while node %d (worker %d) is away", m.idx, n.idx, victim)
	h.restartAs(m, syscall.SIGKILL, true, true)
	deadline := time.Now().Add(5 * time.Second)
	for m.held() < 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if w := m.held(); w >= 0 && w == victim {
		h.tally("steal_hit")
		h.logf("node %d took worker ID %d of node %d", m.idx, w, n.idx)
	}
}

func nodeNames(nodes []*node) string {
	if len(nodes) > 1 {
		return "every node"
	}
	return fmt.Sprintf("node %d", nodes[0].idx)
}

// restart stops n with sig and starts it again: on its data directory, or
// (with fresh_dir enabled, one time in four) on a fresh one, half of those
// times also as a new identity.
func (h *harness) restart(n *node, sig syscall.Signal, rng *rand.Rand) {
	fresh := h.faults["fresh_dir"] && rng.IntN(4) == 0
	if fresh && h.faults["registry_cut"] && rng.IntN(3) == 0 {
		// No local record and no registry: the node starts without a worker
		// ID and takes one when the registry answers again.
		h.tally("fresh_dir_cut")
		h.logf("cut registry of node %d for its restart", n.idx)
		n.reg.cut()
		h.restartAs(n, sig, true, rng.IntN(2) == 0)
		time.Sleep(time.Duration(2000+rng.IntN(4000)) * time.Millisecond)
		n.reg.restore()
		h.logf("restored registry of node %d", n.idx)
		return
	}
	h.restartAs(n, sig, fresh, fresh && rng.IntN(2) == 0)
}

func (h *harness) restartAs(n *node, sig syscall.Signal, fresh, newIdentity bool) {
	name := map[syscall.Signal]string{syscall.SIGKILL: "kill9", syscall.SIGTERM: "sigterm"}[sig]
	h.tally(name)
	from := time.Now()
	defer h.span(name, from, false)
	var err error
	regCut := n.reg.cutDuring(func() { err = n.stop(sig) })
	switch {
	case sig != syscall.SIGTERM:
	case err == nil && regCut:
		// A clean stop with the registry unreachable: the last reservation
		// stands, and the process exits 0 (it exited 1 before).
		h.tally("sigterm_registry_cut")
	case err == nil:
	default:
		h.faultErr("node %d: exit after SIGTERM: %v\n%s", n.idx, err, n.logTail())
	}
	n.mu.Lock()
	if fresh {
		n.dataDir = h.newDataDir()
		h.tally("fresh_dir")
	}
	if newIdentity {
		n.identity = h.newIdentity()
		h.tally("new_identity")
	}
	n.mu.Unlock()
	h.logf("%s node %d; restart (fresh dir %v, new identity %v)", name, n.idx, fresh, newIdentity)
	for try := 0; ; try++ {
		err := n.startRetry()
		if err == nil {
			break
		}
		h.faultErr("restart node %d: %v", n.idx, err)
		if try == 2 {
			return
		}
		time.Sleep(2 * time.Second)
	}
	_, life := n.current()
	h.logf("node %d up (life %d)", n.idx, life)
}

// recover waits until every node answers a snowflake ID and a segment ID
// (leases, recycling and clock waits settle within about 30 s).
func (h *harness) recover(c *client) {
	for _, n := range h.nodes {
		if u, _ := n.current(); u == "" {
			h.faultErr("node %d is down after the faults", n.idx)
			continue
		}
		deadline := time.Now().Add(45 * time.Second)
		for _, k := range []kind{v1SnowflakeOne, v1SegmentOne} {
			for {
				cl, _ := c.do(n, k, 0, 1)
				if cl.outcome == "ok" {
					break
				}
				if time.Now().After(deadline) {
					h.faultErr("node %d does not serve kind %d 45 s after the faults: last outcome %s", n.idx, k, cl.outcome)
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// check merges the clients' results, checks the guarantees, and prints the
// summary line.
func (h *harness) check(seed uint64, results []*result) {
	t := h.t
	total := 0
	for _, r := range results {
		total += len(r.recs)
	}
	recs := make([]rec, 0, total)
	codes := map[string]int{}
	var failures []string
	nFailures, slow, requests := 0, 0, 0
	probes := map[int][]probe{}
	var seqOps []seqOp
	keyOps := map[int][]seqOp{}
	var tries []secTry
	for _, r := range results {
		seqOps = append(seqOps, r.seqOps...)
		for k, ops := range r.keyOps {
			keyOps[k] = append(keyOps[k], ops...)
		}
		tries = append(tries, r.tries...)
		recs = append(recs, r.recs...)
		r.recs = nil
		for c, k := range r.codes {
			codes[c] += k
		}
		failures = append(failures, r.failures...)
		nFailures += r.nFailures
		slow += r.slow
		requests += r.requests
		for _, p := range r.probes {
			probes[p.node] = append(probes[p.node], p)
		}
	}

	// Uniqueness: per tag for segment IDs, across all nodes for snowflake.
	pairs, segments, snowflakes := duplicates(recs)
	dups := len(pairs)
	for i, pair := range pairs {
		if i == 20 {
			t.Errorf("... and %d more duplicates", dups-20)
			break
		}
		p, r := pair[0], pair[1]
		what := "snowflake"
		if r.tag != snowflakeTag {
			what = "segment (tag " + h.tags[r.tag] + ")"
		}
		t.Errorf("%s ID %d issued twice: node %d life %d and node %d life %d", what, r.id, p.node, p.life, r.node, r.life)
	}

	// The buffers' horizon: through a store cut, a node whose current life
	// had served the probe tag before the cut keeps serving it.
	during, refused := 0, 0
	for idx, cuts := range h.storeCuts {
		ps := probes[idx]
		for _, cut := range cuts {
			for j, p := range ps {
				if p.from.Before(cut.from) || p.from.After(cut.to) {
					continue
				}
				servedBefore := slices.ContainsFunc(ps[:j], func(q probe) bool { return q.life == p.life && q.ok && q.to.Before(cut.from) })
				if !servedBefore || p.outcome == "conn_refused" || p.outcome == "conn_error" || p.outcome == "timeout_while_paused" {
					continue
				}
				during++
				if !p.ok {
					refused++
					if refused <= 10 {
						t.Errorf("node %d life %d: probe tag refused %v into a store cut (%s): %s", idx, p.life, p.from.Sub(cut.from).Round(time.Millisecond), cut.from.UTC().Format("15:04:05.000"), p.outcome)
					}
				}
			}
		}
	}

	h.mu.Lock()
	counts := maps.Clone(h.counts)
	faultErrs := slices.Clone(h.faultErrs)
	recycled, lost, retries := h.recycled, h.lost, h.startRetries
	h.mu.Unlock()
	var fs, es []string
	for _, k := range []string{"kill9", "sigterm", "sigterm_registry_cut", "sigstop", "store_cut", "registry_cut", "registry_partition", "steal", "steal_hit", "fresh_dir_cut", "clock_step", "restart_behind", "fresh_dir", "new_identity", "set_change", "set_change_killed_midway"} {
		fs = append(fs, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	fs = append(fs, fmt.Sprintf("recycled=%d lost=%d start_retries=%d", recycled, lost, retries))
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		es = append(es, fmt.Sprintf("%s=%d", c, codes[c]))
	}
	// The sequence tag: linearizable on one store (several stores order
	// nothing across each other: docs/kinds.md), unique always (above).
	linear := "not checked (several stores)"
	if h.stores == 1 {
		bad := linearizability(seqOps)
		for i, b := range bad {
			if i == 10 {
				t.Errorf("... and %d more sequence IDs out of order", len(bad)-10)
				break
			}
			t.Errorf("sequence tag: %s", b)
		}
		linear = fmt.Sprintf("%d out of order", len(bad))
	}
	// Keyed sequences: each key's values strictly increase in the order
	// they were answered (an answer that arrived before another request
	// was sent is smaller), across the nodes, owner changes and faults.
	keyed, keyAnswers, keyBad := "off", 0, 0
	if h.space != "" {
		for _, k := range slices.Sorted(maps.Keys(keyOps)) {
			keyAnswers += len(keyOps[k])
			for _, b := range linearizability(keyOps[k]) {
				keyBad++
				if keyBad <= 10 {
					t.Errorf("keyed sequence key k%d: %s", k, b)
				}
			}
		}
		h.mu.Lock()
		spans := slices.Clone(h.spans)
		h.mu.Unlock()
		report, over := outageReport(outages(tries), spans)
		keyed = fmt.Sprintf("%d answers on %d keys, %d keys' values out of order; %s", keyAnswers, len(keyOps), keyBad, report)
		for _, o := range over {
			t.Error(o)
		}
		if keyAnswers == 0 {
			t.Errorf("the clients got no keyed sequence values")
		}
	}
	summary := fmt.Sprintf("chaos: %d IDs checked (segment %d, snowflake %d), %d duplicates; faults: %s; errors: %s; requests=%d slow_requests=%d failures=%d; horizon: %d probes during store cuts, %d refused; sequence: %d answers, %s; keyed: %s; variant=%s seed=%d duration=%v",
		len(recs), segments, snowflakes, dups, strings.Join(fs, " "), strings.Join(es, " "), requests, slow, nFailures+len(faultErrs), during, refused,
		len(seqOps), linear, keyed, h.variant, seed, *durationFlag)
	fmt.Println(summary)

	for _, f := range failures {
		t.Error(f)
	}
	if nFailures > len(failures) {
		t.Errorf("... and %d more failed requests", nFailures-len(failures))
	}
	for _, f := range faultErrs {
		t.Error(f)
	}
	if len(recs) == 0 || snowflakes == 0 || segments == 0 || len(seqOps) == 0 {
		t.Errorf("the clients got no IDs of some kind: segment %d, snowflake %d, sequence answers %d", segments, snowflakes, len(seqOps))
	}
	switch {
	case t.Failed():
		t.Logf("process logs: %s; rerun with -chaos.seed=%d -chaos.variant=%s", h.logDir, seed, h.variant)
	case !*keepLogsFlag:
		os.RemoveAll(h.logDir) // several MB a minute
	}
}

// duplicates sorts recs and returns every pair of records of one ID of one
// tag (snowflakeTag: one space across the nodes), and how many segment and
// snowflake records there are.
// linearizability checks the answers of the sequence tag: an answer that
// arrived before another request was sent has smaller IDs. It returns the
// violations.
func linearizability(ops []seqOp) []string {
	byEnd := slices.Clone(ops)
	slices.SortFunc(byEnd, func(a, b seqOp) int { return a.to.Compare(b.to) })
	slices.SortFunc(ops, func(a, b seqOp) int { return a.from.Compare(b.from) })
	var bad []string
	j := 0
	var done seqOp // the answer with the largest IDs among those before
	for _, o := range ops {
		for j < len(byEnd) && byEnd[j].to.Before(o.from) {
			if byEnd[j].max > done.max {
				done = byEnd[j]
			}
			j++
		}
		if done.max != 0 && o.min <= done.max {
			bad = append(bad, fmt.Sprintf("node %d answered %d at %s, after node %d had answered %d at %s",
				o.node, o.min, o.to.Format("15:04:05.000"), done.node, done.max, done.to.Format("15:04:05.000")))
		}
	}
	return bad
}

// outage is a time a section went unanswered: from the first request
// refused after an answer (or the start) to the next answer, the requests
// of every client to every node together. Requests a node did not answer
// at all (killed, paused: the client's own fault to see) start none.
type outage struct {
	section  int
	down, up time.Time
}

func outages(tries []secTry) []outage {
	by := map[int][]secTry{}
	for _, t := range tries {
		if !t.lost {
			by[t.section] = append(by[t.section], t)
		}
	}
	var out []outage
	for sec, ts := range by {
		slices.SortFunc(ts, func(a, b secTry) int { return a.from.Compare(b.from) })
		var down time.Time // the first refusal since the last answer
		for _, t := range ts {
			switch {
			case t.ok && !down.IsZero():
				out = append(out, outage{section: sec, down: down, up: t.to})
				down = time.Time{}
			case !t.ok && down.IsZero():
				down = t.from
			}
		}
	}
	return out
}

// keyedBound is the longest a section may go unanswered after a single
// fault (issue 58, item 5): a lease and 2 s, from the fault (or, when no
// node could reach the keyed store, from its heal).
const keyedBound = 3*time.Second + 2*time.Second // sequences.lease_ttl (the default) + 2 s

// outageReport is the longest outage per fault kind, among those during
// which that fault alone was in effect (from when it struck to a lease
// and 2 s after it healed), and the longest during several at once; and
// the single-fault outages over keyedBound.
func outageReport(outs []outage, spans []faultSpan) (report string, over []string) {
	type worst struct {
		d   time.Duration
		o   outage
		all int
	}
	single := map[string]*worst{}
	var several, none worst
	for _, o := range outs {
		var in []faultSpan
		for _, f := range spans {
			if !f.from.After(o.up) && !f.to.Add(keyedBound).Before(o.down) {
				in = append(in, f)
			}
		}
		d := o.up.Sub(o.down)
		switch len(in) {
		case 0:
			none.all++
			if d > none.d {
				none.d, none.o = d, o
			}
		case 1:
			f := in[0]
			if f.keyedDown && f.to.After(o.down) {
				d = o.up.Sub(f.to) // unanswerable while no node reached the store
			}
			w := single[f.kind]
			if w == nil {
				w = &worst{}
				single[f.kind] = w
			}
			w.all++
			if d > w.d {
				w.d, w.o = d, o
			}
			if d > keyedBound {
				over = append(over, fmt.Sprintf("keyed sequence section %d unanswered for %v from %s, with one fault in effect (%s from %s to %s); at most %v",
					o.section, d.Round(time.Millisecond), o.down.UTC().Format("15:04:05.000"), f.kind,
					f.from.UTC().Format("15:04:05.000"), f.to.UTC().Format("15:04:05.000"), keyedBound))
			}
		default:
			several.all++
			if d > several.d {
				several.d, several.o = d, o
			}
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(single)) {
		w := single[k]
		parts = append(parts, fmt.Sprintf("%s %v (%d)", k, w.d.Round(time.Millisecond), w.all))
	}
	parts = append(parts, fmt.Sprintf("several faults at once %v (%d)", several.d.Round(time.Millisecond), several.all),
		fmt.Sprintf("no fault %v (%d)", none.d.Round(time.Millisecond), none.all))
	return "longest a section went unanswered, by fault (outages): " + strings.Join(parts, ", "), over
}

func duplicates(recs []rec) (pairs [][2]rec, segments, snowflakes int) {
	slices.SortFunc(recs, func(a, b rec) int {
		if a.tag != b.tag {
			return int(a.tag) - int(b.tag)
		}
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	for i, r := range recs {
		if r.tag == snowflakeTag {
			snowflakes++
		} else {
			segments++
		}
		if i > 0 && recs[i-1].tag == r.tag && recs[i-1].id == r.id {
			pairs = append(pairs, [2]rec{recs[i-1], r})
		}
	}
	return pairs, segments, snowflakes
}
