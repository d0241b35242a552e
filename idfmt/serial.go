package idfmt

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Template describes a business serial number such as a payment number:
// literal text and the placeholders
//
//	{time:FORMAT}  the time, FORMAT of yyyy yy MM dd HH mm ss SSS and - : _ . / space
//	{node:W}       the worker ID, zero-padded to W digits
//	{seq:W}        the sequence, zero-padded to W digits
//
// for example "PAY{time:yyyyMMddHHmmssSSS}{seq:6}" (seed 001: business code +
// millisecond + sequence). A template holds {seq} once, {time} and {node} at
// most once.
type Template struct {
	raw       string
	parts     []part
	seqWidth  int
	nodeWidth int // 0: no {node}
	timeUnits map[string]bool
}

type part struct {
	kind  string // "lit", "time", "node", "seq"
	text  string // literal, or time format tokens joined
	width int
	toks  []string
}

var timeTokens = []string{"yyyy", "SSS", "yy", "MM", "dd", "HH", "mm", "ss"}

// ParseTemplate parses and checks a template's syntax.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{raw: s, timeUnits: map[string]bool{}}
	bad := func(format string, args ...any) (*Template, error) {
		return nil, fmt.Errorf("%w: template %q: %s", ErrInvalid, s, fmt.Sprintf(format, args...))
	}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			t.parts = append(t.parts, part{kind: "lit", text: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, part{kind: "lit", text: rest[:i]})
		}
		j := strings.IndexByte(rest, '}')
		if j < i {
			return bad("unclosed {")
		}
		name, arg, _ := strings.Cut(rest[i+1:j], ":")
		rest = rest[j+1:]
		switch name {
		case "time":
			if t.timeUnits["set"] {
				return bad("{time} appears twice")
			}
			t.timeUnits["set"] = true
			p := part{kind: "time", text: arg}
			for a := arg; a != ""; {
				matched := false
				for _, tok := range timeTokens {
					if strings.HasPrefix(a, tok) {
						p.toks = append(p.toks, tok)
						t.timeUnits[tok] = true
						a = a[len(tok):]
						matched = true
						break
					}
				}
				if !matched {
					if c := a[0]; strings.IndexByte("-:_./ ", c) >= 0 {
						p.toks = append(p.toks, string(c))
						a = a[1:]
						continue
					}
					return bad("time format %q: %q is not one of yyyy yy MM dd HH mm ss SSS - : _ . / space", arg, a)
				}
			}
			if len(p.toks) == 0 {
				return bad("{time} needs a format, e.g. {time:yyyyMMddHHmmssSSS}")
			}
			t.parts = append(t.parts, p)
		case "node", "seq":
			w, err := strconv.Atoi(arg)
			if err != nil || w < 1 || w > 19 {
				return bad("{%s:%s}: the width must be 1 to 19 digits", name, arg)
			}
			if (name == "seq" && t.seqWidth > 0) || (name == "node" && t.nodeWidth > 0) {
				return bad("{%s} appears twice", name)
			}
			if name == "seq" {
				t.seqWidth = w
			} else {
				t.nodeWidth = w
			}
			t.parts = append(t.parts, part{kind: name, width: w})
		default:
			return bad("unknown placeholder {%s}: use {time:...}, {node:W}, {seq:W}", name)
		}
	}
	if t.seqWidth == 0 {
		return bad("no {seq:W}: the sequence is what makes serial numbers unique")
	}
	if strings.ContainsAny(strings.ReplaceAll(s, "{", ""), "}") && strings.Count(s, "{") != strings.Count(s, "}") {
		return bad("unbalanced braces")
	}
	return t, nil
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// SeqWidth and NodeWidth are the digits of {seq} and {node} (0: absent).
func (t *Template) SeqWidth() int  { return t.seqWidth }
func (t *Template) NodeWidth() int { return t.nodeWidth }

// MaxSeq is the largest sequence that fits {seq}.
func (t *Template) MaxSeq() int64 { return pow10(t.seqWidth) - 1 }

func pow10(n int) int64 {
	v := int64(1)
	for ; n > 0 && v <= (1<<63-1)/10; n-- {
		v *= 10
	}
	return v
}

func digits(n int64) int { return len(strconv.FormatInt(n, 10)) }

// resolution: the chain of units the time text holds without a gap, from
// the year down; it returns the finest such unit (0 if the year is missing).
func (t *Template) resolution() time.Duration {
	chain := []struct {
		toks []string
		d    time.Duration
	}{
		{[]string{"yyyy", "yy"}, 365 * 24 * time.Hour},
		{[]string{"MM"}, 28 * 24 * time.Hour},
		{[]string{"dd"}, 24 * time.Hour},
		{[]string{"HH"}, time.Hour},
		{[]string{"mm"}, time.Minute},
		{[]string{"ss"}, time.Second},
		{[]string{"SSS"}, time.Millisecond},
	}
	var res time.Duration
	for _, c := range chain {
		if !t.timeUnits[c.toks[0]] && (len(c.toks) < 2 || !t.timeUnits[c.toks[1]]) {
			break
		}
		res = c.d
	}
	return res
}

