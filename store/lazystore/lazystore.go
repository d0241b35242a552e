// Package lazystore lets a node start while one of its segment stores is
// unreachable. A Store takes the function that opens the real store, tries
// it once at start, and when the store cannot be reached, keeps trying in the
// background with backoff. Until it opens, every method fails with an error
// wrapping frond.ErrStoreUnavailable: the segment engine treats that as an
// outage (it serves its buffers, then answers 503), segment.Multi fails over
// to the other stores, and snowflake IDs, which need no store, are served
// all along.
//
// # Guarantees
//
//   - Only outages are retried: an error of open that says the store cannot
//     be reached or did not answer in time (Unreachable). Any other error at
//     start (a bad URL, a refused password, a Redis without persistence) is
//     returned by Open, so a misconfigured node still refuses to start.
//   - Once open, the Store forwards every call to the real store, and Ping
//     and Warnings to its frond.Pinger and frond.Warner.
//   - No error it returns or logs shows a secret the process remembers
//     (secret.Remember: the store's password, however its driver quotes
//     it): every error of the real store passes through secret.Hide.
//   - Close stops the retries and closes the real store if it was opened.
package lazystore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/secret"
)

var (
	_ frond.PlacedStore  = (*Store)(nil)
	_ frond.SegmentStore = (*Store)(nil)
	_ frond.Pinger       = (*Store)(nil)
	_ frond.Warner       = (*Store)(nil)
)

// OpenFunc opens the real store. It must return within ctx's deadline.
type OpenFunc func(ctx context.Context) (frond.SegmentStore, error)

// Options tune a Store. The zero value is usable.
type Options struct {
	// Name names the store in errors and logs: its URL without the password.
	Name string
	// Timeout bounds each attempt to open. Zero means 3 s.
	Timeout time.Duration
	// MinBackoff is the wait before the first retry; it doubles up to
	// MaxBackoff. Zero means 250 ms and 10 s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives a warning when the store cannot be opened at start,
	// and a line when it opens. Nil means none.
	Logger *slog.Logger
	// Retry reports whether an error of open is an outage worth retrying.
	// Nil means Unreachable.
	Retry func(error) bool
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Retry == nil {
		o.Retry = Unreachable
	}
	return o
}

// Unreachable reports whether err, from opening a store, says that the
// store could not be reached or did not answer in time: a network error
// (refused connection, unknown host, i/o timeout), a deadline, or a
// connection closed before the server answered. An answer of the server (a
// refused password, an unknown database) and an invalid configuration
// (frond.ErrInvalidArgument) are not.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, frond.ErrInvalidArgument) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn)
}

// Store is a frond.SegmentStore opened in the background when it could not
// be opened at start.
type Store struct {
	o      Options
	open   OpenFunc
	cancel context.CancelFunc
	done   chan struct{} // closed when the background retries end

	mu      sync.Mutex
	inner   frond.SegmentStore // nil until opened
	lastErr error              // the last error of open, while inner is nil
	since   time.Time          // when the first attempt failed
	closed  bool
}

// Open tries open once, bounded by o.Timeout. It returns open's error when
// that is not an outage (o.Retry); otherwise a Store, already open or opening
// in the background until it succeeds or Close is called. ctx bounds the
// first attempt and, when cancelled, ends the retries.
func Open(ctx context.Context, open OpenFunc, o Options) (*Store, error) {
	o = o.withDefaults()
	s := &Store{o: o, open: open, done: make(chan struct{})}
	inner, err := s.try(ctx)
	if err == nil {
		s.inner = inner
		close(s.done)
		s.cancel = func() {}
		return s, nil
	}
	if !o.Retry(err) {
		return nil, err
	}
	s.lastErr, s.since = err, time.Now()
	o.Logger.Warn("STORE DOWN AT START: serving without it and retrying in the background", "store", o.Name, "err", err.Error())
	bg, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go s.retry(bg)
	return s, nil
}

