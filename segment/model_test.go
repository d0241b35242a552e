package segment

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
)

// modelSeeds is how many seeds TestModel_SegmentSafety runs: CI's 200, or
// more by hand: go test -run TestModel_SegmentSafety ./segment -model.seeds 5000
var modelSeeds = flag.Int("model.seeds", 200, "seeds of TestModel_SegmentSafety")

// lossyStore is a memstore whose allocations can fail before they apply
// (the store is down) or after (the answer is lost): IDs may be lost,
// never handed out twice.
type lossyStore struct {
	*memstore.Store
	name   string
	before atomic.Bool // fail before applying
	after  atomic.Bool // apply, then fail
}

var errLost = fmt.Errorf("%w: the answer was lost", frond.ErrStoreUnavailable)

func (s *lossyStore) String() string { return s.name }

func (s *lossyStore) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return s.AllocateAt(ctx, frond.Place{}, tag, step)
}

func (s *lossyStore) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	if s.before.Load() {
		return frond.Allocation{}, fmt.Errorf("%w: down", frond.ErrStoreUnavailable)
	}
	a, err := s.Store.AllocateAt(ctx, at, tag, step)
	if err == nil && s.after.Load() {
		return frond.Allocation{}, errLost
	}
	return a, err
}

func (s *lossyStore) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return s.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

func (s *lossyStore) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	if s.before.Load() {
		return nil, fmt.Errorf("%w: down", frond.ErrStoreUnavailable)
	}
	rs, err := s.Store.AllocateIDsAt(ctx, at, tag, n)
	if err == nil && s.after.Load() {
		return nil, errLost
	}
	return rs, err
}

// modelNode is one frond node of the model: an engine over the stores it
// lists (a multi-store, or one store alone).
type modelNode struct {
	list  []int
	store frond.SegmentStore
	e     *Engine
}

// A randomised model of segment safety (issue 27), in the spirit of
// registry/model_test.go: several nodes list random subsets of several
// stores in random orders; the set of stores changes (frond stores set:
// ChangeSet) while they run, to random subsets in random orders, back to
// one store and out again; nodes crash (no give-back) and stop cleanly
// (give-back of the tail, Leaf #15); stores fail before or after an
// allocation applies; tags sit near 2^63 in some seeds; a sequence tag is
// served beside the segment tag. No ID is ever handed out twice.
func TestModel_SegmentSafety(t *testing.T) {
	seeds := *modelSeeds
	if testing.Short() {
		seeds = 40
	}
	var steps, ids, changes int
	for seed := range uint64(seeds) {
		s, i, c := runSegmentModel(t, seed)
		steps, ids, changes = steps+s, ids+i, changes+c
		if t.Failed() {
			return
		}
	}
	t.Logf("%d seeds, %d steps, %d set changes, %d IDs checked", seeds, steps, changes, ids)
}

