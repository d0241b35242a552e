package service

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
)

func TestParseTime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-11-29T12:00:00Z":           time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		"2026-11-29T12:00:00.123456789Z": time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC),
		"2026-11-29T13:00:00+01:00":      time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		"2026-11-29":                     time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		"1764417600000":                  time.Date(2025, 11, 29, 12, 0, 0, 0, time.UTC),
		"-1000":                          time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
		"0":                              time.Unix(0, 0).UTC(),
	} {
		got, err := ParseTime("from", in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := ParseTime("t", "-62135596800000"); err != nil || got.Year() != 1 {
		t.Errorf("the first millisecond of year 1: %v, %v", got, err)
	}
	for _, in := range []string{"-62135596800001", "-253402300799999", "", "yesterday", "2026-11-29T12:00:00", "2026-13-01", "12:00", "1e3", "99999999999999999999", "253402300800000", strings.Repeat("9", 100)} {
		if _, err := ParseTime("from", in); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("ParseTime(%q) err = %v", in, err)
		} else if len(err.Error()) > 300 {
			t.Errorf("ParseTime(%q) repeats its input: %v", in, err)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-11-29T12:00:00Z", "2026-11-29", "1764417600000", "-5", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTime("t", in)
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("error %v is not invalid_argument", err)
			}
			return
		}
		if got.Location() != time.UTC || got.Year() < 0 || got.Year() > 10000 {
			t.Fatalf("ParseTime(%q) = %v", in, got)
		}
	})
}

// Every UUID of versions 1, 6 and 7 made at t lies within the bounds of
// [t, t+1ms): v6 and v7 as bytes (a database's order), v1 by its time.
func TestUUIDBounds_HoldGenerated(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 34, 56, 789_123_400, time.UTC)
	g := newTimeGen(func() time.Time { return at })
	for _, v := range []int{1, 6} {
		lo, hi, err := UUIDBounds(v, at, at.Add(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for range 100 {
			u, _ := g.next(v)
			if v == 6 && (bytes.Compare(lo[:], u[:]) > 0 || bytes.Compare(u[:], hi[:]) > 0) {
				t.Fatalf("v6 %s made at %v outside [%s, %s]", u, at, lo, hi)
			}
			ut, lt, ht := u.Time(), lo.Time(), hi.Time()
			if ut < lt || ut > ht {
				t.Fatalf("v%d %s made at %v: time %d outside [%d, %d]", v, u, at, ut, lt, ht)
			}
		}
		if lo.Version() != uuid.Version(v) || hi.Version() != uuid.Version(v) || lo.Variant() != uuid.RFC4122 || hi.Variant() != uuid.RFC4122 {
			t.Fatalf("v%d bounds %s %s: wrong version or variant", v, lo, hi)
		}
	}
	before := time.Now()
	u, err := NewUUID(7)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	lo, hi, err := UUIDBounds(7, before, after.Add(time.Nanosecond))
	if err != nil || bytes.Compare(lo[:], u[:]) > 0 || bytes.Compare(u[:], hi[:]) > 0 {
		t.Fatalf("v7 %s made in [%v, %v] outside [%s, %s] (%v)", u, before, after, lo, hi, err)
	}
	if lo.Version() != 7 || hi.Version() != 7 || lo.Variant() != uuid.RFC4122 || hi.Variant() != uuid.RFC4122 {
		t.Fatalf("v7 bounds %s %s: wrong version or variant", lo, hi)
	}
	// The edges of version 7: 1970, and 2^48 ms.
	if lo, _, err := UUIDBounds(7, time.Unix(-10, 0), time.Unix(0, int64(time.Millisecond))); err != nil || lo.String() != "00000000-0000-7000-8000-000000000000" {
		t.Fatalf("v7 from before 1970: %s, %v", lo, err)
	}
	if _, _, err := UUIDBounds(7, time.Unix(-10, 0), time.Unix(0, 0)); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("v7 entirely before 1970: %v", err)
	}
	if _, hi, err := UUIDBounds(7, time.UnixMilli(1<<48-1), time.UnixMilli(1<<48+5)); err != nil || hi.String() != "ffffffff-ffff-7fff-bfff-ffffffffffff" {
		t.Fatalf("v7 at its end: %s, %v", hi, err)
	}
	if _, _, err := UUIDBounds(4, before, after); !errors.Is(err, frond.ErrInvalidArgument) {
		t.Fatalf("v4 has no time: %v", err)
	}
}

