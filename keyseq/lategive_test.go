package keyseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/frond-id/frond/keyseq"
)

// holdingLeases is a LeaseStore whose give-backs of sections (not a clean
// stop's) are held, as a network holds a request the node gave up on, until
// deliver.
type holdingLeases struct {
	keyseq.LeaseStore
	held      []func()
	lastGiven int // the section of the last give-back held
}

func (h *holdingLeases) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if give == nil {
		return h.LeaseStore.Release(ctx, space, give, me)
	}
	give = append([]keyseq.Given(nil), give...)
	h.lastGiven = give[0].Section
	h.held = append(h.held, func() { h.LeaseStore.Release(ctx, space, give, me) })
	return fmt.Errorf("timeout: the give-back is held in the network")
}

func (h *holdingLeases) deliver() {
	for _, f := range h.held {
		f()
	}
	h.held = nil
}

// Issue 58, item 1: a give-back held in the network reaches the store after
// its node took the section back (a member left, its share grew), and
// ends nothing; unfenced, it freed the section while the node served it, a
// third node took it, and a key's values went back (201 by c, then 102
// by a).
func TestNode_LateGiveBackEndsNothing(t *testing.T) {
	for _, unfenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("unfenced=%v", unfenced), func(t *testing.T) {
			bad := lateGiveBack(t, unfenced)
			switch {
			case unfenced && bad == "":
				t.Fatal("the give-back unfenced (the code before issue 58) went unnoticed: the test proves nothing")
			case !unfenced && bad != "":
				t.Fatal(bad)
			}
		})
	}
}

func lateGiveBack(t *testing.T, unfenced bool) string {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	mem := &keyseq.MemLeases{Now: clock}
	if unfenced {
		keyseq.UnfenceReleases(mem)
	}
	st := &holdingLeases{LeaseStore: mem}
	sp := keyseq.Space{Name: "late", Step: 100, Sections: 2, Slots: 4}
	opts := keyseq.NodeOptions{TTL: 3 * time.Second, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
	node := func(name string) *keyseq.Node {
		n, err := keyseq.NewNode(sp, st, keyseq.Owner{Token: name, Addr: name}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	round := func(ns ...*keyseq.Node) {
		for _, n := range ns {
			n.Round(ctx)
		}
	}
	a := node("a")
	round(a) // a holds both sections
	b := node("b")
	round(b, a) // b joins: a gives one back, held in the network
	if len(st.held) != 1 || len(a.Held()) != 1 {
		t.Fatalf("a should have given one section back: held %v, give-backs %d", a.Held(), len(st.held))
	}
	b.Close(ctx) // b leaves before it took the section
	now = now.Add(time.Second)
	round(a, a) // a's share is both again: it takes its own back
	if len(a.Held()) != 2 {
		t.Fatalf("a took its section back: held %v", a.Held())
	}
	// A key of the section a gave back and took again.
	key := ""
	for k := 0; key == ""; k++ {
		if keyseq.SectionOf(fmt.Sprint(k), sp.Sections) == st.lastGiven {
			key = fmt.Sprint(k)
		}
	}
	first, _, err := a.Next(ctx, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	st.deliver() // the late give-back reaches the store
	c := node("c")
	round(c)
	var last int64 = first
	who := "a"
	for _, n := range []*keyseq.Node{c, a} {
		v, _, err := n.Next(ctx, key, 1)
		var no *keyseq.NotOwnerError
		if errors.As(err, &no) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if v <= last {
			return fmt.Sprintf("key %s answered %d by %s, then %d by %s", key, last, who, v, n.Me().Token)
		}
		last, who = v, n.Me().Token
	}
	return ""
}
