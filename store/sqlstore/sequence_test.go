package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
)

// sequenceServers are the databases of the sequence tests, each with the
// path it takes (native: a sequence object; rows: Leaf's row).
func sequenceServers(t testing.TB) map[string]struct {
	url    string
	native bool
} {
	out := map[string]struct {
		url    string
		native bool
	}{"sqlite": {"sqlite://" + filepath.Join(t.TempDir(), "frond.db"), false}}
	for name, env := range map[string]string{"mysql": "FROND_TEST_MYSQL_URL", "postgres": "FROND_TEST_POSTGRES_URL"} {
		url := testenv.Getenv(t, env)
		out[name] = struct {
			url    string
			native bool
		}{url, true}
		out[name+"-rows"] = struct {
			url    string
			native bool
		}{url, false}
	}
	return out
}

// AllocateIDs (a sequence tag's store call) on every database and path:
// the first IDs start at max_id, Allocate is refused for a sequence tag and
// AllocateIDs for a segment tag, a raise of max_id is obeyed, the top of the
// ID space is refused, and a deleted tag's sequence goes with it.
func TestAllocateIDs(t *testing.T) {
	for name, srv := range sequenceServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := openSeq(t, srv.url, srv.native)
			if srv.native && !s.Native() {
				t.Fatalf("%s: the server has sequence objects, but the store does not use them", name)
			}
			tag := fmt.Sprintf("ids-%d", time.Now().UnixNano())
			t.Cleanup(func() { s.DeleteTag(ctx, tag); s.DeleteTag(ctx, tag+"-top"); s.DeleteTag(ctx, tag+"-seg") })
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 10, Step: 100, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 5); err != nil || !slices.Equal(rs, []frond.Range{{Start: 10, End: 15, Stride: 1}}) {
				t.Fatalf("AllocateIDs 5: %+v, %v", rs, err)
			}
			if _, err := s.Allocate(ctx, tag, 0); !errors.Is(err, frond.ErrNotLeasable) {
				t.Fatalf("Allocate of a sequence tag: %v", err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 1); err != nil || rs[0].Start != 15 {
				t.Fatalf("AllocateIDs 1: %+v, %v", rs, err)
			}
			if tg, err := s.Tag(ctx, tag); err != nil || tg.MaxID < 16 || tg.Mode != frond.ModeSequence {
				t.Fatalf("Tag: %+v, %v", tg, err)
			}
			// max_id raised by an operator: the next IDs start there; a
			// lower one is refused.
			raise := int64(5000)
			if _, err := s.UpdateTag(ctx, tag, frond.TagUpdate{MaxID: &raise}); err != nil {
				t.Fatal(err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 2); err != nil || rs[0].Start != 5000 {
				t.Fatalf("after the raise: %+v, %v", rs, err)
			}
			lower := int64(4000)
			if _, err := s.UpdateTag(ctx, tag, frond.TagUpdate{MaxID: &lower}); !errors.Is(err, frond.ErrWouldReissue) {
				t.Fatalf("lowering max_id: %v", err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-nope", 1); !errors.Is(err, frond.ErrTagNotFound) {
				t.Fatalf("unknown tag: %v", err)
			}
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag + "-seg", Step: 10}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-seg", 1); !errors.Is(err, frond.ErrNotSequence) {
				t.Fatalf("AllocateIDs of a segment tag: %v", err)
			}
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag + "-top", MaxID: math.MaxInt64 - 3, Step: 1, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-top", 5); !errors.Is(err, frond.ErrTagExhausted) {
				t.Fatalf("past 2^63: %v", err)
			}
			t.Cleanup(func() { s.DeleteTag(ctx, tag+"-full") })
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag + "-full", MaxID: math.MaxInt64, Step: 1, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-full", 1); !errors.Is(err, frond.ErrTagExhausted) {
				t.Fatalf("max_id 2^63-1: %v", err)
			}
			// Deleted and created again lower: the old sequence is gone.
			if err := s.DeleteTag(ctx, tag); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AllocateIDs(ctx, tag, 1); !errors.Is(err, frond.ErrTagNotFound) {
				t.Fatalf("deleted tag: %v", err)
			}
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 20, Step: 100, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 1); err != nil || rs[0].Start != 20 {
				t.Fatalf("created again: %+v, %v", rs, err)
			}
		})
	}
}