// try runs open once within o.Timeout.
func (s *Store) try(ctx context.Context) (frond.SegmentStore, error) {
	c, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	inner, err := s.open(c)
	return inner, secret.Hide(err)
}

// retry runs open with backoff until it succeeds or ctx ends.
func (s *Store) retry(ctx context.Context) {
	defer close(s.done)
	wait := s.o.MinBackoff
	for attempt := 1; ; attempt++ {
		// ±20% so that nodes restarted together do not retry in step.
		t := time.NewTimer(time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64())))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		inner, err := s.try(ctx)
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				inner.Close()
				return
			}
			s.inner, s.lastErr = inner, nil
			s.mu.Unlock()
			s.o.Logger.Info("store opened", "store", s.o.Name, "attempts", attempt+1, "down_for", time.Since(s.since).Round(time.Millisecond).String())
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		if !s.o.Retry(err) {
			// Reachable now, but it refuses: a problem for the operator,
			// who may fix it without restarting the node.
			s.o.Logger.Error("store answers but cannot be opened; still retrying", "store", s.o.Name, "err", err.Error())
		}
		wait = min(2*wait, s.o.MaxBackoff)
	}
}

// get returns the real store, or the error every method returns without it.
func (s *Store) get() (frond.SegmentStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("store %s: %w", s.o.Name, frond.ErrClosed)
	case s.inner == nil:
		// %v: the open error may wrap frond.ErrInvalidArgument (a refusal
		// seen on a retry), which must not turn the outage into a 400.
		return nil, secret.Hide(fmt.Errorf("store %s not open (down since %s): %w: %v",
			s.o.Name, s.since.UTC().Format(time.RFC3339), frond.ErrStoreUnavailable, s.lastErr))
	}
	return s.inner, nil
}

// Opened reports whether the real store is open.
func (s *Store) Opened() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner != nil
}

// String names the store (Options.Name).
func (s *Store) String() string { return s.o.Name }

// Allocate implements frond.SegmentStore.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	in, err := s.get()
	if err != nil {
		return frond.Allocation{}, err
	}
	return hide(in.Allocate(ctx, tag, step))
}

// AllocateIDs implements frond.SequenceStore, as the real store does.
func (s *Store) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	in, err := s.get()
	if err != nil {
		return nil, err
	}
	return hide(frond.SequenceIDs(ctx, in, tag, n))
}

// AllocateAt implements frond.PlacedStore, as the real store does.
func (s *Store) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	in, err := s.get()
	if err != nil {
		return frond.Allocation{}, err
	}
	return hide(frond.AllocateAt(ctx, in, at, tag, step))
}

// AllocateIDsAt implements frond.PlacedStore, as the real store does.
func (s *Store) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	in, err := s.get()
	if err != nil {
		return nil, err
	}
	return hide(frond.SequenceIDsAt(ctx, in, at, tag, n))
}

// Place implements frond.PlacedStore, as the real store does.
func (s *Store) Place(ctx context.Context) (frond.Place, error) {
	in, err := s.get()
	if err != nil {
		return frond.Place{}, err
	}
	return hide(frond.PlaceOf(ctx, in))
}

// Identity implements frond.PlacedStore where the real store does.
func (s *Store) Identity(ctx context.Context) (string, error) {
	in, err := s.get()
	if err != nil {
		return "", err
	}
	return hide(frond.IdentityOf(ctx, in))
}

// SwapPlace implements frond.PlacedStore where the real store does.
func (s *Store) SwapPlace(ctx context.Context, old, p frond.Place) error {
	in, err := s.get()
	if err != nil {
		return err
	}
	ps, ok := in.(frond.PlacedStore)
	if !ok {
		return fmt.Errorf("%w: store %s keeps no place: it cannot be part of a set of stores", frond.ErrInvalidArgument, s.o.Name)
	}
	return secret.Hide(ps.SwapPlace(ctx, old, p))
}

