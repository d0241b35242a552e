package service

import (
	"fmt"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
)

// ConfigError is an invalid Config. Fields names the fields at fault by
// their Go path: "PersistEvery", "Segment.Threshold", "Serials[pay].Step",
// "Forms[order]"; a configuration loader maps them back to its own keys.
type ConfigError struct {
	Fields []string
	Err    error
}

func (e *ConfigError) Error() string { return strings.Join(e.Fields, ", ") + ": " + e.Err.Error() }

// Unwrap returns the engine's error.
func (e *ConfigError) Unwrap() error { return e.Err }

func configError(err error, fields ...string) error { return &ConfigError{Fields: fields, Err: err} }

// Validate runs the checks of New that need no store and no registry: the
// intervals, the layout and the snowflake clock policy (snowflake.New), the
// segment settings (segment.Settings.Validate), the serials, the
// obfuscation key and width, and the forms. Every error is a *ConfigError.
// New calls it; so does configuration checking, before anything starts.
func (c Config) Validate() error {
	if c.PersistEvery < 0 {
		return configError(fmt.Errorf("%w: persist interval %v is negative", frond.ErrInvalidArgument, c.PersistEvery), "PersistEvery")
	}
	if c.RetryEvery < 0 {
		return configError(fmt.Errorf("%w: retry interval %v is negative", frond.ErrInvalidArgument, c.RetryEvery), "RetryEvery")
	}
	if c.Layout.Unit == 0 && c.Layout.TimeBits == 0 {
		c.Layout, _ = snowflake.Preset(snowflake.Twitter)
	}
	now := c.Now
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	// Field by field, so that an error names the field that caused it.
	flake := []struct {
		field string
		s     snowflake.Settings
	}{
		{"Layout", snowflake.Settings{}},
		{"MaxBackward", snowflake.Settings{MaxBackward: c.MaxBackward}},
		{"MaxLead", snowflake.Settings{MaxLead: c.MaxLead}},
		{"RandomStart", snowflake.Settings{RandomStart: c.RandomStart}},
	}
	for _, f := range flake {
		f.s.Layout, f.s.Now = c.Layout, now
		if _, err := snowflake.New(f.s); err != nil {
			return configError(err, f.field)
		}
	}
	seg := c.Segment
	segs := []struct {
		fields []string
		s      segment.Settings
	}{
		{[]string{"Segment.Threshold"}, segment.Settings{Threshold: seg.Threshold}},
		{[]string{"Segment.FastSegment", "Segment.SlowSegment"}, segment.Settings{FastSegment: seg.FastSegment, SlowSegment: seg.SlowSegment}},
		{[]string{"Segment.MaxStep"}, segment.Settings{MaxStep: seg.MaxStep}},
		{[]string{"Segment.LoadTimeout"}, segment.Settings{LoadTimeout: seg.LoadTimeout}},
		{[]string{"Segment.RetryMin", "Segment.RetryMax"}, segment.Settings{RetryMin: seg.RetryMin, RetryMax: seg.RetryMax}},
		{[]string{"Segment.FailFast"}, segment.Settings{FailFast: seg.FailFast}},
		{[]string{"Segment"}, seg},
	}
	for _, f := range segs {
		if err := f.s.Validate(); err != nil {
			return configError(err, f.fields...)
		}
	}
	if c.ObfuscationWidth != 0 {
		if err := idfmt.CheckWidth(idfmt.SchemeSplitmix, c.ObfuscationWidth); err != nil {
			return configError(err, "ObfuscationWidth")
		}
	}
	if _, err := c.obfuscationPerms(); err != nil {
		return err
	}
	if err := checkLayoutLife(c.Layout, time.Unix(0, now())); err != nil {
		return configError(err, "Layout")
	}
	for token, tags := range c.Tokens {
		field := "Tokens[" + token + "]"
		if strings.TrimSpace(token) == "" {
			return configError(fmt.Errorf("%w: an empty token", frond.ErrInvalidArgument), field)
		}
		if len(tags) == 0 {
			return configError(fmt.Errorf("%w: a token that allows no tag", frond.ErrInvalidArgument), field)
		}
		for _, tag := range tags {
			if err := frond.ValidateTagName(tag); err != nil {
				return configError(err, field)
			}
		}
	}
	s := &Service{cfg: c}
	return s.initKinds()
}

// Layout expiry (UidGenerator's default layout ran out in 2024 and handed
// out negative IDs: a node must say so long before, and refuse at the end).
const (
	// DefaultExpiryWarning is Config.ExpiryWarning's default: five years.
	DefaultExpiryWarning = 5 * 365 * 24 * time.Hour
	// MinLayoutLife: a layout that runs out within it is refused.
	MinLayoutLife = 30 * 24 * time.Hour
)

// checkLayoutLife refuses a layout that runs out within MinLayoutLife.
func checkLayoutLife(l snowflake.Layout, now time.Time) error {
	if l.Unit == 0 && l.TimeBits == 0 {
		l, _ = snowflake.Preset(snowflake.Twitter)
	}
	if left := l.Expires().Sub(now); left < MinLayoutLife && left > 0 {
		return fmt.Errorf("%w: layout %s runs out on %s, in %s: configure a layout with a later epoch or more time bits (docs/configuration.md)",
			snowflake.ErrLayoutExpired, l.Name, l.Expires().UTC().Format(time.RFC3339), left.Round(time.Hour))
	}
	return nil
}

// layoutCheck is /readyz's "layout" check: failed when the layout runs out
// within ExpiryWarning.
func (s *Service) layoutCheck() Check {
	l := s.cfg.Layout
	exp := l.Expires().UTC()
	left := exp.Sub(time.Unix(0, s.now()))
	c := Check{Name: "layout", OK: true, Detail: fmt.Sprintf("%s runs out on %s", l.Name, exp.Format("2006-01-02"))}
	if warn := s.expiryWarning(); warn > 0 && left < warn {
		c.OK = false
		c.Detail = fmt.Sprintf("the snowflake layout %s runs out on %s, in %d days: plan a layout with a later epoch before then",
			l.Name, exp.Format("2006-01-02"), int(left.Hours()/24))
	}
	return c
}

func (s *Service) expiryWarning() time.Duration {
	if s.cfg.ExpiryWarning == 0 {
		return DefaultExpiryWarning
	}
	return s.cfg.ExpiryWarning
}
