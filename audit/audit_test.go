package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
)

// now is the audits' clock: the twitter layout runs out in 2080.
var now = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

func config(t *testing.T, stores ...Store) Config {
	t.Helper()
	l, err := snowflake.Preset("twitter")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Stores: stores, MaxStep: 1_000_000, Layout: l, Now: func() time.Time { return now }}
}

func store(name string, s frond.SegmentStore) Store { return Store{Name: name, Store: s} }

// run audits cfg and returns every finding emitted, and the tags' counts.
func run(t *testing.T, cfg Config) ([]Finding, map[string]int) {
	t.Helper()
	var found []Finding
	counts := Run(context.Background(), cfg, func(f Finding) { found = append(found, f) })
	return found, counts
}

// about is the finding whose subject is subject; it fails the test when
// there is not exactly one.
func about(t *testing.T, found []Finding, subject string) Finding {
	t.Helper()
	var out []Finding
	for _, f := range found {
		if f.Subject == subject {
			out = append(out, f)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d findings about %q, want 1: %+v", len(out), subject, found)
	}
	return out[0]
}

func expect(t *testing.T, f Finding, level, text string) {
	t.Helper()
	if f.Level != level || !strings.Contains(f.Message, text) {
		t.Errorf("%s: %s %q, want %s with %q", f.Subject, f.Level, f.Message, level, text)
	}
}

func newStore(t *testing.T, tags ...frond.Tag) *memstore.Store {
	t.Helper()
	s := memstore.New(nil)
	for _, tag := range tags {
		if _, err := s.CreateTag(context.Background(), tag); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func place(t *testing.T, s *memstore.Store, p frond.Place) {
	t.Helper()
	if err := s.SwapPlace(context.Background(), frond.Place{}, p); err != nil {
		t.Fatal(err)
	}
}

// warner is a store with something to say about itself.
type warner struct {
	*memstore.Store
	msgs []string
}

func (w warner) Warnings() []string { return w.msgs }

// What opening the stores found: a store that could not be opened and a
// store that keeps nothing are dangers, a store's own warnings warnings.
func TestRun_Stores(t *testing.T) {
	cfg := config(t,
		Store{Name: "store 0", Err: errors.New("connection refused")},
		Store{Name: "store 1", Store: newStore(t), Volatile: true},
		store("store 2", warner{newStore(t), []string{"Redis keeps no copy on disk"}}))
	found, _ := run(t, cfg)
	expect(t, about(t, found, "store 0"), Danger, "cannot be opened, so it was not audited: connection refused")
	var s1, s2 []Finding
	for _, f := range found {
		switch f.Subject {
		case "store 1":
			s1 = append(s1, f)
		case "store 2":
			s2 = append(s2, f)
		}
	}
	if len(s1) != 2 || s1[0].Level != Danger || !strings.Contains(s1[0].Message, "keeps nothing") {
		t.Errorf("store 1: %+v", s1)
	}
	if len(s2) != 2 || !slices.Contains(s2, Finding{Warn, "store 2", "Redis keeps no copy on disk"}) {
		t.Errorf("store 2: %+v", s2)
	}
	// Dangers first.
	if !slices.IsSortedFunc(found, func(x, y Finding) int { return rank[x.Level] - rank[y.Level] }) {
		t.Errorf("not the most serious first: %+v", found)
	}
}

// Each store's place, as a node of this configuration would take it.
func TestRun_Places(t *testing.T) {
	id := func() string { return frond.NewIdentity() }
	a, b, c := id(), id(), id()
	set := func(r, of, gen int64) frond.Place { return frond.Place{Residue: r, Of: of, Gen: gen, Change: c} }
	moving := set(0, 2, 1)
	moving.Next, moving.Move = 2, frond.Move{Change: id(), Run: id(), Set: a + "," + b}
	cases := []struct {
		name   string
		places []frond.Place // one per store listed; the zero Place: alone
		level  string        // of store 0
		text   string
	}{
		{"alone, listed alone", []frond.Place{{}}, OK, "stands alone"},
		{"the only store of a set", []frond.Place{set(0, 1, 3)}, OK, "the only store of the set (generation 3"},
		{"a member listed alone", []frond.Place{set(0, 2, 1)}, Danger, "but this configuration lists it alone"},
		{"a member of the set", []frond.Place{set(0, 2, 1), set(1, 2, 1)}, OK, "residue 0 of 2 (generation 1"},
		{"alone in a multi-store", []frond.Place{{}, set(1, 2, 1)}, Danger, "stands alone, not as a member of a set"},
		{"left out of a change", []frond.Place{set(0, 2, 1), set(1, 2, 2)}, Danger, "of an older set than another store here (generation 2)"},
		{"fenced", []frond.Place{moving, set(1, 2, 1)}, Danger, "if no change is running, it was interrupted"},
		{"retired", []frond.Place{{Gen: 2, Change: c}, set(0, 1, 2)}, Warn, "retired by the change to generation 2"},
		{"fenced for lost data", []frond.Place{{Lost: frond.LostFinding(1764400000, "order")}}, Danger, "fenced for lost data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stores []Store
			for i, p := range tc.places {
				s := newStore(t)
				if p != (frond.Place{}) {
					place(t, s, p)
				}
				stores = append(stores, store(fmt.Sprintf("store %d", i), s))
			}
			found, _ := run(t, config(t, stores...))
			expect(t, about(t, found, "store 0"), tc.level, tc.text)
		})
	}
}

// A tag missing from a store of a multi-store, and a sequence tag on
// several stores, are warnings on the tag's one row.
func TestRun_TagsAcrossStores(t *testing.T) {
	x := newStore(t, frond.Tag{Name: "order", MaxID: 1, Step: 10}, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence})
	y := newStore(t, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence}, frond.Tag{Name: "user", MaxID: 1, Step: 10})
	found, counts := run(t, config(t, store("store x", x), store("store y", y)))
	expect(t, about(t, found, "tag order"), Warn, "missing from store y: its residue is not served")
	expect(t, about(t, found, "tag user"), Warn, "missing from store x")
	expect(t, about(t, found, "tag ticket"), Warn, "a sequence tag on 2 stores: unique, but not linearizable")
	if counts[Warn] != 3 || counts[OK]+counts[Danger] != 0 {
		t.Errorf("counts %v", counts)
	}
	// One store: a sequence tag is fine, and a tag with nothing to say is
	// counted, not emitted.
	found, counts = run(t, config(t, store("store y", newStore(t, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence}))))
	for _, f := range found {
		if strings.HasPrefix(f.Subject, "tag ") {
			t.Errorf("a row for a tag with nothing to say: %+v", f)
		}
	}
	if counts[OK] != 1 {
		t.Errorf("counts %v", counts)
	}
}

