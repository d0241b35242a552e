package snowflake

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// The edges of Bounds, against the layouts' own arithmetic: the epoch,
// the end, a tick boundary, ranges cut to the layout's, and refusals.
func TestLayout_Bounds_Edges(t *testing.T) {
	tw, _ := Preset(Twitter)
	sf, _ := Preset(Sonyflake)
	ms := time.Millisecond
	lastOfTick := func(l Layout, tick int64) int64 {
		id, err := l.Compose(Parts{Tick: tick, Node: l.MaxNode(), Seq: l.MaxSeq()})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	firstOfTick := func(l Layout, tick int64) int64 {
		id, err := l.Compose(Parts{Tick: tick})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, c := range []struct {
		name     string
		l        Layout
		from, to time.Time
		lo, hi   int64
	}{
		{"the epoch's tick", tw, tw.Epoch, tw.Epoch.Add(ms), 0, lastOfTick(tw, 0)},
		{"a tick boundary: from 1 ns before tick 5", tw, tw.Epoch.Add(5*ms - 1), tw.Epoch.Add(6 * ms), firstOfTick(tw, 4), lastOfTick(tw, 5)},
		{"to exclusive: ends on tick 6's start", tw, tw.Epoch.Add(5 * ms), tw.Epoch.Add(6 * ms), firstOfTick(tw, 5), lastOfTick(tw, 5)},
		{"to 1 ns into tick 6", tw, tw.Epoch.Add(5 * ms), tw.Epoch.Add(6*ms + 1), firstOfTick(tw, 5), lastOfTick(tw, 6)},
		{"before the epoch: cut", tw, tw.Epoch.Add(-time.Hour), tw.Epoch.Add(ms), 0, lastOfTick(tw, 0)},
		{"the layout's end", tw, tw.Expires().Add(-ms), tw.Expires(), firstOfTick(tw, tw.MaxTick()), tw.MaxID()},
		{"past the end: cut", tw, tw.Expires().Add(-ms), tw.Expires().Add(time.Hour), firstOfTick(tw, tw.MaxTick()), tw.MaxID()},
		{"the whole layout", tw, time.Unix(0, 0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0, tw.MaxID()},
		{"10 ms ticks: 1 ms inside tick 3", sf, sf.Epoch.Add(35 * ms), sf.Epoch.Add(36 * ms), firstOfTick(sf, 3), lastOfTick(sf, 3)},
	} {
		lo, hi, err := c.l.Bounds(c.from, c.to)
		if err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("%s: Bounds = %d, %d, %v; want %d, %d", c.name, lo, hi, err, c.lo, c.hi)
		}
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
	}{
		{"empty", tw.Epoch.Add(ms), tw.Epoch.Add(ms)},
		{"reversed", tw.Epoch.Add(2 * ms), tw.Epoch.Add(ms)},
		{"all before the epoch", tw.Epoch.Add(-time.Hour), tw.Epoch},
		{"all after the end", tw.Expires(), tw.Expires().Add(time.Hour)},
	} {
		if _, _, err := tw.Bounds(c.from, c.to); !errors.Is(err, ErrTimeOutOfRange) {
			t.Errorf("%s: err = %v, want ErrTimeOutOfRange", c.name, err)
		}
	}
	if _, err := tw.TickAt(tw.Epoch.Add(-1)); !errors.Is(err, ErrTimeOutOfRange) {
		t.Errorf("TickAt before the epoch: %v", err)
	}
	if _, err := tw.TickAt(tw.Expires()); !errors.Is(err, ErrTimeOutOfRange) {
		t.Errorf("TickAt at the end: %v", err)
	}
	if tick, err := tw.TickAt(tw.Expires().Add(-1)); err != nil || tick != tw.MaxTick() {
		t.Errorf("TickAt 1 ns before the end = %d, %v", tick, err)
	}
}

// Every ID a generator hands out at t lies within Bounds(t, t+1ms), on
// every preset, at clock readings drawn from the whole of each layout's
// life, with borrowing off (an ID borrowed ahead carries a later tick).
func TestLayout_Bounds_GeneratedIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(69, 70))
	for _, l := range Presets() {
		for range 200 {
			span := l.Expires().Sub(l.Epoch)
			if span <= 0 || span > 200*365*24*time.Hour {
				span = 200 * 365 * 24 * time.Hour
			}
			at := l.Epoch.Add(time.Duration(rng.Int64N(int64(span))))
			if !at.Before(l.Expires()) {
				continue
			}
			now := at.UnixNano()
			g, err := New(Settings{Layout: l, Node: rng.Int64N(l.MaxNode() + 1), Now: func() int64 { return now }, RandomStart: 0})
			if err != nil {
				t.Fatal(err)
			}
			ids, err := g.NextN(int(min(l.MaxSeq()+1, 50)))
			if err != nil {
				t.Fatalf("%s at %v: %v", l.Name, at, err)
			}
			lo, hi, err := l.Bounds(at, at.Add(time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if id < lo || id > hi {
					t.Fatalf("%s: an ID handed out at %v, %d, lies outside Bounds(t, t+1ms) = [%d, %d]", l.Name, at, id, lo, hi)
				}
			}
			// And outside the bounds of the next tick on and the ticks before.
			next := l.TickTime(mustTick(t, l, at) + 1)
			if next.Before(l.Expires()) {
				lo2, _, err := l.Bounds(next, next.Add(time.Millisecond))
				if err != nil || ids[len(ids)-1] >= lo2 {
					t.Fatalf("%s: the ID %d of %v reaches into the next tick's bounds from %d (%v)", l.Name, ids[len(ids)-1], at, lo2, err)
				}
			}
		}
	}
}

func mustTick(t *testing.T, l Layout, at time.Time) int64 {
	tick, err := l.TickAt(at)
	if err != nil {
		t.Fatal(err)
	}
	return tick
}

// Bounds of any valid layout and any range: lo <= hi, both decode to ticks
// within the range's, and a time inside the range composes within them.
func FuzzBounds(f *testing.F) {
	f.Add(int64(time.Millisecond), uint(41), uint(10), uint(12), int64(1288834974657), int64(1700000000000), int64(5000), int64(99))
	f.Add(int64(10*time.Millisecond), uint(39), uint(16), uint(8), int64(1409529600000), int64(1409529600000), int64(1), int64(0))
	f.Add(int64(time.Second), uint(40), uint(10), uint(13), int64(0), int64(-5), int64(1<<40), int64(7))
	f.Fuzz(func(t *testing.T, unit int64, tb, nb, sb uint, epochMs, fromMs, spanMs, offMs int64) {
		l := Layout{Unit: time.Duration(unit), TimeBits: tb, NodeBits: nb, SeqBits: sb, Epoch: time.UnixMilli(epochMs)}
		if l.Validate(testNow) != nil || spanMs <= 0 || spanMs > 1<<50 || fromMs < -1<<50 || fromMs > 1<<50 {
			return
		}
		from := time.UnixMilli(fromMs)
		to := from.Add(time.Duration(min(spanMs, 1<<40)) * time.Millisecond)
		lo, hi, err := l.Bounds(from, to)
		if err != nil {
			if !errors.Is(err, ErrTimeOutOfRange) {
				t.Fatalf("Bounds error %v", err)
			}
			return
		}
		if lo < 0 || lo > hi || hi > l.MaxID() {
			t.Fatalf("Bounds(%v, %v) = %d, %d for %+v", from, to, lo, hi, l)
		}
		in := from.Add(time.Duration(offMs%max(1, min(spanMs, 1<<40))) * time.Millisecond)
		if offMs < 0 {
			in = from
		}
		tick, err := l.TickAt(in)
		if err != nil {
			return // the part of the range outside the layout
		}
		for _, p := range []Parts{{Tick: tick}, {Tick: tick, Node: l.MaxNode(), Seq: l.MaxSeq()}} {
			id, _ := l.Compose(p)
			if id < lo || id > hi {
				t.Fatalf("an ID of %v (tick %d) is %d, outside Bounds(%v, %v) = [%d, %d]", in, tick, id, from, to, lo, hi)
			}
		}
	})
}
