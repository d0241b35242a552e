package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{2 << 20, 32 << 20, 1600},   // frond at rest: goal 34 MB instead of 4
		{32 << 20, 32 << 20, Base},  // at the headroom: GOGC's default
		{400 << 20, 32 << 20, Base}, // millions of keys: never below the default
		{1 << 10, 32 << 20, Max},    // a tiny heap: bounded
		{0, 32 << 20, Max},
		{20 << 20, 32 << 20, 160},
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// The percent follows the live heap, in steps of at least an eighth, and
// Stop restores the default.
func TestTuner(t *testing.T) {
	live := uint64(2 << 20)
	var sets []int
	tu := newTuner(32<<20, func() uint64 { return live }, func(p int) int { sets = append(sets, p); return 0 })
	if p := tu.Tune(); p != 1600 {
		t.Fatalf("small heap: %d", p)
	}
	live = 2<<20 + 100<<10 // a little more live: not worth a change
	if p := tu.Tune(); p != 1600 || len(sets) != 1 {
		t.Fatalf("small change: %d after %v", p, sets)
	}
	live = 64 << 20
	if p := tu.Tune(); p != Base {
		t.Fatalf("large heap: %d", p)
	}
	tu.Stop()
	live = 1 << 20
	if p := tu.Tune(); p != Base {
		t.Fatalf("after Stop: %d", p)
	}
	if want := []int{1600, Base, Base}; len(sets) != len(want) || sets[0] != want[0] || sets[1] != want[1] || sets[2] != want[2] {
		t.Fatalf("sets %v, want %v", sets, want)
	}
}

// Start tunes the real runtime after each collection, and leaves an
// operator's GOGC alone.
func TestStart(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(Base))
	t.Setenv("GOGC", "150")
	if Start(0) != nil {
		t.Fatal("tuner started although GOGC is set")
	}
	if p := debug.SetGCPercent(Base); p != Base {
		t.Fatalf("GOGC changed to %d", p)
	}
	if err := unsetenv(t, "GOGC"); err != nil {
		t.Fatal(err)
	}
	tu := Start(1 << 30) // a gigabyte of headroom: the percent is Max whatever the test's heap
	if tu == nil {
		t.Fatal("no tuner")
	}
	defer tu.Stop()
	debug.SetGCPercent(Base) // as if something reset it: the next collection tunes again
	tu.mu.Lock()
	tu.percent = Base
	tu.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		tu.mu.Lock()
		p := tu.percent
		tu.mu.Unlock()
		if p == Max {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("percent %d after collections", p)
		}
		time.Sleep(time.Millisecond)
	}
	if p := debug.SetGCPercent(Max); p != Max {
		t.Fatalf("runtime's GOGC is %d", p)
	}
}

// unsetenv removes key for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, key string) error {
	t.Setenv(key, "")
	return os.Unsetenv(key)
}
