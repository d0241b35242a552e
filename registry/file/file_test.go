package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// The record names its owner and whether it stopped cleanly. A StatefulSet
// pod created again on the volume of one that stopped cleanly (a rolling
// update) starts; one on the volume of a pod that did not (force-deleted
// from an unreachable node, and maybe still running on a volume both can
// write) is refused until the operator names the old pod in TakeOver; a
// restart of the same pod (a container crash) starts (issue 28, item 4).
func TestRegistry_Owner(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	podA := file.Options{Owner: file.Owner{Host: "frond-3", Instance: "uid-a"}}
	podB := file.Options{Owner: file.Owner{Host: "frond-3", Instance: "uid-b"}}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

	a, err := file.OpenWith(dir, 3, podA)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, t0); err != nil {
		t.Fatal(err)
	}
	a.Abandon() // killed

	// The same pod's container restarts.
	a2, err := file.OpenWith(dir, 3, podA)
	if err != nil {
		t.Fatalf("the same pod again: %v", err)
	}
	a2.Save(ctx, t0)
	a2.Abandon() // killed again

	// Another pod on the volume of one that did not stop cleanly.
	_, err = file.OpenWith(dir, 3, podB)
	var oe *file.OwnerError
	if !errors.As(err, &oe) || !errors.Is(err, frond.ErrNoWorkerID) || oe.Previous.String() != "frond-3/uid-a" ||
		!strings.Contains(err.Error(), `worker.takeover="frond-3/uid-a"`) {
		t.Fatalf("a new pod on the record of one that did not stop: %v", err)
	}
	wrong := podB
	wrong.TakeOver = "frond-3/uid-x"
	if _, err := file.OpenWith(dir, 3, wrong); !errors.As(err, &oe) {
		t.Fatalf("a take-over naming another owner: %v", err)
	}
	take := podB
	take.TakeOver = "frond-3/uid-a"
	b, err := file.OpenWith(dir, 3, take)
	if err != nil {
		t.Fatalf("take-over naming the old pod: %v", err)
	}
	if w, _ := b.Acquire(ctx, 1023); !w.LastIssued.Equal(t0) {
		t.Fatalf("taken over from %v, want the record's %v", w.LastIssued, t0)
	}
	if err := b.Save(ctx, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	b.Close()

	// A rolling update: pod B stopped cleanly, pod C starts on its volume.
	podC := file.Options{Owner: file.Owner{Host: "frond-3", Instance: "uid-c"}}
	c, err := file.OpenWith(dir, 3, podC)
	if err != nil {
		t.Fatalf("after a clean stop: %v", err)
	}
	c.Close()

	// Machines that share a data directory (NFS) differ by host name.
	m, err := file.OpenWith(dir, 3, file.Options{Owner: file.Owner{Host: "other-machine"}})
	if err != nil {
		t.Fatalf("C never saved, so the record is still B's released one: %v", err)
	}
	m.Close()
	if c, err = file.OpenWith(dir, 3, podC); err != nil {
		t.Fatal(err)
	}
	c.Save(ctx, t0.Add(2*time.Second))
	c.Abandon()
	if _, err := file.OpenWith(dir, 3, file.Options{Owner: file.Owner{Host: "other-machine"}}); !errors.As(err, &oe) {
		t.Fatalf("another machine on a record C did not release: %v", err)
	}
	// A start without an instance on a record that names one (the setting
	// dropped from the manifest) is another owner.
	if _, err := file.OpenWith(dir, 3, file.Options{Owner: file.Owner{Host: "frond-3"}}); !errors.As(err, &oe) {
		t.Fatalf("the same host without an instance, on a record with one: %v", err)
	}
	// A clean stop that issued nothing (Close without Release) releases
	// the record too.
	c, _ = file.OpenWith(dir, 3, podC)
	c.Save(ctx, t0.Add(3*time.Second))
	c.Close()
	if r, err := file.OpenWith(dir, 3, podB); err != nil {
		t.Fatalf("after a clean stop without a release: %v", err)
	} else if w, _ := r.Acquire(ctx, 1023); !w.LastIssued.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("last %v after Close, want the reservation %v", w.LastIssued, t0.Add(3*time.Second))
	} else {
		r.Close()
	}
}

// A record of an earlier version names a host only: a start of the same
// host with an instance (the upgrade) takes it.
func TestRegistry_OwnerUpgrade(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, file.StateFile), []byte(`{"node":3,"last_issued":"2026-11-25T12:00:00Z","last_issued_unix_nanos":1795608000000000000,"host":"frond-3"}`), 0o644)
	r, err := file.OpenWith(dir, 3, file.Options{Owner: file.Owner{Host: "frond-3", Instance: "uid-a"}})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	r.Close()
}

// Another process writes the record while this one runs (a pod that still
// runs on a volume both can write, after a take-over): this one's next save
// refuses, with the worker ID lost, rather than issue on or overwrite the
// other's times.
func TestRegistry_SecondWriter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r, err := file.OpenWith(dir, 3, file.Options{Owner: file.Owner{Host: "frond-3", Instance: "uid-b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Save(ctx, t0); err != nil {
		t.Fatal(err)
	}
	// The other process, on another machine (its own lock), writes.
	os.WriteFile(filepath.Join(dir, file.StateFile), []byte(`{"node":3,"last_issued":"2026-11-25T12:00:09Z","last_issued_unix_nanos":1795608009000000000,"host":"frond-3","instance":"uid-a"}`), 0o644)
	if err := r.Save(ctx, t0.Add(time.Second)); !errors.Is(err, frond.ErrWorkerLost) || !strings.Contains(err.Error(), "frond-3/uid-a") {
		t.Fatalf("Save after another process wrote the record: %v", err)
	}
	if err := r.Release(ctx, t0); !errors.Is(err, frond.ErrWorkerLost) {
		t.Fatalf("Release after another process wrote the record: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, file.StateFile))
	if !strings.Contains(string(b), "uid-a") {
		t.Fatalf("the other process's record was overwritten: %s", b)
	}
}

// Two processes on one machine and one data directory: the lock refuses
// the second, and its message does not suggest that a data directory of
// its own would make one worker ID safe (it would not).
func TestRegistry_LockMessage(t *testing.T) {
	dir := t.TempDir()
	r, err := file.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = file.Open(dir, 1)
	if !errors.Is(err, frond.ErrNoWorkerID) || !strings.Contains(err.Error(), "worker ID of its own") {
		t.Fatalf("second process: %v", err)
	}
}
