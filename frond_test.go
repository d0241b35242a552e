package frond_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/frond-id/frond"
)

func TestValidateTagName(t *testing.T) {
	for _, ok := range []string{"leaf-segment-test", "order:2026", "a", "A_b.c-9", "order@20261128", strings.Repeat("x", 128)} {
		if err := frond.ValidateTagName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 129), "a b", "a/b", "ü", "a\x00", "tag?x=1", "%2F"} {
		if err := frond.ValidateTagName(bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func FuzzValidateTagName(f *testing.F) {
	for _, s := range []string{"leaf-segment-test", "", "a b", "ü", strings.Repeat("y", 130)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := frond.ValidateTagName(name)
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			return
		}
		// A valid name is non-empty, short, and safe unescaped in a URL path and a key.
		if name == "" || len(name) > frond.MaxTagNameLen || strings.ContainsAny(name, "/?#% \t\r\n\"'\\") {
			t.Fatalf("accepted %q", name)
		}
	})
}

func TestTagUpdate_Apply(t *testing.T) {
	tag := frond.Tag{Name: "t", MaxID: 100, Step: 10, Description: "x"}
	lower, same, higher, zeroStep, desc := int64(99), int64(100), int64(500), int64(0), "y"
	if _, err := (frond.TagUpdate{MaxID: &lower}).Apply(tag); !errors.Is(err, frond.ErrWouldReissue) {
		t.Errorf("lower max_id: %v", err)
	}
	if _, err := (frond.TagUpdate{Step: &zeroStep}).Apply(tag); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Errorf("step 0: %v", err)
	}
	if got, err := (frond.TagUpdate{MaxID: &same}).Apply(tag); err != nil || got != tag {
		t.Errorf("same max_id: %+v, %v", got, err)
	}
	got, err := (frond.TagUpdate{MaxID: &higher, Description: &desc}).Apply(tag)
	if err != nil || got.MaxID != 500 || got.Description != "y" || got.Step != 10 {
		t.Errorf("raise: %+v, %v", got, err)
	}
}

func TestTag_Validate(t *testing.T) {
	for _, bad := range []frond.Tag{{Name: "", Step: 1}, {Name: "t", Step: 0}, {Name: "t", Step: 1, MaxID: -1}} {
		if err := bad.Validate(); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		r    frond.Range
		want []int64
	}{
		{frond.Range{Start: 5, End: 9, Stride: 1}, []int64{5, 6, 7, 8}},
		{frond.Range{Start: 5, End: 9}, []int64{5, 6, 7, 8}},
		{frond.Range{Start: 4, End: 11, Stride: 3}, []int64{4, 7, 10}},
		{frond.Range{Start: 4, End: 10, Stride: 3}, []int64{4, 7}},
		{frond.Range{Start: 4, End: 4, Stride: 3}, nil},
		{frond.Range{Start: 1<<63 - 3, End: 1<<63 - 1, Stride: 1}, []int64{1<<63 - 3, 1<<63 - 2}},
		{frond.Range{Start: 1<<63 - 6, End: 1<<63 - 1, Stride: 4}, []int64{1<<63 - 6, 1<<63 - 2}},
	} {
		got := tc.r.Append(nil)
		if len(got) != len(tc.want) || tc.r.Len() != int64(len(tc.want)) {
			t.Fatalf("%+v: %v (len %d), want %v", tc.r, got, tc.r.Len(), tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] || !tc.r.Contains(got[i]) {
				t.Fatalf("%+v: %v, want %v", tc.r, got, tc.want)
			}
		}
		if len(got) > 0 && tc.r.Last() != got[len(got)-1] {
			t.Fatalf("%+v: Last %d", tc.r, tc.r.Last())
		}
		if tc.r.Contains(tc.r.Start-1) || tc.r.Contains(tc.r.End) {
			t.Fatalf("%+v contains an outside ID", tc.r)
		}
	}
}

