package frond

import (
	"errors"
	"testing"
)

func TestPlace_Text(t *testing.T) {
	for _, c := range []struct {
		p    Place
		text string
	}{
		{Place{}, ""},
		{Place{Residue: 1, Of: 3, Gen: 4}, "1/3@4"},
		{Place{Residue: 0, Of: 2, Gen: 1, Next: 2}, "0/2@1>2"},
		{Place{Next: 1}, "0/0@0>1"},
		{Place{Gen: 5}, "0/0@5"},
	} {
		if got := c.p.String(); got != c.text {
			t.Errorf("%+v: %q, want %q", c.p, got, c.text)
		}
		p, err := ParsePlace(c.text)
		if err != nil || p != c.p {
			t.Errorf("ParsePlace(%q) = %+v, %v", c.text, p, err)
		}
	}
	for _, bad := range []string{"0/0@0", "1/1@1", "2/2@1", "-1/2@1", "0/2@-1", "0/2@3>2", "0/2@1>0", "0/2@1>", "0/2", "a/b@c", "+1/2@1", "01/2@1", " 0/2@1"} {
		if p, err := ParsePlace(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParsePlace(%q) = %+v, %v: want ErrInvalidArgument", bad, p, err)
		}
	}
	if !(Place{}).Alone() || !(Place{Gen: 2}).Retired() || !(Place{Of: 2, Gen: 1, Next: 2}).Moving() {
		t.Fatal("Alone, Retired, Moving")
	}
}

// A place is read from a store, where anyone with access to it may have
// written anything: ParsePlace accepts exactly what String writes, and a
// place it accepts is valid.
func FuzzParsePlace(f *testing.F) {
	for _, s := range []string{"", "1/3@4", "0/2@1>2", "0/0@0>1", "0/0@5", "0/0@0", "x", "9223372036854775807/9223372036854775807@0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlace(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("ParsePlace(%q): %v, not ErrInvalidArgument", s, err)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePlace(%q) = %+v, written back as %q", s, p, p.String())
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePlace(%q) accepted an invalid place: %v", s, err)
		}
		if CheckPlace(s, p.Settled()) != nil && !p.Moving() {
			t.Fatalf("a store at %q refuses its own place", s)
		}
	})
}
