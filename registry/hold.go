package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/frond-id/frond"
)

// Hold is a node's side of a worker ID it holds (one claim): the ID, the
// latest time known to be recorded for it, and the Lost channel of
// frond.Worker. The backends that keep a lease by renewing it themselves
// (Redis, SQL) run the renewal with Renew.
type Hold struct {
	ID int64
	// Saved is the latest time known to be recorded for the ID, in
	// nanoseconds (0: none).
	Saved int64
	// Token names the claim (random): what the backend records as the ID's
	// live holder and last claim (Slot.Holder, Slot.Claim), and what the
	// local record keeps so that a restart continues the claim.
	Token string
	// Sent is when the claim was sent, on the monotonic clock: a lease
	// renewed by the node runs from no earlier.
	Sent time.Time
	// Ext is the backend's own state of the claim (a lease ID, node
	// versions).
	Ext any

	lost   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	ctx    context.Context    // ends at Stop; nil before the first Go
	cancel context.CancelFunc // ends ctx
	wg     sync.WaitGroup     // the goroutines started with Go
}

// NewHold returns the hold of id whose last recorded time is saved (ns).
func NewHold(id, saved int64) *Hold {
	return &Hold{ID: id, Saved: saved, lost: make(chan struct{})}
}

// NewToken returns a random token that names one holding of an ID.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MarkLost closes Lost (once).
func (h *Hold) MarkLost() { h.once.Do(func() { close(h.lost) }) }

// IsLost reports whether Lost is closed.
func (h *Hold) IsLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// Worker is the frond.Worker of the hold.
func (h *Hold) Worker() frond.Worker {
	w := frond.Worker{ID: h.ID, Lost: h.lost, Claim: h.Token}
	if h.Saved != 0 {
		w.LastIssued = time.Unix(0, h.Saved)
	}
	return w
}

// Go runs f in a goroutine with a context that ends at Stop, which waits
// for f to return: what keeps a claim alive (a keep-alive, a watch).
func (h *Hold) Go(f func(ctx context.Context)) {
	h.mu.Lock()
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancel(context.Background())
	}
	ctx := h.ctx
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		f(ctx)
	}()
}

// Renew starts renewing the lease in the background, every ttl/3, until
// Stop. renew extends the lease; it reports false when the lease is no
// longer this holder's (taken, expired). Lost is closed then, or when no
// renewal succeeded for ttl counted on the monotonic clock from when the
// last successful one was sent (sent, for the claim itself): the server
// extends the lease from when it runs the renewal, so the holder gives up
// no later than the server would let the lease expire. Each call of renew
// gets a context ending at the earlier of timeout and that bound.
func (h *Hold) Renew(sent time.Time, ttl, timeout time.Duration, log *slog.Logger, renew func(ctx context.Context) (bool, error)) {
	h.Go(func(ctx context.Context) { h.renew(ctx, sent.Add(ttl), ttl, timeout, log, renew) })
}

func (h *Hold) renew(ctx context.Context, valid time.Time, ttl, timeout time.Duration, log *slog.Logger, renew func(context.Context) (bool, error)) {
	every := max(ttl/3, time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		if !sent.Before(valid) {
			log.Warn("worker ID lost: its lease was not renewed for the lease TTL", "worker", h.ID, "lease_ttl", ttl)
			h.MarkLost()
			return
		}
		deadline := valid
		if d := sent.Add(timeout); d.Before(deadline) {
			deadline = d
		}
		c, cancel := context.WithDeadline(ctx, deadline)
		ok, err := renew(c)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && ok:
			valid = sent.Add(ttl)
			t.Reset(every)
		case err == nil:
			log.Warn("worker ID lost: its lease expired or another node took it", "worker", h.ID)
			h.MarkLost()
			return
		default:
			log.Warn("worker registry: cannot renew the lease", "worker", h.ID, "err", err, "valid_for", time.Until(valid))
			t.Reset(max(min(every, time.Until(valid)), 0))
		}
	}
}

// Stop ends the goroutines started with Go (the renewal among them), waits
// until they have returned, and closes Lost.
func (h *Hold) Stop() {
	h.mu.Lock()
	if h.ctx == nil { // a Go after Stop runs with an ended context
		h.ctx, h.cancel = context.WithCancel(context.Background())
	}
	h.cancel()
	h.mu.Unlock()
	h.wg.Wait()
	h.MarkLost()
}
