package snowflake

import (
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ErrTimeOutOfRange means a time lies outside what a layout's time field
// holds (before its epoch, or at or after Expires), or a time range is
// empty.
var ErrTimeOutOfRange = errors.New("time out of the snowflake layout's range")

// tickOf is floor((t - Epoch) / Unit), exact for any time (no Duration
// overflow: a layout of 1 s ticks spans millennia).
func (l Layout) tickOf(t time.Time) *big.Int {
	ns := new(big.Int).Mul(big.NewInt(t.Unix()-l.Epoch.Unix()), big.NewInt(int64(time.Second)))
	ns.Add(ns, big.NewInt(int64(t.Nanosecond()-l.Epoch.Nanosecond())))
	q, _ := new(big.Int).DivMod(ns, big.NewInt(int64(l.Unit)), new(big.Int)) // Euclidean: the floor, for a positive divisor
	return q
}

// TickAt is the tick an ID issued at t carries (the tick that holds t:
// floor((t - Epoch) / Unit)), or ErrTimeOutOfRange when t is before the
// epoch or at or after Expires.
func (l Layout) TickAt(t time.Time) (int64, error) {
	q := l.tickOf(t)
	if q.Sign() < 0 || !q.IsInt64() || q.Int64() > l.MaxTick() {
		return 0, fmt.Errorf("%w: %s is not between the epoch %s and the end %s of layout %s", ErrTimeOutOfRange,
			t.UTC().Format(time.RFC3339Nano), l.Epoch.UTC().Format(time.RFC3339Nano), l.Expires().Format(time.RFC3339Nano), l.name())
	}
	return q.Int64(), nil
}

func (l Layout) name() string {
	if l.Name == "" {
		return "custom"
	}
	return l.Name
}

// Bounds is the smallest and the largest ID of the layout issued at an
// instant in [from, to): lo the first tick's ID of node 0 and sequence 0,
// hi the last tick's of the largest node and sequence. Every ID a node
// issues at t lies within Bounds(t, t+d) for any d > 0 (its tick is
// TickAt(t)), so `WHERE id BETWEEN lo AND hi` holds every row created in
// the range; it may hold rows of the same first and last ticks created
// just outside it (a tick is the layout's resolution). A range that
// begins before the epoch or ends after Expires is cut to the layout's;
// one that holds none of its ticks, or with from not before to, is
// ErrTimeOutOfRange.
func (l Layout) Bounds(from, to time.Time) (lo, hi int64, err error) {
	if !from.Before(to) {
		return 0, 0, fmt.Errorf("%w: the range [%s, %s) is empty: from must be before to", ErrTimeOutOfRange,
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	}
	first, last := l.tickOf(from), l.tickOf(to.Add(-time.Nanosecond))
	maxTick := big.NewInt(l.MaxTick())
	if last.Sign() < 0 || first.Cmp(maxTick) > 0 {
		return 0, 0, fmt.Errorf("%w: no ID of layout %s has a time in [%s, %s): its IDs span %s to %s", ErrTimeOutOfRange, l.name(),
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), l.Epoch.UTC().Format(time.RFC3339Nano), l.Expires().Format(time.RFC3339Nano))
	}
	if first.Sign() < 0 {
		first.SetInt64(0)
	}
	if last.Cmp(maxTick) > 0 {
		last.Set(maxTick)
	}
	lo, _ = l.Compose(Parts{Tick: first.Int64()})
	hi, _ = l.Compose(Parts{Tick: last.Int64(), Node: l.MaxNode(), Seq: l.MaxSeq(), Shard: l.MaxShard()})
	return lo, hi, nil
}
