package redisregistry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
	"github.com/frond-id/frond/registry/registrytest"
	"github.com/frond-id/frond/storetest"
	goredis "github.com/redis/go-redis/v9"
)

// FROND_TEST_REDIS_URL: a Redis for the tests, e.g. redis://127.0.0.1:6379/15.
// Every test works under its own prefix frondtest:{namespace}:.

// with appends query parameters to rawURL.
func with(rawURL, params string) string {
	if params == "" {
		return rawURL
	}
	if strings.Contains(rawURL, "?") {
		return rawURL + "&" + params
	}
	return rawURL + "?" + params
}

// raw is a plain client of the test Redis, to look at and change keys.
func raw(t testing.TB, rawURL string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(strings.Split(rawURL, "?")[0])
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// sweep deletes the keys under prefix when the test ends, after the
// registries it opened are closed.
func sweep(t testing.TB, rawURL, prefix string) {
	c := raw(t, rawURL)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := c.Keys(ctx, prefix+"*").Result() // a test's few keys
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Logf("deleting the keys under %s: %v", prefix, err)
		}
	})
}

// be is the Redis backend of a registry this package opened.
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
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	for _, mode := range []string{ModeFixed, ModeLease} {
		t.Run(mode, func(t *testing.T) {
			open := func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
				target := u
				if down {
					target = "redis://127.0.0.1:1/15"
				}
				if !down {
					sweep(t, u, "frondtest:"+ns+":")
				}
				r, err := Open(with(target, "frond_allow_volatile=true&frond_timeout=3s&frond_mode="+mode+"&frond_prefix=frondtest:"+ns+":"), o)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			c := raw(t, u)
			registrytest.Run(t, registrytest.Config{
				Open:            open,
				SameIDOnRestart: true,
				Recycles:        mode == ModeLease,
				Lose: func(t *testing.T, wr frond.WorkerRegistry) {
					r := wr.(*registry.Protocol)
					key := be(r).liveKey(r.Held().ID)
					if err := c.Del(testenv.Ctx(t), key).Err(); err != nil {
						t.Fatal(err)
					}
				},
			})
		})
	}
}

