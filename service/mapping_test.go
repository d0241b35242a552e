package service

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

// mappingNode is a node on store st with forms configured.
func mappingNode(t *testing.T, st frond.SegmentStore, forms map[string]string) *Service {
	t.Helper()
	c := newClock()
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{PersistEvery: time.Hour}, Forms: forms,
		ObfuscationKey: []byte("a key of sixteen bytes or more"),
		Segment:        segment.Settings{FixedStep: true}}, st, &memRegistry{id: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s
}

// takeNums takes n numbers of tag from s, one request each.
func takeNums(t *testing.T, s *Service, r Request, n int, into map[int64]string, who string) {
	t.Helper()
	for range n {
		a, err := s.Take(bg, r)
		if err != nil {
			t.Fatalf("%s: %+v: %v", who, r, err)
		}
		for _, v := range a.Nums {
			if was, ok := into[v]; ok {
				t.Fatalf("%d handed out twice: by %s and by %s", v, was, who)
			}
			into[v] = who
		}
	}
}

// TestMapping_TwoNodesOneTag is issue 42's case: one node configured
// forms: {order: mist} and one not, on one store, both serving their
// defaults. The plain counter walked through the Mist values (plain 129582
// was the Mist value of counter 1); now the mapping is the tag's, and
// both nodes hand out Mist numbers.
func TestMapping_TwoNodesOneTag(t *testing.T) {
	st := memstore.New(nil)
	a := mappingNode(t, st, map[string]string{"order": FormMist})
	b := mappingNode(t, st, nil)
	if _, err := a.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 50}); err != nil {
		t.Fatal(err)
	}
	if tg, _ := st.Tag(bg, "order"); tg.Mapping != frond.MappingMist {
		t.Fatalf("created by a node with forms {order: mist}: mapping %q", tg.Mapping)
	}
	seen := map[int64]string{}
	r := Request{Kind: KindSegment, Name: "order"}
	takeNums(t, a, r, 300, seen, "a")
	takeNums(t, b, r, 300, seen, "b")
	// form=number is the tag's number in decimal: Mist's, not the counter.
	takeNums(t, b, Request{Kind: KindSegment, Name: "order", Form: FormNumber, Count: 5}, 60, seen, "b number")
	// Leaf's API (numbers) gets Mist numbers too.
	takeNums(t, b, Request{Kind: KindSegment, Name: "order", Numbers: true}, 60, seen, "b leaf")
	for v := range seen {
		if v>>16 < 1 || v>>16 > 2000 {
			t.Fatalf("%d is not a Mist number of a counter below 2000", v)
		}
	}
	// Another mapping is refused before any ID is taken.
	before, _ := st.Tag(bg, "order")
	for _, r := range []Request{
		{Kind: KindSegment, Name: "order", Form: FormOpaque},
		{Kind: KindSegment, Name: "order", Form: FormOpaque62},
		{Kind: KindSegment, Name: "order", Ranges: true},
		{Kind: KindSegment, Name: "order", Lease: true, Ranges: true},
	} {
		if _, err := b.Take(bg, r); err == nil {
			t.Fatalf("%+v was served", r)
		}
	}
	// base62 of the Mist number: an encoding, free.
	if got, err := b.Take(bg, Request{Kind: KindSegment, Name: "order", Form: FormBase62}); err != nil || len(got.Strs[0]) != 11 {
		t.Fatalf("base62 of a Mist tag: %+v, %v", got, err)
	}
	// (At most the prefetches in flight: a step per node.)
	if after, _ := st.Tag(bg, "order"); after.MaxID > before.MaxID+2*50 {
		t.Fatalf("refused requests took IDs: max_id %d -> %d", before.MaxID, after.MaxID)
	}
	// A plain tag refuses mist.
	if _, err := b.CreateTag(bg, frond.Tag{Name: "plain", MaxID: 1, Step: 50}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Take(bg, Request{Kind: KindSegment, Name: "plain", Form: FormMist}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("mist of a plain tag: %v", err)
	}
}

// TestMapping_ConfigDisagreesAtStart: a configured form of another mapping
// than the tag's is refused at start, naming the command that changes it.
func TestMapping_ConfigDisagreesAtStart(t *testing.T) {
	st := memstore.New(nil)
	if _, err := st.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 50}); err != nil {
		t.Fatal(err)
	}
	_, err := New(bg, Config{Forms: map[string]string{"order": FormMist}}, st, &memRegistry{id: 3}, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Fields[0] != "Forms[order]" {
		t.Fatalf("forms {order: mist} on a plain tag: %v", err)
	}
	// An encoding agrees with any mapping; a tag not created yet is fine.
	mappingNode(t, st, map[string]string{"order": FormBase62, "later": FormMist})
}

