package storetest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
)

// Faulty is an in-memory segment store that a test can slow down, hold or
// take down: the store of the front ends' and the client's tests.
type Faulty struct {
	*memstore.Store
	delay atomic.Int64 // ns added to every allocation
	down  atomic.Bool
	hold  atomic.Pointer[chan struct{}]
	calls atomic.Int64
}

// NewFaulty returns an empty store that answers.
func NewFaulty() *Faulty {
	s := &Faulty{Store: memstore.New(nil)}
	s.BeforeAllocate(s.enter)
	return s
}

// SetDelay makes every allocation take d longer (0: none).
func (s *Faulty) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// SetDown makes the store unreachable (allocations, Tag and Tags fail with
// frond.ErrStoreUnavailable, "connection refused") or reachable again.
func (s *Faulty) SetDown(down bool) { s.down.Store(down) }

// Hold makes allocations wait until release is called.
func (s *Faulty) Hold() (release func()) {
	ch := make(chan struct{})
	s.hold.Store(&ch)
	return func() {
		if s.hold.CompareAndSwap(&ch, nil) {
			close(ch)
		}
	}
}

// Allocations counts the allocations asked of the store.
func (s *Faulty) Allocations() int64 { return s.calls.Load() }

// ErrDown is the cause of every failure while the store is down.
var ErrDown = errors.New("connection refused (the test took the store down)")

func (s *Faulty) check() error {
	if s.down.Load() {
		return errors.Join(frond.ErrStoreUnavailable, ErrDown)
	}
	return nil
}

// enter counts an allocation, delays it, holds it, and fails it while the
// store is down.
func (s *Faulty) enter(ctx context.Context, tag string, n int64) error {
	s.calls.Add(1)
	if d := time.Duration(s.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(frond.ErrStoreUnavailable, ctx.Err())
		}
	}
	if h := s.hold.Load(); h != nil {
		select {
		case <-*h:
		case <-ctx.Done():
			return errors.Join(frond.ErrStoreUnavailable, ctx.Err())
		}
	}
	return s.check()
}

// Tag fails while the store is down.
func (s *Faulty) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if err := s.check(); err != nil {
		return frond.Tag{}, err
	}
	return s.Store.Tag(ctx, name)
}

// TagsAfter fails while the store is down.
func (s *Faulty) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.Store.TagsAfter(ctx, after, limit)
}

// Tags fails while the store is down.
func (s *Faulty) Tags(ctx context.Context) ([]frond.Tag, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.Store.Tags(ctx)
}
