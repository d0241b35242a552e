package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/audit"
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

// frond audit writes one row per tag as it goes, ends the text with the
// tags' count and the dangerous ones, and writes JSON as one array.
func TestCLI_AuditStreams(t *testing.T) {
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
	var found []audit.Finding
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

// A tag whose stores hold different mappings (a change of mapping that
// did not reach every store), and a configured form that names another
// mapping than the tag's, are dangers (issue 42).
func TestCLI_AuditMappings(t *testing.T) {
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
