package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/registry/registrytest"
)

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := file.Open(dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.Acquire(ctx, 1023)
	if err != nil || w.ID != 7 || !w.LastIssued.IsZero() {
		t.Fatalf("Acquire = %+v, %v", w, err)
	}
	if _, err := file.Open(dir, 7); !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("second process: %v", err)
	}
	last := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	if err := r.Save(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(ctx, last.Add(-time.Hour)); err != nil { // earlier: ignored
		t.Fatal(err)
	}
	r.Close()

	r2, err := file.Open(dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	w, _ = r2.Acquire(ctx, 1023)
	if !w.LastIssued.Equal(last) {
		t.Fatalf("after restart last = %v, want %v", w.LastIssued, last)
	}
	if _, err := r2.Acquire(ctx, 3); !errors.Is(err, frond.ErrNoWorkerID) {
		t.Fatalf("node out of range: %v", err)
	}
	// A clean shutdown records the exact last time, below the reservation.
	exact := last.Add(-time.Second)
	if err := r2.Release(ctx, exact); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	r3, err := file.Open(dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if w, _ = r3.Acquire(ctx, 1023); !w.LastIssued.Equal(exact) {
		t.Fatalf("after release last = %v, want %v", w.LastIssued, exact)
	}
}

func TestRegistry_Damaged(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, file.StateFile), []byte("{not json"), 0o644)
	if _, err := file.Open(dir, 0); err == nil {
		t.Fatal("opened a damaged state file")
	}
	// The lock was released: a fixed file opens.
	os.Remove(filepath.Join(dir, file.StateFile))
	r, err := file.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// The shared suite's rules that apply to an ID from configuration.
func TestRegistry_Conformance(t *testing.T) {
	base := t.TempDir()
	registrytest.Run(t, registrytest.Config{
		Fixed: true, SameIDOnRestart: true,
		Open: func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
			r, err := file.Open(filepath.Join(base, ns), 5)
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
	})
}
