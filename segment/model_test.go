package segment

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	// beforeAdmin, when set, runs once before the next tag
	// administration (a store going down in the middle of a create).
	beforeAdmin atomic.Pointer[func()]
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
	if err := s.admin(); err != nil {
		return frond.Tag{}, err
	}
	return s.Store.CreateTagAt(ctx, at, t)
}

func (s *lossyStore) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

func (s *lossyStore) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := s.admin(); err != nil {
		return frond.Tag{}, err
	}
	t, err := s.Store.UpdateTagAt(ctx, at, name, u)
	if err == nil && s.after.Load() {
		return frond.Tag{}, errLost
	}
	return t, err
}

// admin is write, for tag administration: a store that is down refuses
// it before applying.
func (s *lossyStore) admin() error {
	if f := s.beforeAdmin.Swap(nil); f != nil {
		(*f)()
	}
	if s.before.Load() {
		return fmt.Errorf("%w: down", frond.ErrStoreUnavailable)
	}
	return s.write()
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

// modelNoGuard runs the model's nodes on their stores directly, as before
// issue 67 (no floors, no fence): go test -run TestModel_SegmentSafety
// ./segment -model.noguard finds the stores that went back.
var modelNoGuard = flag.Bool("model.noguard", false, "run TestModel_SegmentSafety's nodes without segment.Guard")

// modelNode is one frond node of the model: an engine over the stores it
// lists (a multi-store, or one store alone), each checked against the
// floors the node keeps in its data directory dir (Guard).
type modelNode struct {
	list   []int
	store  frond.SegmentStore
	e      *Engine
	dir    string
	guards []*Guard // one per store listed, in list's order (none with -model.noguard)
}

// close stops the node as kill -9 does: its data directory stays.
func (n *modelNode) close() {
	n.e.Close()
	for _, g := range n.guards {
		g.f.Close()
	}
}

// lockedBuffer is a bytes.Buffer for several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// modelSnapshot is a store's content at a step (a backup, a replica).
type modelSnapshot struct {
	sn    memstore.Snapshot
	place frond.Place
	step  int
}

// A randomised model of segment safety (issue 27), in the spirit of
// registry/model_test.go: several nodes list random subsets of several
// stores in random orders; the set of stores changes (frond stores set:
// ChangeSet) while they run, to random subsets in random orders, back to
// one store and out again; nodes crash (no give-back) and stop cleanly
// (give-back of the tail, Leaf #15); stores fail before or after an
// allocation applies; tags sit near 2^63 in some seeds; a sequence tag is
// served beside the segment tag. No ID is ever handed out twice.
//
// Stores go back (issue 67): a store is put back to a snapshot taken some
// steps before (a restored backup, a replica promoted behind), the nodes
// restart on their data directories or on new ones, and an operator
// re-arms a fenced store with every data directory's floors (Rearm). A
// store is never fenced unless it went back (no false alarm: a tag is
// deleted and created again below its IDs, on purpose, beside the rest).
// The model restores a store only where frond promises to notice: every
// node that may ask the store has a floor above each tag's value in the
// snapshot (a loss of only the last writes, below a node's floor, is
// frond_wait's and synchronous replication's: docs/stores.md); nodes keep
// their data directories and lists until the loss is found.
//
// Every operator action on tags runs beside them too (issue 57), through
// any node, whatever it lists (nodes never restart onto a newer list
// unless they crash): tags created (through part of the set, the whole
// set, a node on one store, with a store down), their mapping changed
// between plain and Mist (ChangeMapping, killed midway and rerun), their
// step changed, with steps that grow up to the adaptive maximum in some
// seeds. Numbers are checked in their mapping: a plain number meets a
// Mist number whose counter is its top 47 bits (the Mist number's low 16
// bits are random), so that is counted as handed out twice.
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
	t.Logf("tag administration: %v", modelAdmin)
}

// modelAdmin counts the tag administration of TestModel_SegmentSafety's
// seeds, done and refused, by kind.
var modelAdmin = map[string]int{}