func TestIDBounds(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b, err := s.IDBounds(BoundsRequest{Kind: KindSnowflake, From: from, To: to})
	if err != nil || b.Layout != "twitter" || b.FirstID >= b.LastID {
		t.Fatalf("snowflake bounds: %+v, %v", b, err)
	}
	d, _ := s.Decode(b.FirstID, "")
	e, _ := s.Decode(b.LastID, "")
	if !d.Time.Equal(from) || !e.Time.Equal(to.Add(-time.Millisecond)) || e.Node != 1023 || e.Seq != 4095 || d.Node != 0 || d.Seq != 0 {
		t.Fatalf("the bounds decode to %+v and %+v", d, e)
	}
	// An ID this node hands out now lies within the bounds of now.
	id, err := s.snowflakeID()
	if err != nil {
		t.Fatal(err)
	}
	now, _ := s.Decode(id, "")
	nb, err := s.IDBounds(BoundsRequest{Kind: KindSnowflake, From: now.Time, To: now.Time.Add(time.Millisecond)})
	if err != nil || id < nb.FirstID || id > nb.LastID {
		t.Fatalf("the ID %d of %v outside its millisecond's bounds %+v, %v", id, now.Time, nb, err)
	}
	tb, err := s.IDBounds(BoundsRequest{Kind: KindUUID, Form: FormTypeID, Prefix: "user", From: from, To: to})
	if err != nil || !strings.HasPrefix(tb.First, "user_") || tb.First >= tb.Last || tb.Version != 7 {
		t.Fatalf("typeid bounds: %+v, %v", tb, err)
	}
	for _, bad := range []BoundsRequest{
		{Kind: KindSegment, From: from, To: to},
		{Kind: KindSnowflake, From: to, To: from},
		{Kind: KindSnowflake, From: from, To: from},
		{Kind: KindSnowflake, Layout: "nope", From: from, To: to},
		{Kind: KindSnowflake, Version: 7, From: from, To: to},
		{Kind: KindSnowflake, From: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Kind: KindUUID, Version: 4, From: from, To: to},
		{Kind: KindUUID, Version: 6, Form: FormTypeID, From: from, To: to},
		{Kind: KindUUID, Layout: "twitter", From: from, To: to},
	} {
		if _, err := s.IDBounds(bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("IDBounds(%+v) err = %v", bad, err)
		}
	}
}

func TestCompose(t *testing.T) {
	s := newKindsService(t, newClock(), Config{})
	at := time.Date(2026, 11, 29, 12, 0, 0, 123_456_789, time.UTC)
	d, err := s.Compose(ComposeRequest{Time: at, Node: 5, Seq: 7})
	if err != nil || d.Node != 5 || d.Seq != 7 || !d.Time.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("Compose = %+v, %v", d, err)
	}
	back, err := s.Decode(d.ID, "")
	if err != nil || back != d {
		t.Fatalf("Decode(Compose) = %+v, %v; want %+v", back, err, d)
	}
	dc, wk := int64(3), int64(9)
	if _, err := s.Compose(ComposeRequest{Time: at, Datacenter: &dc, Worker: &wk}); !errors.Is(err, frond.ErrInvalidArgument) || !strings.Contains(err.Error(), "no datacenter bits") {
		t.Fatalf("datacenter without datacenter bits: %v", err)
	}
	for _, bad := range []ComposeRequest{
		{Time: at, Node: 1024},
		{Time: at, Node: -1},
		{Time: at, Seq: 4096},
		{Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Time: time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Layout: "nope", Time: at},
	} {
		if _, err := s.Compose(bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Compose(%+v) err = %v", bad, err)
		}
	}
}

func TestComposeWith_Datacenter(t *testing.T) {
	l, _ := snowflake.Preset(snowflake.Twitter)
	l.DatacenterBits = 5
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	dc, wk := int64(3), int64(9)
	d, err := ComposeWith(l, ComposeRequest{Time: at, Datacenter: &dc, Worker: &wk, Seq: 1})
	if err != nil || d.Datacenter == nil || *d.Datacenter != 3 || *d.Worker != 9 || d.Node != 3<<5|9 {
		t.Fatalf("ComposeWith = %+v, %v", d, err)
	}
	big := int64(32)
	for _, bad := range []ComposeRequest{
		{Time: at, Datacenter: &dc},
		{Time: at, Datacenter: &big, Worker: &wk},
		{Time: at, Datacenter: &dc, Worker: &big},
		{Time: at, Node: 1, Datacenter: &dc, Worker: &wk},
	} {
		if _, err := ComposeWith(l, bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("ComposeWith(%+v) err = %v", bad, err)
		}
	}
}