// max_id near the top of the ID space: fewer than 100 of the largest
// segments left is a danger, more than half used a warning.
func TestRun_Headroom(t *testing.T) {
	s := newStore(t,
		frond.Tag{Name: "full", MaxID: math.MaxInt64 - 50_000_000, Step: 1000}, // 50 segments of max_step
		frond.Tag{Name: "half", MaxID: 1<<62 + 1, Step: 1000},
		frond.Tag{Name: "low", MaxID: 1, Step: 1000})
	cfg := config(t, store("store", s))
	found, counts := run(t, cfg)
	expect(t, about(t, found, "tag full"), Danger, "fewer than 100 segments left below 2^63")
	expect(t, about(t, found, "tag half"), Warn, "more than half of the 63-bit space is used")
	if counts[Danger] != 1 || counts[Warn] != 1 || counts[OK] != 1 {
		t.Errorf("counts %v", counts)
	}
	// With a fixed step (MaxStep 0) the tag's own step counts: 50,000
	// segments of 1000 are left.
	cfg.MaxStep = 0
	found, _ = run(t, cfg)
	expect(t, about(t, found, "tag full"), Warn, "more than half")
}

// The rate checks: IDs that run out within a year are a danger, within ten
// years a warning; a step that even the adaptive rule cannot grow past a
// few store round trips is a warning.
func TestCheckTag_Rates(t *testing.T) {
	cfg := config(t, store("store", newStore(t)))
	cfg.MaxStep = 0 // no adaptive step: the tag's own must do
	cfg.Sample = time.Second
	a := newAuditor(cfg)
	const top = int64(math.MaxInt64)
	tags := map[string]tagRow{
		"soon":  {max: top - 1_000_000_000_000_000, step: 1000}, // 10^15 IDs at 10^8/s: 116 days
		"later": {max: top - 10_000_000_000_000_000, step: 1000},
		"fine":  {max: 1000, step: 1000},
		"slow":  {max: 1000, step: 10},
	}
	rates := map[string]float64{"soon": 1e8, "later": 1e8, "fine": 1000, "slow": 1e5}
	got := map[string]Finding{}
	for name, r := range tags {
		r.read = time.Millisecond
		if f, ok := a.checkTag(name, []tagRow{r}, nil, rates[name], true); ok {
			got[name] = f
		}
	}
	want := map[string]string{"soon": Danger, "later": Warn, "fine": OK, "slow": Warn}
	for tag, level := range want {
		if got[tag].Level != level {
			t.Errorf("tag %s: %+v, want %s", tag, got[tag], level)
		}
	}
	if f := got["soon"]; !strings.Contains(f.Message, "last 115.7 days; ") || !strings.Contains(f.Message, "a segment of 1000 lasts") {
		t.Errorf("tag soon's row joins its findings: %q", f.Message)
	}
	if f := got["slow"]; !strings.Contains(f.Message, "callers will wait for loads") {
		t.Errorf("tag slow: %q", f.Message)
	}
	// No IDs taken while sampling: said, at OK.
	if f, ok := a.checkTag("idle", []tagRow{{max: 1, step: 10}}, nil, 0, true); !ok || f.Level != OK || !strings.Contains(f.Message, "no IDs taken while sampling (1s)") {
		t.Errorf("idle: %+v %v", f, ok)
	}
}

