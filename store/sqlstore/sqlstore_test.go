package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
)

func TestSQLite_Conformance(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "frond.db")
	storetest.RunSegmentStore(t, func(t *testing.T) frond.SegmentStore {
		s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpen_Errors(t *testing.T) {
	ctx := context.Background()
	for _, bad := range []string{"oracle://x", "sqlite://", "::"} {
		if _, err := sqlstore.Open(ctx, bad, sqlstore.Options{}); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q) err = %v", bad, err)
		}
	}
}

func TestSQLite_StepTooLarge(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "x.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "t", Step: 1 << 31}); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("err = %v", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Ping(ctx); !errors.Is(err, frond.ErrClosed) {
		t.Fatalf("ping after close: %v", err)
	}
}

func TestSQLite_Placed(t *testing.T) {
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener {
		return opener("sqlite://" + filepath.Join(t.TempDir(), "frond.db"))
	})
}
