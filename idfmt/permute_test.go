package idfmt

import (
	"errors"
	"math"
	"testing"
)

var testKey = []byte("0123456789abcdef-frond-test-key")

// The permutation is a bijection: checked exhaustively on every width up to 16.
func TestPermutation_BijectionExhaustive(t *testing.T) {
	for w := uint(2); w <= 16; w++ {
		p, err := NewPermutation(testKey, w)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(1) << w
		seen := make([]bool, n)
		for x := int64(0); x < n; x++ {
			y, err := p.Apply(x)
			if err != nil || y < 0 || y >= n {
				t.Fatalf("width %d: Apply(%d) = %d, %v", w, x, y, err)
			}
			if seen[y] {
				t.Fatalf("width %d: two inputs map to %d", w, y)
			}
			seen[y] = true
			if back, err := p.Invert(y); err != nil || back != x {
				t.Fatalf("width %d: Invert(Apply(%d)) = %d, %v", w, x, back, err)
			}
		}
	}
}

// Sequential inputs come out unordered: about half the neighbours go up.
func TestPermutation_LooksRandom(t *testing.T) {
	p, _ := NewPermutation(testKey, 63)
	up, prev := 0, int64(-1)
	for x := int64(1); x <= 10000; x++ {
		y, _ := p.Apply(x)
		if y > prev {
			up++
		}
		prev = y
	}
	if up < 4500 || up > 5500 {
		t.Fatalf("%d of 10000 neighbours increase", up)
	}
	q, _ := NewPermutation([]byte("another key, sixteen bytes at least"), 63)
	a, _ := p.Apply(42)
	b, _ := q.Apply(42)
	if a == b {
		t.Fatal("two keys give the same image")
	}
}

func TestPermutation_Errors(t *testing.T) {
	if _, err := NewPermutation([]byte("short"), 63); !errors.Is(err, ErrInvalid) {
		t.Error("short key accepted")
	}
	for _, w := range []uint{0, 1, 64} {
		if _, err := NewPermutation(testKey, w); !errors.Is(err, ErrInvalid) {
			t.Errorf("width %d accepted", w)
		}
	}
	p, _ := NewPermutation(testKey, 53)
	for _, x := range []int64{-1, 1 << 53, math.MaxInt64} {
		if _, err := p.Apply(x); !errors.Is(err, ErrInvalid) {
			t.Errorf("Apply(%d) accepted", x)
		}
		if _, err := p.Invert(x); !errors.Is(err, ErrInvalid) {
			t.Errorf("Invert(%d) accepted", x)
		}
	}
}

func FuzzPermutation(f *testing.F) {
	f.Add(int64(0), uint8(63))
	f.Add(int64(math.MaxInt64), uint8(63))
	f.Add(int64(1<<53-1), uint8(53))
	f.Fuzz(func(t *testing.T, x int64, w uint8) {
		width := uint(w%62) + 2
		p, _ := NewPermutation(testKey, width)
		y, err := p.Apply(x)
		limit := uint64(1) << width
		if x < 0 || uint64(x) >= limit {
			if err == nil {
				t.Fatalf("Apply(%d) on %d bits accepted", x, width)
			}
			return
		}
		if err != nil || y < 0 || uint64(y) >= limit {
			t.Fatalf("Apply(%d) on %d bits = %d, %v", x, width, y, err)
		}
		if back, err := p.Invert(y); err != nil || back != x {
			t.Fatalf("round trip of %d on %d bits: %d, %v", x, width, back, err)
		}
	})
}
