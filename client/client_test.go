package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clienttest"
	"github.com/frond-id/frond/keyseq"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

var bg = context.Background()

func newClient(t testing.TB, o client.Options) *client.Client {
	t.Helper()
	c, err := client.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClient_Kinds(t *testing.T) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 1000)
	c := newClient(t, client.Options{Servers: []string{srv.Addr}})
	for want := int64(1); want <= 3; want++ {
		if id, err := c.Next(bg, "order"); err != nil || id != want {
			t.Fatalf("Next = %d, %v; want %d", id, err, want)
		}
	}
	ids, err := c.NextN(bg, "order", 5)
	if err != nil || !slices.Equal(ids, []int64{4, 5, 6, 7, 8}) {
		t.Fatalf("NextN = %v, %v", ids, err)
	}
	tag, err := c.Tag("order")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := tag.Next(bg); err != nil || id != 9 {
		t.Fatalf("Tag.Next = %d, %v", id, err)
	}
	sf, err := c.Snowflake(bg, 3)
	if err != nil || len(sf) != 3 || !(sf[0] < sf[1] && sf[1] < sf[2]) {
		t.Fatalf("Snowflake = %v, %v", sf, err)
	}
	us, err := c.UUIDs(bg, 7, 2)
	if err != nil || len(us) != 2 || us[0][14] != '7' {
		t.Fatalf("UUIDs = %v, %v", us, err)
	}
	if u, err := c.NameUUID(bg, 5, "dns", "example.com"); err != nil || u != "cfbff0d1-9375-5685-968c-48ce8b15ae17" {
		t.Fatalf("NameUUID = %q, %v", u, err)
	}
	if _, err := c.NameUUID(bg, 5, "dns", ""); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("NameUUID without a name = %v", err)
	}
	if us, err := c.UUIDs(bg, 6, 2); err != nil || us[0][14] != '6' || us[0] >= us[1] {
		t.Fatalf("UUIDs(6) = %v, %v", us, err)
	}
	if ts, err := c.TypeIDs(bg, "user", 2); err != nil || len(ts) != 2 || !strings.HasPrefix(ts[0], "user_") || ts[0] >= ts[1] {
		t.Fatalf("TypeIDs = %v, %v", ts, err)
	}
	if fs, err := c.SnowflakeStrings(bg, "friendly", "evt", 2); err != nil || len(fs) != 2 || !strings.HasPrefix(fs[0], "evt_") || strings.Count(fs[1], "-") != 2 {
		t.Fatalf("SnowflakeStrings = %v, %v", fs, err)
	}
	if _, err := c.Next(bg, "nope"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("Next(nope) = %v, want ErrTagNotFound", err)
	}
	var ce *client.Error
	if _, err := c.Serials(bg, "nope", 1); !errors.As(err, &ce) || ce.Code != "serial_not_found" || ce.GRPC != codes.NotFound {
		t.Fatalf("Serials(nope) = %v", err)
	}
	if _, err := c.NextN(bg, "order", 0); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("NextN(0) = %v", err)
	}
	st := c.Stats()
	if len(st.Tags) != 1 || st.Tags[0].Tag != "order" || st.Tags[0].Loads < 1 || st.Calls < 4 || !st.Servers[0].Up {
		t.Fatalf("Stats = %+v", st)
	}
}

