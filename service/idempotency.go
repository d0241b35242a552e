package service

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// Idempotent requests: a request may carry a key of the client's choosing
// (Request.IdempotencyKey; HTTP's Idempotency-Key header, gRPC's
// idempotency-key metadata, RESP's IDEMPOTENCY-KEY option). A retry with the
// same key, on the same node, within the window after the first answer,
// gets that answer again instead of new IDs: a client whose answer was lost
// on the way loses no IDs and sees no duplicates in its own records. The
// memory is bounded by entries and by stored IDs; the oldest answers go
// first when a bound is reached (counted: frond_idempotency_evicted_total).
// A key used for a different request (other tag, count, form...) within
// the window is refused. Only successful answers are kept: a retry of a
// request that failed takes IDs anew.

// Idempotency configures the memory of idempotent requests.
type Idempotency struct {
	// Window is how long after its answer a request's key is remembered.
	// Zero means DefaultIdempotencyWindow; negative turns keys off (a
	// request with one is refused).
	Window time.Duration
	// MaxEntries bounds the keys remembered; zero means 100,000.
	MaxEntries int
	// MaxIDs bounds the IDs (or ranges) held by remembered answers; zero
	// means 1,000,000.
	MaxIDs int64
}

// DefaultIdempotencyWindow is Idempotency.Window's default.
const DefaultIdempotencyWindow = 5 * time.Minute

// MaxIdempotencyKey is the longest idempotency key, in bytes.
const MaxIdempotencyKey = 255

func checkIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKey {
		return fmt.Errorf("%w: idempotency key of %d bytes: at most %d", frond.ErrInvalidArgument, len(k), MaxIdempotencyKey)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: idempotency key: byte %d (%q) is not printable ASCII", frond.ErrInvalidArgument, i, c)
		}
	}
	return nil
}

type idemEntry struct {
	key  string
	what string // the request without its key: a reuse for another one is refused
	done chan struct{}
	ans  Answer
	ok   bool  // ans is an answer to replay
	size int64 // IDs and ranges held
	at   int64 // when the answer came (Unix ns); 0 while in flight
}

// IdempotencyStats are the counters of idempotent requests on this node.
type IdempotencyStats struct {
	Entries  int    `json:"entries"`  // keys remembered now
	IDs      int64  `json:"ids"`      // IDs and ranges they hold
	Replays  uint64 `json:"replays"`  // answers given again
	Evicted  uint64 `json:"evicted"`  // answers forgotten before their window ended (a bound was reached)
	Conflict uint64 `json:"conflict"` // keys refused because they came with another request
}

type idempotency struct {
	cfg     Idempotency
	now     func() int64
	mu      sync.Mutex
	m       map[string]*idemEntry
	order   []*idemEntry // by the time their answers came (FIFO)
	ids     int64
	replays atomic.Uint64
	evicted atomic.Uint64
	refused atomic.Uint64
}

func newIdempotency(cfg Idempotency, now func() int64) *idempotency {
	if cfg.Window == 0 {
		cfg.Window = DefaultIdempotencyWindow
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 100_000
	}
	if cfg.MaxIDs <= 0 {
		cfg.MaxIDs = 1_000_000
	}
	return &idempotency{cfg: cfg, now: now, m: map[string]*idemEntry{}}
}

// fingerprint is what must match for a key's answer to be given again.
func fingerprint(r Request) string {
	b := make([]byte, 0, 64)
	for _, s := range []string{r.Kind, r.Name, r.Form, r.Namespace, r.Prefix, r.Key} {
		b = append(append(b, s...), 0)
	}
	b = strconv.AppendInt(b, r.Count, 10)
	b = strconv.AppendInt(append(b, 0), int64(r.Version), 10)
	for _, f := range []bool{r.Ranges, r.Run, r.Lease} {
		b = strconv.AppendBool(append(b, 0), f)
	}
	return string(b)
}

// do answers r (checked, with a key) from memory, or by take, remembered.
// A retry that arrives while the first request is still being served waits
// for its answer. take runs with a context that the caller's going away
// does not end (bounded by the service): a client that gave up waiting
// finds the IDs taken for it when it retries, instead of a gap.
func (d *idempotency) do(ctx context.Context, r Request, take func() (Answer, error)) (Answer, error) {
	if d.cfg.Window < 0 {
		return Answer{}, fmt.Errorf("%w: idempotency keys are turned off on this server (idempotency.window)", frond.ErrInvalidArgument)
	}
	// Keys are the client's: scoped by the tag token, so that two callers
	// with different tokens cannot read each other's answers.
	key := r.Token + "\x00" + r.IdempotencyKey
	what := fingerprint(r)
	for {
		d.mu.Lock()
		d.expireLocked()
		e := d.m[key]
		if e == nil {
			e = &idemEntry{key: key, what: what, done: make(chan struct{})}
			d.m[key] = e
			d.mu.Unlock()
			a, err := take()
			d.finish(e, a, err)
			return a, err
		}
		d.mu.Unlock()
		if e.what != what {
			d.refused.Add(1)
			return Answer{}, fmt.Errorf("%w: idempotency key %s was used for a different request within %v: use a new key for a new request",
				frond.ErrInvalidArgument, Quote(r.IdempotencyKey), d.cfg.Window)
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		}
		if e.ok {
			d.replays.Add(1)
			a := e.ans
			a.Replayed = true
			if a.Request.Kind == "" { // else the first answer's, as fitted to the tag (takeTag)
				a.Request = r
			}
			return a, nil
		}
		// The first request failed, and its entry is gone: serve this one.
	}
}

func (d *idempotency) finish(e *idemEntry, a Answer, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer close(e.done)
	mine := d.m[e.key] == e
	if err != nil {
		if mine {
			delete(d.m, e.key)
		}
		return
	}
	e.ans, e.ok = a, true
	if !mine {
		return // evicted while in flight: answered once, not remembered
	}
	e.size = int64(len(a.Nums) + len(a.Strs) + len(a.Ranges))
	e.at = d.now()
	d.ids += e.size
	d.order = append(d.order, e)
	for len(d.order) > 0 && (len(d.m) > d.cfg.MaxEntries || d.ids > d.cfg.MaxIDs) {
		d.evicted.Add(1)
		d.dropLocked()
	}
}

// expireLocked forgets the answers whose window has ended.
func (d *idempotency) expireLocked() {
	now := d.now()
	for len(d.order) > 0 && now-d.order[0].at >= int64(d.cfg.Window) {
		d.dropLocked()
	}
}

// dropLocked forgets the oldest answer.
func (d *idempotency) dropLocked() {
	e := d.order[0]
	d.order[0] = nil
	d.order = d.order[1:]
	if d.m[e.key] == e {
		delete(d.m, e.key)
	}
	d.ids -= e.size
}

// IdempotencyStats returns the counters of idempotent requests.
func (s *Service) IdempotencyStats() IdempotencyStats {
	d := s.idem
	d.mu.Lock()
	defer d.mu.Unlock()
	return IdempotencyStats{Entries: len(d.m), IDs: d.ids, Replays: d.replays.Load(), Evicted: d.evicted.Load(), Conflict: d.refused.Load()}
}