// A tag whose stores hold different mappings (a change of mapping that
// did not reach every store), a change of mapping cut short, and a
// configured form that needs another mapping than the tag's (issue 42).
func TestRun_Mappings(t *testing.T) {
	fence := frond.MappingChange(frond.MappingMist, frond.MappingPlain)
	x := newStore(t,
		frond.Tag{Name: "invite", MaxID: 1, Step: 100, Mapping: frond.MappingMist},
		frond.Tag{Name: "order", MaxID: 1, Step: 100},
		frond.Tag{Name: "refer", MaxID: 1, Step: 100, Mapping: frond.MappingMist},
		frond.Tag{Name: "user", MaxID: 1, Step: 100, Mapping: frond.MappingMist})
	y := newStore(t,
		frond.Tag{Name: "invite", MaxID: 1, Step: 100},
		frond.Tag{Name: "order", MaxID: 1, Step: 100},
		frond.Tag{Name: "refer", MaxID: 1, Step: 100, Mapping: frond.MappingMist},
		frond.Tag{Name: "user", MaxID: 1, Step: 100, Mapping: frond.MappingMist})
	for _, s := range []*memstore.Store{x, y} { // fenced in every copy, then cut short
		if _, err := s.UpdateTag(context.Background(), "refer", frond.TagUpdate{Mapping: &fence}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config(t, store("store x", x), store("store y", y))
	cfg.Forms = map[string]Form{"order": {Name: "mist", Mapping: frond.MappingMist}, "user": {Name: "mist", Mapping: frond.MappingMist}}
	found, _ := run(t, cfg)
	expect(t, about(t, found, "tag invite"), Danger, "its stores hold different mappings (mist, plain)")
	expect(t, about(t, found, "tag refer"), Warn, "a change of its mapping from mist to plain was cut short (or runs now): its copies serve no new segment until it is done; finish it: frond tag set refer --mapping plain")
	expect(t, about(t, found, "tag order"), Danger, "configured form mist is mist numbers, and the tag hands out plain numbers")
	for _, f := range found {
		if f.Subject == "tag user" {
			t.Errorf("a form that matches its tag: %+v", f)
		}
	}
}

// The layout's end: within a year a danger, within the configured warning
// a warning.
func TestRun_Layout(t *testing.T) {
	cfg := config(t)
	end := cfg.Layout.Expires()
	for _, tc := range []struct {
		at    time.Time
		warn  time.Duration
		level string
		text  string
	}{
		{end.Add(-200 * 24 * time.Hour), 0, Danger, "(200.0 days): snowflake IDs stop then"},
		{end.Add(-2 * year), 3 * year, Warn, "in 2.0 years"},
		{end.Add(-2 * year), 0, OK, "runs out 2080-"},
		{end.Add(time.Hour), 0, Danger, "(already)"},
	} {
		cfg.Now, cfg.ExpiryWarning = func() time.Time { return tc.at }, tc.warn
		found, _ := run(t, cfg)
		expect(t, about(t, found, "layout twitter"), tc.level, tc.text)
	}
}

// failing is a store whose tags cannot be read.
type failing struct{ *memstore.Store }

func (failing) TagsAfter(context.Context, string, int) ([]frond.Tag, error) {
	return nil, errors.New("read timed out")
}

// A store whose tags cannot be read is said once; none read at all is a
// danger (a one-store audit passed with no tag read).
func TestRun_TagsUnread(t *testing.T) {
	cfg := config(t, store("store", failing{newStore(t)}))
	cfg.Sample = time.Millisecond
	found, counts := run(t, cfg)
	said := 0
	for _, f := range found {
		if f == (Finding{Warn, "store", "its tags cannot be read: read timed out"}) {
			said++
		}
	}
	if said != 1 { // read twice (Sample), said once
		t.Errorf("the failed reads said %d times: %+v", said, found)
	}
	expect(t, about(t, found, "tags"), Danger, "no store's tags could be read")
	if len(counts) != 0 {
		t.Errorf("counts %v", counts)
	}
}

// A store whose second read fails is audited from its first (it was left
// out, and a one-store audit passed with no tag read).
func TestSettle(t *testing.T) {
	a := newAuditor(config(t, store("store", newStore(t))))
	one := &tagTable{}
	one.add(frond.Tag{Name: "x", MaxID: 1, Step: 10})
	one.index()
	tables, first := []*tagTable{nil}, []*tagTable{one}
	a.settle(tables, first)
	if tables[0] != one || first[0] != nil || len(a.found) != 0 {
		t.Fatalf("tables %v, first %v, found %v", tables, first, a.found)
	}
	a.settle([]*tagTable{nil}, nil)
	if len(a.found) != 1 || a.found[0].Level != Danger {
		t.Fatalf("nothing read: %v", a.found)
	}
}

// The audit walks the stores' tags in the order of names, a page at a
// time, one row per tag: a tag missing from one store is found on either
// side of a page's edge, and the rate is all stores' together.
func TestWalkTags_Pages(t *testing.T) {
	ctx := context.Background()
	x, y := newStore(t), newStore(t)
	for i := range 10 {
		name := fmt.Sprintf("t%02d", i)
		x.CreateTag(ctx, frond.Tag{Name: name, MaxID: 1, Step: 10})
		if i != 2 && i != 3 && i != 9 {
			y.CreateTag(ctx, frond.Tag{Name: name, MaxID: 1, Step: 10})
		}
	}
	y.CreateTag(ctx, frond.Tag{Name: "u", MaxID: 1, Step: 10}) // after every name of x
	cfg := config(t, store("store x", x), store("store y", y))
	cfg.Page = 3
	a := newAuditor(cfg)
	first := a.snapshot(ctx)
	for _, s := range []frond.SegmentStore{x, y} {
		if _, err := s.Allocate(ctx, "t05", 10); err != nil {
			t.Fatal(err)
		}
	}
	second := a.snapshot(ctx)
	var names []string
	missing := map[string]string{}
	a.walkTags(second, first, 2*time.Second, func(name string, rows []tagRow, miss []string, rate float64, measured bool) {
		names = append(names, name)
		missing[name] = strings.Join(miss, ",")
		if name == "t05" && (!measured || rate != 10) { // 10 IDs in each store, 2 s apart
			t.Errorf("t05: rate %v (measured %v), want 10", rate, measured)
		}
		if name == "t04" && (!measured || rate != 0) {
			t.Errorf("t04: rate %v (measured %v), want 0", rate, measured)
		}
	})
	want := []string{"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t07", "t08", "t09", "u"}
	if !slices.Equal(names, want) {
		t.Fatalf("walked %v, want %v", names, want)
	}
	for name, m := range missing {
		w := ""
		switch name {
		case "t02", "t03", "t09":
			w = "store y"
		case "u":
			w = "store x"
		}
		if m != w {
			t.Errorf("%s missing from %q, want %q", name, m, w)
		}
	}
}

// The floors this node keeps of a store (segment.Floors) against the
// store's max_id, in each tag's mapping: below them is a store that lost
// writes (issue 67); at or above, a line that says so.
func TestRun_Floors(t *testing.T) {
	s := newStore(t, frond.Tag{Name: "order", MaxID: 100, Step: 10}, frond.Tag{Name: "m", MaxID: 5, Step: 10, Mapping: frond.MappingMist},
		frond.Tag{Name: "fine", MaxID: 900, Step: 10})
	floors := map[string]segment.TagFloors{}
	for name, f := range map[string]string{"order": `{"plain":500}`, "m": `{"plain":1048576}`, "fine": `{"plain":900}`} {
		var tf segment.TagFloors
		if err := json.Unmarshal([]byte(f), &tf); err != nil {
			t.Fatal(err)
		}
		floors[name] = tf
	}
	st := store("store 0", s)
	st.Floors = floors
	found, _ := run(t, config(t, st))
	var got []Finding
	for _, f := range found {
		if f.Subject == "store 0" && f.Level == Danger {
			got = append(got, f)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0].Message, "2 tags are below") || !strings.Contains(got[0].Message, "order (max_id 100, floor 500)") ||
		!strings.Contains(got[0].Message, "m (max_id 5, floor 16)") || strings.Contains(got[0].Message, "fine") {
		t.Fatalf("findings: %+v", got)
	}
	delete(floors, "order")
	delete(floors, "m")
	floors["gone"] = segment.TagFloors{}
	found, _ = run(t, config(t, st))
	if !slices.ContainsFunc(found, func(f Finding) bool {
		return f.Level == Warn && strings.Contains(f.Message, "1 tags this node has floors of are not in the store")
	}) {
		t.Fatalf("a tag missing: %+v", found)
	}
}

// Issue 70: a tag with shard bits holds 2^(63-K) counters, Mist's 2^47:
// its room is counted below that ceiling, not 2^63.
func TestCheckTag_ShardBitsRoom(t *testing.T) {
	cfg := config(t, store("store", newStore(t)))
	cfg.Sample = time.Second
	a := newAuditor(cfg)
	// 2^51 counters under 12 shard bits, 10^15 used: 1.25 × 10^15 left,
	// at 10^7 IDs/s 3.96 years (2^63 would last 29,000 years).
	r := tagRow{max: 1_000_000_000_000_000, step: 1000, mapping: mappingCode(frond.ShardMapping(12)), read: time.Millisecond}
	f, ok := a.checkTag("orders", []tagRow{r}, nil, 1e7, true)
	if !ok || f.Level != Warn || !strings.Contains(f.Message, "below 2^51 (its 12 shard bits) last 4.0 years") {
		t.Fatalf("a tag with 12 shard bits: %+v", f)
	}
	r.mapping = mappingCode("")
	if f, ok := a.checkTag("plain", []tagRow{r}, nil, 1e7, true); ok && f.Level != OK {
		t.Fatalf("the same counter without shard bits: %+v", f)
	}
	r.mapping = mappingCode(frond.MappingMist)
	r.max = 1 << 46
	if f, ok := a.checkTag("mist", []tagRow{r}, nil, 1, true); !ok || f.Level != Warn || !strings.Contains(f.Message, "more than half of the 47-bit space of Mist's counter") {
		t.Fatalf("a Mist tag past half its counter: %+v", f)
	}
}