func openSeq(t testing.TB, url string, native bool) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{MaxOpenConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	if !native {
		s.UseRows()
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Calls from three connection pools at once, while an operator raises
// max_id: no value twice; a call that began after another returned has
// larger values (linearizable); a call that began after the raise returned
// has values at or above it. The first calls find the sequence missing and
// race to make it.
func TestAllocateIDs_Concurrent(t *testing.T) {
	for name, srv := range sequenceServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			stores := []*sqlstore.Store{openSeq(t, srv.url, srv.native), openSeq(t, srv.url, srv.native), openSeq(t, srv.url, srv.native)}
			tag := fmt.Sprintf("ids-conc-%d", time.Now().UnixNano())
			t.Cleanup(func() { stores[0].DeleteTag(ctx, tag) })
			if _, err := stores[0].CreateTag(ctx, frond.Tag{Name: tag, MaxID: 7, Step: 100, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			type call struct {
				begin, end time.Time
				lo, hi     int64
			}
			var mu sync.Mutex
			var calls []call
			seen := map[int64]bool{}
			const raiseTo = 1_000_000
			var raised time.Time
			var wg sync.WaitGroup
			for w := range 9 {
				wg.Go(func() {
					for i := range 30 {
						if w == 0 && i == 15 {
							v := int64(raiseTo)
							if _, err := stores[0].UpdateTag(ctx, tag, frond.TagUpdate{MaxID: &v}); err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							raised = time.Now()
							mu.Unlock()
						}
						begin := time.Now()
						rs, err := stores[w%3].AllocateIDs(ctx, tag, int64(1+(w+i)%4))
						end := time.Now()
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						c := call{begin: begin, end: end, lo: rs[0].Start, hi: rs[len(rs)-1].End - 1}
						calls = append(calls, c)
						for _, r := range rs {
							for v := r.Start; v < r.End; v++ {
								if seen[v] {
									t.Errorf("%d handed out twice", v)
								}
								seen[v] = true
							}
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			for _, a := range calls {
				if a.lo < 7 {
					t.Fatalf("value %d below the initial max_id", a.lo)
				}
				if a.begin.After(raised) && a.lo < raiseTo {
					t.Fatalf("a call that began after the raise got %d", a.lo)
				}
				for _, b := range calls {
					if a.end.Before(b.begin) && a.hi >= b.lo {
						t.Fatalf("not linearizable: a call answered [%d, %d] before another began, which got %d", a.lo, a.hi, b.lo)
					}
				}
			}
		})
	}
}

// A sequence left behind by a tag deleted outside frond (Leaf deletes only
// its row), or by a drop that failed after the delete (MariaDB drops
// outside the delete's transaction), is not served from when a sequence
// tag of that name is created again: the new tag's max_id holds (the
// leftover sequence was used as it was, and handed out IDs below it).
func TestAllocateIDs_LeftoverSequence(t *testing.T) {
	for name, srv := range sequenceServers(t) {
		if !srv.native {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := sqlstore.Open(ctx, srv.url, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tag := fmt.Sprintf("leftover-%d", time.Now().UnixNano())
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1, Step: 1, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 3); err != nil || rs[0].Start != 1 {
				t.Fatalf("first IDs: %v, %v", rs, err)
			}
			for _, q := range []string{"DELETE FROM leaf_alloc WHERE biz_tag = ?", "DELETE FROM frond_tag_mode WHERE biz_tag = ?"} {
				if err := s.Exec(q, tag); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 5000, Step: 1, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			rs, err := s.AllocateIDs(ctx, tag, 2)
			if err != nil || rs[0].Start < 5000 {
				t.Fatalf("after the tag was created again at max_id 5000: %v, %v", rs, err)
			}
			if row, err := s.QueryInt("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?", tag); err != nil || row != math.MaxInt64 {
				t.Fatalf("Leaf's row of the tag created again: max_id %d, %v; want parked", row, err)
			}
			s.DeleteTag(ctx, tag)
		})
	}
}

// Once a sequence tag's sequence object exists, Leaf's row is parked at
// 2^63-1: Leaf's own UPDATE max_id = max_id + step fails on it (it found
// the row at the tag's creation value and handed out the sequence's IDs
// again), while frond reads and raises the tag's max_id through its
// sequence (issue 27 item 6).
func TestAllocateIDs_LeafRowParked(t *testing.T) {
	for name, srv := range sequenceServers(t) {
		if !srv.native {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := sqlstore.Open(ctx, srv.url, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tag := fmt.Sprintf("parked-%d", time.Now().UnixNano())
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 10, Step: 100, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			defer s.DeleteTag(ctx, tag)
			if rs, err := s.AllocateIDs(ctx, tag, 5); err != nil || rs[0].Start != 10 {
				t.Fatalf("IDs: %v, %v", rs, err)
			}
			row, err := s.QueryInt("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?", tag)
			if err != nil || row != math.MaxInt64 {
				t.Fatalf("Leaf's row: max_id %d, %v; want parked at 2^63-1", row, err)
			}
			if err := s.Exec("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?", tag); err == nil {
				t.Fatal("Leaf's allocation succeeded on a parked row")
			}
			if tg, err := s.Tag(ctx, tag); err != nil || tg.MaxID < 15 || tg.MaxID > 15+1000 {
				t.Fatalf("Tag: %+v, %v; want the sequence's next value", tg, err)
			}
			raised := int64(50_000)
			if tg, err := s.UpdateTag(ctx, tag, frond.TagUpdate{MaxID: &raised}); err != nil || tg.MaxID != raised {
				t.Fatalf("raise: %+v, %v", tg, err)
			}
			if rs, err := s.AllocateIDs(ctx, tag, 1); err != nil || rs[0].Start < raised {
				t.Fatalf("after the raise: %v, %v", rs, err)
			}
			if row, _ := s.QueryInt("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?", tag); row != math.MaxInt64 {
				t.Fatalf("the raise unparked the row: %d", row)
			}
			tags, err := s.Tags(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range tags {
				if tg.Name == tag && (tg.MaxID < raised || tg.MaxID == math.MaxInt64) {
					t.Fatalf("listed: %+v", tg)
				}
			}
		})
	}
}