func TestOpen_URL(t *testing.T) {
	for _, bad := range []string{
		"http://x", "redis://a b", "redis://x?frond_mode=sometimes", "redis://x?frond_dc=-1", "redis://x?frond_dc=east",
		"redis://x?frond_dc=1", // the layout has no datacenter bits (datacenter 0): a second datacenter would reuse the IDs
		"redis://x?frond_nope=1", "redis://x?frond_timeout=soon", "redis://x?frond_timeout=-1s",
		"redis://x?frond_allow_volatile=maybe", "redis://x?pool_size=many", "redis://x?no_such_option=1",
	} {
		if _, err := Open(bad, registry.Options{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	if _, err := Open("redis://x", registry.Options{Port: 70000}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Errorf("Open with port 70000: %v, want ErrInvalidArgument", err)
	}

	// frond_dc is the node's datacenter (snowflake.datacenter): the same
	// number, or absent, and the keys are the datacenter's.
	for _, c := range []struct {
		url  string
		dc   int64
		base string
	}{{"redis://x?frond_dc=2", 2, "frond:worker:2:"}, {"redis://x", 2, "frond:worker:2:"}, {"redis://x?frond_dc=1", 2, ""}, {"redis://x?frond_dc=0", 2, ""}} {
		p, err := Open(c.url, registry.Options{Datacenter: c.dc})
		if c.base == "" {
			if !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "one setting") {
				t.Errorf("Open(%q) in datacenter %d: %v", c.url, c.dc, err)
			}
			continue
		}
		if err != nil || be(p).base != c.base {
			t.Fatalf("Open(%q) in datacenter %d: %v", c.url, c.dc, err)
		}
		p.Close()
	}

	o := registry.Options{Host: "10.0.0.7", Port: 8081}
	p, err := Open("redis://u:secret@127.0.0.1:1/3", o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := be(p)
	if r.mode != ModeFixed || r.base != "frond:worker:0:" || r.timeout != 5*time.Second || r.allowVolatile || r.where != "redis://127.0.0.1:1/3" {
		t.Errorf("defaults: mode %q base %q timeout %v allow %v where %q", r.mode, r.base, r.timeout, r.allowVolatile, r.where)
	}
	if got := r.addrKey(); got != "frond:worker:0:addr:10.0.0.7:8081" {
		t.Errorf("addr key %q", got)
	}
	if got := r.liveKey(5) + " " + r.lastKey(5) + " " + r.counterKey(); got != "frond:worker:0:live:5 frond:worker:0:last:5 frond:worker:0:counter" {
		t.Errorf("keys %q", got)
	}

	p2, err := Open("rediss://h:6380/0?frond_prefix=ids:&frond_dc=0&frond_mode=lease&frond_timeout=250ms&frond_allow_volatile=true&pool_size=4", o)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	r2 := be(p2)
	if r2.mode != ModeLease || r2.base != "ids:0:" || r2.timeout != 250*time.Millisecond || !r2.allowVolatile || r2.c.Options().PoolSize != 4 || r2.c.Options().TLSConfig == nil {
		t.Errorf("parsed: mode %q base %q timeout %v allow %v options %+v", r2.mode, r2.base, r2.timeout, r2.allowVolatile, r2.c.Options())
	}
	if p3, err := Open("redis://h?frond_prefix=", o); err != nil || be(p3).base != "0:" {
		t.Errorf("empty prefix: %v", err)
	} else {
		p3.Close()
	}
}

// Open does not contact the server; Acquire reports it unreachable.
func TestAcquire_Unreachable(t *testing.T) {
	r, err := Open("redis://127.0.0.1:1/15?frond_allow_volatile=true&frond_timeout=1s", registry.Options{Host: "10.0.0.1"})
	if err != nil {
		t.Fatalf("Open must not contact the server: %v", err)
	}
	defer r.Close()
	if _, err := r.Acquire(context.Background(), 1023); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("Acquire with nothing at the address: %v, want ErrStoreUnavailable", err)
	}
	if err := r.Save(context.Background(), time.Now()); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("Save without an ID: %v, want ErrWorkerLost", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Acquire(context.Background(), 1023); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
}

// prefixed returns u with params and a prefix of the test's own.
func prefixed(t *testing.T, u, params string) string {
	prefix := "frondtest:" + registrytest.Namespace(t) + ":"
	sweep(t, u, prefix)
	p := "frond_prefix=" + prefix
	if params != "" {
		p += "&" + params
	}
	return with(u, p)
}

// A Redis without persistence is refused at the first Acquire unless the
// URL accepts the risk.
func TestAcquire_Volatile(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	probe := openT(t, prefixed(t, u, "frond_allow_volatile=true"), registry.Options{Host: "10.0.0.1"})
	if _, err := probe.Acquire(testenv.Ctx(t), 1023); err != nil {
		t.Fatal(err)
	}
	persistent := len(probe.Warnings()) == 0

	r := openT(t, prefixed(t, u, ""), registry.Options{Host: "10.0.0.2"})
	_, err := r.Acquire(testenv.Ctx(t), 1023)
	if persistent {
		if err != nil {
			t.Fatalf("a persistent Redis was refused: %v", err)
		}
		return
	}
	if !errors.Is(err, frond.ErrInvalidArgument) || errors.Is(err, frond.ErrStoreUnavailable) ||
		!strings.Contains(err.Error(), "frond_allow_volatile=true") || !strings.Contains(err.Error(), "registry URL") {
		t.Fatalf("volatile Redis without frond_allow_volatile: %v", err)
	}
	t.Logf("refused: %v", err)
	if w := r.Warnings(); len(w) != 0 {
		t.Fatalf("a refused registry warns %v", w)
	}
}

// Accepted, the risk is reported by Warnings once the server was checked.
func TestRegistry_Warnings(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	r := openT(t, prefixed(t, u, "frond_allow_volatile=true"), registry.Options{Host: "10.0.0.1"})
	if w := r.Warnings(); len(w) != 0 {
		t.Fatalf("warnings before the server was checked: %v", w)
	}
	if _, err := r.Acquire(testenv.Ctx(t), 1023); err != nil {
		t.Fatal(err)
	}
	var persists bool
	why, err := raw(t, u).ConfigGet(testenv.Ctx(t), "appendonly").Result()
	if err != nil {
		t.Fatal(err)
	}
	save, err := raw(t, u).ConfigGet(testenv.Ctx(t), "save").Result()
	if err != nil {
		t.Fatal(err)
	}
	persists = why["appendonly"] == "yes" || strings.TrimSpace(save["save"]) != ""
	w := r.Warnings()
	if persists {
		t.Skipf("the test Redis persists data (warnings %v)", w)
	}
	if len(w) != 1 || !strings.Contains(w[0], "keeps nothing on disk") || !strings.Contains(w[0], "frond_allow_volatile=true") || !strings.Contains(w[0], "snowflake IDs") {
		t.Fatalf("warnings %v", w)
	}
	w[0] = "changed"
	if r.Warnings()[0] == "changed" {
		t.Fatal("Warnings returns the registry's own slice")
	}
}

// Seed 001's script wraps a 5-bit machine ID at 32; the registry refuses
// the 33rd node instead (the suite's RaceForTheLastIDs), and its counter
// stops at the layout's end.
func TestAcquire_FiveBitsNoWrap(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	for _, mode := range []string{ModeFixed, ModeLease} {
		t.Run(mode, func(t *testing.T) {
			ns := registrytest.Namespace(t)
			sweep(t, u, "frondtest:"+ns+":")
			url := with(u, "frond_allow_volatile=true&frond_mode="+mode+"&frond_prefix=frondtest:"+ns+":")
			registrytest.RaceForIDs(t, func(port int) frond.WorkerRegistry {
				return openT(t, url, registry.Options{Host: "10.5.0.1", Port: port})
			})
			n, err := raw(t, u).Get(testenv.Ctx(t), "frondtest:"+ns+":0:counter").Int64()
			if err != nil || n != registrytest.RaceMaxNode+1 {
				t.Fatalf("counter %d (%v), want %d: it must not go past the layout", n, err, registrytest.RaceMaxNode+1)
			}
		})
	}
}

// A second process with the same identity (or an earlier run that did not
// release) is told to retry until the live key expires.
func TestAcquire_HeldByEarlierRun(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	url := prefixed(t, u, "frond_allow_volatile=true")
	o := registry.Options{Host: "10.6.0.1", Port: 8080, LeaseTTL: 5 * time.Second}
	a := openT(t, url, o)
	w, err := a.Acquire(testenv.Ctx(t), 1023)
	if err != nil {
		t.Fatal(err)
	}
	b := openT(t, url, o)
	_, err = b.Acquire(testenv.Ctx(t), 1023)
	if !errors.Is(err, frond.ErrWorkerLost) || errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "ends within") {
		t.Fatalf("the same identity while held: %v, want ErrWorkerLost (not ErrStoreUnavailable: no local record in its place) saying when the claim ends", err)
	}
	t.Logf("refused: %v", err)
	if err := a.Close(); err != nil { // deletes the live key
		t.Fatal(err)
	}
	w2, err := b.Acquire(testenv.Ctx(t), 1023)
	if err != nil || w2.ID != w.ID {
		t.Fatalf("after the first closed: %+v, %v; want ID %d", w2, err, w.ID)
	}
}

// Save keeps the latest time; Release records its time exactly, below an
// earlier reservation, and frees the live key.
func TestRegistry_SaveRelease(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	url := prefixed(t, u, "frond_allow_volatile=true")
	c := raw(t, u)
	o := registry.Options{Host: "10.7.0.1"}
	r := openT(t, url, o)
	w, err := r.Acquire(testenv.Ctx(t), 1023)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_900_000_000, 123_456_789) // exact in nanoseconds, beyond a double's precision
	for _, at := range []time.Time{t0.Add(time.Minute), t0, t0.Add(30 * time.Second)} {
		if err := r.Save(testenv.Ctx(t), at); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := c.Get(testenv.Ctx(t), be(r).lastKey(w.ID)).Result(); got != strconv.FormatInt(t0.Add(time.Minute).UnixNano(), 10) {
		t.Fatalf("last after saves %s", got)
	}
	if w2, _ := r.Acquire(testenv.Ctx(t), 1023); !w2.LastIssued.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Acquire while held: LastIssued %v", w2.LastIssued)
	}
	if err := r.Release(testenv.Ctx(t), t0); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(testenv.Ctx(t), be(r).lastKey(w.ID)).Result(); got != strconv.FormatInt(t0.UnixNano(), 10) {
		t.Fatalf("last after Release %s, want %d", got, t0.UnixNano())
	}
	if n, _ := c.Exists(testenv.Ctx(t), be(r).liveKey(w.ID)).Result(); n != 0 {
		t.Fatal("live key left after Release")
	}
	select {
	case <-w.Lost:
	default:
		t.Fatal("Lost open after Release")
	}
	if err := r.Save(testenv.Ctx(t), t0); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("Save after Release: %v", err)
	}
	// A restart continuing the claim (its local record names it) gets the
	// exact time.
	r3 := openT(t, url, o)
	r3.Resume(w.Claim, w.ID)
	w3 := acquire(t, r3, 1023)
	if w3.ID != w.ID || !w3.LastIssued.Equal(t0) {
		t.Fatalf("restart: %+v, want ID %d LastIssued %v", w3, w.ID, t0)
	}
}

