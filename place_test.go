package frond

import (
	"errors"
	"strings"
	"testing"
)

func TestPlace_Text(t *testing.T) {
	for _, c := range []struct {
		p    Place
		text string
	}{
		{Place{}, ""},
		{Place{Residue: 1, Of: 3, Gen: 4}, "1/3@4"},
		{Place{Residue: 1, Of: 3, Gen: 4, Change: "abcdefg2"}, "1/3@4#abcdefg2"},
		{Place{Residue: 0, Of: 2, Gen: 1, Next: 2, Move: Move{Change: "x", Run: "r", Set: "a,b"}}, "0/2@1>2#x/r:a,b;"},
		{Place{Residue: 0, Of: 2, Gen: 1, Change: "c", Next: 2, Move: Move{Change: "x", Run: "r", Set: "b", Retire: "a"}}, "0/2@1#c>2#x/r:b;a"},
		{Place{Next: 1, Move: Move{Change: "x", Run: "r", Set: "a"}}, "0/0@0>1#x/r:a;"},
		{Place{Next: 1, Move: Move{Change: "x", Run: "r", Set: "a", Retire: "b", Raised: true}}, "0/0@0>1#x/r:a;b!"},
		{Place{Next: 1, Move: Move{Change: "x", Run: "r", Set: "a", Abandon: true}}, "0/0@0>1#x/r:a;~"},
		{Place{Gen: 5}, "0/0@5"},
		{Place{Gen: 5, Change: "q"}, "0/0@5#q"},
		{Place{Lost: "1764400000@order"}, "0/0@0|lost:1764400000@order"},
		{Place{Residue: 1, Of: 3, Gen: 4, Change: "abcdefg2", Lost: "1@a"}, "1/3@4#abcdefg2|lost:1@a"},
	} {
		if got := c.p.String(); got != c.text {
			t.Errorf("%+v: %q, want %q", c.p, got, c.text)
		}
		p, err := ParsePlace(c.text)
		if err != nil || p != c.p {
			t.Errorf("ParsePlace(%q) = %+v, %v", c.text, p, err)
		}
	}
	for _, bad := range []string{"0/0@0", "1/1@1", "2/2@1", "-1/2@1", "0/2@-1", "0/2@3>2", "0/2@1>0", "0/2@1>", "0/2", "0/2@1>2", "0/2@1>2#x", "0/2@1>2#x:;", "0/2@1>2#:a;", "0/2@1>2#x:a,a;", "0/2@1>2#x:a;a",
		"0/2@1#", "0/2@1#A", "0/2@1#a1", "0/0@0#a", "0/2@1#a#b", "0/2@1>2#x:a;>3#y:b;", "0/2@1>2#x:a;b;c", "0/2@1>2#x:a;!!", "0/2@1>2#x:a;!~", "0/2@1>2#x:a;~!", "0/2@1>2#x:a;~~", "0/2@1>2#x:a!;", "0/2@1!", "0/2@1>2#x:" + strings.Repeat("a,", 16) + "b;", "a/b@c", "+1/2@1", "01/2@1", " 0/2@1",
		"|lost:1@a", "0/0@0|lost:", "0/0@0|lost:a b", "0/0@0|lost:a|lost:b", "0/0@0|lost:" + strings.Repeat("a", 49), "0/2@1>2#x/r:a;|lost:1@a", "0/0@0|lost:1@a|lost:1@a"} {
		if p, err := ParsePlace(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParsePlace(%q) = %+v, %v: want ErrInvalidArgument", bad, p, err)
		}
	}
	if !(Place{}).Alone() || !(Place{Gen: 2}).Retired() || !(Place{Of: 2, Gen: 1, Next: 2, Move: Move{Change: "x", Run: "r", Set: "a"}}).Moving() {
		t.Fatal("Alone, Retired, Moving")
	}
}

// A place is read from a store, where anyone with access to it may have
// written anything: ParsePlace accepts exactly what String writes, and a
// place it accepts is valid.
func FuzzParsePlace(f *testing.F) {
	for _, s := range []string{"", "1/3@4", "0/2@1#abcdefgh>2#x/r:a,b;c", "0/0@0>1#x/r:a;", "0/0@0>1#x:a;", "0/0@0>1#x/:a;", "0/0@5#q", "0/0@0", "x", "9223372036854775807/9223372036854775807@0"} {
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
		if CheckPlace(s, p.Settled()) != nil && !p.Moving() && !p.Fenced() {
			t.Fatalf("a store at %q refuses its own place", s)
		}
	})
}

