package segment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
)

// guardNode is one frond node of the guard tests: an engine over a Guard
// of store s, with its floors in dir (its data directory).
type guardNode struct {
	e *Engine
	g *Guard
}

func newGuardNode(t *testing.T, s frond.SegmentStore, dir string) *guardNode {
	t.Helper()
	f, err := OpenFloors(FloorsFile(dir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(s, f, GuardOptions{Now: func() time.Time { return time.Unix(1764400000, 0) }, Logger: quiet})
	e, err := New(g, Settings{FixedStep: true, FailFast: -1})
	if err != nil {
		t.Fatal(err)
	}
	n := &guardNode{e: e, g: g}
	t.Cleanup(n.kill)
	return n
}

// kill stops the node as kill -9 does: nothing given back.
func (n *guardNode) kill() { n.e.Close(); n.g.f.Close() }

// take takes up to count IDs of tag one by one, into seen, and returns the
// first error. An ID handed out twice fails the test.
func (n *guardNode) take(t *testing.T, tag string, count int, seen map[int64]string, who string) error {
	t.Helper()
	for i := range count {
		id, err := n.e.Next(context.Background(), tag)
		if err != nil {
			return err
		}
		if prev, ok := seen[id]; ok {
			t.Fatalf("ID %d handed out twice: by %s, then by %s (its %dth)", id, prev, who, i)
		}
		seen[id] = who
	}
	return nil
}

var quiet = slog.New(slog.DiscardHandler)

func wantLostData(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, frond.ErrStoreLostData) || !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("%s: %v, want ErrStoreLostData", what, err)
	}
}

