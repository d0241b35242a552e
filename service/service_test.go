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
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
)

var bg = context.Background()

type clock = testclock.Clock

func newClock() *clock { return testclock.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)) }

// memRegistry is a WorkerRegistry in memory that can fail Save.
type memRegistry struct {
	mu      sync.Mutex
	id      int64
	last    time.Time
	failErr error
}

func (r *memRegistry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return frond.Worker{ID: r.id, LastIssued: r.last}, nil
}

func (r *memRegistry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failErr != nil {
		return r.failErr
	}
	if last.After(r.last) {
		r.last = last
	}
	return nil
}

func (r *memRegistry) Close() error { return nil }

func newService(t *testing.T, c *clock, reg frond.WorkerRegistry) (*Service, *memstore.Store) {
	t.Helper()
	st := memstore.New(nil)
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour, Segment: segment.Settings{FixedStep: true}}, st, reg, nil)
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
	if id, err := s.SegmentID(bg, "order"); err != nil || id != 1 {
		t.Fatalf("SegmentID = %d, %v", id, err)
	}
	rs, err := s.SegmentIDs(bg, "order", 150)
	if err != nil || len(rs) != 1 || rs[0].Start != 2 || rs[0].End != 152 {
		t.Fatalf("SegmentIDs = %v, %v", rs, err)
	}
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Decode(id, "")
	if err != nil || d.Node != 5 || d.Layout != "twitter" || !d.Time.Equal(time.Unix(0, c.Now()).UTC()) {
		t.Fatalf("Decode = %+v, %v", d, err)
	}
	ids, err := s.SnowflakeIDs(3)
	if err != nil || len(ids) != 3 || ids[0] <= id || s.SnowflakeIssued() != 4 {
		t.Fatalf("SnowflakeIDs = %v, %v, issued %d", ids, err, s.SnowflakeIssued())
	}
	step := int64(500)
	if tag, err := s.UpdateTag(bg, "order", frond.TagUpdate{Step: &step}); err != nil || tag.Step != 500 {
		t.Fatalf("UpdateTag = %+v, %v", tag, err)
	}
	if _, err := s.UpdateTag(bg, "order", frond.TagUpdate{}); Code(err) != CodeInvalidArgument {
		t.Fatalf("empty update: %v", err)
	}
	if err := s.DeleteTag(bg, "order"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SegmentID(bg, "order"); Code(err) != CodeTagNotFound {
		t.Fatalf("after delete: %v", err)
	}
	for _, n := range []int64{0, MaxRangesBatch + 1} {
		if _, err := s.SegmentIDs(bg, "order", n); Code(err) != CodeInvalidArgument {
			t.Errorf("SegmentIDs(%d): %v", n, err)
		}
	}
	for _, n := range []int{0, MaxBatch + 1} {
		if _, err := s.SnowflakeIDs(n); Code(err) != CodeInvalidArgument {
			t.Errorf("SnowflakeIDs(%d): %v", n, err)
		}
	}
	if _, err := s.Decode(-1, ""); Code(err) != CodeInvalidArgument {
		t.Errorf("Decode(-1): %v", err)
	}
	if _, err := s.Decode(1, "nope"); Code(err) != CodeInvalidArgument {
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

func TestNew_ClockBehind(t *testing.T) {
	c := newClock()
	last := time.Unix(0, c.Now()).Add(time.Hour)
	_, err := New(bg, Config{Now: c.Now}, memstore.New(nil), &memRegistry{last: last}, nil)
	var cbe *ClockBehindError
	if !errors.As(err, &cbe) || !errors.Is(err, snowflake.ErrClockBackwards) || cbe.Behind != time.Hour {
		t.Fatalf("err = %v", err)
	}
}

// After a crash the registry holds a reservation up to 2 s ahead: a quick
// restart starts, refuses snowflake IDs until the clock passes it, and serves
// segment IDs meanwhile.
func TestNew_QuickRestartAfterCrash(t *testing.T) {
	c := newClock()
	crashLast := time.Unix(0, c.Now()).Add(1500 * time.Millisecond)
	reg := &memRegistry{last: crashLast}
	s, _ := newService(t, c, reg)
	s.CreateTag(bg, frond.Tag{Name: "t", MaxID: 0, Step: 10})
	if _, err := s.SegmentID(bg, "t"); err != nil {
		t.Fatal(err)
	}
	_, err := s.SnowflakeID()
	if Code(err) != CodeClockBackwards {
		t.Fatalf("snowflake during the reservation: %v", err)
	}
	if chk := s.Ready(bg)[2]; chk.Name != "clock" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	c.Add(1501 * time.Millisecond)
	id, err := s.SnowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Decode(id, ""); !d.Time.After(crashLast) {
		t.Fatalf("ID at %v", d.Time)
	}
}

// The reservation: the generator never issues past the time the registry
// recorded; when the registry stops recording, snowflake IDs stop there.
func TestService_Reservation(t *testing.T) {
	c := newClock()
	reg := &memRegistry{}
	s, _ := newService(t, c, reg)
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(0, c.Now()).Add(2 * time.Hour); !reg.last.Equal(want) {
		t.Fatalf("reserved %v, want %v", reg.last, want)
	}
	reg.mu.Lock()
	reg.failErr = errors.New("disk full")
	reg.mu.Unlock()
	if err := s.reserve(bg); err == nil {
		t.Fatal("reserve succeeded")
	}
	if chk := s.Ready(bg)[1]; chk.Name != "worker" || chk.OK {
		t.Fatalf("readiness %+v", chk)
	}
	c.Add(2*time.Hour + time.Millisecond)
	if _, err := s.SnowflakeID(); Code(err) != CodeUnreserved {
		t.Fatalf("past the reservation: %v", err)
	}
	reg.mu.Lock()
	reg.failErr = nil
	reg.mu.Unlock()
	if err := s.reserve(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnowflakeID(); err != nil {
		t.Fatalf("after the registry recovered: %v", err)
	}
}

// A clean shutdown records the exact last time, so a restart starts at once.
func TestService_CloseReleasesExactTime(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	reg, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour}, memstore.New(nil), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.SnowflakeID()
	if err := s.Close(bg); err != nil {
		t.Fatal(err)
	}
	reg2, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Close()
	w, _ := reg2.Acquire(bg, 1023)
	d, _ := s.Decode(id, "")
	if !w.LastIssued.Equal(d.Time) {
		t.Fatalf("recorded %v, last ID at %v", w.LastIssued, d.Time)
	}
}

func TestCode(t *testing.T) {
	for err, want := range map[error]string{
		nil:                      "",
		frond.ErrInvalidArgument: CodeInvalidArgument,
		fmt.Errorf("x: %w", frond.ErrTagNotFound): CodeTagNotFound,
		frond.ErrTagExists:                        CodeTagExists,
		frond.ErrWouldReissue:                     CodeWouldReissue,
		frond.ErrTagExhausted:                     CodeTagExhausted,
		frond.ErrStoreUnavailable:                 CodeStoreUnavailable,
		&snowflake.ClockError{}:                   CodeClockBackwards,
		snowflake.ErrUnreserved:                   CodeUnreserved,
		snowflake.ErrLayoutExpired:                CodeLayoutExpired,
		snowflake.ErrInvalidID:                    CodeInvalidArgument,
		frond.ErrNoWorkerID:                       CodeNoWorkerID,
		frond.ErrClosed:                           CodeUnavailable,
		context.DeadlineExceeded:                  CodeUnavailable,
		errors.New("boom"):                        CodeInternal,
	} {
		if got := Code(err); got != want {
			t.Errorf("Code(%v) = %q, want %q", err, got, want)
		}
	}
}

// warnStore is a memstore whose operator accepted a risk.
type warnStore struct{ *memstore.Store }

func (warnStore) Warnings() []string { return []string{"redis keeps nothing on disk"} }

func TestReady_StoreWarnings(t *testing.T) {
	c := newClock()
	s, err := New(bg, Config{Now: c.Now, PersistEvery: time.Hour}, warnStore{memstore.New(nil)}, &memRegistry{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(bg)
	chk := s.Ready(bg)[0]
	if chk.Name != "store" || !chk.OK || chk.Detail != "redis keeps nothing on disk" {
		t.Fatalf("store check %+v", chk)
	}
}
