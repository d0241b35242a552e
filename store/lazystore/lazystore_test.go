package lazystore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/store/lazystore"
	"github.com/frond-id/frond/store/memstore"
)

// fakeOpen opens a memstore once up is set; until then it fails with err.
type fakeOpen struct {
	mu       sync.Mutex
	up       bool
	err      error
	attempts int
	opened   []frond.SegmentStore
}

func (f *fakeOpen) set(up bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.up, f.err = up, err
}

func (f *fakeOpen) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts
}

func (f *fakeOpen) open(ctx context.Context) (frond.SegmentStore, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if !f.up {
		return nil, f.err
	}
	s := memstore.New(nil)
	f.opened = append(f.opened, s)
	return s, nil
}

// refused is what a dial to a closed port returns, wrapped as the stores do.
var refused = fmt.Errorf("create table leaf_alloc on mysql://h/db: %w: %w", frond.ErrStoreUnavailable,
	&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})

var fast = lazystore.Options{Name: "mysql://h/db", MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

func waitOpened(t *testing.T, s *lazystore.Store) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !s.Opened(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not opened within 5 s")
		}
	}
}

func TestOpen_OK(t *testing.T) {
	f := &fakeOpen{up: true}
	s, err := lazystore.Open(t.Context(), f.open, fast)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Opened() || f.count() != 1 || s.String() != "mysql://h/db" {
		t.Fatalf("opened %v after %d attempts, name %q", s.Opened(), f.count(), s)
	}
	if _, err := s.CreateTag(t.Context(), frond.Tag{Name: "t", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Allocate(t.Context(), "t", 0); err != nil || a.Start != 1 {
		t.Fatalf("Allocate = %+v, %v", a, err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.opened[0].Tags(t.Context()); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("the real store was not closed: %v", err)
	}
}

// Errors that are not outages are returned at once: the node refuses to start.
func TestOpen_NotAnOutage(t *testing.T) {
	for _, bad := range []error{
		fmt.Errorf("%w: store URL %q", frond.ErrInvalidArgument, "mysql://h:x"),
		fmt.Errorf("create table on h: %w: %w", frond.ErrStoreUnavailable, errors.New("Error 1045 (28000): Access denied for user 'frond'")),
		// A Redis without persistence that could be reached: refused,
		// although a dial error is in its reason.
		fmt.Errorf("%w: redis volatile: %w", frond.ErrInvalidArgument, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}),
	} {
		f := &fakeOpen{err: bad}
		s, err := lazystore.Open(t.Context(), f.open, fast)
		if s != nil || !errors.Is(err, bad) {
			t.Errorf("Open with %v: %v, %v", bad, s, err)
		}
		time.Sleep(10 * time.Millisecond)
		if n := f.count(); n != 1 {
			t.Errorf("%v: %d attempts, want 1", bad, n)
		}
	}
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("x: %w: %w", frond.ErrStoreUnavailable, io.ErrUnexpectedEOF), true},
		{&net.DNSError{Err: "no such host", Name: "db", IsNotFound: true}, true},
		{fmt.Errorf("x: %w: %w", frond.ErrStoreUnavailable, errors.New("password authentication failed")), false},
		{fmt.Errorf("%w: %w", frond.ErrInvalidArgument, context.DeadlineExceeded), false},
		{nil, false},
	} {
		if got := lazystore.Unreachable(tc.err); got != tc.want {
			t.Errorf("Unreachable(%v) = %v", tc.err, got)
		}
	}
}

