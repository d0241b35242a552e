package segment

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
)

// modelSeeds is how many seeds TestModel_SegmentSafety runs: CI's 200, or
// more by hand: go test -run TestModel_SegmentSafety ./segment -model.seeds 5000
var modelSeeds = flag.Int("model.seeds", 200, "seeds of TestModel_SegmentSafety")

// modelSeed runs one seed only, and logs every change of the set:
// go test -run TestModel_SegmentSafety ./segment -model.seed 17 -v
var modelSeed = flag.Int("model.seed", -1, "the one seed of TestModel_SegmentSafety to run, with a log of the changes")

// lossyStore is a memstore whose allocations can fail before they apply
// (the store is down) or after (the answer is lost): IDs may be lost,
// never handed out twice.
type lossyStore struct {
	*memstore.Store
	name   string
	before atomic.Bool // fail before applying
	after  atomic.Bool // apply, then fail
	// kill, when set, is the writes a change of the set may still make
	// (SwapPlace, CreateTag, UpdateTag, shared by the stores of a test):
	// when it runs out, writes fail before applying, as if the process
	// running the change (frond stores set) were killed; negative: no
	// limit.
	kill *atomic.Int64
	// beforeSwap, when set, runs once before the next SwapPlace (another
	// change of the set running at that moment), afterSwap once after it.
	beforeSwap atomic.Pointer[func()]
	afterSwap  atomic.Pointer[func()]
}

var (
	errLost   = fmt.Errorf("%w: the answer was lost", frond.ErrStoreUnavailable)
	errKilled = errors.New("killed: frond stores set stopped here")
)

func newLossy(name string, kill *atomic.Int64) *lossyStore {
	return &lossyStore{Store: memstore.New(nil), name: name, kill: kill}
}

// write takes one write from the kill budget.
func (s *lossyStore) write() error {
	if s.kill != nil && s.kill.Load() >= 0 && s.kill.Add(-1) < 0 {
		return errKilled
	}
	return nil
}

func (s *lossyStore) SwapPlace(ctx context.Context, old, p frond.Place) error {
	if f := s.beforeSwap.Swap(nil); f != nil {
		(*f)()
	}
	if err := s.write(); err != nil {
		return err
	}
	err := s.Store.SwapPlace(ctx, old, p)
	if f := s.afterSwap.Swap(nil); f != nil {
		(*f)()
	}
	return err
}

func (s *lossyStore) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return s.CreateTagAt(ctx, frond.Place{}, t)
}

func (s *lossyStore) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	if err := s.write(); err != nil {
		return frond.Tag{}, err
	}
	return s.Store.CreateTagAt(ctx, at, t)
}

func (s *lossyStore) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