func acquire(t *testing.T, r *registry.Protocol, maxNode int64) frond.Worker {
	t.Helper()
	w, err := r.Acquire(testenv.Ctx(t), maxNode)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// In lease mode, a recycled ID moves its owner and addr keys to the new
// holder; the old holder gets another ID (or none) when it comes back.
func TestAcquire_LeaseRebinds(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	url := prefixed(t, u, "frond_allow_volatile=true&frond_mode=lease")
	c := raw(t, u)
	clk := testclock.New(time.Now())
	now := func() time.Time { return time.Unix(0, clk.Now()) }
	oa := registry.Options{Host: "10.8.0.1", Port: 1, RecycleAfter: time.Minute, Now: now}
	ob := registry.Options{Host: "10.8.0.2", Port: 2, RecycleAfter: time.Minute, Now: now}
	ocur := registry.Options{Host: "10.8.0.3", Port: 3, RecycleAfter: time.Minute, Now: now}

	a := openT(t, url, oa)
	wa := acquire(t, a, 1)
	cur := openT(t, url, ocur)
	wc := acquire(t, cur, 1)
	last := now()
	if err := a.Release(testenv.Ctx(t), last); err != nil {
		t.Fatal(err)
	}
	if err := cur.Save(testenv.Ctx(t), last.Add(-time.Hour)); err != nil { // old, but live: never recycled
		t.Fatal(err)
	}

	b := openT(t, url, ob)
	if _, err := b.Acquire(testenv.Ctx(t), 1); !errors.Is(err, frond.ErrNoWorkerID) || !strings.Contains(err.Error(), "first frees at") {
		t.Fatalf("before last + RecycleAfter: %v", err)
	}
	clk.Add(time.Minute + time.Millisecond)
	wb := acquire(t, b, 1)
	if wb.ID != wa.ID || !wb.LastIssued.Equal(last.Add(time.Minute)) {
		t.Fatalf("recycled %+v, want ID %d (not the live %d) with LastIssued %v (last + recycle_after)", wb, wa.ID, wc.ID, last.Add(time.Minute))
	}
	base := be(b).base
	if got, _ := c.Get(testenv.Ctx(t), base+"owner:"+strconv.FormatInt(wb.ID, 10)).Result(); got != "10.8.0.2:2" {
		t.Errorf("owner %q", got)
	}
	if got, _ := c.Get(testenv.Ctx(t), base+"addr:10.8.0.2:2").Result(); got != strconv.FormatInt(wb.ID, 10) {
		t.Errorf("addr of the new holder %q", got)
	}
	if n, _ := c.Exists(testenv.Ctx(t), base+"addr:10.8.0.1:1").Result(); n != 0 {
		t.Error("addr of the old holder left")
	}
	if _, err := openT(t, url, oa).Acquire(testenv.Ctx(t), 1); !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("the old holder back while both IDs are held: %v", err)
	}
}

