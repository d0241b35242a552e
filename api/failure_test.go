package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/worker"
)

// One classification for every protocol: the code, the message with its
// hint, and the retry time.
func TestFail(t *testing.T) {
	for _, tc := range []struct {
		err   error
		code  string
		hint  string
		retry time.Duration
	}{
		{fmt.Errorf("load: %w", frond.ErrTagNotFound), frond.CodeTagNotFound, "create the tag first", 0},
		{fmt.Errorf("%w: n", frond.ErrInvalidArgument), frond.CodeInvalidArgument, "fix the request", 0},
		{fmt.Errorf("db: %w", frond.ErrStoreUnavailable), frond.CodeStoreUnavailable, "check the segment store", time.Second},
		{&worker.ClockBehindError{Behind: 2300 * time.Millisecond}, frond.CodeClockBackwards, "check the clock", 2300 * time.Millisecond},
		{errors.New("boom"), frond.CodeInternal, "report this", 0},
		{&Error{Code: frond.CodeUnauthorized, Msg: "needs the token"}, frond.CodeUnauthorized, "", 0},
	} {
		f := Fail(tc.err)
		if f.Code != tc.code || !strings.HasPrefix(f.Message, tc.err.Error()) || !strings.Contains(f.Message, tc.hint) || f.RetryAfter != tc.retry {
			t.Errorf("Fail(%v) = %+v, want code %s, hint %q, retry %v", tc.err, f, tc.code, tc.hint, tc.retry)
		}
	}
	if s := (Failure{RetryAfter: 2300 * time.Millisecond}).RetrySeconds(); s != 3 {
		t.Errorf("RetrySeconds of 2.3 s = %d, want 3", s)
	}
	if s := (Failure{RetryAfter: time.Millisecond}).RetrySeconds(); s != 1 {
		t.Errorf("RetrySeconds of 1 ms = %d, want 1", s)
	}
	if s := (Failure{}).RetrySeconds(); s != 0 {
		t.Errorf("RetrySeconds of none = %d", s)
	}
}

func TestTokenOK(t *testing.T) {
	if !TokenOK("", "") || !TokenOK("", "anything") {
		t.Error("no token configured must let everyone in")
	}
	if !TokenOK("s3cret", "s3cret") || TokenOK("s3cret", "") || TokenOK("s3cret", "s3cre") || TokenOK("s3cret", "s3cret ") {
		t.Error("a configured token must match exactly")
	}
}

// Issue 58: an unknown keyed sequence space says to create the space, not
// a tag.
func TestFail_SpaceNotFoundHint(t *testing.T) {
	f := Fail(fmt.Errorf("seq: %w", keyseq.SpaceNotFound("msgs")))
	if f.Code != frond.CodeTagNotFound || !strings.Contains(f.Message, "frond space create msgs") || strings.Contains(f.Message, "create the tag") {
		t.Fatalf("%+v", f)
	}
}
