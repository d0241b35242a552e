package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/service"
)

// seqNodeOn is a node of the space "msgs" on mem, with the tag token
// "tok" allowing it, forwarding with SeqForwarder.
func seqNodeOn(t *testing.T, mem *keyseq.MemLeases, token string) *fixture {
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: token, Addr: "127.0.0.1:1"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, SeqForwarder(nil, 5*time.Second))
	return newFixture(t, api.Options{}, func(c *service.Config) {
		c.Spaces = sp
		c.Tokens = map[string][]string{"tok": {"msgs"}}
	})
}

// Issue 59, item 1: the owner's address comes from the store, where any
// node's sequences.advertise put it. Whatever answers there, the
// forwarder sends no caller's token, follows no redirect, and puts
// nothing it said into the caller's answer unless a node of this cluster
// answered (the peer key's proof).
func TestHostile_SeqForwarderIsNoProxy(t *testing.T) {
	var internal, withToken, asked atomic.Int64
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internal.Add(1)
		fmt.Fprint(w, "INTERNAL-SECRET-DATA from "+r.URL.String())
	}))
	defer inside.Close()
	for _, answer := range []string{"redirect", "ok-without-proof", "error-without-proof"} {
		t.Run(answer, func(t *testing.T) {
			evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				if r.Header.Get(TokenHeader) != "" || r.URL.Query().Get("token") != "" || r.Header.Get("Authorization") != "" {
					withToken.Add(1)
				}
				switch answer {
				case "redirect":
					http.Redirect(w, r, inside.URL+"/internal/admin?x=1", http.StatusFound)
				case "ok-without-proof":
					fmt.Fprint(w, `{"space":"msgs","key":"k","first":1,"last":1,"count":1}`)
				default:
					w.WriteHeader(503)
					fmt.Fprint(w, `{"error":{"code":"store_unavailable","message":"INTERNAL-SECRET-DATA"}}`)
				}
			}))
			defer evil.Close()
			mem := &keyseq.MemLeases{}
			if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: "msgs", Step: 100, Sections: 2}); err != nil {
				t.Fatal(err)
			}
			// The store names the evil address as the owner of every
			// section, and as a member (a node sent there is asked only
			// at a member's address: issue 69).
			owner := keyseq.Owner{Token: "evil", Addr: strings.TrimPrefix(evil.URL, "http://")}
			if _, err := mem.Take(t.Context(), "msgs", []int{0, 1}, owner, time.Hour, 100); err != nil {
				t.Fatal(err)
			}
			if _, err := mem.Renew(t.Context(), "msgs", owner, time.Hour); err != nil {
				t.Fatal(err)
			}
			b := seqNodeOn(t, mem, "b")
			r := b.do("GET", "/v1/seq/msgs/k", "", TokenHeader, "tok")
			b.want(r, 503, "store_unavailable")
			if strings.Contains(r.body, "INTERNAL-SECRET-DATA") || strings.Contains(r.body, "127.0.0.1") || strings.Contains(r.body, `"value"`) {
				t.Fatalf("the caller's answer carries what the address said, or the address: %s", r.body)
			}
		})
	}
	if asked.Load() == 0 {
		t.Fatal("the node never forwarded: the test proves nothing")
	}
	if internal.Load() != 0 {
		t.Fatalf("a redirect was followed to an internal URL %d times", internal.Load())
	}
	if withToken.Load() != 0 {
		t.Fatalf("the caller's token was sent to an address of the store %d times", withToken.Load())
	}
}

// Issue 59, item 1: a request marked forwarded gets no privilege unless a
// node of this cluster signed it: without a token it is refused as any
// client's, signed with another cluster's key too; signed by a node of the
// cluster it is answered, with the proof.
func TestHostile_SeqForwardedNeedsPeer(t *testing.T) {
	mem := &keyseq.MemLeases{}
	a := seqNodeOn(t, mem, "a")
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs", "step": 100, "sections": 2}`), 201)
	target := "/v1/seq/msgs/k"
	a.want(a.do("GET", target, "", ForwardedHeader, "1"), 403, "forbidden")
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "x", PeerTimeHeader, "1", PeerSigHeader, "00"), 403, "forbidden")
	other := keyseq.Peer{Token: "z", Key: keyseq.NewPeerKey()}
	ts, sig := other.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now())
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "z", PeerTimeHeader, ts, PeerSigHeader, sig), 403, "forbidden")
	key, err := mem.PeerKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	peer := keyseq.Peer{Token: "b", Key: key}
	ts, sig = peer.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now())
	r := a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts, PeerSigHeader, sig)
	a.want(r, 200, `"value":1`)
	if !peer.CheckProof(sig, 200, []byte(r.body), r.hdr.Get(PeerProofHeader)) {
		t.Fatalf("the answer to a node of the cluster carries no proof: %v", r.hdr)
	}
	// A signature is good for one target and a while only.
	a.want(a.do("GET", target+"?n=5", "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts, PeerSigHeader, sig), 403, "forbidden")
	ts, sig = peer.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now().Add(-time.Hour))
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts, PeerSigHeader, sig), 403, "forbidden")
}