func runSegmentModel(t *testing.T, seed uint64) (steps, checked, changes int) {
	rng := rand.New(rand.NewPCG(seed, 27))
	ctx := context.Background()
	nStores := 2 + rng.IntN(3)
	stores := make([]*lossyStore, nStores)
	all := make([]frond.SegmentStore, nStores)
	alone := rng.IntN(3) == 0 // store 0 serves alone, never placed, for the first half of the steps
	start := int64(1)
	if rng.IntN(3) == 0 || alone && rng.IntN(2) == 0 {
		start = math.MaxInt64 - 100 - rng.Int64N(400) // near the top: exhaustion and the wrapped pos
	}
	step := 5 + rng.Int64N(60)
	for i := range stores {
		stores[i] = &lossyStore{Store: memstore.New(nil), name: fmt.Sprintf("s%d", i)}
		all[i] = stores[i]
		mustCreate(t, stores[i], "seg", start, step)
		if _, err := stores[i].CreateTag(ctx, frond.Tag{Name: "seq", MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]map[int64]string{"seg": {}, "seq": {}} // uniqueness is per tag
	record := func(tag, what string, rs ...frond.Range) {
		for _, r := range rs {
			for _, id := range r.Append(nil) {
				if prev, dup := seen[tag][id]; dup {
					t.Fatalf("seed %d step %d: ID %d of %s handed out twice: %s, then %s", seed, steps, id, tag, prev, what)
				}
				seen[tag][id] = fmt.Sprintf("%s at step %d", what, steps)
				checked++
			}
		}
	}
	// The set of stores, changed only by ChangeSet.
	var set []int
	changeSet := func() {
		n := 1 + rng.IntN(nStores)
		if rng.IntN(3) == 0 {
			n = 1 // one store alone: nodes give their tails back at a clean stop
		}
		next := rng.Perm(nStores)[:n]
		var in, out []frond.SegmentStore
		for _, i := range next {
			in = append(in, all[i])
		}
		for i := range nStores {
			if !slices.Contains(next, i) {
				out = append(out, all[i])
			}
		}
		if _, err := ChangeSet(ctx, in, out, SetOptions{Margin: -1}); err != nil {
			t.Fatalf("seed %d step %d: change the set to %v: %v", seed, steps, next, err)
		}
		set = next
		changes++
	}
	if !alone {
		changeSet()
	}
	newNode := func() *modelNode {
		n := &modelNode{}
		if set == nil { // before any change: store 0 alone is the ID space
			n.list = []int{0}
			n.store = all[0]
		} else if rng.IntN(3) == 0 { // a node listing one store alone
			n.list = []int{rng.IntN(nStores)}
			n.store = all[n.list[0]]
		} else {
			n.list = rng.Perm(nStores)[:1+rng.IntN(nStores)]
			var ls []frond.SegmentStore
			for _, i := range n.list {
				ls = append(ls, all[i])
			}
			m, err := NewMulti(ls...)
			if err != nil {
				t.Fatal(err)
			}
			n.store = m
		}
		e, err := New(n.store, Settings{FixedStep: true, FailFast: -1, Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		n.e = e
		return n
	}
	nodes := []*modelNode{newNode(), newNode(), newNode()}
	defer func() {
		for _, n := range nodes {
			n.e.Close()
		}
	}()
	for steps = 0; steps < 250; steps++ {
		n := nodes[rng.IntN(len(nodes))]
		switch op := rng.IntN(20); {
		case op < 8:
			burst := 1
			if rng.IntN(4) == 0 {
				burst = 1 + rng.IntN(200) // past the end of the ID space, near the top
			}
			for j := range burst {
				id, err := n.e.Next(ctx, "seg")
				if err != nil {
					if j > 0 && !errors.Is(err, frond.ErrTagExhausted) {
						break // a store down: one error is enough
					}
					continue // past the end: pos moves on
				}
				record("seg", fmt.Sprintf("Next of a node listing %v", n.list), frond.Range{Start: id, End: id + 1, Stride: 1})
			}
		case op < 11:
			rs, _ := n.e.NextN(ctx, "seg", 1+rng.Int64N(3*step))
			record("seg", fmt.Sprintf("NextN of a node listing %v", n.list), rs...)
		case op < 13:
			if rs, err := frond.SequenceIDs(ctx, n.store, "seq", 1+rng.Int64N(4)); err == nil {
				record("seq", fmt.Sprintf("sequence IDs of a node listing %v", n.list), rs...)
			}
		case op < 15:
			if !alone || steps > 125 {
				changeSet()
			}
		case op < 16: // kill -9: nothing given back
			n.e.Close()
			*n = *newNode()
		case op < 17: // a clean stop: the tails go back
			if _, err := n.e.CloseReturning(ctx); err != nil && !errors.Is(err, frond.ErrStoreUnavailable) {
				t.Fatalf("seed %d step %d: CloseReturning: %v", seed, steps, err)
			}
			*n = *newNode()
		case op < 18:
			s := stores[rng.IntN(nStores)]
			s.before.Store(!s.before.Load())
		default:
			s := stores[rng.IntN(nStores)]
			s.after.Store(!s.after.Load())
		}
	}
	return steps, checked, changes
}
