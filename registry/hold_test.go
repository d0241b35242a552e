package registry

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

var discard = slog.New(slog.DiscardHandler)

func lostWithin(t *testing.T, h *Hold, d time.Duration) {
	t.Helper()
	select {
	case <-h.Worker().Lost:
	case <-time.After(d):
		t.Fatalf("Lost not closed within %v", d)
	}
}

func TestHold_RenewKeepsUntilRefused(t *testing.T) {
	h := NewHold(7, 0)
	if w := h.Worker(); w.ID != 7 || !w.LastIssued.IsZero() {
		t.Fatalf("Worker() = %+v", w)
	}
	var calls, refuseAt atomic.Int64
	refuseAt.Store(1 << 62)
	// A TTL of 300 ms (renewals every 100 ms): with 30 ms, a stall of one
	// TTL under -race on a loaded 2-core CI machine lost the hold.
	h.Renew(time.Now(), 300*time.Millisecond, time.Second, discard, func(ctx context.Context) (bool, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("renew without a deadline")
		}
		return calls.Add(1) < refuseAt.Load(), nil
	})
	time.Sleep(1500 * time.Millisecond) // several TTLs
	if h.IsLost() || calls.Load() < 5 {
		t.Fatalf("lost %v after %d renewals", h.IsLost(), calls.Load())
	}
	refuseAt.Store(calls.Load() + 1)
	lostWithin(t, h, 3*time.Second)
	h.Stop()
}

func TestHold_LostWhenRenewalsFail(t *testing.T) {
	h := NewHold(1, 5)
	if w := h.Worker(); w.LastIssued.UnixNano() != 5 {
		t.Fatalf("LastIssued %v", w.LastIssued)
	}
	start := time.Now()
	h.Renew(start, 60*time.Millisecond, time.Second, discard, func(context.Context) (bool, error) {
		return false, errors.New("unreachable")
	})
	lostWithin(t, h, time.Second)
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Fatalf("lost after %v, before the TTL", el)
	}
	h.Stop()
}

func TestHold_StopClosesLost(t *testing.T) {
	h := NewHold(1, 0)
	h.Stop() // no renewal running
	if !h.IsLost() {
		t.Fatal("Stop did not close Lost")
	}
	h = NewHold(2, 0)
	h.Renew(time.Now(), time.Hour, time.Second, discard, func(context.Context) (bool, error) { return true, nil })
	h.Stop()
	h.Stop()
	if !h.IsLost() {
		t.Fatal("Stop did not close Lost")
	}
	if a, b := NewToken(), NewToken(); a == b || len(a) != 32 {
		t.Fatalf("tokens %q %q", a, b)
	}
}
