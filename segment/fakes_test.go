package segment

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/store/memstore"
)

// newFakeClock is a manual frond.Clock.
func newFakeClock() testclock.Wall {
	return testclock.NewWall(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}

// fakeStore wraps a memstore and can fail or block Allocate, and records
// the steps asked for.
type fakeStore struct {
	*memstore.Store
	mu    sync.Mutex
	fail  error
	gate  chan struct{} // when non-nil, Allocate waits for it (or ctx)
	steps []int64
	calls chan string // receives the tag of every Allocate call, if non-nil
	delay time.Duration
}

func newFakeStore(clock frond.Clock) *fakeStore {
	s := &fakeStore{Store: memstore.New(clock)}
	s.BeforeAllocate(s.enter)
	return s
}

// enter records the call, and delays, holds or fails it as set.
func (s *fakeStore) enter(ctx context.Context, tag string, step int64) error {
	s.mu.Lock()
	s.steps = append(s.steps, step)
	fail, gate, calls, delay := s.fail, s.gate, s.calls, s.delay
	s.mu.Unlock()
	if calls != nil {
		calls <- tag
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fail
}

func (s *fakeStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *fakeStore) setGate(g chan struct{}) {
	s.mu.Lock()
	s.gate = g
	s.mu.Unlock()
}

func (s *fakeStore) stepsAsked() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.steps...)
}

// mustCreate creates a tag in s alone, at s's place (a store of a set
// too: tests build copies a store at a time).
func mustCreate(t testing.TB, s frond.SegmentStore, name string, maxID, step int64) {
	t.Helper()
	at, err := frond.PlaceOf(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := frond.CreateTagAt(context.Background(), s, at, frond.Tag{Name: name, MaxID: maxID, Step: step}); err != nil {
		t.Fatal(err)
	}
}

func newEngine(t testing.TB, s frond.SegmentStore, cfg Settings) *Engine {
	t.Helper()
	e, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// waitFor polls cond until it holds: it waits for background goroutines,
// never for simulated time.
func nextReady(b *Buffer) func() bool {
	return func() bool { st := b.Stats(); return st.NextReady && !st.Loading }
}
