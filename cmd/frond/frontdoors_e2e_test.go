package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	grpcapi "github.com/frond-id/frond/api/grpc"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// Issue 69's attacks, run against two real nodes (one SQLite store) from
// other loopback addresses, with the figures docs/security.md quotes
// logged (go test -run TestE2E_FrontDoorsRoundFour -v ./cmd/frond):
//
//  1. a node-to-node request captured on the wire (b advertises a proxy
//     that records what a forwards to it) replayed 200 times, to b and to a;
//  2. a space whose table is cheap in counters and dear in sections;
//  3. starting spaces an admin made, from one address per protocol;
//  4. 500 connections at once asking for 10^6 IDs under limits.lease_rate;
//  5. 101 requests of 10,000 IDs with made-up idempotency keys, then a
//     victim's retry;
//  6. /debug/pprof/cmdline without the admin token.
func TestE2E_FrontDoorsRoundFour(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + dir + "/shared.db"
	const admin = "adm1n-s3cret"
	// The proxy b advertises: it records the signed requests a forwards.
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var target atomic.Pointer[string]
	var capMu sync.Mutex
	var captured []*http.Request
	var capturedBody [][]byte
	proxy := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		signed := r.Header.Get("X-Frond-Peer-Sig") != "" && strings.HasPrefix(r.URL.Path, "/v1/seq/")
		to := target.Load()
		if to == nil {
			http.Error(w, "not yet", 503)
			return
		}
		out, _ := http.NewRequest(r.Method, *to+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		res, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer res.Body.Close()
		if signed && res.StatusCode == 200 { // one b answered: worth replaying
			capMu.Lock()
			captured, capturedBody = append(captured, r.Clone(context.Background())), append(capturedBody, body)
			capMu.Unlock()
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	})}
	go proxy.Serve(pl)
	defer proxy.Close()

	// Tag tokens: a request without one is refused, so only a signature
	// the node accepts answers a replay. One token per protocol for the
	// spaces c0-c29 (the start limit is kept per token).
	var cs []string
	for i := range 30 {
		cs = append(cs, fmt.Sprint("c", i))
	}
	all := strings.Join(cs, ", ")
	cfg := dir + "/frond.yaml"
	os.WriteFile(cfg, []byte("tokens:\n  tok-fw: [fw, widest]\n  tok-lease: [leased]\n  tok-web: ["+all+"]\n  tok-grpc: ["+all+"]\n  tok-resp: ["+all+"]\n"), 0o644)
	env := []string{"FROND_SEQUENCES__LEASE_TTL=1s"}
	a := startSeqNode(t, env, t.TempDir(), db, "1", "--admin-token", admin, "--config", cfg)
	b := startSeqNode(t, append(env, "FROND_SEQUENCES__ADVERTISE="+pl.Addr().String(),
		"FROND_SEQUENCES__START_RATE=0.01", "FROND_SEQUENCES__START_BURST=4",
		"FROND_LIMITS__LEASE_RATE=1000", "FROND_LIMITS__LEASE_BURST=1000"),
		t.TempDir(), db, "2", "--admin-token", admin, "--config", cfg, "--pprof", "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	bURL := b.url
	target.Store(&bURL)
	adminReq := func(s *server, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	from := func(ip string) (*net.Dialer, *http.Client) {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return d, &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 1000}}
	}
	do := func(c *http.Client, req *http.Request) (int, string) {
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	get := func(c *http.Client, url string, hdr ...string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return do(c, req)
	}

	// 1. A captured forward, replayed.
	if code, body := adminReq(a, "POST", "/v1/spaces", `{"name":"fw","step":100,"sections":8}`); code != 201 {
		t.Fatalf("create space: %d %s", code, body)
	}
	b.get("/v1/seq/fw/start?token=tok-fw") // b serves the space too: the nodes share its sections
	deadline := time.Now().Add(30 * time.Second)
	for k := 0; ; k++ {
		capMu.Lock()
		n := len(captured)
		capMu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a forwarded nothing to b in 30 s")
		}
		a.get(fmt.Sprintf("/v1/seq/fw/k%d?token=tok-fw", k%64))
		time.Sleep(20 * time.Millisecond)
	}
	capMu.Lock()
	orig, origBody := captured[0], capturedBody[0]
	capMu.Unlock()
	_, attacker := from("127.0.0.9")
	replay := func(to string, forwarded bool) (answered int) {
		for range 200 {
			req, _ := http.NewRequest(orig.Method, to+orig.URL.RequestURI(), bytes.NewReader(origBody))
			req.Header = orig.Header.Clone()
			if !forwarded {
				req.Header.Del("X-Frond-Forwarded")
			}
			if code, _ := do(attacker, req); code == 200 {
				answered++
			}
		}
		return answered
	}
	replayB, replayA := replay(b.url, true), replay(a.url, false)
	t.Logf("item 1: a captured node-to-node request replayed 200 times: %d answered by its target, %d by the other node (re-signed)", replayB, replayA)
	if replayB != 0 || replayA != 0 {
		t.Errorf("a captured signature was answered again: %d of 200 by b, %d of 200 by a", replayB, replayA)
	}

	// 2. A space whose counters are few and sections many.
	rss0 := rssOf(t, b)
	t0 := time.Now()
	code, body := adminReq(b, "POST", "/v1/spaces", `{"name":"huge","step":100,"sections":1048576,"slots":1}`)
	t.Logf("item 2: {\"sections\":1048576,\"slots\":1} answered %d in %v, RSS %d -> %d MB: %s", code, time.Since(t0).Round(time.Millisecond), rss0>>20, rssOf(t, b)>>20, body)
	if code != 400 || !strings.Contains(body, "65536") {
		t.Errorf("a space of 2^20 sections: %d %s", code, body)
	}
	code, body = adminReq(b, "POST", "/v1/spaces", `{"name":"dear","step":100,"sections":65536,"slots":1024}`)
	t.Logf("item 2: {\"sections\":65536,\"slots\":1024} (counters 256 MiB, table 272 MiB) answered %d, RSS %d MB: %s", code, rssOf(t, b)>>20, body)
	if code != 400 || !strings.Contains(body, "max_space_memory") {
		t.Errorf("a space of 272 MiB past max_space_memory: %d %s", code, body)
	}

	// 65,536 sections under a 1 s lease: rounds reading 196,608 sections a
	// second (on SQLite they ran past their deadline, every lease lapsed,
	// every key answered 503, and the log took 65,536 lines a round).
	code, body = adminReq(b, "POST", "/v1/spaces", `{"name":"widest","step":100,"sections":65536,"slots":1}`)
	t.Logf("item 2: {\"sections\":65536,\"slots\":1} under a 1 s lease answered %d: %s", code, body)
	if code != 400 || !strings.Contains(body, "max_section_reads") {
		t.Errorf("a space whose rounds read 196,608 sections a second: %d %s", code, body)
	}
	// A wide space accepted beside the spaces running: 2,000 sections (6,000
	// reads a second; 20,000 under 1 s lapsed every lease under CI's load).
	logBefore := len(b.log())
	cpu0 := processCPU(t, b.cmd.Process.Pid)
	t0 = time.Now()
	code, body = adminReq(b, "POST", "/v1/spaces", `{"name":"widest","step":100,"sections":2000,"slots":1}`)
	created := time.Since(t0)
	if code != 201 {
		t.Fatalf("create a space of 2,000 sections: %d %s", code, body)
	}
	t0 = time.Now()
	keysBy := time.Now().Add(30 * time.Second) // a busy machine's rounds come later
	for k := range 20 {
		for {
			code, body := get(http.DefaultClient, fmt.Sprintf("%s/v1/seq/widest/k%d?token=tok-fw", b.url, k))
			if code == 200 {
				break
			}
			if time.Now().After(keysBy) {
				t.Fatalf("a key of the widest space: %d %s", code, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	answered := time.Since(t0)
	time.Sleep(3 * time.Second) // its rounds
	cpu := processCPU(t, b.cmd.Process.Pid) - cpu0
	logged := len(b.log()) - logBefore
	t.Logf("item 2: {\"sections\":2000,\"slots\":1} under a 1 s lease created in %v, 20 keys answered in %v, RSS %d MB, %v of CPU in the %v since, %d bytes logged",
		created.Round(time.Millisecond), answered.Round(time.Millisecond), rssOf(t, b)>>20, cpu.Round(time.Millisecond), time.Since(t0.Add(-created)).Round(time.Millisecond), logged)
	if logged > 64<<10 {
		t.Errorf("a space of 2,000 sections logged %d bytes in its first seconds", logged)
	}

	// 3. Spaces an admin made (on a: not running on b), started on b from
	// one address per protocol, each under sequences.start_burst 4.
	for i := range 30 {
		if code, body := adminReq(a, "POST", "/v1/spaces", fmt.Sprintf(`{"name":"c%d","step":100,"sections":1}`, i)); code != 201 {
			t.Fatalf("create space: %d %s", code, body)
		}
	}
	count := func(codes []int) (ok, limited int) {
		for _, c := range codes {
			switch c {
			case 200:
				ok++
			case 429:
				limited++
			}
		}
		return ok, limited
	}
	// ask asks until the answer is a value (200) or a refusal of the start
	// (429): a space started whose request was refused as unavailable (its
	// section's owner slow on a busy machine) is asked again, and runs by
	// then, so it costs no second start.
	ask := func(what string, try func() (int, error)) int {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, err := try()
			if code == 200 || code == 429 {
				return code
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d %v", what, code, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	_, web := from("127.0.0.2")
	var httpCodes []int
	for i := range 10 {
		httpCodes = append(httpCodes, ask(fmt.Sprint("HTTP c", i), func() (int, error) {
			code, body := get(web, fmt.Sprintf("%s/v1/seq/c%d/k?token=tok-web", b.url, i))
			return code, errors.New(body)
		}))
	}
	gd, _ := from("127.0.0.3")
	gc, err := grpc.NewClient(b.listenAddr("gRPC"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return gd.DialContext(ctx, "tcp", addr) }))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	gcl := frondv1.NewIDServiceClient(gc)
	var grpcCodes []int
	for i := 10; i < 20; i++ {
		grpcCodes = append(grpcCodes, ask(fmt.Sprint("gRPC NextSeq c", i), func() (int, error) {
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), grpcapi.TokenMetadata, "tok-grpc"), 10*time.Second)
			defer cancel()
			_, err := gcl.NextSeq(ctx, &frondv1.NextSeqRequest{Space: fmt.Sprint("c", i), Key: "k"})
			switch {
			case err == nil:
				return 200, nil
			case strings.Contains(err.Error(), "start_rate"):
				return 429, err
			case strings.Contains(err.Error(), "store_unavailable"):
				return 503, err
			}
			t.Fatalf("gRPC NextSeq c%d: %v", i, err)
			return 0, err
		}))
	}
	rd, _ := from("127.0.0.4")
	rc := redis.NewClient(&redis.Options{Addr: b.respAddr(), Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return rd.DialContext(ctx, network, addr)
	}, MaxRetries: -1, PoolSize: 1, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.Do(ctx, "TOKEN", "tok-resp").Err()
	}})
	defer rc.Close()
	var respCodes []int
	for i := 20; i < 30; i++ {
		respCodes = append(respCodes, ask(fmt.Sprint("RESP SEQ c", i), func() (int, error) {
			err := rc.Do(context.Background(), "SEQ", fmt.Sprint("c", i), "k").Err()
			switch {
			case err == nil:
				return 200, nil
			case strings.Contains(err.Error(), "start_rate"):
				return 429, err
			case strings.Contains(err.Error(), "STORE_UNAVAILABLE"), strings.Contains(err.Error(), "TRYAGAIN"):
				return 503, err
			}
			t.Fatalf("RESP SEQ c%d: %v", i, err)
			return 0, err
		}))
	}
	for name, codes := range map[string][]int{"HTTP": httpCodes, "gRPC": grpcCodes, "RESP": respCodes} {
		ok, limited := count(codes)
		t.Logf("item 3: %s, one token asking for 10 spaces not running on the node: %d started, %d refused (start_burst 4)", name, ok, limited)
		if ok != 4 || limited != 6 {
			t.Errorf("%s: %d of 10 spaces started, %d refused as past sequences.start_rate; want 4 and 6: %v", name, ok, limited, codes)
		}
	}
	for range 5 { // a space it started answers it on
		if code, body := get(web, b.url+"/v1/seq/c0/k?token=tok-web"); code != 200 {
			t.Fatalf("a running space refused its starter: %d %s", code, body)
		}
	}

	// 4. limits.lease_rate 1000 (burst 1000), 500 connections at once.
	if code, body := adminReq(b, "POST", "/v1/tags", `{"name":"leased","step":1000}`); code != 201 && code != 409 {
		t.Fatalf("create tag: %d %s", code, body)
	}
	_, leaser := from("127.0.0.6")
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range 500 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", b.url+"/v1/segment/leased?format=ranges&n=1000000&token=tok-lease", nil)
			<-gate
			res, err := leaser.Do(req)
			if err != nil {
				refused.Add(1) // a connection refused counts as not admitted
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				admitted.Add(1)
			} else {
				refused.Add(1)
			}
		})
	}
	close(gate)
	wg.Wait()
	t.Logf("item 4: 500 connections asking n=10^6 under lease_rate 1000/burst 1000: %d admitted (%d IDs), %d refused", admitted.Load(), admitted.Load()*1_000_000, refused.Load())
	if admitted.Load() != 1 {
		t.Errorf("%d of 500 requests for 10^6 IDs admitted under a burst of 1,000: want 1", admitted.Load())
	}

	// 5. The idempotency memory: a victim's key, 101 flooding requests
	// from another address, the victim's retry.
	_, victim := from("127.0.0.7")
	_, flooder := from("127.0.0.8")
	code, first := get(victim, b.url+"/v1/snowflake", "Idempotency-Key", "victim-order-1")
	if code != 200 {
		t.Fatalf("victim: %d %s", code, first)
	}
	t0 = time.Now()
	for i := range 101 {
		if code, body := get(flooder, b.url+"/v1/snowflake?n=10000", "Idempotency-Key", fmt.Sprint("made-up-", i)); code != 200 {
			t.Fatalf("flood %d: %d %s", i, code, body)
		}
	}
	flood := time.Since(t0)
	_, again := get(victim, b.url+"/v1/snowflake", "Idempotency-Key", "victim-order-1")
	_, stolen := get(flooder, b.url+"/v1/snowflake", "Idempotency-Key", "victim-order-1")
	t.Logf("item 5: 101 requests of 10,000 IDs with made-up keys in %v; the victim's retry answered the same: %v; its key from another address answered its answer: %v", flood.Round(time.Millisecond), again == first, stolen == first)
	if again != first || stolen == first {
		t.Errorf("the victim's answer %s, its retry %s, its key from the flooder's address %s", first, again, stolen)
	}

	// 6. pprof behind the admin token, the command line masked.
	_, prober := from("127.0.0.5")
	code, body = get(prober, b.url+"/debug/pprof/cmdline")
	code2, body2 := get(prober, b.url+"/debug/pprof/cmdline", "Authorization", "Bearer "+admin)
	t.Logf("item 6: /debug/pprof/cmdline without a token: %d; with the admin token: %d, token shown: %v", code, code2, strings.Contains(body2, admin))
	if code != 401 || strings.Contains(body, admin) || code2 != 200 || strings.Contains(body2, admin) {
		t.Errorf("pprof: %d %q; with the token: %d %q", code, body, code2, body2)
	}
}

// rssOf is s's resident memory, in bytes.
func rssOf(t *testing.T, s *server) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
