package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/sqlstore"
)

// unreachable is a store whose place cannot be changed: a change of the set
// that reaches it stops there, as when its server is down.
type unreachable struct{ *sqlstore.Store }

func (unreachable) SwapPlace(context.Context, frond.Place, frond.Place) error {
	return errors.New("connection refused")
}

// frond stores set, interrupted after fencing one store of two (issue 42):
// a rerun with another list is refused and names the change; --abandon with
// the change's own stores puts the fenced store back; the change then runs.
func TestCLI_StoresSetRerunAndAbandon(t *testing.T) {
	dir := t.TempDir()
	a, b := "sqlite://"+filepath.Join(dir, "a.db"), "sqlite://"+filepath.Join(dir, "b.db")
	ctx := context.Background()
	var open []*sqlstore.Store
	for _, u := range []string{a, b} {
		s, err := sqlstore.Open(ctx, u, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	if _, err := segment.ChangeSet(ctx, []frond.SegmentStore{open[0], unreachable{open[1]}}, nil, segment.SetOptions{}); err == nil {
		t.Fatal("the change reached b")
	}
	code, out, errs := runCLI(t, nil, "stores", "show", "--data-dir", dir, "--store", a+" "+b)
	if code != exitOK || !strings.Contains(out, "IDENTITY") || !strings.Contains(out, "fenced: change ") {
		t.Fatalf("stores show: exit %d\n%s%s", code, out, errs)
	}
	for _, l := range [][]string{{"--store", b + " " + a}, {"--store", a}, {"--store", a, "--retire", b}} {
		code, out, errs = runCLI(t, nil, append([]string{"stores", "set", "--data-dir", dir}, l...)...)
		if code == exitOK || !strings.Contains(errs, "is fenced by change") || !strings.Contains(errs, "--abandon") {
			t.Fatalf("a rerun with %q: exit %d\n%s%s", l, code, out, errs)
		}
	}
	code, out, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--abandon", "--store", a+" "+b)
	if code != exitOK || !strings.Contains(out, "abandoned: change ") {
		t.Fatalf("--abandon: exit %d\n%s%s", code, out, errs)
	}
	if p, err := open[0].Place(ctx); err != nil || !p.Alone() {
		t.Fatalf("a is %s after the abandon (%v)", p.Describe(), err)
	}
	code, out, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--abandon", "--store", a+" "+b)
	if code == exitOK || !strings.Contains(errs, "nothing to abandon") {
		t.Fatalf("--abandon again: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", b+" "+a)
	if code != exitOK || !strings.Contains(out, "done: generation 1 (change ") {
		t.Fatalf("the change after the abandon: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", a+" "+a)
	if code == exitOK || !strings.Contains(errs, "are the same store") {
		t.Fatalf("a store given twice: exit %d\n%s%s", code, out, errs)
	}
}