// Issue 59, item 2: a space's memory is accounted before anything is
// allocated. A space whose table passes the node's limit is refused at
// creation, naming the limit; one created elsewhere (a node with a larger
// limit, or the store by hand) is not started here: 503 with the reason,
// and the node lives on. A node holds no more sections than its budget.
func TestHostile_SpaceMemory(t *testing.T) {
	mem := &keyseq.MemLeases{}
	budget := keyseq.NewBudget(4 * 16 * 4) // four sections of 16 counters
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler), Budget: budget, MaxSpace: 1 << 20}, nil)
	a := newFixture(t, api.Options{}, func(c *service.Config) { c.Spaces = sp })
	a.want(a.do("POST", "/v1/spaces", `{"name": "huge", "slots": 16777216}`), 400, "invalid_argument", "sequences.max_space_memory", "1048576 bytes")
	// Created where the limit is larger: not started here.
	if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: "huge", Slots: 1 << 24, Sections: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a.want(a.do("GET", "/v1/seq/huge/anything", ""), 503, "store_unavailable", "sequences.max_space_memory", "not started here")
	}
	// Within the limit, but more sections than the budget holds: four
	// served, the rest refused with the reason, nothing allocated past it.
	a.want(a.do("POST", "/v1/spaces", `{"name": "small", "sections": 8, "slots": 16}`), 201)
	served, refused := 0, 0
	for k := range 64 {
		r := a.do("GET", fmt.Sprintf("/v1/seq/small/k%d", k), "")
		switch r.code {
		case 200:
			served++
		case 503:
			refused++
		default:
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	if served == 0 || refused == 0 || budget.Used() > 4*16*4 {
		t.Fatalf("served %d, refused %d, budget used %d of %d", served, refused, budget.Used(), 4*16*4)
	}
	if st := sp.Stats(); len(st) != 1 || st[0].Held != 4 {
		t.Fatalf("the node holds %+v, want the 4 sections its budget holds", st)
	}
}

// Issue 59, item 5: every 1 to 255-byte key works over HTTP, on the owner
// and through forwarding, the bytes paths treat specially too ("." and
// ".." were 404 "no such endpoint" from the mux's cleaning).
func TestSeq_KeysPathsClean(t *testing.T) {
	var forwarded atomic.Int64
	nodes := seqNodes(t, 2, &forwarded)
	a, b := nodes[0], nodes[1]
	tok := []string{TokenHeader, "tok"}
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs", "step": 100, "sections": 8}`), 201)
	keys := []string{".", "..", "...", "/", "//", "./", "../", "/.", "/..", "a/./b", "a/../b", "a//b", "./..", "%", "%2E", "?", "#", " ", "\\", ";", "\x00", "\xff"}
	for _, key := range keys {
		last := int64(0)
		for i, n := range []*fixture{a, b, a, b} {
			method := "GET"
			if i%2 == 1 {
				method = "POST"
			}
			r := n.do(method, "/v1/seq/msgs/"+PathSegment(key), "", tok...)
			n.want(r, 200)
			var got seqJSON
			if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Key != key && utf8.ValidString(key) || got.Value == nil || *got.Value <= last {
				t.Fatalf("key %q, %s by %d: %s after %d", key, method, i%2, r.body, last)
			}
			last = *got.Value
		}
	}
	if forwarded.Load() == 0 {
		t.Fatal("nothing was forwarded: the test proves nothing")
	}
}

// Issue 59, item 4: the owner does not limit the requests a node of the
// cluster forwards as one client's (the forwarding node limited each of
// its clients where it came in); a client's own requests, signed or not
// by a stranger, keep their limit.
func TestHostile_ForwardedNotPooled(t *testing.T) {
	mem := &keyseq.MemLeases{}
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"}, keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler)}, nil)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	g := api.NewGuard(api.GuardOptions{Rate: 1, Burst: 2, Now: func() time.Time { return now }})
	a := newFixture(t, api.Options{Guard: g}, func(c *service.Config) { c.Spaces = sp })
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs", "step": 100, "sections": 2}`), 201)
	key, err := mem.PeerKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	peer := keyseq.Peer{Token: "b", Key: key}
	for i := range 20 {
		target := fmt.Sprintf("/v1/seq/msgs/k%d", i)
		ts, sig := peer.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now())
		a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts, PeerSigHeader, sig), 200)
	}
	limited := 0
	for i := range 5 {
		if r := a.do("GET", fmt.Sprintf("/v1/seq/msgs/c%d", i), ""); r.code == 429 {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("a client's own requests past the rate were not limited: the test proves nothing")
	}
}

