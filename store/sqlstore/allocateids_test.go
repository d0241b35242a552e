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
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
)

// AllocateIDs (a sequence tag's store call; one statement on MySQL with
// LAST_INSERT_ID) takes what Allocate(tag, n) would, on every database:
// consecutive with Allocate, refused for an unknown or exhausted tag, and
// disjoint under concurrency from several connections.
func TestAllocateIDs(t *testing.T) {
	urls := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "frond.db")}
	for _, env := range []string{"FROND_TEST_MYSQL_URL", "FROND_TEST_POSTGRES_URL"} {
		urls[env] = storetest.SkipUnlessSet(t, env)
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			open := func() *sqlstore.Store {
				s, err := sqlstore.Open(ctx, url, sqlstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			s := open()
			tag := fmt.Sprintf("ids-%d", time.Now().UnixNano())
			t.Cleanup(func() { s.DeleteTag(ctx, tag); s.DeleteTag(ctx, tag+"-top") })
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 10, Step: 100, Mode: frond.ModeSequence}); err != nil {
				t.Fatal(err)
			}
			if r, err := s.AllocateIDs(ctx, tag, 5); err != nil || r != (frond.Range{Start: 10, End: 15, Stride: 1}) {
				t.Fatalf("AllocateIDs 5: %+v, %v", r, err)
			}
			if a, err := s.Allocate(ctx, tag, 0); err != nil || a.Start != 15 || a.End != 115 {
				t.Fatalf("Allocate after: %+v, %v", a, err)
			}
			if r, err := s.AllocateIDs(ctx, tag, 1); err != nil || r.Start != 115 || r.End != 116 {
				t.Fatalf("AllocateIDs 1: %+v, %v", r, err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-nope", 1); !errors.Is(err, frond.ErrTagNotFound) {
				t.Fatalf("unknown tag: %v", err)
			}
			if _, err := s.CreateTag(ctx, frond.Tag{Name: tag + "-top", MaxID: math.MaxInt64 - 3, Step: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AllocateIDs(ctx, tag+"-top", 5); !errors.Is(err, frond.ErrTagExhausted) {
				t.Fatalf("past 2^63: %v", err)
			}
			// Concurrent takers on three connections pools: disjoint, and
			// together everything from 116 to the final max_id.
			stores := []*sqlstore.Store{s, open(), open()}
			var mu sync.Mutex
			var got []frond.Range
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Go(func() {
					for i := range 20 {
						r, err := stores[w%3].AllocateIDs(ctx, tag, int64(1+(w+i)%4))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						got = append(got, r)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			slices.SortFunc(got, func(a, b frond.Range) int { return int(a.Start - b.Start) })
			next := int64(116)
			for _, r := range got {
				if r.Start != next {
					t.Fatalf("ranges %v: a gap or an overlap at %d", got, next)
				}
				next = r.End
			}
			if tg, err := s.Tag(ctx, tag); err != nil || tg.MaxID != next || tg.Mode != frond.ModeSequence {
				t.Fatalf("tag after: %+v, %v (want max_id %d)", tg, err, next)
			}
		})
	}
}