// A store down at start: every method fails with ErrStoreUnavailable (not
// ErrInvalidArgument, whatever the open error wraps), Ping says why, and
// the store opens in the background once it can be reached.
func TestOpen_DownAtStart(t *testing.T) {
	f := &fakeOpen{err: refused}
	s, err := lazystore.Open(t.Context(), f.open, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	_, err1 := s.Allocate(ctx, "t", 0)
	_, err2 := s.Tag(ctx, "t")
	_, err3 := s.Tags(ctx)
	_, err4 := s.CreateTag(ctx, frond.Tag{Name: "t", Step: 1})
	_, err5 := s.UpdateTag(ctx, "t", frond.TagUpdate{})
	err6 := s.DeleteTag(ctx, "t")
	err7 := s.Ping(ctx)
	for i, err := range []error{err1, err2, err3, err4, err5, err6, err7} {
		if !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "mysql://h/db") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("method %d: %v", i+1, err)
		}
	}
	if w := s.Warnings(); w != nil {
		t.Errorf("warnings %v", w)
	}

	// A refusal seen on a retry (the server answers now) keeps it an outage.
	f.set(false, fmt.Errorf("%w: access denied", frond.ErrInvalidArgument))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		err := s.Ping(ctx)
		if strings.Contains(err.Error(), "access denied") {
			if !errors.Is(err, frond.ErrStoreUnavailable) || errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("after a refusal: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retries did not go on: %v", err)
		}
	}

	f.set(true, nil)
	waitOpened(t, s)
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "t", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Allocate(ctx, "t", 0); err != nil || a.Start != 1 {
		t.Fatalf("Allocate = %+v, %v", a, err)
	}
	n := f.count()
	time.Sleep(20 * time.Millisecond)
	if f.count() != n {
		t.Fatal("retries go on after the store opened")
	}
}

// Close stops the retries; a store still down is not opened afterwards.
func TestClose_StopsRetries(t *testing.T) {
	f := &fakeOpen{err: refused}
	s, err := lazystore.Open(t.Context(), f.open, fast)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n := f.count()
	f.set(true, nil)
	time.Sleep(20 * time.Millisecond)
	if f.count() != n || s.Opened() {
		t.Fatalf("attempts after Close: %d -> %d, opened %v", n, f.count(), s.Opened())
	}
	if _, err := s.Tags(t.Context()); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// The first attempt is bounded by Options.Timeout: an open that hangs (a
// server behind a dead network) does not hold the start.
func TestOpen_Timeout(t *testing.T) {
	hang := func(ctx context.Context) (frond.SegmentStore, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("dial: %w: %w", frond.ErrStoreUnavailable, ctx.Err())
	}
	o := fast
	o.Timeout = 50 * time.Millisecond
	start := time.Now()
	s, err := lazystore.Open(t.Context(), hang, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Open took %v", d)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatal(err)
	}
}

// Issue 43, item 8: every error of the store, at the first attempt, while
// it is down and once it is open, passes through secret.Hide: a remembered
// password does not leave the Store, however the driver quoted it.
func TestStore_HidesRememberedSecrets(t *testing.T) {
	const pw = "lazy-Pw\"9#"
	secret.Remember(pw)
	leak := fmt.Errorf("dial tcp [mysql://u:%s@10.0.0.1:1]: %w", pw, syscall.ECONNREFUSED)
	check := func(what string, err error) {
		t.Helper()
		if err == nil || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), `lazy-Pw\"9#`) || !strings.Contains(err.Error(), "10.0.0.1:1") {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Refused: Open returns the error.
	_, err := lazystore.Open(context.Background(), func(context.Context) (frond.SegmentStore, error) {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, leak)
	}, lazystore.Options{})
	check("Open", err)
	// Down: every method returns the open error.
	s, err := lazystore.Open(context.Background(), func(context.Context) (frond.SegmentStore, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: leak}
	}, lazystore.Options{MinBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Allocate(context.Background(), "order", 10)
	check("Allocate while down", err)
	check("Ping while down", s.Ping(context.Background()))
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Fatalf("the hidden error no longer says what it is: %v", err)
	}
	// Open: the real store's errors.
	up, err := lazystore.Open(context.Background(), func(context.Context) (frond.SegmentStore, error) {
		return leakyStore{memstore.New(nil), leak}, nil
	}, lazystore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	_, err = up.Allocate(context.Background(), "order", 10)
	check("Allocate", err)
	_, err = up.Tag(context.Background(), "order")
	check("Tag", err)
	check("Ping", up.Ping(context.Background()))
}

// leakyStore fails every allocation and ping with err.
type leakyStore struct {
	*memstore.Store
	err error
}

func (l leakyStore) Allocate(context.Context, string, int64) (frond.Allocation, error) {
	return frond.Allocation{}, l.err
}

func (l leakyStore) Tag(context.Context, string) (frond.Tag, error) { return frond.Tag{}, l.err }

func (l leakyStore) Ping(context.Context) error { return l.err }
