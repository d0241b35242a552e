package service

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
	"github.com/google/uuid"
)

// Name-based UUIDs equal what other implementations give: the values are
// Python's uuid.uuid3 and uuid.uuid5 of the same namespace and name.
func TestNameUUID_KnownAnswers(t *testing.T) {
	for _, c := range []struct {
		version         int
		namespace, name string
		want            string
	}{
		{5, "dns", "example.com", "cfbff0d1-9375-5685-968c-48ce8b15ae17"},
		{3, "dns", "python.org", "6fa459ea-ee8a-3ca4-894e-db77e160355e"},
		{5, "url", "https://frond.example/orders/42", "f977825f-8b32-51ab-9189-213fcfbe58b3"},
		{3, "OID", "1.3.6.1.4.1.343", "77bc1dc3-0a9f-3e7e-bfa5-3f611a660c80"},
		{5, "x500", "CN=frond,O=Example", "74e78b2d-7c52-5d7c-91c6-15ccffeba820"},
		{5, "0f3c1bd4-8a52-4c3e-9d3a-5e1a2b3c4d5e", "订单-1", "38be3064-8dfa-5938-a792-02f6eb6ef7b9"},
	} {
		u, err := NameUUID(c.version, c.namespace, c.name)
		if err != nil || u.String() != c.want {
			t.Errorf("v%d(%s, %q) = %v, %v; want %s", c.version, c.namespace, c.name, u, err, c.want)
		}
	}
	s := newKindsService(t, newClock(), Config{})
	a, err := s.Take(bg, Request{Kind: KindUUID, Version: 5, Namespace: "dns", Name: "example.com"})
	if err != nil || a.Strs[0] != "cfbff0d1-9375-5685-968c-48ce8b15ae17" {
		t.Fatalf("Take v5: %v, %v", a.Strs, err)
	}
}