func runSegmentModel(t *testing.T, seed uint64) (steps, checked, changes int) {
	rng := rand.New(rand.NewPCG(seed, 27))
	ctx := context.Background()
	nStores := 2 + rng.IntN(3)
	stores := make([]*lossyStore, nStores)
	all := make([]frond.SegmentStore, nStores)
	alone := rng.IntN(3) == 0 // store 0 serves alone, never placed, for the first half of the steps
	// Plain tags at every magnitude (issue 67): just above 2^16, a change
	// from plain to Mist lowers max_id (to the headroom, 2^16) and the Mist
	// counter climbs back through values max_id held before, where a tail
	// given back on max_id alone hands counters out twice.
	start := []int64{1, 1<<16 + rng.Int64N(300), 1 << 20, 1 << 40}[rng.IntN(4)]
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
	seen := map[string]*modelNumbers{} // uniqueness is per tag
	// recordIn records the numbers of counters rs handed out in mapping.
	recordIn := func(tag, mapping, what string, rs ...frond.Range) {
		ns := seen[tag]
		if ns == nil {
			ns = newModelNumbers()
			seen[tag] = ns
		}
		for _, r := range rs {
			for _, id := range r.Append(nil) {
				if prev := ns.add(id, mapping, fmt.Sprintf("%s at step %d", what, steps)); prev != "" {
					t.Fatalf("seed %d step %d: counter %d of %s in mapping %q meets a number handed out before: %s, then %s", seed, steps, id, tag, frond.MappingName(mapping), prev, what)
				}
				if *modelSeed >= 0 {
					t.Logf("DEBUG %s %d %s %s", tag, id, frond.MappingName(mapping), what)
				}
				checked++
			}
		}
	}
	record := func(tag, what string, rs ...frond.Range) { recordIn(tag, "", what, rs...) }
	// The set of stores, changed only by ChangeSet: changes are killed at
	// any of their writes (each fence, raise and place), rerun with the
	// same list or with another, run two at once, and abandoned.
	kill := new(atomic.Int64)
	kill.Store(-1)
	for _, s := range stores {
		s.kill = kill
	}
	// history keeps what the seed did and what its guards logged, printed
	// when it fails (the engines' loads run in the background: a failure
	// of the whole run may not come back with -model.seed alone).
	history := &lockedBuffer{}
	logf := func(f string, args ...any) {
		fmt.Fprintf(history, "step %d: "+f+"\n", append([]any{steps}, args...)...)
	}
	defer func() {
		if t.Failed() && *modelSeed < 0 {
			b := history.String()
			t.Logf("seed %d's last events:\n%s", seed, b[max(0, len(b)-8000):])
		}
	}()
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
					if err != nil && !errors.Is(err, frond.ErrInvalidArgument) && !errors.Is(err, frond.ErrPlaceChanged) && !errors.Is(err, frond.ErrStoreUnavailable) && !errors.Is(err, ErrTagsDisagree) {
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
		case errors.Is(err, errKilled), errors.Is(err, frond.ErrPlaceChanged), errors.Is(err, frond.ErrStoreUnavailable), errors.Is(err, ErrTagsDisagree):
			pending = append(pending, c) // cut short (a store down stops it too; so does a change of mapping cut short)
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
				moved := in[i] // read first: slices.Delete shifts in in place
				in, out = slices.Delete(in, i, i+1), append(out, moved)
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
			case errors.Is(err, errKilled), errors.Is(err, frond.ErrStoreUnavailable), errors.Is(err, frond.ErrPlaceChanged), errors.Is(err, ErrTagsDisagree):
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
		if errors.Is(err, errKilled) || errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrPlaceChanged) || errors.Is(err, ErrTagsDisagree) {
			pending = append(pending, c)
			return
		}
		if err != nil && !strings.Contains(err.Error(), "nothing to abandon") && !strings.Contains(err.Error(), "not those of any change under way") &&
			!strings.Contains(err.Error(), "a change is finished with exactly its stores") {
			t.Fatalf("seed %d step %d: abandon %v retiring %v: %v", seed, steps, indexes(c.in), indexes(c.out), err)
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
	engineSettings := Settings{FixedStep: true, FailFast: -1, Threshold: 0.5}
	if rng.IntN(2) == 0 {
		// Adaptive steps (segments used up at once double the step), up to
		// a maximum the change of mapping's headroom must cover.
		engineSettings = Settings{MaxStep: step * (2 + rng.Int64N(30)), FailFast: -1, Threshold: 0.5}
	}
	base := t.TempDir()
	var dirs []string // every data directory used: the operator collects every node's floors
	newDir := func() string {
		dirs = append(dirs, filepath.Join(base, strconv.Itoa(len(dirs))))
		return dirs[len(dirs)-1]
	}
	// guarded is store i as a node with data directory dir sees it.
	guarded := func(n *modelNode, i int) frond.SegmentStore {
		if *modelNoGuard {
			return all[i]
		}
		f, err := OpenFloors(FloorsFile(n.dir, stores[i].name), stores[i].name)
		if err != nil {
			t.Fatal(err)
		}
		lg := slog.New(slog.NewTextHandler(history, nil))
		if *modelSeed >= 0 {
			lg = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		g := NewGuard(all[i], f, GuardOptions{Logger: lg})
		n.guards = append(n.guards, g)
		return g
	}
	// lost[i]: store i went back and no node has found it yet (it is not
	// fenced); restored[i]: it went back since it was last re-armed.
	lost, restored := make([]bool, nStores), make([]bool, nStores)
	anyLost := func() bool { return slices.Contains(lost, true) }
	// newNode starts a node on data directory dir listing list (a random
	// list when nil).
	newNode := func(dir string, list []int) *modelNode {
		n := &modelNode{dir: dir, list: list}
		switch {
		case list != nil:
		case set == nil: // before any change: store 0 alone is the ID space
			n.list = []int{0}
		case rng.IntN(3) == 0: // a node listing one store alone
			n.list = []int{rng.IntN(nStores)}
		default:
			n.list = rng.Perm(nStores)[:1+rng.IntN(nStores)]
		}
		if len(n.list) == 1 && (set == nil || list != nil && len(list) == 1) {
			n.store = guarded(n, n.list[0])
		} else {
			var ls []frond.SegmentStore
			for _, i := range n.list {
				ls = append(ls, guarded(n, i))
			}
			m, err := NewMulti(ls...)
			if err != nil {
				t.Fatal(err)
			}
			n.store = m
		}
		e, err := New(n.store, engineSettings)
		if err != nil {
			t.Fatal(err)
		}
		n.e = e
		return n
	}
	// Tags of the operator's: created, changed and served beside seg.
	tagNames := []string{"seg", "t0", "t1"}
	admin := func(n *modelNode, what string, err error) {
		// Refusals, a store down, a node on part of the set, a change cut
		// short: all fine; only numbers handed out twice fail the model.
		logf("%s through a node listing %v: %v", what, n.list, err)
		kind, _, _ := strings.Cut(what, " ")
		modelAdmin[kind+map[bool]string{true: " done", false: " refused"}[err == nil]]++
	}
	nodes := []*modelNode{newNode(newDir(), nil), newNode(newDir(), nil), newNode(newDir(), nil)}
	defer func() {
		for _, n := range nodes {
			n.close()
		}
	}()
	// restart replaces n as a restart does: on its data directory, or
	// (now and then, while no loss waits to be found) on a new one with
	// another list.
	restart := func(n *modelNode) {
		n.close()
		if anyLost() {
			*n = *newNode(n.dir, n.list)
			return
		}
		dir := n.dir
		if rng.IntN(3) == 0 {
			dir = newDir()
		}
		*n = *newNode(dir, nil)
	}
	snaps := make([][]modelSnapshot, nStores)
	seqTop := make([]int64, nStores) // the highest sequence ID a node on store i alone was given
	for steps = 0; steps < 250; steps++ {
		if err := oneTagPerSet(ctx, stores, tagNames); err != nil {
			t.Fatalf("seed %d step %d: %v", seed, steps, err)
		}
		n := nodes[rng.IntN(len(nodes))]
		tag := tagNames[rng.IntN(len(tagNames))]
		for i, s := range stores { // a store fenced is a loss found, and only a loss is found
			if p, _ := s.Store.Place(ctx); p.Fenced() {
				if !restored[i] {
					t.Fatalf("seed %d step %d: %s fenced for lost data, but it never went back: %s", seed, steps, s.name, p.Describe())
				}
			}
		}
		switch op := rng.IntN(33); {
		case op < 8:
			burst := 1
			if rng.IntN(4) == 0 {
				burst = 1 + rng.IntN(200) // past the end of the ID space, near the top
			}
			for j := range burst {
				id, m, err := n.e.NextMapped(ctx, tag)
				if err != nil {
					if j > 0 && !errors.Is(err, frond.ErrTagExhausted) {
						break // a store down: one error is enough
					}
					continue // past the end: pos moves on
				}
				recordIn(tag, m, fmt.Sprintf("Next of a node listing %v", n.list), frond.Range{Start: id, End: id + 1, Stride: 1})
			}
		case op < 11:
			rs, m, _ := n.e.NextNMapped(ctx, tag, 1+rng.Int64N(3*step))
			recordIn(tag, m, fmt.Sprintf("NextN of a node listing %v", n.list), rs...)
		case op < 13:
			if rs, err := frond.SequenceIDs(ctx, n.store, "seq", 1+rng.Int64N(4)); err == nil {
				record("seq", fmt.Sprintf("sequence IDs of a node listing %v", n.list), rs...)
				// On a store alone a sequence tag is linearizable: each
				// call's IDs lie above every earlier call's, whichever node
				// made it, through stores that went back and re-arms.
				if len(n.list) == 1 {
					i := n.list[0]
					if rs[0].Start <= seqTop[i] {
						t.Fatalf("seed %d step %d: sequence IDs %v of %s after %d: not increasing", seed, steps, rs, stores[i].name, seqTop[i])
					}
					seqTop[i] = rs[len(rs)-1].Last()
				}
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
			restart(n)
		case op < 19: // a clean stop: the tails go back
			if _, err := n.e.CloseReturning(ctx); err != nil && !errors.Is(err, frond.ErrStoreUnavailable) {
				t.Fatalf("seed %d step %d: CloseReturning: %v", seed, steps, err)
			}
			restart(n)
		case op < 20:
			s := stores[rng.IntN(nStores)]
			s.before.Store(!s.before.Load())
		case op < 21:
			s := stores[rng.IntN(nStores)]
			s.after.Store(!s.after.Load())
		case op < 23: // a tag created, in a mapping
			t := frond.Tag{Name: tagNames[1+rng.IntN(len(tagNames)-1)], MaxID: []int64{1, 1 << 16, 1 << 20, 1 << 40}[rng.IntN(4)] + rng.Int64N(1000), Step: 5 + rng.Int64N(60)}
			if rng.IntN(2) == 0 {
				t.Mapping = frond.MappingMist
			}
			var down *lossyStore
			if rng.IntN(3) == 0 { // a store goes down during the create
				down = stores[rng.IntN(nStores)]
				f := func() { down.before.Store(true) }
				down.beforeAdmin.Store(&f)
			}
			_, err := n.store.CreateTag(ctx, t)
			if down != nil {
				down.beforeAdmin.Store(nil)
				down.before.Store(false)
			}
			admin(n, fmt.Sprintf("create %s in %s", t.Name, t.MappingName()), err)
		case op < 25: // a change of mapping, killed midway now and then
			to := frond.MappingPlain
			if rng.IntN(2) == 0 {
				to = frond.MappingMist
			}
			if rng.IntN(3) == 0 {
				kill.Store(rng.Int64N(int64(2 * nStores)))
			}
			_, err := ChangeMapping(ctx, n.store, tag, frond.TagUpdate{Mapping: &to}, max(engineSettings.MaxStep, step))
			kill.Store(-1)
			admin(n, fmt.Sprintf("change %s to %s", tag, to), err)
		case op < 29: // another node, of another step, takes a segment that ends where a node's segment ends
			for _, m := range nodes { // through a node on one store: a set's stores give no tail back
				if len(m.list) == 1 {
					n = m
				}
			}
			if len(n.list) == 1 {
				// ... and now and then that node stops cleanly at once: its
				// tail's end is max_id again.
				if owner := aimAt(ctx, seed, stores[n.list[0]], n.store, nodes, tag, recordIn); owner != nil && rng.IntN(2) == 0 {
					if _, err := owner.e.CloseReturning(ctx); err != nil && !errors.Is(err, frond.ErrStoreUnavailable) {
						t.Fatalf("seed %d step %d: CloseReturning: %v", seed, steps, err)
					}
					restart(owner)
				}
			}
		case op < 31: // a store's snapshot (a backup, a replica), and later the store put back to one
			i := rng.IntN(nStores)
			if op == 29 || len(snaps[i]) == 0 {
				p, _ := stores[i].Store.Place(ctx)
				snaps[i] = append(snaps[i], modelSnapshot{sn: stores[i].Store.Snapshot(), place: p, step: steps})
				break
			}
			sn := snaps[i][len(snaps[i])-1] // the latest, or any
			if rng.IntN(2) == 0 {
				sn = snaps[i][rng.IntN(len(snaps[i]))]
			}
			if ok, first := canRestore(ctx, stores[i], sn, nodes, i, len(pending) == 0); ok {
				stores[i].Store.Restore(sn.sn)
				lost[i], restored[i] = true, true
				modelAdmin["store went back"]++
				logf("%s went back to its snapshot of step %d", stores[i].name, sn.step)
				for k, ask := range first { // a node with a floor above asks first: the loss is found, nothing handed out
					if err := ask(); !*modelNoGuard && !errors.Is(err, frond.ErrStoreLostData) {
						t.Fatalf("seed %d step %d: %s went back below a node's floor, and the node's allocation %d of %d gave %v, not ErrStoreLostData", seed, steps, stores[i].name, k, len(first), err)
					}
				}
				if !*modelNoGuard {
					// Found: from now on nodes restart on new data directories
					// too, which only the fence keeps from the store.
					lost[i] = false
					modelAdmin["store went back, found"]++
				}
			}
		case op < 32 && !*modelNoGuard: // a tag deleted and created again below the IDs it gave, on purpose (every node stops first: their buffers are of the old tag)
			if anyLost() {
				break
			}
			for _, m := range nodes {
				m.close()
			}
			err := n.store.DeleteTag(ctx, tag)
			if err == nil {
				_, err = n.store.CreateTag(ctx, frond.Tag{Name: tag, MaxID: []int64{1, 1 << 16, 1 << 20}[rng.IntN(3)] + rng.Int64N(50), Step: 5 + rng.Int64N(60)})
				delete(seen, tag) // its IDs may be handed out again: the operator's decision
			}
			admin(n, "delete and create "+tag, err)
			for k, m := range nodes {
				nodes[k] = newNode(m.dir, m.list)
			}
		case op < 33: // the operator re-arms the stores found fenced, with every data directory's floors
			for i, s := range stores {
				p, err := s.Store.Place(ctx)
				if err != nil || !p.Fenced() {
					continue
				}
				var floors []map[string]TagFloors
				for _, d := range dirs {
					if _, tags, err := ReadFloors(FloorsFile(d, s.name)); err == nil {
						floors = append(floors, tags)
					}
				}
				if _, err := Rearm(ctx, s.Store, floors, 0); err != nil {
					t.Fatalf("seed %d step %d: re-arm %s: %v", seed, steps, s.name, err)
				}
				restored[i] = false
				modelAdmin["store re-armed"]++
				logf("%s re-armed", s.name)
			}
		default: // a step change
			st := 5 + rng.Int64N(60)
			_, err := n.store.UpdateTag(ctx, tag, frond.TagUpdate{Step: &st})
			admin(n, fmt.Sprintf("step of %s to %d", tag, st), err)
		}
	}
	return steps, checked, changes
}

// aimAt is another node (one of another step: adaptive steps differ from
// node to node) taking a segment of tag from s (through via: the store as
// a node sees it) whose end is the end of a segment some node holds: the
// one moment a give-back that compares max_id alone cannot tell from
// "nothing taken since" (issue 67). The counters taken are recorded as
// handed out, in the allocation's mapping. It returns the node whose
// segment end it aimed at (nil: none).
func aimAt(ctx context.Context, seed uint64, s *lossyStore, via frond.SegmentStore, nodes []*modelNode, tag string, recordIn func(tag, mapping, what string, rs ...frond.Range)) *modelNode {
	var ends []int64
	var owners []*modelNode
	for _, n := range nodes {
		b, err := n.e.Buffer(tag)
		if err != nil {
			continue
		}
		b.mu.Lock()
		if cur := b.cur.Load(); cur != nil && cur != emptySegment {
			ends, owners = append(ends, cur.end), append(owners, n)
		}
		if b.next != nil {
			ends, owners = append(ends, b.next.end), append(owners, n)
		}
		b.mu.Unlock()
	}
	tg, err := s.Store.Tag(ctx, tag)
	if err != nil || tg.Mode != "" {
		return nil
	}
	for k, end := range ends {
		if end <= tg.MaxID || end-tg.MaxID > 1<<20 {
			continue
		}
		a, err := frond.AllocateAt(ctx, via, frond.Place{}, tag, end-tg.MaxID)
		if err != nil {
			return nil
		}
		if MappingChanging(a.Mapping) == nil {
			recordIn(tag, a.Mapping, fmt.Sprintf("a segment aimed at %d of %s, seed %d", end, s.name, seed), a.Range)
		}
		modelAdmin["aimed "+frond.MappingName(a.Mapping)]++
		return owners[k]
	}
	return nil
}

// canRestore says whether the model puts store i (s, listed by nodes) back
// to snapshot sn now, and which node asks for which tag first: no change of
// the set under way or since the snapshot, the store up, and, with guards,
// for each tag that moved since the snapshot a node listing the store with
// a floor above the tag's value in it, which asks first. frond promises
// to find a loss below the floor of the node that asks; a node that asks
// first with no floor that high (a loss of only writes it never saw) hands
// the lost IDs out again: frond_wait's and synchronous replication's case
// (docs/stores.md), not the model's.
func canRestore(ctx context.Context, s *lossyStore, sn modelSnapshot, nodes []*modelNode, i int, settled bool) (ok bool, first []func() error) {
	p, err := s.Store.Place(ctx)
	if !settled || err != nil || p != sn.place || p.Fenced() || s.before.Load() || s.after.Load() {
		return false, nil
	}
	then := memstore.New(nil)
	then.Restore(sn.sn)
	now, err := s.Store.Tags(ctx)
	if err != nil {
		return false, nil
	}
	at := p
	if p.Of == 1 {
		at = frond.Place{}
	}
	for _, tg := range now {
		old, err := then.Tag(ctx, tg.Name)
		if err == nil && old.MaxID >= tg.MaxID {
			continue // unchanged since
		}
		if *modelNoGuard {
			first = append(first, func() error { return nil })
			continue
		}
		// A node's floor of an earlier life of the tag (deleted and
		// created again since it last served it) is no witness: the
		// store's count of deletions tells it the tag was made again.
		gone, err2 := s.Store.Deletions(ctx, tg.Name)
		if err2 != nil {
			return false, nil
		}
		var ask func() error
		for _, n := range nodes {
			k := slices.Index(n.list, i)
			if k < 0 {
				continue
			}
			g := n.guards[k]
			if tf, ok := g.Floors().Tag(tg.Name); ok && err == nil && tf.Deletions == gone && tf.Highest(frond.ServedMapping(old.Mapping), old.Mode == frond.ModeSequence) > old.MaxID {
				name, seq := tg.Name, old.Mode == frond.ModeSequence
				what := fmt.Sprintf("tag %s (%q then, %d) of a node with floors %+v at %q", name, old.Mapping, old.MaxID, tf, at)
				ask = func() error {
					if seq {
						_, err := g.AllocateIDsAt(ctx, at, name, 1)
						return fmt.Errorf("%s: %w", what, err)
					}
					a, err := g.AllocateAt(ctx, at, name, 0)
					if err == nil {
						return fmt.Errorf("%s: allocated %+v", what, a)
					}
					return fmt.Errorf("%s: %w", what, err)
				}
				break
			}
		}
		if ask == nil {
			return false, nil
		}
		first = append(first, ask)
	}
	return len(first) > 0, first
}

// modelNumbers are the numbers of one tag handed out in the model, in
// their mappings: a plain number is its counter; a Mist number is its
// counter's block of 2^16 numbers (counter<<16 | 16 random bits), any of
// which it may be.
type modelNumbers struct {
	plain  map[int64]string // plain numbers
	mist   map[int64]string // Mist counters
	blocks map[int64]string // the Mist block (number>>16) of each plain number, one of them
}

func newModelNumbers() *modelNumbers {
	return &modelNumbers{plain: map[int64]string{}, mist: map[int64]string{}, blocks: map[int64]string{}}
}

// add records counter c handed out in mapping as what, or returns what
// handed out a number it may be.
func (ns *modelNumbers) add(c int64, mapping, what string) string {
	switch frond.StoredMapping(mapping) {
	case "":
		if prev, ok := ns.plain[c]; ok {
			return prev
		}
		if prev, ok := ns.mist[c>>frond.MistShift]; ok {
			return prev
		}
		ns.plain[c] = what
		ns.blocks[c>>frond.MistShift] = what
	case frond.MappingMist:
		if prev, ok := ns.mist[c]; ok {
			return prev
		}
		if prev, ok := ns.blocks[c]; ok {
			return prev
		}
		ns.mist[c] = what
	default:
		return "a number in mapping " + mapping + ", which the model never hands out"
	}
	return ""
}

// oneTagPerSet checks that the stores of each set (one generation and
// change, settled or fenced) hold each tag as one tag (issue 57): one
// mode, and one mapping but for one change of mapping under way (copies
// X and X>Y while it fences them, X>Y and Y while it raises them).
func oneTagPerSet(ctx context.Context, stores []*lossyStore, tags []string) error {
	type set struct {
		gen    int64
		change string
	}
	sets := map[set][]*lossyStore{}
	for _, s := range stores {
		p, err := s.Store.Place(ctx)
		if err != nil {
			return err
		}
		if p = p.Settled(); p.Of > 0 {
			sets[set{p.Gen, p.Change}] = append(sets[set{p.Gen, p.Change}], s)
		}
	}
	for k, members := range sets {
		for _, name := range tags {
			modes := map[string]bool{}
			var maps []string
			for _, s := range members {
				tg, err := s.Store.Tag(ctx, name)
				if errors.Is(err, frond.ErrTagNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				modes[frond.StoredMode(tg.Mode)] = true
				if m := frond.StoredMapping(tg.Mapping); !slices.Contains(maps, m) {
					maps = append(maps, m)
				}
			}
			ok := len(modes) <= 1 && len(maps) <= 1
			if len(maps) == 2 {
				slices.Sort(maps)
				for i := range 2 {
					if from, to, moving := frond.ParseMappingChange(maps[i]); moving && (maps[1-i] == from || maps[1-i] == to) {
						ok = ok || len(modes) <= 1
					}
				}
			}
			if !ok {
				return fmt.Errorf("the stores of the set of generation %d (change %s) hold tag %s as %d modes and mappings %q: not one tag", k.gen, k.change, name, len(modes), maps)
			}
		}
	}
	return nil
}
