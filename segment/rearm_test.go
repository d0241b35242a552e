package segment_test

import (
	"context"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
)

// A store fenced by a keyed sequence node's finding (issue 68) keeps its
// fence through frond stores rearm, which raises segment tags only: the
// space's re-arm (frond space rearm) raises its sections above every
// node's floors and takes it off. A segment tag's finding is taken off.
func TestRearm_KeyedFindingStays(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "orders", Step: 10, MaxID: 1}); err != nil {
		t.Fatal(err)
	}
	keyed := frond.LostFinding(1_800_000_000, frond.LostSpace("msgs"))
	if err := frond.FenceLost(ctx, s, keyed); err != nil {
		t.Fatal(err)
	}
	res, err := segment.Rearm(ctx, s, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Place(ctx); p.Lost != keyed || res.Stays == "" || res.Raised["orders"] != 100 {
		t.Fatalf("re-armed %+v: the store's place is %q, want the keyed finding kept and the tag raised", res, p.String())
	}
	if ok, err := frond.LiftLost(ctx, s, keyed); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tag := frond.LostFinding(1_800_000_000, "orders")
	if err := frond.FenceLost(ctx, s, tag); err != nil {
		t.Fatal(err)
	}
	if res, err := segment.Rearm(ctx, s, nil, 100); err != nil || res.Stays != "" || res.Fence != tag {
		t.Fatalf("re-armed %+v, %v", res, err)
	}
	if p, _ := s.Place(ctx); p.Fenced() {
		t.Fatalf("a tag's finding stays: %q", p.String())
	}
}
