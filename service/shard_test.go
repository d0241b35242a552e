package service

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

// A tag with shard bits hands out n<<bits | shard: the shard given, or a
// key's; every number routes to its shard by its low bits, and the
// numbers are unique across shards (the counter's uniqueness), on two
// nodes of one store.
func TestShardBits_Tags(t *testing.T) {
	st := memstore.New(nil)
	a := mappingNode(t, st, nil)
	b := mappingNode(t, st, nil)
	for _, tg := range []frond.Tag{
		{Name: "orders", MaxID: 1, Step: 50, Mapping: frond.ShardMapping(2)},
		{Name: "tickets", MaxID: 1, Step: 50, Mapping: frond.ShardMapping(10), Mode: frond.ModeSequence},
		{Name: "plain", MaxID: 1, Step: 50},
	} {
		if _, err := a.CreateTag(bg, tg); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(70, 2))
	seen := map[int64]bool{}
	for i := range 600 {
		node := a
		if i%2 == 1 {
			node = b
		}
		tag, bits := "orders", 2
		if i%3 == 0 {
			tag, bits = "tickets", 10
		}
		r := Request{Kind: KindSegment, Name: tag, Count: int64(1 + rng.IntN(3))}
		want := rng.Int64N(1 << bits)
		if i%4 == 0 {
			r.ShardKey = []string{"user-42", "tenant-7", "a", "shop:10086"}[rng.IntN(4)]
			want = frond.ShardOf(r.ShardKey, bits)
		} else {
			r.Shard, r.HasShard = want, true
		}
		ans, err := node.Take(bg, r)
		if err != nil {
			t.Fatalf("%s shard %d: %v", tag, want, err)
		}
		for _, id := range ans.Nums {
			if id&(1<<bits-1) != want {
				t.Fatalf("%s: %d has shard %d, want %d", tag, id, id&(1<<bits-1), want)
			}
			if seen[id>>bits<<8|int64(len(tag))] {
				t.Fatalf("%s: counter %d handed out twice", tag, id>>bits)
			}
			seen[id>>bits<<8|int64(len(tag))] = true
		}
	}
	// user-42's shard under 2 bits: 13 & 3 = 1 (docs/kinds.md's vectors).
	ans, err := a.Take(bg, Request{Kind: KindSegment, Name: "orders", ShardKey: "user-42"})
	if err != nil || ans.Nums[0]%4 != 1 {
		t.Fatalf("user-42's order: %v, %v", ans.Nums, err)
	}
	// Encodings of the number carry the shard too.
	ans, err = a.Take(bg, Request{Kind: KindSegment, Name: "orders", Shard: 3, HasShard: true, Form: FormBase62})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := idfmt.Base62.Decode(ans.Strs[0]); err != nil || v%4 != 3 {
		t.Fatalf("base62 %q = %d, %v", ans.Strs[0], v, err)
	}
	for _, c := range []struct {
		r    Request
		want error
	}{
		{Request{Kind: KindSegment, Name: "orders"}, frond.ErrInvalidArgument},                           // no shard
		{Request{Kind: KindSegment, Name: "orders", Shard: 4, HasShard: true}, frond.ErrInvalidArgument}, // past 2 bits
		{Request{Kind: KindSegment, Name: "orders", Shard: -1, HasShard: true}, frond.ErrInvalidArgument},
		{Request{Kind: KindSegment, Name: "orders", Shard: 1, HasShard: true, ShardKey: "k"}, frond.ErrInvalidArgument},
		{Request{Kind: KindSegment, Name: "plain", Shard: 1, HasShard: true}, frond.ErrInvalidArgument}, // no shard bits
		{Request{Kind: KindSnowflake, Shard: 1, HasShard: true}, frond.ErrInvalidArgument},
		{Request{Kind: KindSegment, Name: "orders", Shard: 1, HasShard: true, Form: FormMist}, frond.ErrInvalidArgument},
		{Request{Kind: KindSegment, Name: "orders", Shard: 1, HasShard: true, Ranges: true, Count: 10}, frond.ErrFormNotCarried},
		{Request{Kind: KindSegment, Name: "orders", Shard: 1, HasShard: true, Lease: true, Ranges: true, Count: 10}, frond.ErrFormNotCarried},
	} {
		if _, err := a.Take(bg, c.r); !errors.Is(err, c.want) {
			t.Errorf("%+v: %v, want %v", c.r, err, c.want)
		}
	}
	// Set at creation: the mapping does not change to or from shard bits.
	for _, u := range []struct{ tag, to string }{{"orders", frond.MappingPlain}, {"orders", frond.ShardMapping(3)}, {"plain", frond.ShardMapping(2)}} {
		if _, err := a.UpdateTag(bg, u.tag, frond.TagUpdate{Mapping: &u.to}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%s to %s: %v", u.tag, u.to, err)
		}
	}
	// A retry with the key of another shard is no replay.
	r := Request{Kind: KindSegment, Name: "orders", Shard: 1, HasShard: true, IdempotencyKey: "k1"}
	first, err := a.Take(bg, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Shard = 2
	if _, err := a.Take(bg, r); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("the key of shard 1 asked for shard 2: %v (first %v)", err, first.Nums)
	}
}

