package keyseq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frond-id/frond"
)

// Lazy is a SpaceStore opened on first use: a node whose store is down
// at start serves everything else, and keyed sequences once the store
// answers (each call until then tries to open it, and fails with
// frond.ErrStoreUnavailable).
type Lazy struct {
	open func(ctx context.Context) (ClosingStore, error)

	mu     sync.Mutex
	st     ClosingStore
	closed bool
}

// ClosingStore is a SpaceStore with a Close.
type ClosingStore interface {
	SpaceStore
	Close() error
}

var _ SpaceStore = (*Lazy)(nil)

// NewLazy returns a store that open opens on first use.
func NewLazy(open func(ctx context.Context) (ClosingStore, error)) *Lazy { return &Lazy{open: open} }

func (l *Lazy) get(ctx context.Context) (SpaceStore, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("keyed sequence store: %w", frond.ErrClosed)
	}
	if l.st != nil {
		return l.st, nil
	}
	st, err := l.open(ctx)
	if err != nil {
		if !errors.Is(err, frond.ErrStoreUnavailable) {
			err = fmt.Errorf("%w: %v", frond.ErrStoreUnavailable, err)
		}
		return nil, err
	}
	l.st = st
	return st, nil
}

// Take implements LeaseStore.
func (l *Lazy) Take(ctx context.Context, space string, sections []int, me Owner, ttl time.Duration, step int64) ([]Taken, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Take(ctx, space, sections, me, ttl, step)
}

// Renew implements LeaseStore.
func (l *Lazy) Renew(ctx context.Context, space string, me Owner, ttl time.Duration) ([]int, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Renew(ctx, space, me, ttl)
}

// RaiseOwned implements LeaseStore.
func (l *Lazy) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me Owner) ([]frond.Range, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.RaiseOwned(ctx, space, sections, step, me)
}

// Release implements LeaseStore.
func (l *Lazy) Release(ctx context.Context, space string, give []Given, me Owner) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.Release(ctx, space, give, me)
}

// Read implements LeaseStore.
func (l *Lazy) Read(ctx context.Context, space string, sections int) (Table, error) {
	st, err := l.get(ctx)
	if err != nil {
		return Table{}, err
	}
	return st.Read(ctx, space, sections)
}

// CreateSpace implements SpaceStore.
func (l *Lazy) CreateSpace(ctx context.Context, sp Space) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.CreateSpace(ctx, sp)
}

// LookupSpace implements SpaceStore.
func (l *Lazy) LookupSpace(ctx context.Context, name string) (Space, error) {
	st, err := l.get(ctx)
	if err != nil {
		return Space{}, err
	}
	return st.LookupSpace(ctx, name)
}

// PeerKey implements SpaceStore.
func (l *Lazy) PeerKey(ctx context.Context) ([]byte, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.PeerKey(ctx)
}

// Rearm implements SpaceStore.
func (l *Lazy) Rearm(ctx context.Context, sp Space, above int64) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.Rearm(ctx, sp, above)
}

// ListSpaces implements SpaceStore.
func (l *Lazy) ListSpaces(ctx context.Context) ([]Space, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.ListSpaces(ctx)
}

// Close closes the store if it was opened; later calls fail.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.st != nil {
		return l.st.Close()
	}
	return nil
}

// Place implements frond.PlaceKeeper where the store does (every store
// frond opens): the zero Place otherwise.
func (l *Lazy) Place(ctx context.Context) (frond.Place, error) {
	st, err := l.get(ctx)
	if err != nil {
		return frond.Place{}, err
	}
	if pk, ok := st.(frond.PlaceKeeper); ok {
		return pk.Place(ctx)
	}
	return frond.Place{}, nil
}

// SwapPlace implements frond.PlaceKeeper where the store does.
func (l *Lazy) SwapPlace(ctx context.Context, old, p frond.Place) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	if pk, ok := st.(frond.PlaceKeeper); ok {
		return pk.SwapPlace(ctx, old, p)
	}
	return fmt.Errorf("%w: the keyed sequence store keeps no place", frond.ErrInvalidArgument)
}
