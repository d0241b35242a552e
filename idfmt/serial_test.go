package idfmt

import (
	"errors"
	"testing"
	"time"
)

var at = time.Date(2026, 11, 22, 9, 5, 7, 123_456_789, time.UTC)

func TestTemplate_Format(t *testing.T) {
	for _, tc := range []struct {
		tmpl      string
		node, seq int64
		want      string
	}{
		{"PAY{time:yyyyMMddHHmmssSSS}{seq:6}", 0, 42, "PAY20261122090507123000042"},
		{"ORD-{time:yy-MM-dd}-{node:3}-{seq:4}", 7, 1, "ORD-26-11-22-007-0001"},
		{"{seq:3}", 0, 999, "999"},
		{"X{time:HH:mm:ss.SSS}{seq:1}", 0, 5, "X09:05:07.1235"},
	} {
		tp, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		got, err := tp.Format(at, tc.node, tc.seq)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
}

func TestParseTemplate_Errors(t *testing.T) {
	for _, bad := range []string{
		"", "PAY", "PAY{seq:0}", "PAY{seq:20}", "PAY{seq:x}", "{seq:3}{seq:3}", "{node:2}{node:2}{seq:1}",
		"{time:yyyy}{time:MM}{seq:2}", "{time:YYYY}{seq:2}", "{time:}{seq:2}", "{seq:2", "{color:red}{seq:1}", "{time:yyyyQ}{seq:1}",
	} {
		if _, err := ParseTemplate(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTemplate(%q): %v", bad, err)
		}
	}
}

func TestTemplate_CheckSnowflake(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		tmpl string
		unit time.Duration
		ok   bool
	}{
		{"P{time:yyyyMMddHHmmssSSS}{node:4}{seq:4}", ms, true},
		{"P{time:yyMMddHHmmssSSS}{node:4}{seq:4}", ms, true},
		{"P{time:yyyyMMddHHmmss}{node:4}{seq:4}", ms, false},         // two ms ticks print alike
		{"P{time:yyyyMMddHHmmss}{node:7}{seq:4}", time.Second, true}, // uid-generator-like
		{"P{time:HHmmssSSS}{node:4}{seq:4}", ms, false},              // no date: days repeat
		{"P{time:yyyyMMddHHmmssSSS}{seq:4}", ms, false},              // no node
		{"P{time:yyyyMMddHHmmssSSS}{node:3}{seq:4}", ms, false},      // 1023 needs 4 digits
		{"P{time:yyyyMMddHHmmssSSS}{node:4}{seq:3}", ms, false},      // 4095 needs 4 digits
		{"P{time:yyyyMMddmmssSSS}{node:4}{seq:4}", ms, false},        // a gap: no hour
	} {
		tp, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		err = tp.CheckSnowflake(tc.unit, 1023, 4095)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s on %v: %v, want ok=%v", tc.tmpl, tc.unit, err, tc.ok)
		}
	}
}

func TestTemplate_CheckSegment(t *testing.T) {
	for _, tc := range []struct {
		tmpl, reset string
		ok          bool
	}{
		{"PAY{time:yyyyMMddHHmmssSSS}{seq:6}", "day", true},
		{"PAY{time:yyyyMMdd}{seq:8}", "day", true},
		{"PAY{time:HHmmss}{seq:8}", "day", false},
		{"PAY{seq:12}", "none", true},
		{"PAY{time:HHmmss}{seq:12}", "none", true},
		{"PAY{time:yyyyMM}{seq:8}", "day", false},
		{"PAY{time:yyyyMM}{seq:8}", "month", true},
		{"PAY{time:yyyyMMddHH}{seq:8}", "hour", true},
		{"PAY{seq:8}", "week", false},
	} {
		tp, _ := ParseTemplate(tc.tmpl)
		if err := tp.CheckSegment(tc.reset); (err == nil) != tc.ok {
			t.Errorf("%s reset %s: %v, want ok=%v", tc.tmpl, tc.reset, err, tc.ok)
		}
	}
}

func TestTemplate_Overflow(t *testing.T) {
	tp, _ := ParseTemplate("P{node:2}{seq:3}")
	if _, err := tp.Format(at, 1, 1000); !errors.Is(err, ErrSeqOverflow) {
		t.Errorf("seq 1000 in 3 digits: %v", err)
	}
	if _, err := tp.Format(at, 100, 1); !errors.Is(err, ErrSeqOverflow) {
		t.Errorf("node 100 in 2 digits: %v", err)
	}
	if s, err := tp.Format(at, 99, 999); err != nil || s != "P99999" {
		t.Errorf("largest: %q, %v", s, err)
	}
}

func TestPeriodKey(t *testing.T) {
	for reset, want := range map[string]string{"none": "", "hour": "2026112209", "day": "20261122", "month": "202611"} {
		if got := PeriodKey(reset, at); got != want {
			t.Errorf("%s: %q", reset, got)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"PAY{time:yyyyMMddHHmmssSSS}{seq:6}", "{seq:3}", "{", "}{", "{time:yyyyyyyy}{seq:19}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := ParseTemplate(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v", err)
			}
			return
		}
		out, err := tp.Format(at, 0, tp.MaxSeq())
		if err != nil {
			t.Fatalf("Format of a parsed template: %v", err)
		}
		if _, err := tp.Format(at, 0, tp.MaxSeq()+1); tp.SeqWidth() < 19 && err == nil {
			t.Fatalf("overflow accepted for %q (%q)", s, out)
		}
	})
}
