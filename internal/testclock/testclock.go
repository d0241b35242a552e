// Package testclock is frond's one manual clock for tests: a wall clock in
// nanoseconds (the form snowflake.Settings.Now, worker.Settings.Now and
// service.Config.Now take), as time.Time values (Wall: frond.Clock, a
// Guard's Now), and a Sleep that moves it (snowflake.Settings.Sleep).
// Tests move it with Add instead of sleeping.
package testclock

import (
	"sync"
	"time"
)

// Clock is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	ns      int64
	sleeps  int
	advance func(d time.Duration) time.Duration // Sleep's move; nil: d
	after   func()                              // called after each Sleep
}

// New returns a clock set to t.
func New(t time.Time) *Clock { return &Clock{ns: t.UnixNano()} }

// Now returns the time in nanoseconds since the Unix epoch.
func (c *Clock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns
}

// Time returns the time, in UTC.
func (c *Clock) Time() time.Time { return time.Unix(0, c.Now()).UTC() }

// Add moves the clock by d (negative: back).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.ns += int64(d)
	c.mu.Unlock()
}

// Sleep moves the clock by d, or by what OnSleep's advance returns, then
// calls OnSleep's after.
func (c *Clock) Sleep(d time.Duration) {
	c.mu.Lock()
	c.sleeps++
	if c.advance != nil {
		d = c.advance(d)
	}
	c.ns += int64(d)
	after := c.after
	c.mu.Unlock()
	if after != nil {
		after()
	}
}

// Sleeps counts the calls of Sleep.
func (c *Clock) Sleeps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sleeps
}

// OnSleep changes Sleep: advance (nil: d) says how far a Sleep of d moves
// the clock (0: time stands still; negative: it steps back), and after
// (nil: nothing) runs after each Sleep, without the clock's lock.
func (c *Clock) OnSleep(advance func(d time.Duration) time.Duration, after func()) {
	c.mu.Lock()
	c.advance, c.after = advance, after
	c.mu.Unlock()
}

// Wall is a Clock whose Now is a time.Time (frond.Clock).
type Wall struct{ *Clock }

// NewWall returns a Wall set to t.
func NewWall(t time.Time) Wall { return Wall{New(t)} }

// Now returns the time, in UTC.
func (w Wall) Now() time.Time { return w.Clock.Time() }
