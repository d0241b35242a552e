package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testclock"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
)

var bg = context.Background()

type clock = testclock.Clock

func newClock() *clock { return testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) }

// memRegistry is a WorkerRegistry in memory that gives worker ID id, or
// fails with acquireErr. The worker ID's lifecycle is package worker's and
// is tested there.
type memRegistry struct {
	mu         sync.Mutex
	id         int64
	last       time.Time
	acquireErr error
	acquires   int
}

func (r *memRegistry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquires++
	if r.acquireErr != nil {
		return frond.Worker{}, r.acquireErr
	}
	return frond.Worker{ID: r.id, LastIssued: r.last}, nil
}

func (r *memRegistry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last.After(r.last) {
		r.last = last
	}
	return nil
}

func (r *memRegistry) Close() error { return nil }

func newService(t *testing.T, c *clock, reg frond.WorkerRegistry) (*Service, *memstore.Store) {
	t.Helper()
	st := memstore.New(nil)
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{Sleep: c.Add, PersistEvery: time.Hour, RetryEvery: time.Millisecond},
		Segment: segment.Settings{FixedStep: true}}, st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg) })
	return s, st
}

func TestService_IDsAndTags(t *testing.T) {
	c := newClock()
	s, _ := newService(t, c, &memRegistry{id: 5})
	if _, err := s.CreateTag(bg, frond.Tag{Name: "order", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	if id, err := s.segmentID(bg, "order"); err != nil || id != 1 {
		t.Fatalf("SegmentID = %d, %v", id, err)
	}
	rs, err := s.segmentIDs(bg, "order", 150)
	if err != nil || len(rs) != 1 || rs[0].Start != 2 || rs[0].End != 152 {
		t.Fatalf("SegmentIDs = %v, %v", rs, err)
	}
	id, err := s.snowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Decode(id, "")
	if err != nil || d.Node != 5 || d.Layout != "twitter" || !d.Time.Equal(time.Unix(0, c.Now()).UTC()) {
		t.Fatalf("Decode = %+v, %v", d, err)
	}
	ids, err := s.snowflakeIDs(3)
	if err != nil || len(ids) != 3 || ids[0] <= id || s.SnowflakeIssued() != 4 {
		t.Fatalf("SnowflakeIDs = %v, %v, issued %d", ids, err, s.SnowflakeIssued())
	}
	step := int64(500)
	if tag, err := s.UpdateTag(bg, "order", frond.TagUpdate{Step: &step}); err != nil || tag.Step != 500 {
		t.Fatalf("UpdateTag = %+v, %v", tag, err)
	}
	if _, err := s.UpdateTag(bg, "order", frond.TagUpdate{}); Code(err) != frond.CodeInvalidArgument {
		t.Fatalf("empty update: %v", err)
	}
	if err := s.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.segmentID(bg, "order"); Code(err) != frond.CodeTagNotFound {
		t.Fatalf("after delete: %v", err)
	}
	for _, n := range []int64{-1, MaxRangesBatch + 1} {
		if _, err := s.segmentIDs(bg, "order", n); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("SegmentIDs(%d): %v", n, err)
		}
	}
	for _, n := range []int{-1, MaxBatch + 1} {
		if _, err := s.snowflakeIDs(n); Code(err) != frond.CodeInvalidArgument {
			t.Errorf("SnowflakeIDs(%d): %v", n, err)
		}
	}
	if _, err := s.Decode(-1, ""); Code(err) != frond.CodeInvalidArgument {
		t.Errorf("Decode(-1): %v", err)
	}
	if _, err := s.Decode(1, "nope"); Code(err) != frond.CodeInvalidArgument {
		t.Errorf("Decode layout nope: %v", err)
	}
	if d, err := s.Decode(1<<22, "sonyflake"); err != nil || d.Layout != "sonyflake" {
		t.Errorf("Decode sonyflake: %+v, %v", d, err)
	}
	for _, chk := range s.Ready(bg) {
		if !chk.OK {
			t.Errorf("not ready: %+v", chk)
		}
	}
}

// Snowflake IDs that cannot be issued (the clock far behind the worker ID's
// last time, the registry unreachable) do not stop segment IDs, and the
// refusal carries its code through the service.
func TestService_SegmentIDsWhileSnowflakeDown(t *testing.T) {
	c := newClock()
	for _, tc := range []struct {
		reg  *memRegistry
		code string
	}{
		{&memRegistry{id: 3, last: time.Unix(0, c.Now()).Add(3 * time.Hour)}, frond.CodeClockBackwards},
		{&memRegistry{id: 3, acquireErr: fmt.Errorf("%w: connection refused", frond.ErrStoreUnavailable)}, frond.CodeWorkerLost},
	} {
		s, _ := newService(t, c, tc.reg)
		if _, err := s.CreateTag(bg, frond.Tag{Name: "t", Step: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Take(bg, Request{Kind: KindSegment, Name: "t"}); err != nil {
			t.Fatalf("segment IDs with snowflake down (%s): %v", tc.code, err)
		}
		_, err := s.Take(bg, Request{Kind: KindSnowflake})
		if Code(err) != tc.code {
			t.Fatalf("snowflake: %v, want %s", err, tc.code)
		}
		if rd := s.Readiness(bg); !rd.Segment.Ready || rd.Snowflake.Ready {
			t.Fatalf("readiness %+v", rd)
		}
	}
}

func TestCode(t *testing.T) {
	for err, want := range map[error]string{
		nil:                      "",
		frond.ErrInvalidArgument: frond.CodeInvalidArgument,
		fmt.Errorf("x: %w", frond.ErrTagNotFound): frond.CodeTagNotFound,
		frond.ErrTagExists:                        frond.CodeTagExists,
		frond.ErrWouldReissue:                     frond.CodeWouldReissue,
		frond.ErrTagExhausted:                     frond.CodeTagExhausted,
		frond.ErrStoreUnavailable:                 frond.CodeStoreUnavailable,
		&snowflake.ClockError{}:                   frond.CodeClockBackwards,
		snowflake.ErrUnreserved:                   frond.CodeUnreserved,
		snowflake.ErrLayoutExpired:                frond.CodeLayoutExpired,
		snowflake.ErrInvalidID:                    frond.CodeInvalidArgument,
		frond.ErrNoWorkerID:                       frond.CodeNoWorkerID,
		fmt.Errorf("%w: %w", frond.ErrWorkerLost, frond.ErrStoreUnavailable): frond.CodeWorkerLost,
		&worker.PeerSkewError{}:    frond.CodeClockSkew,
		&worker.ClockBehindError{}: frond.CodeClockBackwards,
		frond.ErrClosed:            frond.CodeUnavailable,
		context.DeadlineExceeded:   frond.CodeUnavailable,
		ErrSerialNotFound:          frond.CodeSerialNotFound,
		errors.New("boom"):         frond.CodeInternal,
	} {
		if got := Code(err); got != want {
			t.Errorf("Code(%v) = %q, want %q", err, got, want)
		}
		if _, ok := frond.LookupCode(want); !ok && want != "" {
			t.Errorf("Code(%v) = %q, which frond.ErrorCodes does not describe", err, want)
		}
	}
}

// warnStore is a memstore whose operator accepted a risk.
type warnStore struct{ *memstore.Store }

func (warnStore) Warnings() []string { return []string{"redis keeps nothing on disk"} }

func TestReady_StoreWarnings(t *testing.T) {
	c := newClock()
	s, err := New(bg, Config{Now: c.Now, Snowflake: worker.Settings{PersistEvery: time.Hour}}, warnStore{memstore.New(nil)}, &memRegistry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	chk := s.Ready(bg)[0]
	if chk.Name != "store" || !chk.OK || chk.Detail != "redis keeps nothing on disk" {
		t.Fatalf("store check %+v", chk)
	}
}