// The table of issue 67, on the memory store: 3,000 IDs, a snapshot, 60,000
// more, the store goes back to the snapshot (or empty, and the tag is
// created again as the error advises), then 30,000 more are asked for.
// Main handed out 30,000, 29,000 and 10,000 of them twice; now nothing is
// handed out twice: the node refuses, fences the store, and a node with a
// new data directory is refused too, until the store is re-armed.
func TestGuard_StoreGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool // the store goes back under the running node
		empty   bool // the store comes back empty; the tag is created again
	}{
		{name: "restored while the node was down, restarted on its data directory"},
		{name: "restored under the running node", running: true},
		{name: "emptied, the tag created again", empty: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir, seen := memstore.New(nil), t.TempDir(), map[int64]string{}
			mustCreate(t, s, "order", 1, 1000)
			n := newGuardNode(t, s, dir)
			if err := n.take(t, "order", 3000, seen, "before the snapshot"); err != nil {
				t.Fatal(err)
			}
			snap := s.Snapshot()
			if err := n.take(t, "order", 60000, seen, "after the snapshot"); err != nil {
				t.Fatal(err)
			}
			if !tc.running {
				n.kill()
			}
			if tc.empty {
				s.Restore(memstore.Snapshot{})
				mustCreate(t, s, "order", 1, 1000)
			} else {
				s.Restore(snap)
			}
			if !tc.running {
				n = newGuardNode(t, s, dir)
			}
			err := n.take(t, "order", 30000, seen, "after the store went back")
			wantLostData(t, "after the store went back", err)
			if p, _ := s.Place(bg); !p.Fenced() || !strings.Contains(p.Lost, "@order") {
				t.Fatalf("the store's place after the finding: %q, want a lost-data fence", p)
			}
			// Another node, with a new data directory: the fence refuses it.
			other := newGuardNode(t, s, t.TempDir())
			wantLostData(t, "a node with a new data directory", other.take(t, "order", 1, seen, "a new node"))
			// (Under the running node the prefetch found it, and the
			// caller met the fence it wrote.)
			var lde *LostDataError
			if errors.As(err, &lde) && (lde.Fence != nil || lde.Floor <= lde.Start) {
				t.Fatalf("the finding: %+v", lde)
			}
			floor, _ := n.g.Floors().Tag("order")
			if f := floor.Ends[classPlain]; f < 63001 || f > 64001 { // 63,000 IDs, and the next segment prefetched
				t.Fatalf("the node's floor: %+v, want 63001 or 64001", floor)
			}
			// Re-armed above the node's floors, both serve, from above them.
			res, err := Rearm(bg, s, []map[string]TagFloors{n.g.Floors().All()}, 0)
			if err != nil || res.Fence == "" || res.Raised["order"] != floor.Ends[classPlain] {
				t.Fatalf("re-arm: %+v, %v", res, err)
			}
			if p, _ := s.Place(bg); p.Fenced() {
				t.Fatalf("still fenced after the re-arm: %q", p)
			}
			for _, nd := range []*guardNode{n, other} {
				if err := nd.take(t, "order", 5000, seen, "after the re-arm"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// What frond does to a tag's max_id itself is never taken for a loss
// (issue 67): a delete and a create again below the IDs handed out, a
// change of mapping from plain to Mist (max_id goes down), a clean stop's
// give-back, a raise; and a restart on the data directory with none of
// them.
func TestGuard_NoFalseAlarm(t *testing.T) {
	ctx := bg
	s, dir, seen := memstore.New(nil), t.TempDir(), map[int64]string{}
	mustCreate(t, s, "order", 1<<20, 1000)
	n := newGuardNode(t, s, dir)
	if err := n.take(t, "order", 2500, seen, "first"); err != nil {
		t.Fatal(err)
	}
	// A clean stop gives its tail back; the restart starts from it.
	if got, err := n.e.CloseReturning(ctx); err != nil || got.Tags != 1 {
		t.Fatalf("give-back: %+v, %v", got, err)
	}
	n.g.f.Close()
	n = newGuardNode(t, s, dir)
	if id, err := n.e.Next(ctx, "order"); err != nil || id != 1<<20+2500 {
		t.Fatalf("after the give-back: %d, %v", id, err)
	}
	// A change of mapping from plain to Mist: max_id goes down.
	mist := frond.MappingMist
	if _, err := ChangeMapping(ctx, s, "order", frond.TagUpdate{Mapping: &mist}, 0); err != nil {
		t.Fatal(err)
	}
	n.kill()
	n = newGuardNode(t, s, dir)
	if _, m, err := n.e.NextMapped(ctx, "order"); err != nil || m != frond.MappingMist {
		t.Fatalf("after the change of mapping: %q, %v", m, err)
	}
	// Deleted and created again from 1, on purpose.
	n.kill()
	if err := s.DeleteTag(ctx, "order"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "order", 1, 1000)
	n = newGuardNode(t, s, dir)
	if id, err := n.e.Next(ctx, "order"); err != nil || id != 1 {
		t.Fatalf("a tag created again: %d, %v", id, err)
	}
	// Raised by an operator.
	up := int64(1 << 30)
	if _, err := s.UpdateTag(ctx, "order", frond.TagUpdate{MaxID: &up}); err != nil {
		t.Fatal(err)
	}
	n.kill()
	n = newGuardNode(t, s, dir)
	if id, err := n.e.Next(ctx, "order"); err != nil || id != up {
		t.Fatalf("after a raise: %d, %v", id, err)
	}
	if p, _ := s.Place(ctx); p.Fenced() {
		t.Fatalf("fenced: %q", p)
	}
}

// A sequence tag's IDs (AllocateIDs) are checked as segments are: a store
// that goes back is refused.
func TestGuard_SequenceTag(t *testing.T) {
	s, dir := memstore.New(nil), t.TempDir()
	if _, err := s.CreateTag(bg, frond.Tag{Name: "seq", MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFloors(FloorsFile(dir, "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(s, f, GuardOptions{Logger: quiet})
	snap := s.Snapshot()
	for range 10 {
		if _, err := frond.SequenceIDs(bg, g, "seq", 3); err != nil {
			t.Fatal(err)
		}
	}
	s.Restore(snap)
	_, err = frond.SequenceIDs(bg, g, "seq", 3)
	wantLostData(t, "a sequence tag on a store that went back", err)
}

// A store that keeps no place cannot be fenced for every node: the node
// that found the loss refuses it itself, even once the store climbed
// back past its floor by the segments its refused allocations took.
func TestGuard_NoPlace_Stuck(t *testing.T) {
	s := memstore.New(nil)
	mustCreate(t, s, "order", 1, 10)
	f, err := OpenFloors(FloorsFile(t.TempDir(), "s"), "s")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(unplaced{s}, f, GuardOptions{Logger: quiet})
	for range 5 {
		if _, err := g.Allocate(bg, "order", 0); err != nil {
			t.Fatal(err)
		}
	}
	s.Restore(memstore.Snapshot{})
	mustCreate(t, s, "order", 1, 10)
	for i := range 10 {
		_, err := g.Allocate(bg, "order", 0)
		wantLostData(t, fmt.Sprintf("allocation %d after the loss", i), err)
	}
	var lde *LostDataError
	if _, err := g.Allocate(bg, "order", 0); !errors.As(err, &lde) || lde.Fence == nil {
		t.Fatalf("the finding: %v", err)
	}
	if err := g.Ping(bg); !errors.Is(err, frond.ErrStoreLostData) {
		t.Fatalf("Ping: %v", err)
	}
}

// unplaced is a store that keeps no place (as CosId's tables).
type unplaced struct{ s *memstore.Store }

func (u unplaced) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return u.s.Allocate(ctx, tag, step)
}
func (u unplaced) Tag(ctx context.Context, name string) (frond.Tag, error) { return u.s.Tag(ctx, name) }
func (u unplaced) Tags(ctx context.Context) ([]frond.Tag, error)           { return u.s.Tags(ctx) }
func (u unplaced) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return u.s.CreateTag(ctx, t)
}
func (u unplaced) UpdateTag(ctx context.Context, name string, up frond.TagUpdate) (frond.Tag, error) {
	return u.s.UpdateTag(ctx, name, up)
}
func (u unplaced) DeleteTag(ctx context.Context, name string) error { return u.s.DeleteTag(ctx, name) }
func (u unplaced) Close() error                                     { return nil }

// The floors file: kept across a reopen, a last line cut short by a kill
// left out, compacted when it grows, and refused when it is not a floors
// file.
func TestFloors_File(t *testing.T) {
	dir := t.TempDir()
	path := FloorsFile(dir, "mysql://u@h/db")
	f, err := OpenFloors(path, "mysql://u@h/db")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := f.set("order", classPlain, int64(1000*(i+1)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.set("m", classMist, 77, 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fh, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString("order plain 99999") // cut short
	fh.Close()
	g, err := OpenFloors(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if tf, _ := g.Tag("order"); tf.Ends[classPlain] != 1000000 {
		t.Fatalf("order: %+v", tf)
	}
	if tf, _ := g.Tag("m"); tf.Ends[classMist] != 77 || tf.Deletions != 2 {
		t.Fatalf("m: %+v", tf)
	}
	if g.Store() != "mysql://u@h/db" {
		t.Fatalf("store %q", g.Store())
	}
	g.Close()
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Fatalf("%d lines after the compaction:\n%s", n, data)
	}
	store, tags, err := ReadFloors(path)
	if err != nil || store != "mysql://u@h/db" || tags["order"].Ends[classPlain] != 1000000 {
		t.Fatalf("ReadFloors: %q %+v %v", store, tags, err)
	}
	// A running node's file is written anew once most of its lines are
	// stale: 20,000 loads of 3 tags leave a few thousand lines.
	run, err := OpenFloors(FloorsFile(dir, "run"), "run")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		if err := run.set([]string{"a", "b", "c"}[i%3], classPlain, int64(i+1), 0); err != nil {
			t.Fatal(err)
		}
	}
	run.Close()
	data, _ = os.ReadFile(FloorsFile(dir, "run"))
	if n := strings.Count(string(data), "\n"); n > 4200 {
		t.Fatalf("%d lines after 20,000 loads of 3 tags", n)
	}
	if _, tags, err := ReadFloors(FloorsFile(dir, "run")); err != nil || tags["b"].Ends[classPlain] != 20000 || tags["a"].Ends[classPlain] != 19999 || tags["c"].Ends[classPlain] != 19998 {
		t.Fatalf("after the compactions: %+v, %v", tags, err)
	}
	// A line cut short in a small file, then more lines: read back whole.
	small := FloorsFile(dir, "small")
	h, err := OpenFloors(small, "small")
	if err != nil {
		t.Fatal(err)
	}
	h.set("a", classPlain, 10, 0)
	h.Close()
	fh, _ = os.OpenFile(small, os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString("a plain 2") // cut short
	fh.Close()
	for i, end := range []int64{20, 30} {
		h, err := OpenFloors(small, "")
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if tf, _ := h.Tag("a"); tf.Ends[classPlain] != end-10 {
			t.Fatalf("open %d: %+v, want %d", i, tf, end-10)
		}
		h.set("a", classPlain, end, 0)
		h.Close()
	}
	bad := filepath.Join(dir, "bad.floors")
	os.WriteFile(bad, []byte("order plain 1 0\n"), 0o644)
	if _, err := OpenFloors(bad, "x"); err == nil {
		t.Fatal("a file without the header was opened")
	}
}

// TagFloors.Highest converts a floor between plain and Mist as a change of
// mapping does.
func TestTagFloors_Highest(t *testing.T) {
	tf := TagFloors{Ends: [nClasses]int64{classPlain: 1<<20 + 5, classMist: 40, classSeq: 9}}
	if got := tf.Highest("", false); got != 40<<16 {
		t.Errorf("plain: %d", got)
	}
	if got := tf.Highest(frond.MappingMist, false); got != 40 {
		t.Errorf("mist: %d", got)
	}
	tf.Ends[classMist] = 3
	if got := tf.Highest(frond.MappingMist, false); got != 17 { // ceil((2^20+5)/2^16)
		t.Errorf("mist from plain: %d", got)
	}
	if got := tf.Highest("", true); got != 9 {
		t.Errorf("seq: %d", got)
	}
}

// BenchmarkGuard_Allocate is what the floor costs a segment load: one line
// appended to the floors file (not synced) and a map lookup, beside the
// store's own call (here the memory store's, so the floor's cost shows
// alone):
// go test -run - -bench Guard_Allocate -count 6 ./segment | benchstat
func BenchmarkGuard_Allocate(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		b.Run(map[bool]string{false: "store", true: "guarded"}[guarded], func(b *testing.B) {
			s := memstore.New(nil)
			var st frond.SegmentStore = s
			if _, err := s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 1000}); err != nil {
				b.Fatal(err)
			}
			if guarded {
				f, err := OpenFloors(FloorsFile(b.TempDir(), "s"), "s")
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				st = NewGuard(s, f, GuardOptions{Logger: quiet})
			}
			for b.Loop() {
				if _, err := st.Allocate(bg, "order", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// slowAnswer is a memory store whose first held allocation applies and
// then waits to answer until released: an answer that comes back after a
// later allocation's.
type slowAnswer struct {
	*memstore.Store
	hold    chan struct{}
	applied chan struct{}
	once    atomic.Bool
}

func (s *slowAnswer) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	a, err := s.Store.AllocateAt(ctx, at, tag, step)
	if s.once.CompareAndSwap(false, true) {
		close(s.applied)
		<-s.hold
	}
	return a, err
}

// Allocations of one tag by one node may run at once (a sequence tag's
// requests, a lease beside a prefetch) and return in any order: an answer
// below a floor kept after it began is no loss (a node of the model
// fenced a healthy store for it).
func TestGuard_ConcurrentAllocations(t *testing.T) {
	for _, first := range []bool{true, false} { // with no floor kept yet, and with one
		s := &slowAnswer{Store: memstore.New(nil), hold: make(chan struct{}), applied: make(chan struct{})}
		mustCreate(t, s.Store, "order", 1, 10)
		f, err := OpenFloors(FloorsFile(t.TempDir(), "s"), "s")
		if err != nil {
			t.Fatal(err)
		}
		g := NewGuard(s, f, GuardOptions{Logger: quiet})
		if !first {
			s.once.Store(true)
			if _, err := g.Allocate(bg, "order", 0); err != nil {
				t.Fatal(err)
			}
			s.once.Store(false)
		}
		slow := make(chan error, 1)
		go func() { _, err := g.Allocate(bg, "order", 0); slow <- err }()
		<-s.applied
		b, err := g.Allocate(bg, "order", 0) // applied after the slow one, answered first
		if err != nil {
			t.Fatal(err)
		}
		close(s.hold)
		if err := <-slow; err != nil {
			t.Fatalf("the slower answer (below %d, the floor kept meanwhile): %v", b.End, err)
		}
		if tf, _ := f.Tag("order"); tf.Ends[classPlain] != b.End {
			t.Fatalf("floor %d, want %d (never lowered by the slower answer)", tf.Ends[classPlain], b.End)
		}
		if p, _ := s.Place(bg); p.Fenced() {
			t.Fatalf("fenced: %q", p)
		}
	}
}