// Snowflake IDs with shard bits (snowflake.shard_bits): two nodes of one
// layout hand out IDs whose lowest bits are the shard asked for (given,
// or a key's), never the same ID twice; decode shows the shard and compose
// gives the ID back; a request without a shard, a form that hides the
// bits, and a shard on a layout without them are refused.
func TestShardBits_Snowflake(t *testing.T) {
	plain, _ := snowflake.Preset(snowflake.Twitter)
	l, err := plain.WithShardBits(3)
	if err != nil {
		t.Fatal(err)
	}
	node := func(id int64, layout snowflake.Layout) *Service {
		c := newClock()
		s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{Layout: layout, PersistEvery: time.Hour, MaxLead: time.Hour},
			ObfuscationKey: []byte("a key of sixteen bytes or more")}, memstore.New(nil), &memRegistry{id: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(bg) })
		return s
	}
	a, b := node(3, l), node(4, l)
	rng := rand.New(rand.NewPCG(70, 3))
	seen := map[int64]bool{}
	for i := range 400 {
		s := a
		if i%2 == 1 {
			s = b
		}
		r := Request{Kind: KindSnowflake, Count: int64(1 + rng.IntN(40))}
		want := rng.Int64N(8)
		if i%3 == 0 {
			r.ShardKey = []string{"user-42", "tenant-7", "a", "shop:10086", "用户-1"}[rng.IntN(5)]
			want = frond.ShardOf(r.ShardKey, 3)
		} else {
			r.Shard, r.HasShard = want, true
		}
		ans, err := s.Take(bg, r)
		if err != nil {
			t.Fatalf("shard %d: %v", want, err)
		}
		for _, id := range ans.Nums {
			if id%8 != want || seen[id] {
				t.Fatalf("%d: shard %d (want %d), seen before %v", id, id%8, want, seen[id])
			}
			seen[id] = true
		}
		if i == 0 {
			id := ans.Nums[0]
			d, err := s.Decode(id, "")
			if err != nil || d.Shard == nil || *d.Shard != want || d.Node != 3 {
				t.Fatalf("decode %d: %+v, %v", id, d, err)
			}
			back, err := s.Compose(ComposeRequest{Time: d.Time, Node: d.Node, Seq: d.Seq, Shard: want})
			if err != nil || back.ID != id {
				t.Fatalf("compose %+v = %+v, %v: want %d", d, back, err, id)
			}
			byKey, err := s.Compose(ComposeRequest{Time: d.Time, Node: d.Node, Seq: d.Seq, ShardKey: "user-42"})
			if err != nil || byKey.ID%8 != frond.ShardOf("user-42", 3) {
				t.Fatalf("compose by key: %+v, %v", byKey, err)
			}
			bounds, err := s.IDBounds(BoundsRequest{Kind: KindSnowflake, From: d.Time, To: d.Time.Add(time.Millisecond)})
			if err != nil || id < bounds.FirstID || id > bounds.LastID {
				t.Fatalf("bounds %+v (%v) do not hold %d", bounds, err, id)
			}
		}
	}
	for _, r := range []Request{
		{Kind: KindSnowflake},
		{Kind: KindSnowflake, Shard: 8, HasShard: true},
		{Kind: KindSnowflake, Shard: 1, HasShard: true, ShardKey: "x"},
		{Kind: KindSnowflake, Shard: 1, HasShard: true, Form: FormOpaque},
		{Kind: KindSnowflake, ShardKey: "x", Form: FormFriendly},
	} {
		if _, err := a.Take(bg, r); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want invalid_argument", r, err)
		}
	}
	p := node(5, plain)
	if _, err := p.Take(bg, Request{Kind: KindSnowflake, Shard: 1, HasShard: true}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "no shard bits") {
		t.Errorf("a shard on a layout without shard bits: %v", err)
	}
	if _, err := p.Compose(ComposeRequest{Time: time.Now(), ShardKey: "x"}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Errorf("compose a shard on a layout without shard bits: %v", err)
	}
	if d, err := p.Take(bg, Request{Kind: KindSnowflake, Form: FormFriendly}); err != nil || len(d.Strs) != 1 {
		t.Errorf("friendly without shard bits: %+v, %v", d, err)
	}
}