// Issue 69, item 1: a node's signature covered its token, the time and the
// path only, and the receiver checked the window and the HMAC: one request
// captured from plain node-to-node HTTP was replayed 200 times in 0.1 s
// from an address already locked out, all answered (a valid signature
// skips the guard), and sent to another node without X-Frond-Forwarded, 20
// of 20 were answered. A signature now covers the method, the receiving
// node's address and the body, is good for one request, and the proof
// covers the answer's body.
func TestHostile_PeerSignatureReplay(t *testing.T) {
	mem := &keyseq.MemLeases{}
	quiet := slog.New(slog.DiscardHandler)
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"}, keyseq.NodeOptions{TTL: time.Minute, Logger: quiet}, nil)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	g := api.NewGuard(api.GuardOptions{Rate: 1, Burst: 1, Now: func() time.Time { return now }})
	a := newFixture(t, api.Options{Guard: g}, func(c *service.Config) { c.Spaces = sp })
	a.want(a.do("POST", "/v1/spaces", `{"name": "msgs", "step": 100, "sections": 2}`), 201)
	key, err := mem.PeerKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	peer := keyseq.Peer{Token: "b", Key: key}
	target := "/v1/seq/msgs/k"
	ts, sig := peer.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now())
	signed := []string{ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts, PeerSigHeader, sig, ":remote", "203.0.113.9:1"}
	r := a.do("GET", target, "", signed...)
	a.want(r, 200, `"value":1`)
	if !peer.CheckProof(sig, 200, []byte(r.body), r.hdr.Get(PeerProofHeader)) {
		t.Fatalf("no proof of the answer: %v", r.hdr)
	}
	if peer.CheckProof(sig, 200, []byte(`{"value":999}`), r.hdr.Get(PeerProofHeader)) {
		t.Fatal("the proof holds for another body")
	}
	// The same request again, 200 times, with and without the forwarded
	// mark: a client's request like any, which the guard's rate holds (1
	// a second, the clock still: at most one answered; before, every one
	// was answered, the guard skipped).
	answered := 0
	for i := range 200 {
		h := signed
		if i%2 == 1 {
			h = signed[2:]
		}
		if r := a.do("GET", target, "", h...); r.code == 200 {
			answered++
		}
	}
	if answered > 1 {
		t.Fatalf("%d of 200 replays of a signed request answered past the rate of 1", answered)
	}
	// Signed for another node, or for another method: not a node's
	// request here, but a client's, held by the rate like the replays.
	ts2, sig2 := peer.Sign(keyseq.PeerRequest{Method: "GET", To: "10.0.0.2:8080", Target: target}, time.Now())
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts2, PeerSigHeader, sig2, ":remote", "203.0.113.9:1"), 429)
	ts3, sig3 := peer.Sign(keyseq.PeerRequest{Method: "POST", To: "127.0.0.1:1", Target: target}, time.Now())
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts3, PeerSigHeader, sig3, ":remote", "203.0.113.9:1"), 429)
	// A new signature for this node is a node's request: answered.
	ts4, sig4 := peer.Sign(keyseq.PeerRequest{Method: "GET", To: "127.0.0.1:1", Target: target}, time.Now())
	a.want(a.do("GET", target, "", ForwardedHeader, "1", PeerHeader, "b", PeerTimeHeader, ts4, PeerSigHeader, sig4, ":remote", "203.0.113.9:1"), 200)
}

