package idfmt

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestEncoding_RoundTrip(t *testing.T) {
	for _, e := range []*Encoding{Base62, Base32} {
		for _, id := range []int64{0, 1, 31, 32, 61, 62, 63, 1 << 31, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64} {
			for _, s := range []string{e.Encode(id), e.EncodeFixed(id)} {
				got, err := e.Decode(s)
				if err != nil || got != id {
					t.Fatalf("%s: %d -> %q -> %d, %v", e.Name(), id, s, got, err)
				}
			}
			if len(e.EncodeFixed(id)) != e.Width() {
				t.Fatalf("%s: fixed form of %d has %d characters", e.Name(), id, len(e.EncodeFixed(id)))
			}
		}
	}
	if Base62.Width() != 11 || Base32.Width() != 13 {
		t.Fatalf("widths %d, %d", Base62.Width(), Base32.Width())
	}
	if Base62.Encode(61) != "z" || Base32.Encode(31) != "Z" || Base62.Encode(0) != "0" {
		t.Fatal("alphabets")
	}
}

// Fixed-width strings sort as their IDs do.
func TestEncoding_Sortable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, e := range []*Encoding{Base62, Base32} {
		for i := 0; i < 20000; i++ {
			a, b := r.Int64(), r.Int64()>>r.IntN(63)
			if (a < b) != (e.EncodeFixed(a) < e.EncodeFixed(b)) {
				t.Fatalf("%s: %d < %d but %q vs %q", e.Name(), a, b, e.EncodeFixed(a), e.EncodeFixed(b))
			}
		}
	}
}

func TestBase32_Crockford(t *testing.T) {
	want, _ := Base32.Decode("10")
	for _, s := range []string{"1O", "1o", "I0", "l0", "L-0", "-1-0-"} {
		if got, err := Base32.Decode(s); err != nil || got != want {
			t.Errorf("Decode(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	if _, err := Base32.Decode("U1"); !errors.Is(err, ErrInvalid) {
		t.Error("U accepted")
	}
}

func TestEncoding_Errors(t *testing.T) {
	for _, tc := range []struct {
		e *Encoding
		s string
	}{
		{Base62, ""}, {Base62, "ab-c"}, {Base62, "é"}, {Base62, strings.Repeat("z", 11)}, {Base62, "AzL8n0Y58m8"},
		{Base32, ""}, {Base32, "---"}, {Base32, "8000000000000"}, {Base32, "*"},
	} {
		if _, err := tc.e.Decode(tc.s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s.Decode(%q): %v", tc.e.Name(), tc.s, err)
		}
	}
	// The largest value decodes; one more does not.
	if got, err := Base62.Decode("AzL8n0Y58m7"); err != nil || got != math.MaxInt64 {
		t.Fatalf("max: %d, %v", got, err)
	}
}

func FuzzEncodingDecode(f *testing.F) {
	for _, s := range []string{"0", "zzzzzzzzzzz", "AzL8n0Y58m7", "7ZZZZZZZZZZZZ", "i-l-o", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range []*Encoding{Base62, Base32} {
			id, err := e.Decode(s)
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v", err)
				}
				continue
			}
			if id < 0 {
				t.Fatalf("%s.Decode(%q) = %d", e.Name(), s, id)
			}
			if back, err := e.Decode(e.Encode(id)); err != nil || back != id {
				t.Fatalf("%s: %d does not round-trip", e.Name(), id)
			}
		}
	})
}

func FuzzEncodingRoundTrip(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, id int64) {
		if id < 0 {
			return
		}
		for _, e := range []*Encoding{Base62, Base32} {
			for _, s := range []string{e.Encode(id), e.EncodeFixed(id)} {
				if got, err := e.Decode(s); err != nil || got != id {
					t.Fatalf("%s: %d -> %q -> %d, %v", e.Name(), id, s, got, err)
				}
			}
		}
	})
}
