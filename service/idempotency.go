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
// memory is bounded by entries and by stored IDs, for the node and for each
// caller (its token when the server gave it out, else its address, the
// /64 of IPv6: callerScope): keys are the caller's own, and a caller's
// answers go first when it passes its bound, so that one caller cannot
// flush every other's (issue 69: 101 anonymous requests did); the oldest
// answers go first when the node's bound is reached (counted:
// frond_idempotency_evicted_total).
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
	// PerCaller is the share of MaxEntries and MaxIDs one caller's keys
	// may hold (a token the server gave out, or an address): zero means a
	// tenth of each.
	PerCallerEntries int
	PerCallerIDs     int64
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
	key   string
	scope string // the caller's (callerScope)
	gone  bool   // forgotten (dropEntry): skipped where it is still listed
	what  string // the request without its key: a reuse for another one is refused
	done  chan struct{}
	ans   Answer
	ok    bool  // ans is an answer to replay
	size  int64 // IDs and ranges held
	at    int64 // when the answer came (Unix ns); 0 while in flight
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
	callers map[string]*idemCaller // by scope: each caller's answers remembered
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
	if cfg.PerCallerEntries <= 0 {
		cfg.PerCallerEntries = max(cfg.MaxEntries/10, 1)
	}
	if cfg.PerCallerIDs <= 0 {
		cfg.PerCallerIDs = max(cfg.MaxIDs/10, 1)
	}
	return &idempotency{cfg: cfg, now: now, m: map[string]*idemEntry{}, callers: map[string]*idemCaller{}}
}

// idemCaller is one caller's remembered answers, oldest first.
type idemCaller struct {
	order []*idemEntry
	ids   int64
	live  int // entries of order not gone
}

// fingerprint is what must match for a key's answer to be given again.
func fingerprint(r Request) string {
	b := make([]byte, 0, 64)
	for _, s := range []string{r.Kind, r.Name, r.Form, r.Namespace, r.Prefix, r.Key, r.ShardKey} {
		b = append(append(b, s...), 0)
	}
	b = strconv.AppendInt(b, r.Count, 10)
	b = strconv.AppendInt(append(b, 0), int64(r.Version), 10)
	for _, f := range []bool{r.Ranges, r.Run, r.Lease, r.HasShard, r.Counters} {
		b = strconv.AppendBool(append(b, 0), f)
	}
	b = strconv.AppendInt(append(b, 0), r.Shard, 10)
	return string(b)
}

// do answers r (checked, with a key) from memory, or by take, remembered.
// A retry that arrives while the first request is still being served waits
// for its answer. take runs with a context that the caller's going away
// does not end (bounded by the service): a client that gave up waiting
// finds the IDs taken for it when it retries, instead of a gap.
func (d *idempotency) do(ctx context.Context, r Request, scope string, take func() (Answer, error)) (Answer, error) {
	if d.cfg.Window < 0 {
		return Answer{}, fmt.Errorf("%w: idempotency keys are turned off on this server (idempotency.window)", frond.ErrInvalidArgument)
	}
	// Keys are the caller's (scope): another caller can neither read nor
	// push out its answers.
	key := scope + "\x00" + r.IdempotencyKey
	what := fingerprint(r)
	for {
		d.mu.Lock()
		d.expireLocked()
		e := d.m[key]
		if e == nil {
			e = &idemEntry{key: key, scope: scope, what: what, done: make(chan struct{})}
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
	c := d.callers[e.scope]
	if c == nil {
		c = &idemCaller{}
		d.callers[e.scope] = c
	}
	for len(c.order) > 0 && c.order[0].gone { // forgotten by the node's bounds or window: oldest first
		c.order[0] = nil
		c.order = c.order[1:]
	}
	c.order = append(c.order, e)
	c.ids += e.size
	c.live++
	// The caller's own oldest first, past its share; then the node's.
	for c.live > 1 && (c.live > d.cfg.PerCallerEntries || c.ids > d.cfg.PerCallerIDs) {
		d.evicted.Add(1)
		d.dropEntry(c.oldest())
	}
	for len(d.order) > 0 && (len(d.m) > d.cfg.MaxEntries || d.ids > d.cfg.MaxIDs) {
		d.evicted.Add(1)
		d.dropLocked()
	}
	if len(d.order) > 2*len(d.m)+1024 {
		// Answers a caller's bound forgot stay listed until their window
		// ends: drop them from the list, or a caller asking fast would
		// grow it without bound.
		live := d.order[:0]
		for _, x := range d.order {
			if !x.gone {
				live = append(live, x)
			}
		}
		clear(d.order[len(live):])
		d.order = live
	}
}

// oldest is the caller's oldest answer still remembered.
func (c *idemCaller) oldest() *idemEntry {
	for c.order[0].gone {
		c.order[0] = nil
		c.order = c.order[1:]
	}
	return c.order[0]
}

// expireLocked forgets the answers whose window has ended.
func (d *idempotency) expireLocked() {
	now := d.now()
	for len(d.order) > 0 && now-d.order[0].at >= int64(d.cfg.Window) {
		d.dropLocked()
	}
}

// dropLocked forgets the oldest answer (those forgotten already are
// skipped).
func (d *idempotency) dropLocked() {
	e := d.order[0]
	d.order[0] = nil
	d.order = d.order[1:]
	if !e.gone {
		d.dropEntry(e)
	}
}

// dropEntry forgets an answer, wherever it is listed (the lists skip it).
func (d *idempotency) dropEntry(e *idemEntry) {
	e.gone = true
	if d.m[e.key] == e {
		delete(d.m, e.key)
	}
	d.ids -= e.size
	if c := d.callers[e.scope]; c != nil {
		c.ids -= e.size
		if c.live--; c.live == 0 {
			delete(d.callers, e.scope)
		}
	}
}

// IdempotencyStats returns the counters of idempotent requests.
func (s *Service) IdempotencyStats() IdempotencyStats {
	d := s.idem
	d.mu.Lock()
	defer d.mu.Unlock()
	return IdempotencyStats{Entries: len(d.m), IDs: d.ids, Replays: d.replays.Load(), Evicted: d.evicted.Load(), Conflict: d.refused.Load()}
}