// A description with control characters (NUL, ESC: a terminal obeys ESC
// sequences when frond tag list prints it; bidi overrides that reorder
// what a reader sees) is refused (issue 29, item 15).
func TestTag_DescriptionControlCharacters(t *testing.T) {
	for _, d := range []string{"a\x00b", "\x1b[2Jcleared", "line\nbreak", "tab\there", "\u202eevil", "x\u2028y"} {
		if err := (frond.Tag{Name: "t", Step: 1, Description: d}).Validate(); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%q: %v", d, err)
		}
		if err := (frond.TagUpdate{Description: &d}).Validate(); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("update %q: %v", d, err)
		}
	}
	if err := (frond.Tag{Name: "t", Step: 1, Description: "Orders — 订单, été"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestMappingFloor: after a change of mapping at the floor, the new
// mapping's numbers lie above every number the old one gave.
func TestMappingFloor(t *testing.T) {
	mist := func(c int64, salt int64) int64 { return c<<frond.MistShift | salt }
	for _, top := range []int64{0, 1, 2, 11, 65535, 65536, 65537, 1 << 40} {
		// Plain to Mist: plain numbers below top; Mist from counters at the floor and up.
		f, err := frond.MappingFloor("", frond.MappingMist, top)
		if err != nil {
			t.Fatal(err)
		}
		if f = max(f, top); mist(f, 0) < top {
			t.Errorf("plain to mist at top %d: floor %d gives %d, below plain %d", top, f, mist(f, 0), top-1)
		}
		if f > top {
			t.Errorf("plain to mist at top %d: a store at the top needs no raise, got floor %d", top, f)
		}
		// Mist to plain: Mist numbers of counters below top; plain from the floor.
		f, err = frond.MappingFloor(frond.MappingMist, frond.MappingPlain, top)
		if err != nil {
			t.Fatal(err)
		}
		if top > 0 && f <= mist(top-1, 0xffff) {
			t.Errorf("mist to plain at top %d: floor %d is not above Mist's %d", top, f, mist(top-1, 0xffff))
		}
	}
	// A store below the highest: plain to Mist raises it to ceil(top/2^16).
	if f, _ := frond.MappingFloor(frond.MappingPlain, frond.MappingMist, 1<<20+1); f != 1<<4+1 {
		t.Errorf("floor of plain to mist at 2^20+1 = %d, want 17", f)
	}
	for _, c := range [][2]string{{"", frond.MappingOpaque}, {frond.MappingOpaque, frond.MappingMist}, {frond.MappingOpaque, ""}} {
		if _, err := frond.MappingFloor(c[0], c[1], 5); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%q to %q: %v, want ErrInvalidArgument", c[0], c[1], err)
		}
	}
	if _, err := frond.MappingFloor(frond.MappingMist, "", 1<<50); !errors.Is(err, frond.ErrTagExhausted) {
		t.Errorf("mist to plain past 2^47: %v", err)
	}
}

// The test vectors of KeyHash and ShardOf that docs/kinds.md publishes for
// clients in other languages (checked there against a Python version).
func TestKeyHash_Vectors(t *testing.T) {
	for _, v := range []struct {
		key         string
		hash        uint64
		s1, s4, s10 int64
	}{
		{"", 0xefd01f60ba992926, 0, 6, 294},
		{"a", 0x82a2a958a9bece5b, 1, 11, 603},
		{"user-42", 0xa39532c7ab051e8d, 1, 13, 653},
		{"tenant-7", 0xc9050cf8782d9e66, 0, 6, 614},
		{"shop:10086", 0x176fc3a8d6e8bceb, 1, 11, 235},
		{"用户-1", 0x3d39baa19bd993df, 1, 15, 991},
	} {
		if h := frond.KeyHash(v.key); h != v.hash {
			t.Errorf("KeyHash(%q) = %#x, want %#x", v.key, h, v.hash)
		}
		if a, b, c := frond.ShardOf(v.key, 1), frond.ShardOf(v.key, 4), frond.ShardOf(v.key, 10); a != v.s1 || b != v.s4 || c != v.s10 {
			t.Errorf("ShardOf(%q, 1/4/10) = %d/%d/%d, want %d/%d/%d", v.key, a, b, c, v.s1, v.s4, v.s10)
		}
	}
}

func TestShardMapping(t *testing.T) {
	for bits := 1; bits <= frond.MaxShardBits; bits++ {
		m := frond.ShardMapping(bits)
		if frond.ShardBits(m) != bits || frond.CheckMapping(m) != nil {
			t.Errorf("%s: ShardBits %d, CheckMapping %v", m, frond.ShardBits(m), frond.CheckMapping(m))
		}
	}
	for _, bad := range []string{"shard:", "shard:0", "shard:17", "shard:04", "shard:4x", "shard:-1", "shard:100", "Shard:4", "shard: 4"} {
		if frond.ShardBits(bad) != 0 || frond.CheckMapping(bad) == nil {
			t.Errorf("%q taken as shard bits", bad)
		}
	}
	// Set at creation: no change to or from shard bits.
	for _, c := range [][2]string{{"", "shard:4"}, {"shard:4", ""}, {"mist", "shard:2"}, {"shard:2", "shard:3"}} {
		if _, err := frond.MappingFloor(c[0], c[1], 100); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("MappingFloor(%q, %q): %v", c[0], c[1], err)
		}
	}
}