// Every malformed UUID request is refused by Check, before any ID.
func TestUUIDRequest_Invalid(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	long := strings.Repeat("x", MaxUUIDName+1)
	for _, r := range []Request{
		{Version: 2}, {Version: 8}, {Version: -1},
		{Version: 5, Name: "a"},                                                // no namespace
		{Version: 5, Namespace: "dns"},                                         // no name
		{Version: 3, Namespace: "web", Name: "a"},                              // unknown namespace
		{Version: 3, Namespace: "6ba7b8109dad11d180b400c04fd430c8", Name: "a"}, // not the 36-character form
		{Version: 5, Namespace: "dns", Name: long},
		{Version: 5, Namespace: "dns", Name: "a", Count: 2},
		{Version: 4, Name: "a"}, {Version: 7, Namespace: "dns"},
		{Version: 4, Form: FormTypeID}, {Version: 7, Form: "base62"}, {Version: 7, Prefix: "user"},
		{Version: 7, Form: FormTypeID, Prefix: "User"}, {Version: 7, Form: FormTypeID, Prefix: "_user"},
		{Version: 7, Form: FormTypeID, Prefix: strings.Repeat("a", 64)},
	} {
		r.Kind = KindUUID
		if _, err := s.Take(bg, r); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// Versions 1 and 6 lay out their fields as RFC 9562 says: its example
// (appendix A.1 and A.5) is one timestamp, clock sequence and node in
// both versions.
func TestTimeUUID_RFCExample(t *testing.T) {
	node := [6]byte{0x9f, 0x6b, 0xde, 0xce, 0xd8, 0x46}
	const ts, seq = 0x1EC9414C232AB00, 0x33C8
	if got := timeUUID(1, ts, seq, node).String(); got != "c232ab00-9414-11ec-b3c8-9f6bdeced846" {
		t.Errorf("v1 = %s", got)
	}
	if got := timeUUID(6, ts, seq, node).String(); got != "1ec9414c-232a-6b00-b3c8-9f6bdeced846" {
		t.Errorf("v6 = %s", got)
	}
	// google/uuid reads the same time back (2022-02-22 19:22:22 UTC).
	u := timeUUID(1, ts, seq, node)
	sec, nsec := u.Time().UnixTime()
	if got := time.Unix(sec, nsec).UTC(); !got.Equal(time.Date(2022, 2, 22, 19, 22, 22, 0, time.UTC)) {
		t.Errorf("v1 time %v", got)
	}
}

// UUIDs of versions 1 and 6 carry a random node ID with the multicast bit
// (never a MAC address), stay unique and (v6) increasing when the clock
// stands still or steps back, and differ between two generators (two
// processes).
func TestTimeUUID_UniqueAndNoMAC(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g := newTimeGen(clock)
	if g.node[0]&1 != 1 {
		t.Fatalf("node %x: multicast bit not set", g.node)
	}
	var v6 []string
	seen := map[uuid.UUID]bool{}
	for i := range 3000 {
		if i == 1000 {
			mu.Lock()
			now = now.Add(-time.Hour) // the clock steps back
			mu.Unlock()
		}
		for _, v := range []int{1, 6} {
			u, _ := g.next(v)
			if seen[u] || u.Version() != uuid.Version(v) || u.Variant() != uuid.RFC4122 {
				t.Fatalf("%d: %s repeated or malformed", i, u)
			}
			seen[u] = true
			if !slices.Equal(u.NodeID(), g.node[:]) {
				t.Fatalf("node %x, want %x", u.NodeID(), g.node)
			}
			if v == 6 {
				v6 = append(v6, u.String())
			}
		}
	}
	if !slices.IsSorted(v6) {
		t.Fatal("v6 UUIDs of one generator are not increasing across a clock step back")
	}
	other := newTimeGen(clock)
	if other.node == g.node {
		t.Fatal("two generators drew one node ID")
	}
	// Through the service, concurrently.
	var wg sync.WaitGroup
	var all sync.Map
	for range 4 {
		wg.Go(func() {
			for _, v := range []int{1, 6} {
				ids, err := UUIDs(v, 2000)
				if err != nil {
					t.Error(err)
					return
				}
				for _, id := range ids {
					if _, dup := all.LoadOrStore(id, true); dup {
						t.Errorf("duplicate %s", id)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TypeIDs follow the spec's test vectors (testdata/typeid, copied from
// jetify-com/typeid, spec 0.3): every valid one decodes to its prefix and
// UUID and encodes back; every invalid one is refused.
func TestTypeID_SpecVectors(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	valid := readVectors(t, "testdata/typeid/valid.yml")
	if len(valid) < 9 {
		t.Fatalf("%d valid vectors", len(valid))
	}
	for _, v := range valid {
		out, err := s.Reveal(RevealRequest{Kind: KindUUID, Form: FormTypeID, Value: v["typeid"]})
		if err != nil || out.UUID != v["uuid"] || out.Prefix != v["prefix"] {
			t.Errorf("%s: %+v, %v", v["name"], out, err)
		}
		strs := []string{v["uuid"]}
		if err := typeIDs(v["prefix"], strs); err != nil || strs[0] != v["typeid"] {
			t.Errorf("%s: encodes to %q, %v", v["name"], strs[0], err)
		}
	}
	invalid := readVectors(t, "testdata/typeid/invalid.yml")
	if len(invalid) < 20 {
		t.Fatalf("%d invalid vectors", len(invalid))
	}
	for _, v := range invalid {
		if out, err := s.Reveal(RevealRequest{Kind: KindUUID, Form: FormTypeID, Value: v["typeid"]}); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("%s (%q): %+v, %v", v["name"], v["typeid"], out, err)
		}
	}
	// Taken: version 7 in the TypeID, with its prefix, increasing.
	a, err := s.Take(bg, Request{Kind: KindUUID, Version: 7, Form: FormTypeID, Prefix: "user", Count: 50})
	if err != nil || len(a.Strs) != 50 || !slices.IsSorted(a.Strs) {
		t.Fatalf("typeids %v, %v", a.Strs, err)
	}
	for _, str := range a.Strs {
		out, err := s.Reveal(RevealRequest{Kind: KindUUID, Form: FormTypeID, Value: str, Prefix: "user"})
		if err != nil || uuid.MustParse(out.UUID).Version() != 7 || !strings.HasPrefix(str, "user_") || len(str) != 5+26 {
			t.Fatalf("%s: %+v, %v", str, out, err)
		}
	}
	if _, err := s.Reveal(RevealRequest{Kind: KindUUID, Form: FormTypeID, Value: a.Strs[0], Prefix: "order"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("wrong prefix: %v", err)
	}
	// An error never repeats a long input (the library's errors do).
	for _, v := range []string{strings.Repeat("z", 5000), "user_" + strings.Repeat("0", 5000), "user_" + strings.Repeat("U", 26)} {
		_, err := s.Reveal(RevealRequest{Kind: KindUUID, Form: FormTypeID, Value: v})
		if Code(err) != frond.CodeInvalidArgument || len(err.Error()) > 300 {
			t.Fatalf("%d bytes: %v", len(v), err)
		}
	}
}

// readVectors reads the spec's YAML lists of flat string fields.
func readVectors(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, map[string]string{})
			line = "  " + rest
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || len(out) == 0 {
			t.Fatalf("%s: line %q", path, line)
		}
		if uq, err := unquoteYAML(v); err == nil {
			v = uq
		}
		out[len(out)-1][k] = v
	}
	return out
}

func unquoteYAML(v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1], nil
	}
	return v, nil
}

// Mist's layout: the segment ID in the top 47 bits, two random salts in
// the low 16; increasing in trend, and Reveal gives the ID and the salts
// back.
func TestMist_Layout(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	ids := []int64{1, 2, 3, 1000, 1<<47 - 1}
	_, nums, err := s.Format(KindSegment, FormMist, ids)
	if err != nil {
		t.Fatal(err)
	}
	salts := map[int64]bool{}
	for i, n := range nums {
		if n>>16 != ids[i] || n < 0 {
			t.Fatalf("mist %d of %d: counter %d", n, ids[i], n>>16)
		}
		salts[n&0xffff] = true
		out, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: FormMist, Value: strconv.FormatInt(n, 10)})
		if err != nil || out.ID != ids[i] || len(out.Salts) != 2 || int64(out.Salts[0]<<8|out.Salts[1]) != n&0xffff {
			t.Fatalf("reveal %d: %+v, %v", n, out, err)
		}
		if i > 0 && nums[i-1] >= n {
			t.Fatalf("not increasing: %v", nums)
		}
	}
	if len(salts) < 3 {
		t.Fatalf("salts %v are not random", salts)
	}
	if _, _, err := s.Format(KindSegment, FormMist, []int64{1 << 47}); Code(err) != frond.CodeTagExhausted {
		t.Fatalf("ID past 47 bits: %v", err)
	}
	if _, _, err := s.Format(KindSnowflake, FormMist, []int64{1}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("mist snowflake: %v", err)
	}
	// A tag configured mist serves mist numbers on the number-only
	// protocols (Leaf, RESP INCR), and refuses ranges.
	cfg := Config{Forms: map[string]string{"m": FormMist}}
	ms := newKindsService(t, newClock(), cfg)
	if _, err := ms.CreateTag(bg, frond.Tag{Name: "m", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	a, err := ms.Take(bg, Request{Kind: KindSegment, Name: "m", Numbers: true})
	if err != nil || a.Form != FormMist || a.Nums[0]>>16 != 1 {
		t.Fatalf("mist tag on a number API: %+v, %v", a, err)
	}
	if _, err := ms.Take(bg, Request{Kind: KindSegment, Name: "m", Ranges: true, Count: 5}); Code(err) != frond.CodeFormNotCarried {
		t.Fatalf("mist tag as ranges: %v", err)
	}
}

// The friendly form: time (UTC, to the ms), node and sequence, and back.
func TestFriendly_RoundTrip(t *testing.T) {
	c := newClock()
	s := newKindsService(t, c, Config{})
	l := s.Layout()
	tick := int64(time.Date(2024, 1, 3, 15, 24, 15, 876e6, time.UTC).Sub(l.Epoch) / l.Unit)
	id, err := l.Compose(snowflake.Parts{Tick: tick, Node: 5, Seq: 16})
	if err != nil {
		t.Fatal(err)
	}
	strs, nums, err := s.Format(KindSnowflake, FormFriendly, []int64{id})
	if err != nil || nums != nil || strs[0] != "20240103152415876-5-16" {
		t.Fatalf("friendly %v, %v", strs, err)
	}
	out, err := s.Reveal(RevealRequest{Kind: KindSnowflake, Form: FormFriendly, Value: strs[0]})
	if err != nil || out.ID != id {
		t.Fatalf("reveal %+v, %v; want %d", out, err, id)
	}
	a, err := s.Take(bg, Request{Kind: KindSnowflake, Form: FormFriendly, Prefix: "evt", Count: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, str := range a.Strs {
		if !strings.HasPrefix(str, "evt_20261122120000000-7-") {
			t.Fatalf("friendly %q", str)
		}
		if _, err := s.Reveal(RevealRequest{Kind: KindSnowflake, Form: FormFriendly, Value: str, Prefix: "evt"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", "20240103152415876", "20240103152415876-5", "2024010315241587-5-16", "20241303152415876-5-16",
		"20240103152415876-5-x", "20240103152415876-5-+1", "20240103152415876-1024-1", "20240103152415876-5-4096", "20240103152415876--16",
		"20240103152415876-5-16-1", "20000103152415876-5-16", "20240103152415876-05-16", "20240103152415876-5-016"} {
		if out, err := s.Reveal(RevealRequest{Kind: KindSnowflake, Form: FormFriendly, Value: bad}); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("%q: %+v, %v", bad, out, err)
		}
	}
	if _, err := s.Take(bg, Request{Kind: KindSegment, Name: "a", Form: FormFriendly}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("friendly segment: %v", err)
	}
	// A layout whose ticks the text cannot print exactly (a unit of 1.5 µs,
	// a time field past the year 9999) refuses the form.
	for _, l := range []snowflake.Layout{
		{Name: "odd", Unit: 1500 * time.Nanosecond, TimeBits: 45, NodeBits: 10, SeqBits: 8, Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Name: "long", Unit: time.Second, TimeBits: 40, NodeBits: 10, SeqBits: 8, Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		ls := newKindsService(t, c, Config{Snowflake: worker.Settings{Layout: l}})
		if _, err := ls.Take(bg, Request{Kind: KindSnowflake, Form: FormFriendly}); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("friendly with layout %s: %v", l.Name, err)
		}
	}
	// A layout in seconds prints its milliseconds (000); one in
	// microseconds prints six decimals; both read back.
	for unit, bits := range map[time.Duration]uint{time.Second: 33, time.Microsecond: 50} {
		l := snowflake.Layout{Name: "custom", Unit: unit, TimeBits: bits, NodeBits: 10, SeqBits: 3, Epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		us := newKindsService(t, c, Config{Snowflake: worker.Settings{Layout: l}})
		a, err := us.Take(bg, Request{Kind: KindSnowflake, Form: FormFriendly})
		if err != nil {
			t.Fatal(err)
		}
		out, err := us.Reveal(RevealRequest{Kind: KindSnowflake, Form: FormFriendly, Value: a.Strs[0]})
		p, _ := l.Decompose(out.ID)
		if err != nil || p.Node != 7 || !p.Time.Equal(time.Unix(0, c.Now())) {
			t.Fatalf("%v: %q -> %+v (%v), %v", unit, a.Strs[0], out, p, err)
		}
	}
}

// Prefixes: configured per tag for its text forms, or asked per request;
// refused on numbers; Reveal checks them.
func TestPrefixes(t *testing.T) {
	s := newKindsService(t, newClock(), Config{Prefixes: map[string]string{"orders": "ord"}, Forms: map[string]string{"users": FormBase62},
		ObfuscationKey: []byte("a key of sixteen bytes or more")})
	// orders hands out opaque numbers (its mapping), users plain ones.
	for tag, mapping := range map[string]string{"orders": frond.MappingOpaque, "users": ""} {
		if _, err := s.CreateTag(bg, frond.Tag{Name: tag, MaxID: 1, Step: 100, Mapping: mapping}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.Take(bg, Request{Kind: KindSegment, Name: "orders", Form: FormOpaque62})
	if err != nil || !strings.HasPrefix(a.Strs[0], "ord_") {
		t.Fatalf("configured prefix: %v, %v", a.Strs, err)
	}
	out, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: FormOpaque62, Value: a.Strs[0], Tag: "orders"})
	if err != nil || out.ID != 1 || out.Prefix != "ord" {
		t.Fatalf("reveal %+v, %v", out, err)
	}
	if _, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: FormOpaque62, Value: "usr" + a.Strs[0][3:], Tag: "orders"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("wrong prefix: %v", err)
	}
	if _, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: FormOpaque62, Value: a.Strs[0][4:], Tag: "orders"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("missing prefix: %v", err)
	}
	// A tag without a configured prefix: its values carry none.
	if _, err := s.Reveal(RevealRequest{Kind: KindSegment, Form: FormBase62, Value: "ord_00000000001", Tag: "users"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("a prefix on a tag without one: %v", err)
	}
	if _, err := s.Reveal(RevealRequest{Kind: KindSnowflake, Form: FormBase62, Value: "00000000001", Tag: "orders"}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("tag with a snowflake value: %v", err)
	}
	if a, err := s.Take(bg, Request{Kind: KindSegment, Name: "orders"}); err != nil || a.Nums == nil {
		t.Fatalf("numbers of a prefixed tag: %+v, %v", a, err)
	}
	a, err = s.Take(bg, Request{Kind: KindSegment, Name: "users", Prefix: "my_user", Count: 3})
	if err != nil || !strings.HasPrefix(a.Strs[2], "my_user_") || len(a.Strs[2]) != 8+11 {
		t.Fatalf("request prefix: %v, %v", a.Strs, err)
	}
	out, err = s.Reveal(RevealRequest{Kind: KindSegment, Form: FormBase62, Value: a.Strs[2]})
	if err != nil || out.ID != 3 || out.Prefix != "my_user" {
		t.Fatalf("reveal %+v, %v", out, err)
	}
	for _, r := range []Request{
		{Kind: KindSegment, Name: "orders", Prefix: "ord", Form: FormNumber},
		{Kind: KindSegment, Name: "orders", Prefix: "ord", Form: FormMist},
		{Kind: KindSegment, Name: "users", Prefix: "Ord"},
		{Kind: KindSegment, Name: "users", Prefix: "o-d"},
		{Kind: KindSnowflake, Prefix: "evt"},
		{Kind: KindSerial, Name: "x", Prefix: "evt"},
	} {
		if _, err := s.Take(bg, r); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("%+v: %v", r, err)
		}
	}
	if _, err := New(bg, Config{Prefixes: map[string]string{"t": "Bad"}}, memstore.New(nil), &memRegistry{}, nil); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("bad configured prefix: %v", err)
	}
}

// FuzzReveal feeds Reveal any value in every form: it never panics, and
// whatever it accepts formats back to what it read (friendly and the
// prefixes are parsed here, from outside input).
func FuzzReveal(f *testing.F) {
	s := newKindsService(f, newClock(), Config{ObfuscationKey: []byte("a key of sixteen bytes or more")})
	for _, seed := range []string{"20240103152415876-5-16", "evt_20261122120000000-7-0", "ord_00000000001", "a_b_c",
		"_1", "1_", "65536", "user_01h455vb4pex5vsknk084sn02q", "00000000000000000000000000", "-1-1", "2024010315241587a-5-16"} {
		f.Add(seed, "friendly", "snowflake")
		f.Add(seed, "base62", "segment")
		f.Add(seed, "typeid", "uuid")
	}
	f.Fuzz(func(t *testing.T, value, form, kind string) {
		out, err := s.Reveal(RevealRequest{Kind: kind, Form: form, Value: value})
		if err != nil {
			if Code(err) != frond.CodeInvalidArgument {
				t.Fatalf("%q %s %s: %v", value, form, kind, err)
			}
			return
		}
		switch {
		case kind == KindUUID:
			if _, err := uuid.Parse(out.UUID); err != nil {
				t.Fatalf("%q: uuid %q", value, out.UUID)
			}
		case form == FormFriendly || form == FormBase62 || form == FormBase32:
			strs, _, err := s.format(kind, form, out.Prefix, []int64{out.ID})
			if err != nil {
				t.Fatalf("%q: %+v does not format back: %v", value, out, err)
			}
			back, err := s.Reveal(RevealRequest{Kind: kind, Form: form, Value: strs[0], Prefix: out.Prefix})
			if err != nil || back.ID != out.ID {
				t.Fatalf("%q -> %d -> %q -> %+v, %v", value, out.ID, strs[0], back, err)
			}
			if form == FormFriendly && strs[0] != value {
				t.Fatalf("%q read as %d, which is %q: two texts for one ID", value, out.ID, strs[0])
			}
		}
	})
}

// FuzzUUIDRequest: any version, namespace, name, form and prefix is
// answered or refused as invalid_argument, and a name-based answer is
// the same twice.
func FuzzUUIDRequest(f *testing.F) {
	s := newKindsService(f, newClock(), Config{})
	f.Add(5, "dns", "example.com", "", "")
	f.Add(3, "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "x", "", "")
	f.Add(7, "", "", "typeid", "user")
	f.Add(1, "", "", "", "")
	f.Fuzz(func(t *testing.T, version int, ns, name, form, prefix string) {
		r := Request{Kind: KindUUID, Version: version, Namespace: ns, Name: name, Form: form, Prefix: prefix}
		a, err := s.Take(bg, r)
		if err != nil {
			if Code(err) != frond.CodeInvalidArgument {
				t.Fatalf("%+v: %v", r, err)
			}
			return
		}
		if nameBased(a.Request.Version) {
			b, err := s.Take(bg, r)
			if err != nil || b.Strs[0] != a.Strs[0] {
				t.Fatalf("%+v: %v then %v, %v", r, a.Strs, b.Strs, err)
			}
		}
	})
}

// Decode splits the node field by the configured datacenter bits, also
// under a preset's alias; another preset has none.
func TestDecode_DatacenterBits(t *testing.T) {
	l, _ := snowflake.Preset(snowflake.Twitter)
	l.DatacenterBits = 5
	s := newKindsService(t, newClock(), Config{Snowflake: worker.Settings{Layout: l}})
	id, _ := l.Compose(snowflake.Parts{Tick: 5, Node: l.NodeOf(2, 9), Seq: 1})
	for _, name := range []string{"", "twitter", "leaf"} {
		d, err := s.Decode(id, name)
		if err != nil || d.Datacenter == nil || *d.Datacenter != 2 || *d.Worker != 9 || d.Node != 73 {
			t.Fatalf("layout %q: %+v, %v", name, d, err)
		}
	}
	if d, err := s.Decode(id, "sonyflake"); err != nil || d.Datacenter != nil {
		t.Fatalf("sonyflake: %+v, %v", d, err)
	}
}
