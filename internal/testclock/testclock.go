// Package testclock is a manual wall clock in nanoseconds for tests: the
// form snowflake.Settings.Now and service.Config.Now take. Tests move it
// with Add instead of sleeping.
package testclock

import (
	"sync"
	"time"
)

// Clock is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	ns int64
}

// New returns a clock set to t.
func New(t time.Time) *Clock { return &Clock{ns: t.UnixNano()} }

// Now returns the time in nanoseconds since the Unix epoch.
func (c *Clock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns
}

// Add moves the clock by d (negative: back).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.ns += int64(d)
	c.mu.Unlock()
}