// TestMapping_ChangeUnderLoad: a tag's mapping changes (mist to plain, then
// plain to mist) while two nodes hand out its IDs from buffers filled
// before: every number handed out, before, across and after each change,
// is handed out once.
func TestMapping_ChangeUnderLoad(t *testing.T) {
	st := memstore.New(nil)
	a := mappingNode(t, st, nil)
	b := mappingNode(t, st, nil)
	if _, err := a.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 40, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	r := Request{Kind: KindSegment, Name: "order"}
	takeNums(t, a, r, 25, seen, "a")
	takeNums(t, b, r, 25, seen, "b")
	for _, to := range []string{frond.MappingPlain, frond.MappingMist, frond.MappingPlain} {
		got, err := b.UpdateTag(bg, "order", frond.TagUpdate{Mapping: &to})
		if err != nil || got.MappingName() != to {
			t.Fatalf("change to %s: %+v, %v", to, got, err)
		}
		// a still holds a segment of the old mapping: it serves it out,
		// then learns the new one from its next segment.
		for i := 0; i < 4; i++ {
			takeNums(t, a, r, 30, seen, "a after "+to)
			takeNums(t, b, r, 30, seen, "b after "+to)
			takeNums(t, a, Request{Kind: KindSegment, Name: "order", Count: 7}, 3, seen, "a batch after "+to)
		}
	}
	if len(seen) < 1000 {
		t.Fatalf("only %d numbers", len(seen))
	}
	// To or from opaque: refused, nothing changed.
	opaque := frond.MappingOpaque
	before, _ := st.Tag(bg, "order")
	if _, err := a.UpdateTag(bg, "order", frond.TagUpdate{Mapping: &opaque}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("plain to opaque: %v", err)
	}
	// (A prefetch may move max_id by a step meanwhile; a change moves it by
	// its headroom, 65,536 at least.)
	if after, _ := st.Tag(bg, "order"); after.Mapping != before.Mapping || after.MaxID > before.MaxID+1000 {
		t.Fatalf("a refused change changed %+v to %+v", before, after)
	}
}

// TestMapping_Adopt: a tag a node's configured form served as opaque before
// frond kept mappings has none recorded; the node refuses to start,
// naming --adopt, which records the mapping without a raise. Adopt is
// refused on a tag that has a mapping recorded, and to plain.
func TestMapping_Adopt(t *testing.T) {
	st := memstore.New(nil)
	if _, err := st.CreateTag(bg, frond.Tag{Name: "order", MaxID: 500, Step: 50}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Forms: map[string]string{"order": FormOpaque62}, ObfuscationKey: []byte("a key of sixteen bytes or more")}
	if _, err := New(bg, cfg, st, &memRegistry{id: 3}, nil); err == nil || !strings.Contains(err.Error(), "frond tag set order --mapping opaque --adopt") {
		t.Fatalf("forms {order: opaque62} on a tag without a mapping: %v", err)
	}
	admin := mappingNode(t, st, nil)
	opaque, plain := frond.MappingOpaque, frond.MappingPlain
	if _, err := admin.UpdateTag(bg, "order", frond.TagUpdate{Mapping: &opaque}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("plain to opaque without adopt: %v", err)
	}
	got, err := admin.UpdateTag(bg, "order", frond.TagUpdate{Mapping: &opaque, Adopt: true})
	if err != nil || got.Mapping != frond.MappingOpaque || got.MaxID != 500 {
		t.Fatalf("adopt: %+v, %v", got, err)
	}
	if _, err := admin.UpdateTag(bg, "order", frond.TagUpdate{Mapping: &plain, Adopt: true}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("adopt on a tag with a mapping: %v", err)
	}
	n := mappingNode(t, st, cfg.Forms)
	a, err := n.Take(bg, Request{Kind: KindSegment, Name: "order", Count: 3})
	if err != nil || len(a.Strs) != 3 || a.Form != FormOpaque62 {
		t.Fatalf("after adopt: %+v, %v", a, err)
	}
}

// TinyID's nextId (a list of numbers asked as ranges) of a tag whose
// mapping is not plain: the answer's Request says the numbers came as a
// list (Ranges false, the batch cut), as fitted to the mapping; the front
// door reads the numbers by it.
func TestMapping_NumbersListOfAMistTag(t *testing.T) {
	st := memstore.New(nil)
	n := mappingNode(t, st, nil)
	if _, err := n.CreateTag(bg, frond.Tag{Name: "m", MaxID: 1, Step: 100, Mapping: frond.MappingMist}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "k1", "k1"} { // the second k1 is a replay
		a, err := n.Take(bg, Request{Kind: KindSegment, Name: "m", Count: 3, Ranges: true, Numbers: true, IdempotencyKey: key})
		if err != nil || a.Request.Ranges || len(a.Nums) != 3 || a.Nums[0]>>16 < 1 || a.Request.Form != FormMist {
			t.Fatalf("key %q: %+v, %v", key, a, err)
		}
	}
}
