package memstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(nil)
	if _, err := s.Allocate(ctx, "t", 0); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("unknown tag: %v", err)
	}
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "t", MaxID: 1, Step: 2000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "t", MaxID: 1, Step: 2000}); !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("create twice: %v", err)
	}
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "bad name", Step: 1}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("bad name: %v", err)
	}
	a, err := s.Allocate(ctx, "t", 0)
	if err != nil || a.Range != (frond.Range{Start: 1, End: 2001, Stride: 1}) || a.Step != 2000 {
		t.Fatalf("Allocate = %+v, %v", a, err)
	}
	a, _ = s.Allocate(ctx, "t", 5000)
	if a.Start != 2001 || a.End != 7001 || a.Step != 2000 {
		t.Fatalf("custom step: %+v", a)
	}
	lower := int64(10)
	if _, err := s.UpdateTag(ctx, "t", frond.TagUpdate{MaxID: &lower}); !errors.Is(err, frond.ErrWouldReissue) {
		t.Fatalf("lower max_id: %v", err)
	}
	big := int64(1<<63 - 10)
	if _, err := s.UpdateTag(ctx, "t", frond.TagUpdate{MaxID: &big}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Allocate(ctx, "t", 0); !errors.Is(err, frond.ErrTagExhausted) {
		t.Fatalf("overflow: %v", err)
	}
	if tags, _ := s.Tags(ctx); len(tags) != 1 || tags[0].MaxID != big {
		t.Fatalf("tags %+v", tags)
	}
	if err := s.DeleteTag(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTag(ctx, "t"); !errors.Is(err, frond.ErrTagNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Tags(cctx); !errors.Is(err, frond.ErrStoreUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	s.Close()
	if _, err := s.Tags(ctx); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}