// Issue 69, item 2: sequences.max_space_memory counted counters only:
// {"sections":1048576,"slots":1} counted 4 MiB and was accepted, took 5 s
// and 250 MB to start, and every lease round failed on SQLite. A space's
// sections are now at most 65,536 and its whole cost counted (each
// section's state beside its counters: keyseq.SectionOverhead), at
// creation and at start.
func TestHostile_SpaceWholeCost(t *testing.T) {
	mem := &keyseq.MemLeases{}
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler), MaxSpace: 8 << 20}, nil)
	a := newFixture(t, api.Options{}, func(c *service.Config) { c.Spaces = sp })
	a.want(a.do("POST", "/v1/spaces", `{"name": "wide", "sections": 1048576, "slots": 1}`), 400, "invalid_argument", "sections 1048576: 1 to 65536")
	// 65,536 sections of one counter: 256 KiB of counters, 16 MiB in all.
	a.want(a.do("POST", "/v1/spaces", `{"name": "wide", "sections": 65536, "slots": 1}`), 400, "invalid_argument", "sequences.max_space_memory")
	// Created where the limit is larger: not started here.
	if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: "wide", Sections: 65536, Slots: 1}); err != nil {
		t.Fatal(err)
	}
	a.want(a.do("GET", "/v1/seq/wide/k", ""), 503, "sequences.max_space_memory", "not started here")
	a.want(a.do("POST", "/v1/spaces", `{"name": "fits", "sections": 16384, "slots": 1}`), 201) // 4 MiB in all
	a.want(a.do("GET", "/v1/seq/fits/k", ""), 200, `"value":1`)
}

// Issue 69, item 4: past sequences.max_spaces the space asked least
// recently was stopped for every new start, with no residency: one
// anonymous client cycling 70 spaces made 2,937 evictions in 20 s, and a
// victim asked once a second was restarted on 17 of 18 requests (its
// values jumping by the step). A space asked within
// sequences.min_residency is not stopped; the new space is refused (503)
// instead, and the victim's values follow one another.
func TestHostile_EvictionResidency(t *testing.T) {
	mem := &keyseq.MemLeases{}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Clock: clock, Logger: slog.New(slog.DiscardHandler), MaxSpaces: 2}, nil)
	a := newFixture(t, api.Options{}, func(c *service.Config) { c.Spaces = sp })
	a.want(a.do("POST", "/v1/spaces", `{"name": "victim", "step": 100, "sections": 1, "slots": 16}`), 201)
	for i := range 10 { // made by the admin earlier (or on another node): started here by a request
		if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: fmt.Sprint("c", i), Step: 100, Sections: 1, Slots: 16}); err != nil {
			t.Fatal(err)
		}
	}
	var last int64
	refused := 0
	for round := range 18 {
		mu.Lock()
		now = now.Add(time.Second)
		mu.Unlock()
		r := a.do("GET", "/v1/seq/victim/k", "")
		a.want(r, 200)
		var v struct{ Value int64 }
		json.Unmarshal([]byte(r.body), &v)
		if round > 0 && v.Value != last+1 {
			t.Fatalf("round %d: the victim answered %d after %d: its space was stopped and started again", round, v.Value, last)
		}
		last = v.Value
		for i := range 10 { // the attacker cycles 10 spaces between the victim's requests
			if r := a.do("GET", fmt.Sprintf("/v1/seq/c%d/k", (round*10+i)%10), ""); r.code == 503 {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no start refused: the test proves nothing")
	}
}

// Issue 69, item 3: a space reserved sequences.memory for every section it
// took at its start, used or not: one anonymous GET to each of eight
// spaces filled the budget, and the next space held no section (64 of 64
// requests 503, "no node owns it now"). A section's counters are now
// reserved by its first request, so the spaces hold the memory their keys
// use.
func TestHostile_SpaceStartsDoNotStarve(t *testing.T) {
	mem := &keyseq.MemLeases{}
	one := keyseq.Space{Step: 100, Sections: 8, Slots: 16}
	budget := keyseq.NewBudget(8 * int64(one.Sections) * keyseq.SectionBytes(one)) // eight such spaces, every section served
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Logger: slog.New(slog.DiscardHandler), Budget: budget}, nil)
	a := newFixture(t, api.Options{}, func(c *service.Config) { c.Spaces = sp })
	for i := range 9 {
		s := one
		s.Name = fmt.Sprint("s", i)
		if err := mem.CreateSpace(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 { // one anonymous request to each of eight spaces
		a.want(a.do("GET", fmt.Sprintf("/v1/seq/s%d/k", i), ""), 200)
	}
	refused := 0
	for k := range 64 {
		if r := a.do("GET", fmt.Sprintf("/v1/seq/s8/k%d", k), ""); r.code != 200 {
			refused++
		}
	}
	if refused != 0 {
		t.Fatalf("the ninth space refused %d of 64 requests after one request to each of eight others (budget used %d of %d)", refused, budget.Used(), budget.Limit())
	}
}

// Issue 69: any anonymous client started any space an admin had made, as
// many as it named (each start a round of leases on the store and, past
// sequences.max_spaces, a space stopped). A request that would start a
// space not running here is now counted against its caller
// (sequences.start_rate, start_burst: api.Guard.AllowStart); a request for
// a space already running is not, nor another caller's.
func TestHostile_SpaceStartsPerCaller(t *testing.T) {
	mem := &keyseq.MemLeases{}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g := api.NewGuard(api.GuardOptions{StartRate: 1, StartBurst: 8, Now: clock})
	sp := keyseq.NewSpaces(mem, keyseq.Owner{Token: "a", Addr: "127.0.0.1:1"},
		keyseq.NodeOptions{TTL: time.Minute, Clock: clock, Logger: slog.New(slog.DiscardHandler)}, nil)
	sp.SetStartLimit(g.AllowStart) // as frond serve does (serveAll)
	a := newFixture(t, api.Options{Guard: g}, func(c *service.Config) { c.Spaces = sp })
	for i := range 40 { // made by the admin earlier, or on another node
		if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: fmt.Sprint("s", i), Step: 100, Sections: 1, Slots: 16}); err != nil {
			t.Fatal(err)
		}
	}
	const attacker, other = "192.0.2.7:1", "192.0.2.8:1"
	started, refused := 0, 0
	for i := range 40 {
		switch r := a.do("GET", fmt.Sprintf("/v1/seq/s%d/k", i), "", ":remote", attacker); r.code {
		case 200:
			started++
		case 429:
			refused++
			if r.hdr.Get("Retry-After") == "" || !strings.Contains(r.body, "sequences.start_rate") {
				t.Fatalf("a refused start says neither when nor why: %v %s", r.hdr, r.body)
			}
		default:
			t.Fatalf("status %d: %s", r.code, r.body)
		}
	}
	if started != 8 || refused != 32 || len(sp.Stats()) != 8 {
		t.Fatalf("one address asked for 40 spaces under a start burst of 8: %d started, %d refused, %d running", started, refused, len(sp.Stats()))
	}
	// The spaces it started answer it on: only starts are counted.
	for range 20 {
		a.want(a.do("GET", "/v1/seq/s0/k", "", ":remote", attacker), 200)
	}
	// Another caller starts spaces of its own budget.
	a.want(a.do("GET", "/v1/seq/s20/k", "", ":remote", other), 200)
	// The rate repays one start a second.
	a.want(a.do("GET", "/v1/seq/s21/k", "", ":remote", attacker), 429)
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	a.want(a.do("GET", "/v1/seq/s21/k", "", ":remote", attacker), 200)
	a.want(a.do("GET", "/v1/seq/s22/k", "", ":remote", attacker), 429)
	// An admin's creation is no request's start: never refused by it.
	for i := range 10 { // past the burst: each started at its creation
		a.want(a.do("POST", "/v1/spaces", fmt.Sprintf(`{"name": "made%d", "step": 100, "sections": 1, "slots": 16}`, i)), 201)
	}
}

