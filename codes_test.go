package frond_test

import (
	"regexp"
	"testing"

	"github.com/frond-id/frond"
)

// Every code is described once, with a snake_case name, and LookupCode
// finds it; the retryable ones are those a client retries (on another
// node, or later).
func TestErrorCodes(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for _, c := range frond.ErrorCodes() {
		if !snake.MatchString(c.Name) || seen[c.Name] {
			t.Errorf("code %q: not snake_case, or described twice", c.Name)
		}
		seen[c.Name] = true
		if got, ok := frond.LookupCode(c.Name); !ok || got.Name != c.Name {
			t.Errorf("LookupCode(%q) = %+v, %v", c.Name, got, ok)
		}
	}
	if _, ok := frond.LookupCode("no_such_code"); ok {
		t.Error("LookupCode found a code that does not exist")
	}
	for _, name := range []string{frond.CodeStoreUnavailable, frond.CodeClockBackwards, frond.CodeUnreserved, frond.CodeWorkerLost,
		frond.CodeNoWorkerID, frond.CodeUnavailable, frond.CodeClockSkew} {
		if c, _ := frond.LookupCode(name); !c.Retryable {
			t.Errorf("%s is not retryable", name)
		}
	}
	for _, name := range []string{frond.CodeInvalidArgument, frond.CodeTagNotFound, frond.CodeInternal, frond.CodeRateLimited, frond.CodeForbidden} {
		if c, _ := frond.LookupCode(name); c.Retryable {
			t.Errorf("%s is retryable", name)
		}
	}
}
