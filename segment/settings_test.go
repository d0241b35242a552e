package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/frond-id/frond"
)

func TestSettings_Validate(t *testing.T) {
	for _, s := range []Settings{{}, {Threshold: 1}, {FailFast: -1}, {FastSegment: time.Minute, SlowSegment: time.Minute}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, s := range []Settings{{Threshold: 2}, {Threshold: -0.5}, {MaxStep: -1}, {LoadTimeout: -time.Second},
		{FastSegment: -time.Minute}, {FastSegment: time.Hour, SlowSegment: time.Minute}, {RetryMin: time.Minute, RetryMax: time.Second}} {
		if err := s.Validate(); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("%+v: %v; want ErrInvalidArgument", s, err)
		}
	}
}
