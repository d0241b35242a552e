package worker

import (
	"errors"
	"fmt"
	"time"

	"github.com/frond-id/frond/snowflake"
)

// ErrClockSkew means the node's clock is too far from its live peers'
// average for it to issue snowflake IDs. *PeerSkewError unwraps to it.
var ErrClockSkew = errors.New("clock far from the peers' clocks")

// ClockBehindError is the answer while the clock is behind the last time
// recorded for the worker ID (by an earlier run of this node or an earlier
// holder of the ID) by more than a backward step that is waited out. IDs
// resume by themselves once the clock passes that time. It unwraps to
// snowflake.ErrClockBackwards.
type ClockBehindError struct {
	Behind     time.Duration // how far the clock is behind LastIssued
	LastIssued time.Time
	Worker     int64
}

func (e *ClockBehindError) Error() string {
	return fmt.Sprintf("the clock is %v behind the last time worker ID %d was used (%s): refusing snowflake IDs until the clock passes it, "+
		"which would otherwise risk duplicate IDs. Fix the clock (NTP) or wait; segment IDs are not affected",
		e.Behind.Round(time.Millisecond), e.Worker, e.LastIssued.UTC().Format(time.RFC3339Nano))
}

// Unwrap returns snowflake.ErrClockBackwards.
func (e *ClockBehindError) Unwrap() error { return snowflake.ErrClockBackwards }

// PeerSkewError says that this node's clock was too far from the average of
// its live peers' clocks when it acquired its worker ID. It unwraps to
// ErrClockSkew.
type PeerSkewError struct {
	Skew  time.Duration // this node's clock minus the peers' average
	Peers int
	Max   time.Duration
}

func (e *PeerSkewError) Error() string {
	dir := "ahead of"
	if e.Skew < 0 {
		dir = "behind"
	}
	return fmt.Sprintf("this node's clock is %v %s the average of its %d live peers (at most %v allowed): refusing snowflake IDs until it is within; fix the clock (NTP)",
		e.Skew.Abs().Round(time.Millisecond), dir, e.Peers, e.Max)
}

// Unwrap returns ErrClockSkew.
func (e *PeerSkewError) Unwrap() error { return ErrClockSkew }
