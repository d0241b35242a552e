package segment

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/frond-id/frond"
)

// Defaults, as in Leaf unless noted.
const (
	DefaultThreshold   = 0.1              // load the next segment once 10% of the current one is used
	DefaultFastSegment = 15 * time.Minute // a segment that lasted less doubles the step
	DefaultSlowSegment = 30 * time.Minute // one that lasted more halves it
	DefaultMaxStep     = 1_000_000
	DefaultLoadTimeout = 10 * time.Second       // frond: one store call
	DefaultRetryMin    = 100 * time.Millisecond // frond: first retry of a failed background load
	DefaultRetryMax    = 10 * time.Second       // frond: backoff cap
	DefaultFailFast    = time.Second            // frond: see Settings.FailFast
	DefaultIdleAfter   = time.Hour              // frond: see Settings.IdleAfter
	DefaultMaxPending  = 1024                   // frond: see Settings.MaxPending
	DefaultRunway      = 5 * time.Minute        // frond: see Settings.Runway
)

// Settings configure an Engine. The zero value means Leaf's behaviour.
type Settings struct {
	// Threshold is the fraction of the current segment used before the next
	// one is loaded in the background, in (0, 1]. Zero means 0.1.
	Threshold float64
	// FixedStep turns the adaptive step off: every segment has the tag's
	// configured step.
	FixedStep bool
	// FastSegment and SlowSegment drive the adaptive step: when the previous
	// segment lasted less than FastSegment the step doubles (up to MaxStep),
	// more than SlowSegment it halves (never below the tag's step). A load
	// after callers had to wait (both segments empty: the prefetch came too
	// late) doubles the step too, whatever the time (CosId's "hunger").
	// Zero means 15 and 30 minutes.
	FastSegment, SlowSegment time.Duration
	// MaxStep caps the adaptive step; a tag whose own step is larger keeps
	// its own. Zero means 1,000,000.
	MaxStep int64
	// LoadTimeout bounds one store call. Zero means 10 s.
	LoadTimeout time.Duration
	// RetryMin and RetryMax bound the exponential backoff between attempts
	// when a background load fails. Zero means 100 ms and 10 s.
	RetryMin, RetryMax time.Duration
	// FailFast: for this long after a failed load, a caller that finds both
	// buffers empty gets ErrStoreUnavailable at once instead of waiting on
	// the store again. Zero means 1 s; negative turns it off.
	FailFast time.Duration
	// IdleAfter: the buffer of a tag that handed out no ID for this long is
	// dropped, and its unused IDs skipped (as at a restart); the next request
	// loads a new segment. It bounds memory and metric series to the tags in
	// use (per-period serial tags among them). Zero means 1 hour; negative
	// keeps buffers forever (Leaf's behaviour).
	IdleAfter time.Duration
	// Runway is the store outage a tag's buffered IDs should outlast at its
	// rate: a tag whose IDs last less (Stats.Horizon) is low (Stats.Low),
	// which /metrics, the dashboard and /readyz show and an alert watches.
	// It changes no load: the step is sized for it (docs/operations.md).
	// Zero means 5 minutes; negative is refused.
	Runway time.Duration
	// MaxPending bounds the tags loading their first segment at once (each
	// a store call); past it a request for a tag not yet loaded gets
	// ErrStoreUnavailable. Zero means 1024.
	MaxPending int
	// Clock stamps loads and drives the adaptive step. Nil means the system clock.
	Clock frond.Clock
	// After returns a channel that fires after d; it paces retries. Nil means time.After.
	After func(d time.Duration) <-chan time.Time
	// Logger receives load failures and recoveries. Nil discards.
	Logger *slog.Logger
	// OnLoad, if set, is called after every store call with the tag, how
	// long the call took and its error (nil on success). Metrics use it. The
	// tag is empty for a failed first load: the tag may not exist, and a
	// label per made-up name would grow without bound.
	OnLoad func(tag string, took time.Duration, err error)
	// OnEvict, if set, is called with the tag of a buffer Sweep dropped.
	OnEvict func(tag string)
	// Admit, if set, is asked before a buffer is made for a tag (before its
	// first store call); its error is the caller's. The service refuses the
	// tags it knows to be sequence tags, so that a request that read a
	// tag's mode just before it changed cannot load a segment of it.
	Admit func(tag string) error
}

// Validate reports whether New would accept s (the rules of the fields'
// comments); it is what configuration checks call, so a rule is written once.
func (s Settings) Validate() error {
	_, err := s.normalize()
	return err
}

func (s Settings) normalize() (Settings, error) {
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if !(s.Threshold > 0 && s.Threshold <= 1) {
		return s, fmt.Errorf("%w: threshold %v: must be in (0, 1]", frond.ErrInvalidArgument, s.Threshold)
	}
	if s.FastSegment == 0 {
		s.FastSegment = DefaultFastSegment
	}
	if s.SlowSegment == 0 {
		s.SlowSegment = DefaultSlowSegment
	}
	if s.FastSegment < 0 || s.SlowSegment < s.FastSegment {
		return s, fmt.Errorf("%w: fast segment %v, slow segment %v: need 0 < fast <= slow", frond.ErrInvalidArgument, s.FastSegment, s.SlowSegment)
	}
	if s.MaxStep == 0 {
		s.MaxStep = DefaultMaxStep
	}
	if s.MaxStep < 1 {
		return s, fmt.Errorf("%w: max step %d", frond.ErrInvalidArgument, s.MaxStep)
	}
	if s.LoadTimeout == 0 {
		s.LoadTimeout = DefaultLoadTimeout
	}
	if s.RetryMin == 0 {
		s.RetryMin = DefaultRetryMin
	}
	if s.RetryMax == 0 {
		s.RetryMax = DefaultRetryMax
	}
	if s.LoadTimeout < 0 || s.RetryMin < 0 || s.RetryMax < s.RetryMin {
		return s, fmt.Errorf("%w: load timeout %v, retry %v..%v", frond.ErrInvalidArgument, s.LoadTimeout, s.RetryMin, s.RetryMax)
	}
	if s.FailFast == 0 {
		s.FailFast = DefaultFailFast
	}
	if s.IdleAfter == 0 {
		s.IdleAfter = DefaultIdleAfter
	}
	if s.Runway == 0 {
		s.Runway = DefaultRunway
	}
	if s.Runway < 0 {
		return s, fmt.Errorf("%w: runway %v: negative", frond.ErrInvalidArgument, s.Runway)
	}
	if s.MaxPending == 0 {
		s.MaxPending = DefaultMaxPending
	}
	if s.MaxPending < 0 {
		return s, fmt.Errorf("%w: max pending %d", frond.ErrInvalidArgument, s.MaxPending)
	}
	if s.Clock == nil {
		s.Clock = frond.SystemClock{}
	}
	if s.After == nil {
		s.After = time.After
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// nextStep applies the adaptive rule: prev is the step of the previous load,
// minStep the tag's configured step, lasted how long since that load.
func (s Settings) nextStep(prev, minStep int64, lasted time.Duration) int64 {
	step := max(prev, minStep)
	if s.FixedStep {
		return minStep
	}
	switch {
	case lasted < s.FastSegment:
		if step <= s.MaxStep/2 {
			step *= 2
		}
	case lasted < s.SlowSegment:
	default:
		if step/2 >= minStep {
			step /= 2
		}
	}
	return max(step, minStep)
}
