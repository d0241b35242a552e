package snowflake

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestPresets_Valid(t *testing.T) {
	for _, l := range Presets() {
		if err := l.Validate(testNow); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
		if l.Bits() > 63 {
			t.Errorf("%s: %d bits", l.Name, l.Bits())
		}
	}
}

func TestPreset(t *testing.T) {
	for name, want := range map[string]string{
		"twitter": Twitter, "leaf": Twitter, "": Twitter, "Sonyflake": Sonyflake,
		"uid-generator": UIDGenerator, "js": JavaScript, "javascript": JavaScript,
	} {
		l, err := Preset(name)
		if err != nil || l.Name != want {
			t.Errorf("Preset(%q) = %q, %v; want %q", name, l.Name, err, want)
		}
	}
	if _, err := Preset("nope"); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("Preset(nope) err = %v", err)
	}
}

func TestLayout_Twitter(t *testing.T) {
	l, _ := Preset(Twitter)
	if l.Epoch.UnixMilli() != 1288834974657 || l.TimeBits != 41 || l.NodeBits != 10 || l.SeqBits != 12 || l.Unit != time.Millisecond {
		t.Fatalf("twitter preset = %+v", l)
	}
	if got := l.Rate(); got != 4_096_000 {
		t.Errorf("rate = %v", got)
	}
	// 2^41 ms after 2010-11-04T01:42:54.657Z.
	want := time.UnixMilli(1288834974657 + 1<<41).UTC()
	if got := l.Expires(); !got.Equal(want) {
		t.Errorf("expires %v, want %v", got, want)
	}
	if l.Expires().Year() != 2080 {
		t.Errorf("expires in %d", l.Expires().Year())
	}
}

func TestLayout_Expires(t *testing.T) {
	for _, tc := range []struct {
		name string
		year int
	}{{Sonyflake, 2188}, {UIDGenerator, 2033}, {JavaScript, 2112}} {
		l, _ := Preset(tc.name)
		if y := l.Expires().Year(); y != tc.year {
			t.Errorf("%s expires in %d, want %d", tc.name, y, tc.year)
		}
	}
	huge := Layout{Unit: 24 * time.Hour, TimeBits: 50, SeqBits: 1, Epoch: time.Unix(0, 0)}
	if !huge.Expires().After(testNow.AddDate(1000, 0, 0)) {
		t.Errorf("huge layout expires %v", huge.Expires())
	}
	if l, _ := Preset(JavaScript); l.MaxID() >= 1<<53 {
		t.Errorf("javascript max ID %d >= 2^53", l.MaxID())
	}
}