// The live key outlives its TTL while renewed; when Redis stops answering
// for a whole TTL, Lost is closed, and the ID can be held again afterwards.
func TestRenew(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	proxy := storetest.StartProxy(t, storetest.HostOf(t, u, "6379"))
	url := storetest.WithHost(t, prefixed(t, u, "frond_allow_volatile=true&frond_timeout=200ms"), proxy.Addr())
	c := raw(t, u)
	const ttl = 600 * time.Millisecond
	r := openT(t, url, registry.Options{Host: "10.9.0.1", LeaseTTL: ttl})
	w := acquire(t, r, 1023)
	time.Sleep(3 * ttl) // the real server's TTL: no clock to inject
	select {
	case <-w.Lost:
		t.Fatal("lost while Redis answers")
	default:
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatalf("Save after 3 TTLs: %v", err)
	}
	if pttl, _ := c.PTTL(testenv.Ctx(t), be(r).liveKey(w.ID)).Result(); pttl <= 0 || pttl > ttl {
		t.Fatalf("live key PTTL %v", pttl)
	}

	cut := time.Now()
	proxy.Cut()
	select {
	case <-w.Lost:
		if d := time.Since(cut); d > ttl+time.Second {
			t.Errorf("Lost closed %v after the cut, TTL %v", d, ttl)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed with Redis unreachable")
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("Save after the loss: %v", err)
	}
	proxy.Restore()
	w2 := acquire(t, r, 1023)
	if w2.ID != w.ID {
		t.Fatalf("held again as %d, was %d", w2.ID, w.ID)
	}
	if err := r.Save(testenv.Ctx(t), time.Now()); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAcquire measures what a start costs: open, acquire, release.
func BenchmarkAcquire(b *testing.B) {
	u := testenv.Getenv(b, "FROND_TEST_REDIS_URL")
	prefix := fmt.Sprintf("frondbench:%d:", time.Now().UnixNano())
	sweep(b, u, prefix)
	url := with(u, "frond_allow_volatile=true&frond_prefix="+prefix)
	for i := 0; b.Loop(); i++ {
		r, err := Open(url, registry.Options{Host: "10.9.9.9", Port: 1 + i%500})
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

// A clean stop's exact release that Redis applies and whose answer is lost
// (a proxy drops it), with every worker ID handed out: the ID goes to
// another node from the released time + recycle_after, so the local record
// must not let this node, restarted with Redis unreachable, issue from its
// earlier reservation with the same ID (issue 28, item 1).
func TestRelease_AnswerLost(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	direct := prefixed(t, u, "frond_allow_volatile=true&frond_mode=lease&frond_timeout=300ms")
	proxy := storetest.StartProxy(t, storetest.HostOf(t, u, "6379"))
	viaProxy := storetest.WithHost(t, direct, proxy.Addr())
	c := raw(t, u)
	clk := testclock.New(time.Now())
	oa := registry.Options{Host: "10.6.0.1", RecycleAfter: time.Minute, Now: func() time.Time { return time.Unix(0, clk.Now()) }}
	ob := oa
	ob.Host = "10.6.0.2"
	path := filepath.Join(t.TempDir(), cache.File)

	a, err := cache.New(openT(t, viaProxy, oa), path, "redis as A", oa)
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Acquire(testenv.Ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, clk.Now())
	if err := a.Save(testenv.Ctx(t), t0.Add(5*time.Minute)); err != nil { // a reservation; the node then idles
		t.Fatal(err)
	}
	proxy.DropAnswers()
	if err := a.Release(testenv.Ctx(t), t0); err == nil {
		t.Fatal("Release answered though the proxy dropped the answer")
	}
	proxy.Restore()
	if got, _ := c.Get(testenv.Ctx(t), be(a.Inner().(*registry.Protocol)).lastKey(w.ID)).Result(); got != strconv.FormatInt(t0.UnixNano(), 10) {
		t.Fatalf("Redis holds %s after the release, want the exact time %d (the proxy should drop only the answer)", got, t0.UnixNano())
	}
	a.Close()

	clk.Add(time.Minute + time.Second)
	wb := acquire(t, openT(t, direct, ob), 0)
	if wb.ID != w.ID {
		t.Fatalf("B holds %d, want the recycled %d", wb.ID, w.ID)
	}
	proxy.Cut()
	a2, err := cache.New(openT(t, viaProxy, oa), path, "redis as A", oa)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	if w2, err := a2.Acquire(testenv.Ctx(t), 0); err == nil {
		t.Fatalf("A restarted from its local record with Redis unreachable holds worker ID %d from %v, which B holds from %v",
			w2.ID, w2.LastIssued.UTC(), wb.LastIssued.UTC())
	} else if !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "recycle_after") {
		t.Fatalf("A restarted with Redis unreachable: %v; want the record refused as older than recycle_after", err)
	}
}
