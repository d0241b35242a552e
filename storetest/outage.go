package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
)

// OutageOpener opens a store that reaches its server through addr (a
// Proxy) and uses timeout for each call.
type OutageOpener func(t *testing.T, addr string, timeout time.Duration) frond.SegmentStore

// RunOutage checks a store whose server goes away mid-run: calls fail with
// ErrStoreUnavailable within the store's timeout (or the caller's deadline,
// whichever is first), nothing is half-applied, and the store recovers on
// its own when the server is back.
func RunOutage(t *testing.T, target string, open OutageOpener) {
	const timeout = time.Second
	p := StartProxy(t, target)
	s := open(t, p.Addr(), timeout)
	t.Cleanup(func() { s.Close() })
	c, tag := testenv.Ctx(t), uniqueTag(t)
	must(s.CreateTag(c, frond.Tag{Name: tag, MaxID: 0, Step: 10}))(t)
	before := must(s.Allocate(c, tag, 0))(t)

	p.Cut()
	start := time.Now()
	_, err := s.Allocate(c, tag, 0)
	took := time.Since(start)
	wantErr(t, "Allocate with the server gone", err, frond.ErrStoreUnavailable)
	if took > 3*timeout+time.Second {
		t.Fatalf("Allocate took %v to fail; the store's timeout is %v", took, timeout)
	}
	// A caller's shorter deadline wins.
	short, cancel := context.WithTimeout(c, 200*time.Millisecond)
	start = time.Now()
	_, err = s.Tag(short, tag)
	cancel()
	wantErr(t, "Tag with a 200 ms deadline", err, frond.ErrStoreUnavailable)
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("Tag with a 200 ms deadline took %v", took)
	}
	step := int64(99)
	_, err = s.UpdateTag(c, tag, frond.TagUpdate{Step: &step})
	wantErr(t, "UpdateTag with the server gone", err, frond.ErrStoreUnavailable)

	p.Restore()
	var after frond.Allocation
	deadline := time.Now().Add(30 * time.Second)
	for {
		after, err = s.Allocate(c, tag, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, frond.ErrStoreUnavailable) || time.Now().After(deadline) {
			t.Fatalf("no recovery after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The requests during the outage never reached the server: nothing was
	// applied, so the next segment follows the last one exactly.
	if after.Start != before.End {
		t.Fatalf("after the outage %+v, before %+v: a request was half-applied or a range lost", after.Range, before.Range)
	}
	if got := must(s.Tag(c, tag))(t); got.Step != 10 || got.MaxID != after.End {
		t.Fatalf("tag after the outage: %+v", got)
	}
}