func TestLayout_Validate(t *testing.T) {
	base, _ := Preset(Twitter)
	for _, tc := range []struct {
		name   string
		mutate func(*Layout)
		want   error
	}{
		{"OK", func(*Layout) {}, nil},
		{"ErrTooManyBits", func(l *Layout) { l.SeqBits = 13 }, ErrInvalidLayout},
		{"ErrNoTimeBits", func(l *Layout) { l.TimeBits = 0 }, ErrInvalidLayout},
		{"ErrNoSeqBits", func(l *Layout) { l.SeqBits = 0 }, ErrInvalidLayout},
		{"ErrSeqTooWide", func(l *Layout) { l.TimeBits, l.NodeBits, l.SeqBits = 30, 0, 31 }, ErrInvalidLayout},
		{"ErrHugeBits", func(l *Layout) { l.NodeBits = 1 << 40 }, ErrInvalidLayout},
		{"ErrUnitZero", func(l *Layout) { l.Unit = 0 }, ErrInvalidLayout},
		{"ErrUnitTooLong", func(l *Layout) { l.Unit = 25 * time.Hour }, ErrInvalidLayout},
		{"ErrEpochFuture", func(l *Layout) { l.Epoch = testNow.Add(time.Second) }, ErrInvalidLayout},
		{"ErrEpochBefore1970", func(l *Layout) { l.Epoch = time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC) }, ErrInvalidLayout},
		// UidGenerator's own epoch: 28 bits of seconds from 2016-05-20 ran out in 2024.
		{"ErrExpired", func(l *Layout) {
			*l = Layout{Unit: time.Second, TimeBits: 28, NodeBits: 22, SeqBits: 13, Epoch: time.Date(2016, 5, 20, 0, 0, 0, 0, time.UTC)}
		}, ErrLayoutExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := base
			tc.mutate(&l)
			err := l.Validate(testNow)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLayout_ComposeDecompose(t *testing.T) {
	l, _ := Preset(Twitter)
	id, err := l.Compose(Parts{Tick: 123456789, Node: 1023, Seq: 4095})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Decompose(id)
	if err != nil || p.Tick != 123456789 || p.Node != 1023 || p.Seq != 4095 {
		t.Fatalf("Decompose(%d) = %+v, %v", id, p, err)
	}
	if !p.Time.Equal(l.Epoch.Add(123456789 * time.Millisecond)) {
		t.Errorf("time %v", p.Time)
	}
	for _, bad := range []Parts{{Tick: -1}, {Tick: 1 << 41}, {Node: 1024}, {Node: -1}, {Seq: 4096}, {Seq: -1}} {
		if _, err := l.Compose(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Compose(%+v) err = %v", bad, err)
		}
	}
	if _, err := l.Decompose(-5); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Decompose(-5) err = %v", err)
	}
	js, _ := Preset(JavaScript)
	if _, err := js.Decompose(1 << 53); !errors.Is(err, ErrInvalidID) {
		t.Errorf("javascript Decompose(2^53) err = %v", err)
	}
}

// Decompose splits an ID as Leaf's /decodeSnowflakeId does.
func ExampleLayout_Decompose() {
	l, _ := Preset(Leaf)
	p, _ := l.Decompose(1_861_083_629_105_360_902)
	fmt.Println(p.Time.Format(time.RFC3339Nano), p.Node, p.Seq)
	// Output: 2024-11-25T16:24:49.097Z 491 6
}

func FuzzLayout(f *testing.F) {
	f.Add(int64(time.Millisecond), uint(41), uint(10), uint(12), int64(1288834974657), int64(123456789), int64(5), int64(6))
	f.Add(int64(10*time.Millisecond), uint(39), uint(16), uint(8), int64(1409529600000), int64(1), int64(0), int64(0))
	f.Add(int64(time.Second), uint(28), uint(22), uint(13), int64(1463702400000), int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, unit int64, tb, nb, sb uint, epochMs, tick, node, seq int64) {
		l := Layout{Unit: time.Duration(unit), TimeBits: tb, NodeBits: nb, SeqBits: sb, Epoch: time.UnixMilli(epochMs)}
		if err := l.Validate(testNow); err != nil {
			if !errors.Is(err, ErrInvalidLayout) && !errors.Is(err, ErrLayoutExpired) {
				t.Fatalf("Validate error %v wraps neither sentinel", err)
			}
			return
		}
		// A valid layout: every invariant holds.
		if l.Bits() > 63 || !l.Expires().After(testNow) || l.Epoch.After(testNow) {
			t.Fatalf("valid layout %+v breaks an invariant", l)
		}
		id, err := l.Compose(Parts{Tick: tick, Node: node, Seq: seq})
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("Compose error %v", err)
			}
			return
		}
		if id < 0 || id > l.MaxID() {
			t.Fatalf("Compose gave %d outside 0..%d", id, l.MaxID())
		}
		p, err := l.Decompose(id)
		if err != nil || p.Tick != tick || p.Node != node || p.Seq != seq {
			t.Fatalf("round trip of (%d,%d,%d) via %d gave %+v, %v", tick, node, seq, id, p, err)
		}
		back, err := l.Compose(p)
		if err != nil || back != id {
			t.Fatalf("recompose %d -> %d, %v", id, back, err)
		}
	})
}

func FuzzDecompose(f *testing.F) {
	f.Add(int64(1_861_083_629_105_360_902), "twitter")
	f.Add(int64(-1), "javascript")
	f.Fuzz(func(t *testing.T, id int64, preset string) {
		l, err := Preset(preset)
		if err != nil {
			return
		}
		p, err := l.Decompose(id)
		if err != nil {
			if id >= 0 && id <= l.MaxID() {
				t.Fatalf("Decompose(%d) refused a valid ID: %v", id, err)
			}
			return
		}
		if back, err := l.Compose(p); err != nil || back != id {
			t.Fatalf("Compose(Decompose(%d)) = %d, %v", id, back, err)
		}
	})
}

