package snowflake

import (
	"sync/atomic"
	"time"
)

// DefaultResync is how often the system clock re-reads the wall clock.
const DefaultResync = 10 * time.Millisecond

// SystemClock reads the wall clock in nanoseconds since the Unix epoch at
// half the cost of time.Now: it reads the monotonic clock (one vDSO call) and
// adds it to a wall-clock anchor that it renews every resync interval. A
// wall-clock step (NTP, an operator, a VM migration) therefore shows up
// within the resync interval, and the generator's clock policy handles it as
// it would handle a direct read. Between anchors the reading advances at the
// monotonic rate, which NTP slews exactly as it slews the wall clock.
//
// Offset shifts every reading (frond's FROND_TEST_CLOCK_OFFSET test seam).
type SystemClock struct {
	resync int64
	offset atomic.Int64
	anchor atomic.Pointer[clockAnchor]
}

type clockAnchor struct {
	wall int64     // wall clock at mono, ns since Unix epoch, offset applied
	mono time.Time // carries the monotonic reading
}

// NewSystemClock returns a clock that renews its wall-clock anchor every
// resync (DefaultResync if resync <= 0) and adds offset to every reading.
func NewSystemClock(resync, offset time.Duration) *SystemClock {
	if resync <= 0 {
		resync = DefaultResync
	}
	c := &SystemClock{resync: int64(resync)}
	c.offset.Store(int64(offset))
	c.renew()
	return c
}

func (c *SystemClock) renew() int64 {
	n := time.Now()
	a := &clockAnchor{wall: n.UnixNano() + c.offset.Load(), mono: n}
	c.anchor.Store(a)
	return a.wall
}

// SetOffset changes the offset; the next reading shows it (a test seam: a
// clock stepped at run time).
func (c *SystemClock) SetOffset(d time.Duration) {
	c.offset.Store(int64(d))
	c.renew()
}

// Now returns the wall clock in nanoseconds since the Unix epoch.
func (c *SystemClock) Now() int64 {
	a := c.anchor.Load()
	if el := int64(time.Since(a.mono)); el >= 0 && el < c.resync {
		return a.wall + el
	}
	return c.renew()
}