// Deletions implements frond.DeletionCounter: 0 where the real store
// counts none.
func (s *Store) Deletions(ctx context.Context, tag string) (int64, error) {
	in, err := s.get()
	if err != nil {
		return 0, err
	}
	n, _, err := frond.DeletionsOf(ctx, in, tag)
	return n, secret.Hide(err)
}

// RaiseDeletions implements frond.DeletionCounter where the real store
// does.
func (s *Store) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	in, err := s.get()
	if err != nil {
		return err
	}
	if d, ok := in.(frond.DeletionCounter); ok {
		return secret.Hide(d.RaiseDeletions(ctx, tag, n))
	}
	return nil
}

// ReturnTail implements frond.TailReturner where the real store does.
func (s *Store) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	in, err := s.get()
	if err != nil {
		return false, err
	}
	if tr, ok := in.(frond.TailReturner); ok {
		return hide(tr.ReturnTail(ctx, tag, from, to, mapping))
	}
	return false, nil
}

// Tag implements frond.SegmentStore.
func (s *Store) Tag(ctx context.Context, name string) (frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return frond.Tag{}, err
	}
	return hide(in.Tag(ctx, name))
}

// TagsAfter implements frond.TagPager.
func (s *Store) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return nil, err
	}
	return hide(frond.TagsAfter(ctx, in, after, limit))
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return nil, err
	}
	return hide(in.Tags(ctx))
}

// CreateTag implements frond.SegmentStore.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return frond.Tag{}, err
	}
	return hide(in.CreateTag(ctx, t))
}

// UpdateTag implements frond.SegmentStore.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return frond.Tag{}, err
	}
	return hide(in.UpdateTag(ctx, name, u))
}

// DeleteTag implements frond.SegmentStore.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	in, err := s.get()
	if err != nil {
		return err
	}
	return secret.Hide(in.DeleteTag(ctx, name))
}

// CreateTagAt implements frond.PlacedStore, as the real store does.
func (s *Store) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return frond.Tag{}, err
	}
	return hide(frond.CreateTagAt(ctx, in, at, t))
}

// UpdateTagAt implements frond.PlacedStore, as the real store does.
func (s *Store) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	in, err := s.get()
	if err != nil {
		return frond.Tag{}, err
	}
	return hide(frond.UpdateTagAt(ctx, in, at, name, u))
}

// DeleteTagAt implements frond.PlacedStore, as the real store does.
func (s *Store) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	in, err := s.get()
	if err != nil {
		return err
	}
	return secret.Hide(frond.DeleteTagAt(ctx, in, at, name))
}

// Ping implements frond.Pinger: the open error while the store is not open,
// else the real store's Ping (or its Tags when it has no Ping).
func (s *Store) Ping(ctx context.Context) error {
	in, err := s.get()
	if err != nil {
		return err
	}
	if p, ok := in.(frond.Pinger); ok {
		return secret.Hide(p.Ping(ctx))
	}
	_, err = frond.TagsAfter(ctx, in, "", 1)
	return secret.Hide(err)
}

// Warnings implements frond.Warner: the real store's, once open.
func (s *Store) Warnings() []string {
	in, err := s.get()
	if err != nil {
		return nil
	}
	if w, ok := in.(frond.Warner); ok {
		var ws []string
		for _, w := range w.Warnings() {
			ws = append(ws, secret.HideString(w))
		}
		return ws
	}
	return nil
}

// Close implements frond.SegmentStore: it stops the retries and closes the
// real store if it was opened.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.done
	s.mu.Lock()
	in := s.inner
	s.mu.Unlock()
	if in != nil {
		return secret.Hide(in.Close())
	}
	return nil
}

// hide is v with err's remembered secrets masked (secret.Hide).
func hide[T any](v T, err error) (T, error) { return v, secret.Hide(err) }
