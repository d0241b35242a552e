package worker

import (
	"fmt"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
)

// DefaultPersistEvery is Settings.PersistEvery's default: the reservation
// then runs 800 ms ahead, so a restart after kill -9 issues snowflake IDs
// again within a second, at 2.5 registry writes a second per node.
const DefaultPersistEvery = 400 * time.Millisecond

// Layout expiry (UidGenerator's default layout ran out in 2024 and handed
// out negative IDs: a node must say so long before, and refuse at the end).
const (
	// DefaultExpiryWarning is Settings.ExpiryWarning's default: five years.
	DefaultExpiryWarning = 5 * 365 * 24 * time.Hour
	// MinLayoutLife: a layout that runs out within it is refused.
	MinLayoutLife = 30 * 24 * time.Hour
)

// Settings configure an Issuer: the snowflake section of frond's
// configuration, one to one, and the clock. The zero value means the
// defaults.
type Settings struct {
	// Layout is the snowflake layout; the zero value means twitter.
	Layout snowflake.Layout
	// Datacenter is this node's datacenter, 0 to Layout.MaxDatacenter(): the
	// registry gives a worker ID within it (0 to Layout.MaxWorker()), and
	// the node field of its IDs is Layout.NodeOf(Datacenter, worker). Not 0
	// only with a layout that has datacenter bits.
	Datacenter int64
	// MaxBackward, MaxLead and RandomStart are the generator's clock policy
	// (see snowflake.Settings).
	MaxBackward time.Duration
	MaxLead     time.Duration
	RandomStart int64
	// PersistEvery is how often the registry records the time this node
	// may issue up to. Zero means DefaultPersistEvery. The reservation runs
	// 2 x PersistEvery (plus MaxLead) ahead of the clock: a restart after
	// kill -9 waits at most that long for its clock to pass it.
	PersistEvery time.Duration
	// StartupWait: when the clock is behind the last time recorded for the
	// worker ID by at most this much, New (and a re-acquisition) waits for
	// the clock to pass it; by more, the Issuer refuses IDs, saying by how
	// much, until the clock passes it. Zero means 2 x PersistEvery +
	// MaxLead + 1 s (covers a restart after a crash); negative never waits.
	StartupWait time.Duration
	// MaxPeerSkew: with a registry that sees its live peers
	// (frond.PeerClock), an Issuer whose clock is further than this from the
	// peers' average when it acquires a worker ID issues nothing until it is
	// within it (Leaf's design). Zero means 5 s; negative turns the check
	// off.
	MaxPeerSkew time.Duration
	// ExpiryWarning: when the layout's time field runs out within this
	// long, New warns and the "layout" check fails. Zero means
	// DefaultExpiryWarning; negative never warns. A layout that runs out
	// within MinLayoutLife is refused.
	ExpiryWarning time.Duration
	// RetryEvery is how often an Issuer without a usable worker ID
	// (registry unreachable, lease lost, clock far from its peers) tries
	// again. Zero means 1 s.
	RetryEvery time.Duration
	// Now is the clock of the generator and of the reservations, in
	// nanoseconds since the Unix epoch. Nil means snowflake.NewSystemClock.
	Now func() int64
	// Sleep waits while the clock catches up at start-up; nil means a timer
	// that Close (or New's context) interrupts. Tests inject one that moves
	// their clock.
	Sleep func(time.Duration)
}

// FieldError is an invalid setting: Field names it by its Go name
// ("PersistEvery", "Layout").
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// Validate checks s without a registry: the intervals, the layout and its
// life, and the generator's clock policy. Every error is a *FieldError.
func (s Settings) Validate() error {
	if s.PersistEvery < 0 {
		return &FieldError{"PersistEvery", fmt.Errorf("%w: persist interval %v is negative", frond.ErrInvalidArgument, s.PersistEvery)}
	}
	if s.RetryEvery < 0 {
		return &FieldError{"RetryEvery", fmt.Errorf("%w: retry interval %v is negative", frond.ErrInvalidArgument, s.RetryEvery)}
	}
	layout := s.layout()
	now := s.Now
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	// Field by field, so that an error names the field that caused it.
	for _, f := range []struct {
		field string
		g     snowflake.Settings
	}{
		{"Layout", snowflake.Settings{}},
		{"MaxBackward", snowflake.Settings{MaxBackward: s.MaxBackward}},
		{"MaxLead", snowflake.Settings{MaxLead: s.MaxLead}},
		{"RandomStart", snowflake.Settings{RandomStart: s.RandomStart}},
	} {
		f.g.Layout, f.g.Now = layout, now
		if _, err := snowflake.New(f.g); err != nil {
			return &FieldError{f.field, err}
		}
	}
	if err := checkLayoutLife(layout, time.Unix(0, now())); err != nil {
		return &FieldError{"Layout", err}
	}
	if s.Datacenter != 0 && layout.DatacenterBits == 0 {
		return &FieldError{"Datacenter", fmt.Errorf("%w: datacenter %d: the layout has no datacenter bits (set datacenter_bits, for example 5 of twitter's 10 node bits)", frond.ErrInvalidArgument, s.Datacenter)}
	}
	if s.Datacenter < 0 || s.Datacenter > layout.MaxDatacenter() {
		return &FieldError{"Datacenter", fmt.Errorf("%w: datacenter %d: 0 to %d with %d datacenter bits", frond.ErrInvalidArgument, s.Datacenter, layout.MaxDatacenter(), layout.DatacenterBits)}
	}
	return nil
}

func (s Settings) layout() snowflake.Layout {
	if s.Layout.Unit == 0 && s.Layout.TimeBits == 0 {
		l, _ := snowflake.Preset(snowflake.Twitter)
		return l
	}
	return s.Layout
}

// WithDefaults returns s with its zero values replaced by the defaults.
func (s Settings) WithDefaults() Settings {
	s.Layout = s.layout()
	if s.PersistEvery == 0 {
		s.PersistEvery = DefaultPersistEvery
	}
	if s.RetryEvery == 0 {
		s.RetryEvery = time.Second
	}
	if s.MaxPeerSkew == 0 {
		s.MaxPeerSkew = 5 * time.Second
	}
	if s.StartupWait == 0 {
		s.StartupWait = 2*s.PersistEvery + s.MaxLead + time.Second
	}
	if s.ExpiryWarning == 0 {
		s.ExpiryWarning = DefaultExpiryWarning
	}
	if s.Now == nil {
		s.Now = snowflake.NewSystemClock(0, 0).Now
	}
	return s
}

// maxBackward is the backward step the generator waits out.
func (s Settings) maxBackward() time.Duration {
	if s.MaxBackward == 0 {
		return snowflake.DefaultMaxBackward
	}
	return max(s.MaxBackward, 0)
}

// checkLayoutLife refuses a layout that runs out within MinLayoutLife.
func checkLayoutLife(l snowflake.Layout, now time.Time) error {
	if left := l.Expires().Sub(now); left < MinLayoutLife && left > 0 {
		return fmt.Errorf("%w: layout %s runs out on %s, in %s: configure a layout with a later epoch or more time bits (docs/configuration.md)",
			snowflake.ErrLayoutExpired, l.Name, l.Expires().UTC().Format(time.RFC3339), left.Round(time.Hour))
	}
	return nil
}