// Reset periods of a segment-sourced sequence.
var resetUnits = map[string]time.Duration{"none": 0, "": 0, "hour": time.Hour, "day": 24 * time.Hour, "month": 28 * 24 * time.Hour}

// CheckSnowflake checks that serials of t built from snowflake IDs are
// unique: the time text must distinguish every tick (unit), {node} must hold
// maxNode and {seq} maxSeq. Then (time, node, sequence) determine the ID.
func (t *Template) CheckSnowflake(unit time.Duration, maxNode, maxSeq int64) error {
	if res := t.resolution(); res == 0 || res > unit {
		return fmt.Errorf("%w: template %q: the time must go without gaps from the year down to the layout's tick (%v) so that two ticks never print alike", ErrInvalid, t.raw, unit)
	}
	if t.nodeWidth == 0 || digits(maxNode) > t.nodeWidth {
		return fmt.Errorf("%w: template %q: {node:W} must hold worker ID %d: W at least %d", ErrInvalid, t.raw, maxNode, digits(maxNode))
	}
	if digits(maxSeq) > t.seqWidth {
		return fmt.Errorf("%w: template %q: {seq:%d} cannot hold the layout's largest sequence %d in one tick: use at least {seq:%d}", ErrInvalid, t.raw, t.seqWidth, maxSeq, digits(maxSeq))
	}
	return nil
}

// CheckSegment checks a template for a segment-sourced sequence that
// restarts every reset period ("none", "hour", "day", "month"): the time
// text must name the period, or serials of two periods could print alike.
// How many IDs a period takes is not bounded in advance: past MaxSeq the
// serial is refused (ErrSeqOverflow), never wrapped or cut.
func (t *Template) CheckSegment(reset string) error {
	period, ok := resetUnits[reset]
	if !ok {
		return fmt.Errorf("%w: reset %q: none, hour, day or month", ErrInvalid, reset)
	}
	if period > 0 {
		if res := t.resolution(); res == 0 || res > period {
			return fmt.Errorf("%w: template %q: with reset %q the time must go without gaps from the year down to the %s, or two periods' serials could print alike", ErrInvalid, t.raw, reset, reset)
		}
	}
	return nil
}

// ErrSeqOverflow means a sequence did not fit {seq:W}.
var ErrSeqOverflow = fmt.Errorf("%w: sequence too large for the template", ErrInvalid)

// Format prints a serial. It returns ErrSeqOverflow when seq or node does
// not fit its width.
func (t *Template) Format(at time.Time, node, seq int64) (string, error) {
	if seq < 0 || seq > t.MaxSeq() {
		return "", fmt.Errorf("%w: sequence %d does not fit {seq:%d} (at most %d): widen {seq}, or reset more often", ErrSeqOverflow, seq, t.seqWidth, t.MaxSeq())
	}
	if t.nodeWidth > 0 && (node < 0 || node >= pow10(t.nodeWidth)) {
		return "", fmt.Errorf("%w: worker %d does not fit {node:%d}", ErrSeqOverflow, node, t.nodeWidth)
	}
	b := make([]byte, 0, len(t.raw)+16)
	for _, p := range t.parts {
		switch p.kind {
		case "lit":
			b = append(b, p.text...)
		case "seq":
			b = appendPadded(b, seq, p.width)
		case "node":
			b = appendPadded(b, node, p.width)
		case "time":
			for _, tok := range p.toks {
				switch tok {
				case "yyyy":
					b = appendPadded(b, int64(at.Year()), 4)
				case "yy":
					b = appendPadded(b, int64(at.Year()%100), 2)
				case "MM":
					b = appendPadded(b, int64(at.Month()), 2)
				case "dd":
					b = appendPadded(b, int64(at.Day()), 2)
				case "HH":
					b = appendPadded(b, int64(at.Hour()), 2)
				case "mm":
					b = appendPadded(b, int64(at.Minute()), 2)
				case "ss":
					b = appendPadded(b, int64(at.Second()), 2)
				case "SSS":
					b = appendPadded(b, int64(at.Nanosecond()/1e6), 3)
				default:
					b = append(b, tok...)
				}
			}
		}
	}
	return string(b), nil
}

func appendPadded(b []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// PeriodKey names the reset period that contains at ("" for reset none),
// for a per-period segment tag such as "pay.20261122".
func PeriodKey(reset string, at time.Time) string {
	switch reset {
	case "hour":
		return at.Format("2006010215")
	case "day":
		return at.Format("20060102")
	case "month":
		return at.Format("200601")
	}
	return ""
}
