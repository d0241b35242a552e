package keyseq_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/store/memstore"
)

var modelSeeds = flag.Int("model.seeds", 20, "seeds of TestModel_PerKeyIncrease")

func newEngine(t testing.TB, store keyseq.SectionStore, sp keyseq.Space) *keyseq.Engine {
	t.Helper()
	e, err := keyseq.New(sp, store)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNext_IncreasesPerKey(t *testing.T) {
	store := keyseq.Segments{Store: memstore.New(nil)}
	e := newEngine(t, store, keyseq.Space{Name: "msgs", Step: 100, Sections: 4, Slots: 1 << 10})
	ctx := context.Background()
	last := map[string]int64{}
	for i := range 5000 {
		key := fmt.Sprintf("conv-%d", i%37)
		n := int64(1 + i%5)
		first, end, err := e.Next(ctx, key, n)
		if err != nil {
			t.Fatal(err)
		}
		if end-first != n-1 || first <= last[key] {
			t.Fatalf("%s: %d..%d after %d", key, first, end, last[key])
		}
		last[key] = end
	}
	// A key's values are contiguous while it shares its counter with no
	// other: a fresh key of a fresh space starts at 1.
	f := newEngine(t, keyseq.Segments{Store: memstore.New(nil)}, keyseq.Space{Name: "one"})
	for want := int64(1); want <= 3; want++ {
		if first, _, err := f.Next(ctx, "k", 1); err != nil || first != want {
			t.Fatalf("value %d: %d, %v", want, first, err)
		}
	}
	for _, bad := range []struct {
		key string
		n   int64
	}{{"", 1}, {string(make([]byte, 256)), 1}, {"k", 0}, {"k", keyseq.MaxCount + 1}} {
		if _, _, err := f.Next(ctx, bad.key, bad.n); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Next(%d-byte key, %d): %v", len(bad.key), bad.n, err)
		}
	}
}

// A restart (a new engine on the store) starts every key of a section
// above the persisted maximum: above every value given before.
func TestNext_Restart(t *testing.T) {
	store := keyseq.Segments{Store: memstore.New(nil)}
	sp := keyseq.Space{Name: "msgs", Step: 50, Sections: 2, Slots: 64}
	ctx := context.Background()
	last := map[string]int64{}
	for round := range 10 {
		e := newEngine(t, store, sp)
		for i := range 300 {
			key := fmt.Sprintf("k%d", (i*7+round)%23)
			first, end, err := e.Next(ctx, key, 1+int64(i%3))
			if err != nil {
				t.Fatal(err)
			}
			if first <= last[key] {
				t.Fatalf("round %d: %s got %d after %d", round, key, first, last[key])
			}
			last[key] = end
		}
	}
}

// faulty is a SectionStore that fails some raises, and loses the answer
// of others (the raise happened; the caller hears an error).
type faulty struct {
	inner       keyseq.SectionStore
	rnd         *rand.Rand
	mu          sync.Mutex
	fail, loses int
}

func (f *faulty) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	f.mu.Lock()
	x := f.rnd.IntN(10)
	switch x {
	case 0:
		f.fail++
	case 1:
		f.loses++
	}
	f.mu.Unlock()
	switch x {
	case 0:
		return nil, fmt.Errorf("%w: down", frond.ErrStoreUnavailable)
	case 1:
		f.inner.Raise(ctx, space, sections, step)
		return nil, fmt.Errorf("%w: the answer was lost", frond.ErrStoreUnavailable)
	}
	return f.inner.Raise(ctx, space, sections, step)
}

// The model: random keys and counts from several goroutines, engines
// replaced (a restart, a new owner: the old one closed first) now and
// then, a store that fails and loses answers; every key's values strictly
// increase, across engines. Calls on one key are one after another (a
// lock per key in the test), so that "after" is the order of the answers.
func TestModel_PerKeyIncrease(t *testing.T) {
	for seed := range uint64(*modelSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if bad := runModel(t, seed, true); bad != "" {
				t.Fatal(bad)
			}
		})
	}
}

// The model finds a broken fence within a few seeds: a new engine that
// serves while the old one still answers hands out values below the old
// one's.
func TestModel_BrokenFenceFails(t *testing.T) {
	for seed := range uint64(20) {
		if bad := runModel(t, seed, false); bad != "" {
			t.Logf("seed %d: %s", seed, bad)
			return
		}
	}
	t.Fatal("20 seeds with an unfenced new owner found nothing: the model proves nothing")
}

// runModel runs one seed and returns the first violation, "" if none.
func runModel(t *testing.T, seed uint64, fence bool) string {
	st := &faulty{inner: keyseq.Segments{Store: memstore.New(nil)}, rnd: rand.New(rand.NewPCG(seed, 1))}
	sp := keyseq.Space{Name: "m", Step: int64(5 + seed%40), Sections: int(1 + seed%5), Slots: 1 << (seed % 6)}
	ctx := context.Background()
	const keys = 50
	var locks [keys]sync.Mutex
	var last [keys]int64
	var bad atomic.Pointer[string]
	var cur atomic.Pointer[keyseq.Engine]
	cur.Store(newEngine(t, st, sp))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(w)+10))
			eng := cur.Load() // the engine this worker reaches: refreshed now and then (a stale route, a paused node)
			for i := range 2000 {
				if w == 0 && i%250 == 249 {
					// A new owner. Fenced: the old one stops before the new
					// one serves.
					next := newEngine(t, st, sp)
					if fence {
						cur.Load().Close()
					}
					cur.Store(next)
				}
				if i%37 == 0 {
					eng = cur.Load()
				}
				k := rnd.IntN(keys)
				n := 1 + rnd.Int64N(sp.Step*2)
				locks[k].Lock()
				first, end, err := eng.Next(ctx, fmt.Sprintf("k%d", k), n)
				if errors.Is(err, frond.ErrClosed) {
					eng = cur.Load()
				}
				if err == nil && (first <= last[k] || end != first+n-1) {
					msg := fmt.Sprintf("k%d: %d..%d after %d", k, first, end, last[k])
					bad.CompareAndSwap(nil, &msg)
				}
				if err == nil {
					last[k] = max(last[k], end)
				}
				locks[k].Unlock()
				if err != nil && !errors.Is(err, frond.ErrStoreUnavailable) && !errors.Is(err, frond.ErrClosed) {
					msg := err.Error()
					bad.CompareAndSwap(nil, &msg)
					return
				}
			}
		})
	}
	wg.Wait()
	if st.fail == 0 || st.loses == 0 {
		return fmt.Sprintf("faults: %d failed, %d lost: the model injected none", st.fail, st.loses)
	}
	if p := bad.Load(); p != nil {
		return *p
	}
	return ""
}