// A store fenced for lost data (Place.Lost) refuses an allocation at any
// place, its own included, with ErrStoreLostData; tag administration at
// exactly the fence is the re-arm's, and goes through.
func TestPlace_Lost(t *testing.T) {
	for _, p := range []Place{{}, {Residue: 1, Of: 3, Gen: 4, Change: "abcdefg2"}, {Of: 1, Gen: 2, Change: "q"}} {
		lost := p
		lost.Lost = LostFinding(1764400000, "order")
		got := lost.String()
		for _, at := range []Place{p, lost, {}, {Residue: 0, Of: 3, Gen: 4, Change: "abcdefg2"}} {
			err := CheckPlace(got, at)
			if !errors.Is(err, ErrStoreLostData) || !errors.Is(err, ErrStoreUnavailable) {
				t.Errorf("allocation at %q of a store at %q: %v, want ErrStoreLostData", at, got, err)
			}
		}
		if err := CheckTagPlace(got, lost); err != nil {
			t.Errorf("the re-arm's tag administration at %q: %v", got, err)
		}
		if err := CheckTagPlace(got, p); !errors.Is(err, ErrStoreLostData) {
			t.Errorf("tag administration at %q of a store at %q: %v", p, got, err)
		}
		if lost.Rearmed() != p || !lost.Fenced() || p.Fenced() {
			t.Errorf("Rearmed, Fenced of %+v", lost)
		}
		if d := lost.Describe(); !strings.Contains(d, "frond stores rearm") || !strings.Contains(d, `"order"`) || !strings.Contains(d, "2025-11-29T") {
			t.Errorf("Describe: %s", d)
		}
	}
	if f := LostFinding(1, strings.Repeat("t", 128)); len(f) != maxLostLen || ValidateTagName(f) != nil {
		t.Errorf("LostFinding of a long tag: %q", f)
	}
}

func TestNewIdentity(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewIdentity()
		if len(id) != 8 || !ValidIdentity(id) || seen[id] {
			t.Fatalf("NewIdentity() = %q (valid %v, seen %v)", id, ValidIdentity(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "ABCDEFGH", "abc1", "abc,d", strings.Repeat("a", 17)} {
		if ValidIdentity(bad) {
			t.Errorf("ValidIdentity(%q)", bad)
		}
	}
}

// The longest place a change of the set can write fits frond_mark's 255
// bytes: MaxSetStores identities and the largest numbers.
func TestPlace_LongestFits(t *testing.T) {
	var ids []string
	for range MaxSetStores {
		ids = append(ids, NewIdentity())
	}
	p := Place{Residue: MaxSetStores - 2, Of: MaxSetStores - 1, Gen: 1<<63 - 2, Change: NewIdentity(), Next: 1<<63 - 1,
		Move: Move{Change: NewIdentity(), Run: NewIdentity(), Set: strings.Join(ids[:MaxSetStores-1], ","), Retire: ids[MaxSetStores-1], Raised: true}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := len(p.String()); n > 255 {
		t.Fatalf("%d bytes: %s", n, p)
	}
}

// A keyed sequence space's finding is told from a segment tag's, and a
// space whose name was cut to fit the place is still its space's (its
// re-arm takes the fence off: frond space rearm).
func TestFindingOfSpace(t *testing.T) {
	long := strings.Repeat("s", 60)
	for _, c := range []struct {
		finding, space string
		want           bool
	}{
		{LostFinding(1_800_000_000, LostSpace("msgs")), "msgs", true},
		{LostFinding(1_800_000_000, LostSpace("msgs")), "msg", false},
		{LostFinding(1_800_000_000, LostSpace("msgs")), "msgs2", false},
		{LostFinding(1_800_000_000, "msgs"), "msgs", false}, // a tag's
		{LostFinding(1_800_000_000, LostSpace(long)), long, true},
		{LostFinding(1_800_000_000, LostSpace(long)), "t" + long[1:], false},
	} {
		if got := FindingOfSpace(c.finding, c.space); got != c.want {
			t.Errorf("FindingOfSpace(%q, %q) = %v", c.finding, c.space, got)
		}
	}
}
