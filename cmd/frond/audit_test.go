package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/store/sqlstore"
)

// frond stores set places two SQLite files as a set, frond stores show
// and frond audit report the places (in either order of the list: the
// place is the store's), a store of the set listed alone is a danger
// (exit 1) and frond serve refuses it; going back to one store retires the
// other. A tag missing from one store and a sequence tag on two stores are
// warnings.
func TestCLI_Audit(t *testing.T) {
	dir := t.TempDir()
	a, b := "sqlite://"+filepath.Join(dir, "a.db"), "sqlite://"+filepath.Join(dir, "b.db")
	ctx := context.Background()
	var stores []frond.SegmentStore
	for _, u := range []string{a, b} {
		s, err := sqlstore.Open(ctx, u, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	stores[0].CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 100})
	stores[1].CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 100})
	stores[0].CreateTag(ctx, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence})
	stores[1].CreateTag(ctx, frond.Tag{Name: "ticket", MaxID: 1, Step: 1, Mode: frond.ModeSequence})
	stores[0].Close()
	stores[1].Close()

	code, out, errs := runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", a+" "+b, "--margin", "0")
	if code != exitOK || !strings.Contains(out, "done: generation 1 (change ") || !strings.Contains(out, "), 2 tags") {
		t.Fatalf("stores set: exit %d\n%s%s", code, out, errs)
	}
	// A tag created in one store only, after the change (a create cut
	// short).
	createTagIn(t, a, "only-a", 1, 100)
	code, out, errs = runCLI(t, nil, "stores", "show", "--data-dir", dir, "--store", b+" "+a)
	if code != exitOK || !strings.Contains(out, "residue 0 of 2 (generation 1, change ") || !strings.Contains(out, "residue 1 of 2 (generation 1, change ") {
		t.Fatalf("stores show: exit %d\n%s%s", code, out, errs)
	}
	audit := func(store string, extra ...string) (int, string, string) {
		return runCLI(t, nil, append([]string{"audit", "--data-dir", dir, "--store", store, "--sample", "0"}, extra...)...)
	}
	for _, list := range []string{a + " " + b, b + " " + a} {
		code, out, errs = audit(list)
		if code != exitOK || !strings.Contains(out, "residue 0 of 2 (generation 1, change ") || !strings.Contains(out, "residue 1 of 2 (generation 1, change ") ||
			!strings.Contains(out, "only-a") || !strings.Contains(out, "not linearizable") || !strings.Contains(out, "layout twitter") {
			t.Fatalf("listed as %q: exit %d\n%s%s", list, code, out, errs)
		}
	}
	code, out, errs = audit(a)
	if code != exitError || !strings.Contains(out, "lists it alone") {
		t.Fatalf("alone: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = runCLI(t, nil, "serve", "--data-dir", dir, "--store", a, "--http-addr", "127.0.0.1:0")
	if code != exitError || !strings.Contains(errs, "is residue 0 of 2 (generation 1, change ") || !strings.Contains(errs, "but this node lists it alone") {
		t.Fatalf("serve with a store of a set alone: exit %d, %s", code, errs)
	}
	// Leaving b out of a change is refused; retiring it is the way.
	code, _, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", a)
	if code == exitOK || !strings.Contains(errs, "residue 1 is not among the stores given") {
		t.Fatalf("b left out: exit %d, %s", code, errs)
	}
	code, out, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", a, "--retire", b)
	if code != exitOK || !strings.Contains(out, "is now the only store of the set (generation 2, change ") || !strings.Contains(out, "retired by the change to generation 2") {
		t.Fatalf("back to one store: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = audit(a, "--json"); code != exitOK || !strings.Contains(out, `"level": "ok"`) || !strings.Contains(out, "the only store of the set") {
		t.Fatalf("alone after the change: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs = audit(a + " " + b); code != exitOK || !strings.Contains(out, "retired") {
		t.Fatalf("a retired store still listed: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs = audit(a, "--sample", "-1s"); code != exitUsage {
		t.Fatalf("negative sample: exit %d, %s", code, errs)
	}
}

// The rate checks: IDs that run out within a year are a danger, within ten
// years a warning; a step that even the adaptive rule cannot grow past a
// few store round trips is a warning.
func TestAudit_RateChecks(t *testing.T) {
	cfg := loadDefaults(t)
	a := &auditor{cfg: cfg}
	const max = int64(9223372036854775807)
	tags := map[string]tagRow{
		"soon":  {max: max - 1_000_000_000_000_000, step: 1000}, // 10^15 IDs at 10^8/s: 116 days
		"later": {max: max - 10_000_000_000_000_000, step: 1000},
		"fine":  {max: 1000, step: 1000},
		"slow":  {max: 1000, step: 10},
	}
	rates := map[string]float64{"soon": 1e8, "later": 1e8, "fine": 1000, "slow": 1e5}
	a.cfg.Segment.FixedStep = true // no adaptive step: the tag's own must do
	for name, r := range tags {
		r.read = time.Millisecond
		if f, ok := a.checkTag(name, []tagRow{r}, nil, 1, rates[name], true, time.Second); ok {
			a.found = append(a.found, f)
		}
	}
	want := map[string]string{"soon": auditDanger, "later": auditWarn, "fine": auditOK, "slow": auditWarn}
	got := map[string]string{}
	for _, f := range a.found {
		tag := strings.TrimPrefix(f.Subject, "tag ")
		if got[tag] != "" {
			// A tag near 2^63 was listed twice, as DANGER and as OK.
			t.Errorf("tag %s has two rows: %+v", tag, a.found)
		}
		got[tag] = f.Level
	}
	for _, f := range a.found {
		if f.Subject == "tag soon" && (!strings.Contains(f.Message, "last 115.7 days; ") || !strings.Contains(f.Message, "a segment of 1000 lasts")) {
			t.Errorf("tag soon's row joins its findings: %q", f.Message)
		}
	}
	for tag, level := range want {
		if got[tag] != level {
			t.Errorf("tag %s: %s, want %s; findings %+v", tag, got[tag], level, a.found)
		}
	}
}

// loadDefaults is the configuration with nothing set.
func loadDefaults(t *testing.T) *config.Config {
	t.Helper()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	config.AddFlags(fs)
	cfg, _, err := config.Load(fs, []string{"FROND_DATA_DIR=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The audit walks the stores' tags in the order of names, a page at a
// time, one row per tag: a tag missing from one store is found on either
// side of a page's edge, and the rate is all stores' together.
func TestAudit_WalksPages(t *testing.T) {
	defer func(n int) { auditPage = n }(auditPage)
	auditPage = 3
	ctx := context.Background()
	x, y := memstore.New(nil), memstore.New(nil)
	for i := range 10 {
		name := fmt.Sprintf("t%02d", i)
		x.CreateTag(ctx, frond.Tag{Name: name, MaxID: 1, Step: 10})
		if i != 2 && i != 3 && i != 9 {
			y.CreateTag(ctx, frond.Tag{Name: name, MaxID: 1, Step: 10})
		}
	}
	y.CreateTag(ctx, frond.Tag{Name: "u", MaxID: 1, Step: 10}) // after every name of x
	stores := []*auditStore{{i: 0, name: "store x", store: x}, {i: 1, name: "store y", store: y}}
	a := &auditor{cfg: loadDefaults(t)}
	first := a.snapshot(ctx, stores)
	for _, s := range []frond.SegmentStore{x, y} {
		if _, err := s.Allocate(ctx, "t05", 10); err != nil {
			t.Fatal(err)
		}
	}
	second := a.snapshot(ctx, stores)
	var names []string
	missing := map[string]string{}
	a.walkTags(stores, second, first, 2*time.Second, func(name string, rows []tagRow, miss []string, rate float64, measured bool) {
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

// frond audit writes one row per tag as it goes, ends the text with the
// tags' count and the dangerous ones, and writes JSON as one array.
func TestCLI_AuditStreams(t *testing.T) {
	defer func(n int) { auditPage = n }(auditPage)
	auditPage = 100
	dir := t.TempDir()
	u := "sqlite://" + filepath.Join(dir, "a.db")
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, u, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 350
	for i := range n {
		s.CreateTag(ctx, frond.Tag{Name: fmt.Sprintf("t%03d", i), MaxID: 1, Step: 10})
	}
	s.CreateTag(ctx, frond.Tag{Name: "t200x", MaxID: math.MaxInt64 - 50, Step: 10})
	s.Close()

	code, out, errs := runCLI(t, nil, "audit", "--data-dir", dir, "--store", u, "--sample", "0")
	if code != exitError || !strings.HasSuffix(out, "tags: 351, 1 dangerous, 0 with warnings (t200x)\n") || strings.Count(out, "t200x") != 2 {
		t.Fatalf("text: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, nil, "audit", "--data-dir", dir, "--store", u, "--sample", "1ms", "--json")
	var found []finding
	if err := json.Unmarshal([]byte(out), &found); code != exitError || err != nil {
		t.Fatalf("json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	rows := map[string]int{}
	var last string
	for _, f := range found {
		if tag, ok := strings.CutPrefix(f.Subject, "tag "); ok {
			rows[tag]++
			if tag <= last {
				t.Errorf("tag %s after %s", tag, last)
			}
			last = tag
		}
	}
	if len(rows) != n+1 {
		t.Errorf("%d tags have a row, want %d", len(rows), n+1)
	}
}

// A store whose second read fails is audited from its first (it was left
// out, and a one-store audit passed with no tag read); none read at all is
// a danger.
func TestAudit_Settle(t *testing.T) {
	a := &auditor{cfg: loadDefaults(t)}
	one := &tagTable{}
	one.add(frond.Tag{Name: "x", MaxID: 1, Step: 10})
	one.index()
	tables, first := []*tagTable{nil}, []*tagTable{one}
	a.settle(tables, first)
	if tables[0] != one || first[0] != nil || len(a.found) != 0 {
		t.Fatalf("tables %v, first %v, found %v", tables, first, a.found)
	}
	a.settle([]*tagTable{nil, nil}, nil)
	if len(a.found) != 1 || a.found[0].Level != auditDanger {
		t.Fatalf("nothing read: %v", a.found)
	}
}

// A tag whose stores hold different mappings (a change of mapping that
// did not reach every store), and a configured form that names another
// mapping than the tag's, are dangers (issue 42).
func TestAudit_Mappings(t *testing.T) {
	dir := t.TempDir()
	a, b := "sqlite://"+filepath.Join(dir, "a.db"), "sqlite://"+filepath.Join(dir, "b.db")
	ctx := context.Background()
	for _, u := range []string{a, b} {
		s, err := sqlstore.Open(ctx, u, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 100})
		s.CreateTag(ctx, frond.Tag{Name: "invite", MaxID: 1, Step: 100, Mapping: frond.MappingMist})
		s.CreateTag(ctx, frond.Tag{Name: "refer", MaxID: 1, Step: 100, Mapping: frond.MappingMist})
		s.Close()
	}
	if code, out, errs := runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", a+" "+b, "--margin", "0"); code != exitOK {
		t.Fatalf("stores set: exit %d\n%s%s", code, out, errs)
	}
	// Copies that disagree, as a version before issue 57 could leave them
	// (a change of mapping through a node listing b alone), and a change
	// of mapping cut short after it fenced every copy.
	s, err := sqlstore.Open(ctx, b, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at, _ := s.Place(ctx)
	if err := s.DeleteTagAt(ctx, at, "invite"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTagAt(ctx, at, frond.Tag{Name: "invite", MaxID: 1 << 20, Step: 100}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fence := frond.MappingChange(frond.MappingMist, frond.MappingPlain)
	for _, u := range []string{a, b} {
		s, err := sqlstore.Open(ctx, u, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		at, _ := s.Place(ctx)
		if _, err := s.UpdateTagAt(ctx, at, "refer", frond.TagUpdate{Mapping: &fence}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	cfg := filepath.Join(dir, "frond.yaml")
	if err := os.WriteFile(cfg, []byte("forms:\n  order: mist\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "audit", "--config", cfg, "--data-dir", dir, "--store", a+" "+b, "--sample", "0")
	if code != exitError || !strings.Contains(out, "hold different mappings (mist, plain)") || !strings.Contains(out, "move the tag's users to a new tag") ||
		!strings.Contains(out, "a change of its mapping from mist to plain was cut short") || !strings.Contains(out, "frond tag set refer --mapping plain") ||
		!strings.Contains(out, "configured form mist is mist numbers, and the tag hands out plain numbers") {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errs)
	}
}
