package service

import (
	"errors"
	"fmt"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/worker"
)

// ConfigError is an invalid Config. Fields names the fields at fault by
// their Go path: "Snowflake.PersistEvery", "Segment.Threshold", "Serials[pay].Step",
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
// snowflake settings (worker.Settings.Validate), the
// segment settings (segment.Settings.Validate), the serials, the
// obfuscation key and width, and the forms. Every error is a *ConfigError.
// New calls it; so does configuration checking, before anything starts.
func (c Config) Validate() error {
	sf := c.Snowflake
	if sf.Now == nil {
		sf.Now = c.Now
	}
	if err := sf.Validate(); err != nil {
		var fe *worker.FieldError
		if errors.As(err, &fe) {
			return configError(fe.Err, "Snowflake."+fe.Field)
		}
		return configError(err, "Snowflake")
	}
	c.Snowflake = sf.WithDefaults() // the layout serials are checked against
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