// Seed 000's 5+5: the node field split into datacenter and worker.
func TestLayout_DatacenterBits(t *testing.T) {
	l, _ := Preset(Twitter)
	l.DatacenterBits = 5
	if l.WorkerBits() != 5 || l.MaxWorker() != 31 || l.MaxDatacenter() != 31 || l.NodeOf(3, 7) != 103 {
		t.Fatalf("worker bits %d, max worker %d, max datacenter %d, node %d", l.WorkerBits(), l.MaxWorker(), l.MaxDatacenter(), l.NodeOf(3, 7))
	}
	id, err := l.Compose(Parts{Tick: 1000, Node: l.NodeOf(3, 7), Seq: 9})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := l.Decompose(id)
	if p.Datacenter != 3 || p.Worker != 7 || p.Node != 103 || p.Seq != 9 {
		t.Fatalf("decomposed %+v", p)
	}
	if !strings.Contains(l.String(), "32 datacenters of 32 workers") {
		t.Fatalf("String %q", l.String())
	}
	plain, _ := Preset(Twitter)
	if p, _ := plain.Decompose(id); p.Datacenter != 0 || p.Worker != 103 {
		t.Fatalf("without datacenter bits %+v", p)
	}
	for _, bits := range []uint{10, 11} {
		l.DatacenterBits = bits
		if err := l.Validate(time.Now()); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("%d datacenter bits of 10: %v", bits, err)
		}
	}
}

// Shard bits (issue 70): the lowest bits of every ID are the shard, so
// that id % 2^k routes it; the generator leaves them 0 and the caller sets
// them; a layout without them keeps the fingerprint registries recorded.
func TestLayout_ShardBits(t *testing.T) {
	plain, _ := Preset(Twitter)
	if got, want := plain.Fingerprint(), "1+41+10+12 bits of 1ms from 2010-11-04T01:42:54.657Z, 0 datacenter bits"; got != want {
		t.Fatalf("fingerprint without shard bits %q, want the recorded %q", got, want)
	}
	l, err := plain.WithShardBits(4)
	if err != nil {
		t.Fatal(err)
	}
	if l.SeqBits != 8 || l.ShardBits != 4 || l.Bits() != 63 || l.MaxShard() != 15 || l.Rate() != 256_000 {
		t.Fatalf("twitter with 4 shard bits: %+v, rate %v", l, l.Rate())
	}
	if l.Fingerprint() == plain.Fingerprint() || !strings.Contains(l.String(), "1+41+10+8+4 bits") || !strings.Contains(l.String(), "16 shards") {
		t.Fatalf("fingerprint %q, string %q", l.Fingerprint(), l.String())
	}
	if back, _ := l.WithShardBits(0); back != plain {
		t.Fatalf("0 shard bits again: %+v", back)
	}
	for _, k := range []uint{12, 13, 17} {
		if _, err := plain.WithShardBits(k); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("%d shard bits of twitter's 12 sequence bits: %v", k, err)
		}
	}
	bad := plain
	bad.ShardBits = 17
	if err := bad.Validate(time.Now()); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("17 shard bits: %v", err)
	}
	bad.ShardBits = 1 // 64 bits
	if err := bad.Validate(time.Now()); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("64 bits: %v", err)
	}
	p := Parts{Tick: 123456789, Node: 1023, Seq: 255, Shard: 9}
	id, err := l.Compose(p)
	if err != nil || id%16 != 9 {
		t.Fatalf("compose %+v = %d, %v: want the shard in the lowest 4 bits", p, id, err)
	}
	got, err := l.Decompose(id)
	if p.Time, p.Worker = got.Time, 1023; err != nil || got != p {
		t.Fatalf("decompose %d = %+v, %v, want %+v", id, got, err, p)
	}
	for _, bad := range []Parts{{Shard: 16}, {Shard: -1}, {Seq: 256}} {
		if _, err := l.Compose(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("compose %+v: %v", bad, err)
		}
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	g, err := New(Settings{Layout: l, Node: 5, Now: func() int64 { return now.UnixNano() }})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := g.NextN(256)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, _ := l.Bounds(now, now.Add(time.Millisecond))
	seen := map[int64]bool{}
	for i, id := range ids {
		if id%16 != 0 {
			t.Fatalf("generated %d: shard bits %d, want 0 (the caller sets them)", id, id%16)
		}
		for s := range int64(16) {
			x := l.WithShard(id, s)
			d, _ := l.Decompose(x)
			if seen[x] || d.Shard != s || d.Node != 5 || d.Seq != int64(i) || x < lo || x > hi || x%16 != s {
				t.Fatalf("ID %d with shard %d = %d: %+v, seen %v, bounds [%d, %d]", id, s, x, d, seen[x], lo, hi)
			}
			seen[x] = true
		}
	}
}