// Four clients on two servers sharing a store, one server stopped and
// started again mid-run: every ID is unique, and each caller's IDs of a
// tag increase.
func TestClient_UniqueAcrossClientsAndServers(t *testing.T) {
	store := clienttest.NewStore()
	a := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(1))
	b := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(2))
	a.CreateTag(t, "order", 100)
	var clients []*client.Client
	for i := range 4 {
		servers := []string{a.Addr, b.Addr}
		if i%2 == 1 {
			servers = []string{b.Addr, a.Addr}
		}
		clients = append(clients, newClient(t, client.Options{Servers: servers, MinLease: 50, MaxLease: 400,
			BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}))
	}
	var (
		mu   sync.Mutex
		seen = map[int64]bool{}
		wg   sync.WaitGroup
		stop atomic.Bool
		errs atomic.Int64
	)
	for _, c := range clients {
		for range 2 {
			wg.Go(func() {
				var mine []int64
				for !stop.Load() {
					id, err := c.Next(bg, "order")
					if err != nil {
						if errs.Add(1) <= 3 {
							t.Logf("Next: %v", err)
						}
						continue
					}
					if len(mine) > 0 && id <= mine[len(mine)-1] {
						t.Errorf("a caller got %d after %d", id, mine[len(mine)-1])
						return
					}
					mine = append(mine, id)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range mine {
					if seen[id] {
						t.Errorf("ID %d handed out twice", id)
						return
					}
					seen[id] = true
				}
			})
		}
	}
	time.Sleep(200 * time.Millisecond)
	a.Stop()
	time.Sleep(200 * time.Millisecond)
	a.Restart()
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if len(seen) < 1000 {
		t.Fatalf("only %d IDs", len(seen))
	}
	var failovers uint64
	for _, c := range clients {
		failovers += c.Stats().Failovers
	}
	t.Logf("%d unique IDs, %d failed calls, %d fail-overs", len(seen), errs.Load(), failovers)
	if errs.Load() != 0 {
		t.Errorf("%d calls failed although one server was up throughout", errs.Load())
	}
}

// A store outage shorter than the leases last is invisible to callers.
func TestClient_StoreOutageWithinLease(t *testing.T) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 100)
	c := newClient(t, client.Options{Servers: []string{srv.Addr}, MinLease: 10_000})
	tag, err := c.Tag("order")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tag.Next(bg); err != nil {
		t.Fatal(err)
	}
	// The next lease is fetched once a tenth of the current one is used.
	if _, err := tag.NextRanges(bg, 1000); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	remaining := func() int64 { return c.Stats().Tags[0].Remaining }
	for remaining() < 18_999 { // the rest of the lease and the next one
		if time.Now().After(deadline) {
			t.Fatalf("no prefetch: %+v", c.Stats().Tags)
		}
		time.Sleep(time.Millisecond)
	}
	srv.Store.SetDown(true)
	defer srv.Store.SetDown(false)
	for i := range 18_999 {
		if _, err := tag.Next(bg); err != nil {
			t.Fatalf("ID %d during the outage: %v", i, err)
		}
	}
}

// unavailable is a server that answers every call UNAVAILABLE, counting.
type unavailable struct {
	frondv1.UnimplementedIDServiceServer
	calls atomic.Int64
}

func (u *unavailable) NextSegmentRanges(context.Context, *frondv1.NextSegmentRangesRequest) (*frondv1.Ranges, error) {
	u.calls.Add(1)
	return nil, status.Error(codes.Unavailable, "store_unavailable: down")
}

func (u *unavailable) NextSnowflake(context.Context, *frondv1.NextSnowflakeRequest) (*frondv1.IDs, error) {
	u.calls.Add(1)
	return nil, status.Error(codes.Unavailable, "down")
}