// Frond-Timeout: a caller that waits less than the node would (a forward
// to an owner that accepts the connection and never answers: the lease's
// half, or the forwarder's 5 s) is answered 503 with Retry-After before
// its time is up, with time left to read it; a bad value is refused before
// anything is taken (issue 72: the clients' 2 s attempts timed out against
// nodes that waited longer).
func TestSeq_CallerTimeoutHeader(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	mem := &keyseq.MemLeases{}
	if err := mem.CreateSpace(t.Context(), keyseq.Space{Name: "msgs", Step: 100, Sections: 1}); err != nil {
		t.Fatal(err)
	}
	owner := keyseq.Owner{Token: "hung", Addr: hung.Addr().String()}
	if _, err := mem.Take(t.Context(), "msgs", []int{0}, owner, time.Hour, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Renew(t.Context(), "msgs", owner, time.Hour); err != nil {
		t.Fatal(err)
	}
	b := seqNodeOn(t, mem, "b")
	for _, bad := range []string{"0", "-5", "1.5", "abc", "600001", "99999999999999999999", ""} {
		b.want(b.do("GET", "/v1/seq/msgs/k", "", TokenHeader, "tok", TimeoutHeader, bad), 400, "invalid_argument", TimeoutHeader)
	}
	from := time.Now()
	r := b.do("GET", "/v1/seq/msgs/k", "", TokenHeader, "tok", TimeoutHeader, "1000")
	took := time.Since(from)
	b.want(r, 503, "store_unavailable")
	if r.hdr.Get("Retry-After") == "" {
		t.Fatalf("a 503 without Retry-After: %v", r.hdr)
	}
	if took >= time.Second {
		t.Fatalf("answered after %v, when the caller waits 1 s: it read a timeout, not the 503", took)
	}
	t.Logf("answered 503 after %v (Frond-Timeout: 1000)", took)
}
