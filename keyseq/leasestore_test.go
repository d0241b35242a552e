package keyseq_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
)

// The lease stores keep the promises a Node's fence is built on: on the
// memory store and on SQLite, MariaDB and PostgreSQL.
func TestLeaseStores(t *testing.T) {
	stores := map[string]func(t *testing.T) keyseq.LeaseStore{
		"memory": func(t *testing.T) keyseq.LeaseStore { return &keyseq.MemLeases{} },
	}
	for name, url := range sqlTargets(t) {
		stores[name] = func(t *testing.T) keyseq.LeaseStore { return openSQL(t, url) }
	}
	stores["redis"] = func(t *testing.T) keyseq.LeaseStore { return openRedis(t) }
	stores["etcd"] = func(t *testing.T) keyseq.LeaseStore { return openEtcd(t) }
	for name, open := range stores {
		// etcd keeps a lease's TTL from its grant, in whole seconds: its
		// leases here last 2 s, and run out when no longer renewed.
		long := time.Minute
		if name == "etcd" {
			long = 2 * time.Second
		}
		t.Run(name, func(t *testing.T) { runLeaseStore(t, open(t), long) })
	}
}

func runLeaseStore(t *testing.T, st keyseq.LeaseStore, long time.Duration) {
	ctx := testenv.Ctx(t)
	space := fmt.Sprintf("l%d", time.Now().UnixNano())
	a := keyseq.Owner{Token: "aaaa", Addr: "10.0.0.1:8080"}
	b := keyseq.Owner{Token: "bbbb", Addr: "10.0.0.2:8080"}
	sections := func(ts []keyseq.Taken) []int {
		var out []int
		for _, x := range ts {
			out = append(out, x.Section)
		}
		return out
	}

	// a takes 0..3: each raised from 1.
	got, err := st.Take(ctx, space, []int{3, 0, 1, 2}, a, long, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sections(got), []int{0, 1, 2, 3}) {
		t.Fatalf("a's first take: %v", got)
	}
	for _, x := range got {
		if x.Range != (frond.Range{Start: 1, End: 11, Stride: 1}) {
			t.Fatalf("section %d taken with %v", x.Section, x.Range)
		}
	}
	// b takes nothing a holds, but 4 and 5 are free.
	got, err = st.Take(ctx, space, []int{2, 3, 4, 5}, b, long, 10)
	if err != nil || !slices.Equal(sections(got), []int{4, 5}) {
		t.Fatalf("b's take beside a's leases: %v, %v", got, err)
	}
	// a takes its own again: raised again (a take whose answer was lost).
	got, err = st.Take(ctx, space, []int{1}, a, long, 10)
	if err != nil || len(got) != 1 || got[0].Range.Start != 11 {
		t.Fatalf("a takes its own section again: %v, %v", got, err)
	}
	// Raises only under one's own lease, all or none.
	if rs, err := st.RaiseOwned(ctx, space, []int{0, 1}, 5, a); err != nil || rs[0].Start != 11 || rs[1].Start != 21 || rs[1].End != 26 {
		t.Fatalf("a raises its sections: %v, %v", rs, err)
	}
	if _, err := st.RaiseOwned(ctx, space, []int{0, 4}, 5, a); !errors.Is(err, keyseq.ErrNotOwner) {
		t.Fatalf("a raises b's section: %v", err)
	}
	if rs, err := st.RaiseOwned(ctx, space, []int{0}, 5, a); err != nil || rs[0].Start != 16 {
		t.Fatalf("a refused raise raised nothing: %v, %v", rs, err)
	}
	if _, err := st.RaiseOwned(ctx, space, []int{7}, 5, a); !errors.Is(err, keyseq.ErrNotOwner) {
		t.Fatalf("a raises a section never taken: %v", err)
	}
	// Renewals answer what each holds; the table shows owners and members.
	if held, err := st.Renew(ctx, space, a, long); err != nil || !slices.Equal(held, []int{0, 1, 2, 3}) {
		t.Fatalf("a's renewal: %v, %v", held, err)
	}
	if held, err := st.Renew(ctx, space, b, long); err != nil || !slices.Equal(held, []int{4, 5}) {
		t.Fatalf("b's renewal: %v, %v", held, err)
	}
	tb, err := st.Read(ctx, space, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []keyseq.Owner{a, a, a, a, b, b, {}, {}}
	if !slices.Equal(tb.Owners, want) || !slices.Equal(tb.Members, []keyseq.Owner{a, b}) {
		t.Fatalf("table: %+v", tb)
	}
	// A give-back ends only the lease of the maximum it names (issue 58): one
	// sent before a later take (here: raise) of the section, and arriving
	// after it, ends nothing, and b cannot take the section.
	if err := st.Release(ctx, space, []keyseq.Given{{Section: 0, Max: 16}}, a); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Take(ctx, space, []int{0}, b, long, 10); err != nil || len(got) != 0 {
		t.Fatalf("b takes a section a late give-back named at an older maximum: %v, %v", got, err)
	}
	// A section given back at its maximum is b's to take at once, above
	// a's values.
	if err := st.Release(ctx, space, []keyseq.Given{{Section: 0, Max: 21}}, a); err != nil {
		t.Fatal(err)
	}
	got, err = st.Take(ctx, space, []int{0, 1}, b, long, 10)
	if err != nil || !slices.Equal(sections(got), []int{0}) || got[0].Range.Start != 21 {
		t.Fatalf("b takes the section a gave back: %v, %v", got, err)
	}
	// A lease that runs out by the store's clock is anyone's.
	if _, err := st.Renew(ctx, space, a, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The leases may run out one after another (PostgreSQL's clock moves
	// within a statement): b asks again only for those it has not taken
	// (taking its own again would raise it again).
	deadline := time.Now().Add(10 * time.Second)
	var taken []keyseq.Taken
	for left := []int{1, 2, 3}; len(left) > 0 && time.Now().Before(deadline); {
		got, err = st.Take(ctx, space, left, b, long, 10)
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, got...)
		left = slices.DeleteFunc(left, func(i int) bool { return slices.Contains(sections(got), i) })
	}
	got = taken
	slices.SortFunc(got, func(x, y keyseq.Taken) int { return x.Section - y.Section })
	if !slices.Equal(sections(got), []int{1, 2, 3}) || got[0].Range.Start != 26 || got[1].Range.Start != 11 {
		t.Fatalf("b takes a's run-out sections: %v", got)
	}
	if held, err := st.Renew(ctx, space, a, long); err != nil || len(held) != 0 {
		t.Fatalf("a renews after its leases were taken: %v, %v", held, err)
	}
	if _, err := st.RaiseOwned(ctx, space, []int{1}, 5, a); !errors.Is(err, keyseq.ErrNotOwner) {
		t.Fatalf("a raises a section b took: %v", err)
	}
	// A clean stop gives back every section and the membership.
	if err := st.Release(ctx, space, nil, b); err != nil {
		t.Fatal(err)
	}
	tb, err = st.Read(ctx, space, 8)
	if err != nil || !slices.Equal(tb.Owners, make([]keyseq.Owner, 8)) || !slices.Equal(tb.Members, []keyseq.Owner{a}) {
		t.Fatalf("table after b's stop: %+v, %v", tb, err)
	}
	// Bad arguments.
	if _, err := st.Take(ctx, space, []int{1, 1}, a, long, 10); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("a section twice: %v", err)
	}
	if _, err := st.Take(ctx, space, []int{1}, a, long, 0); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("step 0: %v", err)
	}
}