// A server that answers UNAVAILABLE rests while calls fail over to the
// next one: it is not hammered.
func TestClient_UnavailableNotHammered(t *testing.T) {
	bad := &unavailable{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	frondv1.RegisterIDServiceServer(gs, bad)
	go gs.Serve(ln)
	defer gs.Stop()
	good := clienttest.Start(t)
	good.CreateTag(t, "order", 10)
	c := newClient(t, client.Options{Servers: []string{ln.Addr().String(), good.Addr}, MinLease: 10, MaxLease: 10,
		BackoffMin: 50 * time.Millisecond, BackoffMax: time.Second})
	start := time.Now()
	const calls = 300
	for range calls {
		if _, err := c.Snowflake(bg, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Next(bg, "order"); err != nil {
			t.Fatal(err)
		}
	}
	// Rests of 25-50, 50-100, 100-200, 200-400, 400-800 ms, then 0.5-1 s:
	// a few tries, however many calls (each failed try rests longer).
	elapsed := time.Since(start)
	bound := int64(6 + 2*elapsed/time.Second)
	if n := bad.calls.Load(); n > bound {
		t.Fatalf("the unavailable server got %d of %d calls in %v (at most %d expected)", n, 2*calls, elapsed, bound)
	}
	if st := c.Stats(); st.Failovers == 0 || st.Servers[0].Up {
		t.Fatalf("Stats = %+v", st)
	}
}

// Every server down: a call fails within its context, as an outage.
func TestClient_AllDown(t *testing.T) {
	srv := clienttest.Start(t)
	addr := srv.Addr
	srv.Stop()
	c := newClient(t, client.Options{Servers: []string{addr}, Timeout: 100 * time.Millisecond, BackoffMin: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Snowflake(ctx, 1)
	if !errors.Is(err, frond.ErrStoreUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("Snowflake with no server: %v after %v", err, time.Since(start))
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	var n atomic.Int64
	for b.Loop() {
		n.Add(1)
	}
}

// The client's hot path: one goroutine, a tag handle, IDs from the lease.
func BenchmarkClient_TagNext(b *testing.B) {
	srv := clienttest.Start(b)
	srv.CreateTag(b, "bench", 1000)
	c := newClient(b, client.Options{Servers: []string{srv.Addr}, MinLease: 100_000})
	tag, err := c.Tag("bench")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := tag.Next(bg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClient_Next(b *testing.B) {
	srv := clienttest.Start(b)
	srv.CreateTag(b, "bench", 1000)
	c := newClient(b, client.Options{Servers: []string{srv.Addr}, MinLease: 100_000})
	for b.Loop() {
		if _, err := c.Next(bg, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// Eight goroutines take IDs while every lease takes 50 ms at the server:
// leases grow with demand and are fetched ahead, so a call's p99.9 stays at
// memory speed (reported as p99.9-ns).
func BenchmarkClient_Parallel8_SlowServer(b *testing.B) {
	srv := clienttest.Start(b)
	srv.CreateTag(b, "bench", 1000)
	c := newClient(b, client.Options{Servers: []string{srv.Addr}})
	if _, err := c.Next(bg, "bench"); err != nil {
		b.Fatal(err)
	}
	srv.Store.SetDelay(50 * time.Millisecond)
	const g = 8
	lat := make([][]time.Duration, g)
	per := b.N/g + 1
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range g {
		lat[i] = make([]time.Duration, 0, per)
		wg.Go(func() {
			tag, _ := c.Tag("bench")
			for range per {
				t0 := time.Now()
				if _, err := tag.Next(bg); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)*999/1000].Nanoseconds()), "p99.9-ns")
	b.ReportMetric(float64(all[len(all)-1].Nanoseconds()), "max-ns")
	b.ReportMetric(float64(c.Stats().Tags[0].Waits), "waits")
}

// A server whose health service says NOT_SERVING gets no call: the
// client's connection watches it and calls go to the next server.
func TestClient_HealthChecked(t *testing.T) {
	bad := &unavailable{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	frondv1.RegisterIDServiceServer(gs, bad)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go gs.Serve(ln)
	defer gs.Stop()
	good := clienttest.Start(t)
	c := newClient(t, client.Options{Servers: []string{ln.Addr().String(), good.Addr}, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	for range 50 {
		if _, err := c.Snowflake(bg, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if n := bad.calls.Load(); n != 0 {
		t.Fatalf("the NOT_SERVING server got %d calls", n)
	}
}

// A client with a tag token gets IDs from servers that require one.
func TestClient_Token(t *testing.T) {
	srv := clienttest.Start(t, clienttest.WithTokens(map[string][]string{"t1": {"order"}}))
	srv.CreateTag(t, "order", 100)
	without := newClient(t, client.Options{Servers: []string{srv.Addr}})
	var ce *client.Error
	if _, err := without.Next(bg, "order"); !errors.As(err, &ce) || ce.Code != "forbidden" {
		t.Fatalf("without a token: %v", err)
	}
	with := newClient(t, client.Options{Servers: []string{srv.Addr}, Token: "t1"})
	if id, err := with.Next(bg, "order"); err != nil || id != 1 {
		t.Fatalf("with the token: %d, %v", id, err)
	}
}

// A fail-over to a server whose buffer lies far below the IDs this client
// already handed out: the client passes the buffered IDs in a few calls
// and its IDs keep increasing.
func TestClient_FailoverToServerBehind(t *testing.T) {
	store := clienttest.NewStore()
	a := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(1))
	b := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(2))
	a.CreateTag(t, "order", 1000)
	// B buffers IDs from 1 on: 999 of them once one is taken.
	if _, err := newClient(t, client.Options{Servers: []string{b.Addr}, MinLease: 1, MaxLease: 1}).Next(bg, "order"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, client.Options{Servers: []string{a.Addr, b.Addr}, MinLease: 10, MaxLease: 10, BackoffMin: time.Millisecond})
	last := int64(0)
	take := func(n int) {
		t.Helper()
		for range n {
			id, err := c.Next(bg, "order")
			if err != nil {
				t.Fatal(err)
			}
			if id <= last {
				t.Fatalf("%d after %d", id, last)
			}
			last = id
		}
	}
	take(1000) // from A, above B's buffer
	a.Stop()
	take(100) // from B: its buffered IDs below are passed, not handed out
	if st := c.Stats(); st.Failovers == 0 {
		t.Fatalf("no fail-over: %+v", st)
	}
}

// A tag the client's token does not allow is refused at once and does not
// hold up other tags (forbidden is an answer, not an outage).
func TestClient_ForbiddenIsNotAnOutage(t *testing.T) {
	srv := clienttest.Start(t, clienttest.WithTokens(map[string][]string{"t1": {"order"}}))
	srv.CreateTag(t, "order", 100)
	srv.CreateTag(t, "secret", 100)
	c := newClient(t, client.Options{Servers: []string{srv.Addr}, Token: "t1"})
	for range 3 {
		if _, err := c.Next(bg, "secret"); !errors.Is(err, frond.ErrForbidden) {
			t.Fatalf("secret: %v, want ErrForbidden", err)
		}
	}
	if id, err := c.Next(bg, "order"); err != nil || id != 1 {
		t.Fatalf("order right after a refusal: %d, %v", id, err)
	}
}

// A sequence tag is never leased: the client asks a server for each ID, so
// IDs from two servers, one call after another, follow each other with no
// gap; a segment tag of the same client is still leased.
func TestClient_SequenceTag(t *testing.T) {
	store := clienttest.NewStore()
	a := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(1))
	b := clienttest.Start(t, clienttest.WithStore(store), clienttest.WithNode(2))
	a.CreateSequenceTag(t, "ticket")
	a.CreateTag(t, "order", 1000)
	ca := newClient(t, client.Options{Servers: []string{a.Addr}})
	cb := newClient(t, client.Options{Servers: []string{b.Addr}})
	h, err := cb.Tag("ticket")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(1)
	for i := range 10 {
		var id int64
		if i%2 == 0 {
			id, err = ca.Next(bg, "ticket")
		} else {
			id, err = h.Next(bg)
		}
		if err != nil || id != want {
			t.Fatalf("call %d: %d, %v; want %d", i, id, err, want)
		}
		want++
	}
	ids, err := ca.NextN(bg, "ticket", 3)
	if err != nil || !slices.Equal(ids, []int64{11, 12, 13}) {
		t.Fatalf("NextN: %v, %v", ids, err)
	}
	rs, err := h.NextRanges(bg, 2)
	if err != nil || len(rs) != 1 || rs[0].Start != 14 || rs[0].End != 16 {
		t.Fatalf("NextRanges: %v, %v", rs, err)
	}
	before := store.Allocations()
	for range 5 {
		if _, err := ca.Next(bg, "order"); err != nil {
			t.Fatal(err)
		}
	}
	if got := store.Allocations() - before; got > 2 {
		t.Fatalf("the segment tag took %d store calls for 5 IDs: not leased", got)
	}
}

// An attempt that times out while the server takes its IDs leaves no gap:
// the retry carries the call's idempotency key, and the server answers it
// with the IDs it took for the first attempt.
func TestClient_RetryGetsTheSameIDs(t *testing.T) {
	store := clienttest.NewStore()
	srv := clienttest.Start(t, clienttest.WithStore(store))
	srv.CreateSequenceTag(t, "ticket")
	c := newClient(t, client.Options{Servers: []string{srv.Addr}, Timeout: 100 * time.Millisecond, Attempts: 10,
		BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	if id, err := c.Next(bg, "ticket"); err != nil || id != 1 {
		t.Fatalf("first ID: %d, %v", id, err)
	}
	store.SetDelay(300 * time.Millisecond) // three attempts time out while the store answers
	calls := store.Allocations()
	id, err := c.Next(bg, "ticket")
	if err != nil || id != 2 {
		t.Fatalf("after timeouts: %d, %v; want 2 (no ID lost to the timed-out attempts)", id, err)
	}
	if n := store.Allocations() - calls; n != 1 {
		t.Fatalf("%d store calls for one ID", n)
	}
	if st := c.Stats(); st.Retries == 0 {
		t.Fatalf("no retry happened: %+v", st)
	}
}

// A tag whose configured form is text: Next and NextN refuse it, and the
// server refuses before it takes any ID (a call took IDs only to throw
// them away); NextStrings serves it.
func TestClient_TextFormTag(t *testing.T) {
	srv := clienttest.Start(t, clienttest.WithForms(map[string]string{"b": "base62"}))
	srv.CreateTag(t, "b", 100)
	c := newClient(t, client.Options{Servers: []string{srv.Addr}})
	ctx := context.Background()
	for range 3 {
		if _, err := c.Next(ctx, "b"); !errors.Is(err, frond.ErrFormNotCarried) || !strings.Contains(err.Error(), "NextStrings") {
			t.Fatalf("Next: %v", err)
		}
	}
	if _, err := c.NextN(ctx, "b", 5); !errors.Is(err, frond.ErrFormNotCarried) {
		t.Fatalf("NextN: %v", err)
	}
	// No refusal took an ID.
	if s, err := c.NextStrings(ctx, "b", 1); err != nil || len(s) != 1 || s[0] != "00000000001" {
		t.Fatalf("NextStrings = %v, %v", s, err)
	}
}

// A tag whose configured form is mist: Next serves Mist numbers call by
// call (a lease is a range of plain numbers), the counter in the top bits.
func TestClient_MistTag(t *testing.T) {
	srv := clienttest.Start(t, clienttest.WithForms(map[string]string{"m": "mist"}))
	srv.CreateTag(t, "m", 100)
	c := newClient(t, client.Options{Servers: []string{srv.Addr}})
	for want := int64(1); want <= 3; want++ {
		if id, err := c.Next(bg, "m"); err != nil || id>>16 != want {
			t.Fatalf("Next = %d (counter %d), %v; want counter %d", id, id>>16, err, want)
		}
	}
	if ids, err := c.NextN(bg, "m", 2); err != nil || len(ids) != 2 || ids[0]>>16 != 4 || ids[1]>>16 != 5 {
		t.Fatalf("NextN = %v, %v", ids, err)
	}
}

// Keyed sequences through the client: two servers sharing their spaces,
// the client on both; each key's values increase whichever answers.
func TestClient_Seq(t *testing.T) {
	st, spaces := clienttest.NewStore(), &keyseq.MemLeases{}
	a := clienttest.Start(t, clienttest.WithStore(st), clienttest.WithSpaces(spaces), clienttest.WithNode(1))
	b := clienttest.Start(t, clienttest.WithStore(st), clienttest.WithSpaces(spaces), clienttest.WithNode(2))
	a.CreateSpace(t, "msgs", 8)
	c := newClient(t, client.Options{Servers: []string{a.Addr, b.Addr}})
	last := map[string]int64{}
	for i := range 200 {
		key := fmt.Sprintf("conv-%d", i%7)
		first, end, err := c.Seq(bg, "msgs", key, 1+i%3)
		if err != nil {
			t.Fatal(err)
		}
		if first <= last[key] || end != first+int64(i%3) {
			t.Fatalf("%s: %d..%d after %d", key, first, end, last[key])
		}
		last[key] = end
	}
	if _, _, err := c.Seq(bg, "nope", "k", 1); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("Seq of no space: %v", err)
	}
	if _, _, err := c.Seq(bg, "msgs", "", 1); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("Seq of an empty key: %v", err)
	}
}

// A tag with shard bits through the client: NextShard and NextForKey put
// the shard below a counter leased from the servers (two clients on two
// servers: every ID unique, id % 16 the shard asked for); Next refuses the
// tag (its IDs need a shard); NextShard refuses a tag without shard bits
// and a shard past them.
func TestClient_ShardBits(t *testing.T) {
	st := clienttest.NewStore()
	a, b := clienttest.Start(t, clienttest.WithStore(st), clienttest.WithNode(1)), clienttest.Start(t, clienttest.WithStore(st), clienttest.WithNode(2))
	if _, err := a.Service.CreateTag(bg, frond.Tag{Name: "orders", MaxID: 1, Step: 100, Mapping: frond.ShardMapping(4)}); err != nil {
		t.Fatal(err)
	}
	a.CreateTag(t, "plain", 100)
	clients := []*client.Client{newClient(t, client.Options{Servers: []string{a.Addr}}), newClient(t, client.Options{Servers: []string{b.Addr}})}
	seen := map[int64]bool{}
	keys := []string{"user-42", "tenant-7", "a", "shop:10086", "用户-1"}
	for i := range 3000 {
		c := clients[i%2]
		var id, want int64
		var err error
		if i%3 == 0 {
			key := keys[i%len(keys)]
			want = frond.ShardOf(key, 4)
			id, err = c.NextForKey(bg, "orders", key)
		} else {
			want = int64(i % 16)
			id, err = c.NextShard(bg, "orders", want)
		}
		if err != nil {
			t.Fatal(err)
		}
		if id%16 != want || seen[id>>4] {
			t.Fatalf("%d: shard %d (want %d), counter %d seen before: %v", id, id%16, want, id>>4, seen[id>>4])
		}
		seen[id>>4] = true
	}
	if _, err := clients[0].Next(bg, "orders"); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Errorf("Next of a tag with shard bits: %v", err)
	}
	if _, err := clients[0].NextShard(bg, "orders", 16); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Errorf("shard 16 of 4 bits: %v", err)
	}
	for range 2 {
		if _, err := clients[0].NextShard(bg, "plain", 1); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("NextShard of a tag without shard bits: %v", err)
		}
	}
	if id, err := clients[0].Next(bg, "plain"); err != nil || id < 1 {
		t.Errorf("Next of the plain tag beside: %d, %v", id, err)
	}
	// A sequence tag with shard bits is not leased: asked for call by
	// call, its IDs increase per shard in answer order.
	if _, err := a.Service.CreateTag(bg, frond.Tag{Name: "tickets", MaxID: 1, Step: 10, Mapping: frond.ShardMapping(2), Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for i := range 20 {
		id, err := clients[i%2].NextShard(bg, "tickets", 3)
		if err != nil || id%4 != 3 || id <= last {
			t.Fatalf("sequence tag with shard bits: %d after %d, %v", id, last, err)
		}
		last = id
	}
	if id, err := clients[0].NextForKey(bg, "tickets", "user-42"); err != nil || id%4 != frond.ShardOf("user-42", 2) || id <= last {
		t.Fatalf("sequence tag by key: %d, %v", id, err)
	}
}

// What a gene ID costs beside a plain leased ID: the same lease, a shift
// and an or (NextShard), or a key's hash too (NextForKey).
func BenchmarkClient_NextShard(b *testing.B) {
	srv := clienttest.Start(b)
	if _, err := srv.Service.CreateTag(bg, frond.Tag{Name: "bench", MaxID: 1, Step: 1000, Mapping: frond.ShardMapping(4)}); err != nil {
		b.Fatal(err)
	}
	c := newClient(b, client.Options{Servers: []string{srv.Addr}, MinLease: 100_000})
	for b.Loop() {
		if _, err := c.NextShard(bg, "bench", 5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClient_NextForKey(b *testing.B) {
	srv := clienttest.Start(b)
	if _, err := srv.Service.CreateTag(bg, frond.Tag{Name: "bench", MaxID: 1, Step: 1000, Mapping: frond.ShardMapping(4)}); err != nil {
		b.Fatal(err)
	}
	c := newClient(b, client.Options{Servers: []string{srv.Addr}, MinLease: 100_000})
	for b.Loop() {
		if _, err := c.NextForKey(bg, "bench", "user-42"); err != nil {
			b.Fatal(err)
		}
	}
}
