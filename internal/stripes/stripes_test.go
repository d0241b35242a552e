package stripes

import (
	"runtime"
	"testing"
)

func TestCount(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, least, want int }{
		{1, 8, 8}, {2, 4, 4}, {2, 8, 8}, {16, 8, 32}, {16, 4, 32}, {100, 8, 128}, {3, 4, 8},
	} {
		runtime.GOMAXPROCS(c.procs)
		if got := Count(c.least); got != c.want {
			t.Errorf("GOMAXPROCS %d, least %d: %d stripes, want %d", c.procs, c.least, got, c.want)
		}
	}
	for range 1000 {
		if p := Pick(8); p < 0 || p >= 8 {
			t.Fatalf("Pick(8) = %d", p)
		}
	}
}
