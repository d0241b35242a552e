package httpapi

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/worker"
)

// The worker and clock errors: 503 with a hint and a Retry-After that
// covers the wait.
func TestToAPIError_WorkerAndClock(t *testing.T) {
	for _, c := range []struct {
		err   error
		code  string
		retry int
	}{
		{&worker.ClockBehindError{Behind: 4*time.Minute + 59500*time.Millisecond}, frond.CodeClockBackwards, 300},
		{&worker.PeerSkewError{Skew: 10 * time.Second, Peers: 2, Max: 5 * time.Second}, frond.CodeClockSkew, 1},
		{fmt.Errorf("%w: lease expired", frond.ErrWorkerLost), frond.CodeWorkerLost, 1},
	} {
		e := toAPIError(c.err)
		if e.status != http.StatusServiceUnavailable || e.Code != c.code || e.retry != c.retry || e.Message == c.err.Error() {
			t.Errorf("toAPIError(%v) = %+v, want 503 %s, Retry-After %d and a hint", c.err, e, c.code, c.retry)
		}
	}
}

// docs/api.md's table of error codes gives every code, each with the status
// statusOf answers: a new code is documented or this fails.
func TestErrorCodes_Documented(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // code -> status cell
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\|").FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	for _, c := range frond.ErrorCodes() {
		cell, ok := rows[c.Name]
		if !ok {
			t.Errorf("docs/api.md has no row for %s", c.Name)
			continue
		}
		if want := strconv.Itoa(statusOf(c.Name)); !strings.HasPrefix(cell, want) {
			t.Errorf("docs/api.md: %s answers %s, the table says %q", c.Name, want, cell)
		}
	}
}