func (s *lossyStore) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := s.write(); err != nil {
		return frond.Tag{}, err
	}
	return s.Store.UpdateTagAt(ctx, at, name, u)
}

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
		if *modelSeed >= 0 && seed != uint64(*modelSeed) {
			continue
		}
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
				if *modelSeed >= 0 {
					t.Logf("DEBUG %s %d %s", tag, id, what)
				}
				checked++
			}
		}
	}
	// The set of stores, changed only by ChangeSet: changes are killed at
	// any of their writes (each fence, raise and place), rerun with the
	// same list or with another, run two at once, and abandoned.
	kill := new(atomic.Int64)
	kill.Store(-1)
	for _, s := range stores {
		s.kill = kill
	}
	logf := func(string, ...any) {}
	if *modelSeed >= 0 {
		logf = func(f string, args ...any) { t.Logf("step %d: "+f, append([]any{steps}, args...)...) }
	}
	var set []int
	type change struct{ in, out []frond.SegmentStore }
	var pending []change // changes killed or cut short, not yet finished or abandoned
	// indexes are the numbers of stores ss.
	indexes := func(ss []frond.SegmentStore) []int {
		var out []int
		for _, s := range ss {
			out = append(out, slices.Index(all, s))
		}
		return out
	}
	pick := func() (change, []int) {
		n := 1 + rng.IntN(nStores)
		if rng.IntN(3) == 0 {
			n = 1 // one store alone: nodes give their tails back at a clean stop
		}
		next := rng.Perm(nStores)[:n]
		var c change
		for _, i := range next {
			c.in = append(c.in, all[i])
		}
		for i := range nStores {
			if slices.Contains(next, i) {
				continue
			}
			// Now and then a store is left out (refused if it is of a set
			// given), but never one that stands alone, or did before a
			// change under way fenced it (an abandon puts it back): that
			// is an ID space of its own, which no change can see unless
			// it is given (docs/stores.md).
			if p, _ := stores[i].Place(ctx); p.Settled().Alone() || rng.IntN(8) > 0 {
				c.out = append(c.out, all[i])
			}
		}
		return c, next
	}
	// run runs c, killed at a random write now and then, and says whether
	// it was done; a refusal is fine (the stores given are not the whole
	// set, or another change is recorded), anything else fails the test.
	var run func(c change, next []int, depth int) bool
	run = func(c change, next []int, depth int) bool {
		if rng.IntN(2) == 0 {
			kill.Store(rng.Int64N(int64(4 * nStores)))
		}
		if depth == 0 && rng.IntN(6) == 0 { // another change runs at once, at one of this one's writes
			s := stores[rng.IntN(nStores)]
			f := func() {
				saved := kill.Load()
				kill.Store(-1)
				switch r := rng.IntN(3); {
				case len(pending) > 0 && r == 1: // a rerun of a change cut short, at once
					pc := pending[rng.IntN(len(pending))]
					run(pc, indexes(pc.in), depth+1)
				case len(pending) > 0 && r == 2: // an abandon of one, at once
					pc := pending[rng.IntN(len(pending))]
					_, err := AbandonChange(ctx, pc.in, pc.out, SetOptions{Margin: -1, Log: logf})
					if err != nil && !errors.Is(err, frond.ErrInvalidArgument) && !errors.Is(err, frond.ErrPlaceChanged) {
						t.Errorf("seed %d step %d: abandon during a change: %v", seed, steps, err)
					}
				default:
					c2, next2 := pick()
					run(c2, next2, depth+1)
				}
				kill.Store(saved)
			}
			s.beforeSwap.Store(&f)
			defer s.beforeSwap.Store(nil)
		}
		_, err := ChangeSet(ctx, c.in, c.out, SetOptions{Margin: -1, Log: logf})
		kill.Store(-1)
		switch {
		case err == nil:
			set = next
			changes++
			return true
		case errors.Is(err, errKilled), errors.Is(err, frond.ErrPlaceChanged):
			pending = append(pending, c)
		case !errors.Is(err, frond.ErrInvalidArgument):
			t.Fatalf("seed %d step %d: change the set to %v: %v", seed, steps, next, err)
		}
		logf("the change to %v (%d retired) stopped: %v", next, len(c.out), err)
		return false
	}
	// vary is c as an operator might rerun it by mistake: a store left
	// out, one moved between set and retire, the set in another order.
	vary := func(c change) change {
		in, out := slices.Clone(c.in), slices.Clone(c.out)
		switch rng.IntN(6) {
		case 4, 5: // some of its stores, split anew
			both := append(slices.Clone(in), out...)
			rng.Shuffle(len(both), func(i, j int) { both[i], both[j] = both[j], both[i] })
			both = both[:1+rng.IntN(len(both))]
			k := 1 + rng.IntN(len(both))
			in, out = both[:k], both[k:]
		case 0:
			if len(in) > 1 {
				i := rng.IntN(len(in))
				in = slices.Delete(in, i, i+1)
			}
		case 1:
			if len(out) > 0 {
				i := rng.IntN(len(out))
				out = slices.Delete(out, i, i+1)
			}
		case 2:
			if len(out) > 0 {
				i := rng.IntN(len(out))
				in, out = append(in, out[i]), slices.Delete(out, i, i+1)
			} else if len(in) > 1 {
				i := rng.IntN(len(in))
				in, out = slices.Delete(in, i, i+1), append(out, in[i])
			}
		default:
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		}
		// A mistake, but not the one no change can see: a store that
		// stands alone (or did before a change fenced it) is an ID space
		// of its own, and is always given, as pick does (docs/stores.md).
		for i, st := range stores {
			if p, _ := st.Place(ctx); p.Settled().Alone() && !slices.Contains(in, all[i]) && !slices.Contains(out, all[i]) {
				out = append(out, all[i])
			}
		}
		return change{in, out}
	}
	changeSet := func() {
		c, next := pick()
		run(c, next, 0)
	}
	// settle finishes or abandons a change cut short: one of the two
	// always succeeds (abandon finishes a change that placed a store).
	settle := func(i int) {
		c := pending[i]
		pending = slices.Delete(pending, i, i+1)
		if rng.IntN(4) == 0 { // the rerun or the abandon is killed too
			kill.Store(rng.Int64N(int64(4 * nStores)))
		}
		defer kill.Store(-1)
		if rng.IntN(2) == 0 {
			_, err := ChangeSet(ctx, c.in, c.out, SetOptions{Margin: -1, Log: logf})
			switch {
			case err == nil:
				changes++
				return
			case errors.Is(err, errKilled):
				pending = append(pending, c)
				return
			case !errors.Is(err, frond.ErrInvalidArgument):
				t.Fatalf("seed %d step %d: rerun: %v", seed, steps, err)
			}
		}
		// An abandon always succeeds (or finishes the change), unless
		// the change fenced nothing (other changes under way at its
		// stores are pending too): one that can be neither finished nor
		// abandoned would keep its stores fenced for good, which the
		// bound on the first change's tries and the changes that follow
		// would show.
		_, err := AbandonChange(ctx, c.in, c.out, SetOptions{Margin: -1, Log: logf})
		if errors.Is(err, errKilled) {
			pending = append(pending, c)
			return
		}
		if err != nil && !strings.Contains(err.Error(), "nothing to abandon") && !strings.Contains(err.Error(), "not those of any change under way") &&
			!strings.Contains(err.Error(), "a change is finished with exactly its stores") {
			t.Fatalf("seed %d step %d: abandon: %v", seed, steps, err)
		}
	}
	if !alone {
		for try := 0; set == nil; try++ {
			if try == 100 {
				t.Fatalf("seed %d: 100 changes of the set, none done", seed)
			}
			changeSet()
			for len(pending) > 0 {
				settle(0)
			}
		}
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
		switch op := rng.IntN(22); {
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
		case op < 17:
			if !alone || steps > 125 {
				switch r := rng.IntN(3); {
				case len(pending) > 0 && r == 0:
					settle(rng.IntN(len(pending)))
				case len(pending) > 0 && r == 1: // a rerun with another list
					c := vary(pending[rng.IntN(len(pending))])
					run(c, indexes(c.in), 1)
				default:
					changeSet()
				}
			}
		case op < 18: // kill -9: nothing given back
			n.e.Close()
			*n = *newNode()
		case op < 19: // a clean stop: the tails go back
			if _, err := n.e.CloseReturning(ctx); err != nil && !errors.Is(err, frond.ErrStoreUnavailable) {
				t.Fatalf("seed %d step %d: CloseReturning: %v", seed, steps, err)
			}
			*n = *newNode()
		case op < 20:
			s := stores[rng.IntN(nStores)]
			s.before.Store(!s.before.Load())
		default:
			s := stores[rng.IntN(nStores)]
			s.after.Store(!s.after.Load())
		}
	}
	return steps, checked, changes
}