// A lease of counters (Request.Counters): a client library that applies a
// tag's shard bits itself leases the tag's counters and learns the bits;
// a lease without it is refused as before (an older client would hand out
// bare counters), and counters go with a lease only.
func TestShardBits_LeaseOfCounters(t *testing.T) {
	st := memstore.New(nil)
	a := mappingNode(t, st, nil)
	for _, tg := range []frond.Tag{{Name: "orders", MaxID: 1, Step: 50, Mapping: frond.ShardMapping(4)}, {Name: "plain", MaxID: 1, Step: 50}} {
		if _, err := a.CreateTag(bg, tg); err != nil {
			t.Fatal(err)
		}
	}
	lease := Request{Kind: KindSegment, Name: "orders", Count: 10, Ranges: true, Lease: true}
	if _, err := a.Take(bg, lease); !errors.Is(err, frond.ErrFormNotCarried) {
		t.Fatalf("a lease without counters: %v", err)
	}
	lease.Counters = true
	ans, err := a.Take(bg, lease)
	if err != nil || ans.Request.ShardBits != 4 || len(ans.Ranges) != 1 || ans.Ranges[0].Len() != 10 {
		t.Fatalf("a lease of counters: %+v, %v", ans, err)
	}
	// The counters are the tag's own: the next request's ID is the next
	// counter, moved up by the bits.
	one, err := a.Take(bg, Request{Kind: KindSegment, Name: "orders", Shard: 3, HasShard: true})
	if err != nil || one.Nums[0] != ans.Ranges[0].End<<4|3 {
		t.Fatalf("after a lease of counters %+v: %v, %v", ans.Ranges, one.Nums, err)
	}
	plain, err := a.Take(bg, Request{Kind: KindSegment, Name: "plain", Count: 5, Ranges: true, Lease: true, Counters: true})
	if err != nil || plain.Request.ShardBits != 0 {
		t.Fatalf("counters of a plain tag: %+v, %v", plain, err)
	}
	// A lease of counters is cut at 2^(63-K)-1, the last counter that fits,
	// and one past it is refused, as one ID is.
	if _, err := a.CreateTag(bg, frond.Tag{Name: "full", MaxID: 1<<59 - 5, Step: 50, Mapping: frond.ShardMapping(4)}); err != nil {
		t.Fatal(err)
	}
	full := Request{Kind: KindSegment, Name: "full", Count: 10, Ranges: true, Lease: true, Counters: true}
	if ans, err := a.Take(bg, full); err != nil || len(ans.Ranges) != 1 || ans.Ranges[0] != (frond.Range{Start: 1<<59 - 5, End: 1 << 59, Stride: 1}) {
		t.Errorf("a lease of counters across 2^59 with 4 shard bits: %+v, %v: want the 5 below it", ans.Ranges, err)
	}
	if _, err := a.Take(bg, full); !errors.Is(err, frond.ErrTagExhausted) {
		t.Errorf("a lease of counters past 2^59 with 4 shard bits: %v", err)
	}
	for _, bad := range []Request{
		{Kind: KindSegment, Name: "orders", Count: 10, Ranges: true, Counters: true},
		{Kind: KindSegment, Name: "orders", Count: 10, Ranges: true, Lease: true, Counters: true, Shard: 1, HasShard: true},
	} {
		if _, err := a.Take(bg, bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
