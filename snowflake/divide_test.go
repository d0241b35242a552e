package snowflake

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDivider(t *testing.T) {
	divisors := []uint64{1, 2, 3, 7, 10, 1000, 1_000_000, 10_000_000, 1_000_000_000, 3_600_000_000_000, 86_400_000_000_000, math.MaxInt64, 1<<62 + 1}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		divisors = append(divisors, r.Uint64N(math.MaxInt64)+1)
	}
	for _, d := range divisors {
		v := newDivider(d)
		check := func(n uint64) {
			if got, want := v.div(n), n/d; got != want {
				t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
			}
		}
		for _, n := range []uint64{0, 1, d - 1, d, d + 1, math.MaxInt64, math.MaxInt64 - 1} {
			if n <= math.MaxInt64 {
				check(n)
			}
		}
		for k := uint64(1); k < 1000 && k <= math.MaxInt64/d; k = k*3 + 1 {
			check(k*d - 1)
			check(k * d)
		}
		for i := 0; i < 20000; i++ {
			check(r.Uint64N(math.MaxInt64))
		}
	}
}

func FuzzDivider(f *testing.F) {
	f.Add(uint64(1_000_000), uint64(1_700_000_000_000_000_000))
	f.Add(uint64(3), uint64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, d, n uint64) {
		if d == 0 || d > math.MaxInt64 {
			return
		}
		n &= math.MaxInt64
		if got, want := newDivider(d).div(n), n/d; got != want {
			t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
		}
	})
}
