package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
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
		{&worker.ClockBehindError{Behind: 4*time.Minute + 59500*time.Millisecond}, service.CodeClockBackwards, 300},
		{&worker.PeerSkewError{Skew: 10 * time.Second, Peers: 2, Max: 5 * time.Second}, service.CodeClockSkew, 1},
		{fmt.Errorf("%w: lease expired", frond.ErrWorkerLost), service.CodeWorkerLost, 1},
	} {
		e := toAPIError(c.err)
		if e.status != http.StatusServiceUnavailable || e.Code != c.code || e.retry != c.retry || e.Message == c.err.Error() {
			t.Errorf("toAPIError(%v) = %+v, want 503 %s, Retry-After %d and a hint", c.err, e, c.code, c.retry)
		}
	}
}
