package segment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// Engine hands out segment IDs for every tag of a store. It is safe for
// concurrent use. Tags need no registration: the first request for a tag
// loads its first segment.
//
// What a client sends cannot make the engine grow without bound: a buffer
// joins the engine only once its tag's first segment has loaded (a tag the
// store does not know, or a first load that fails, leaves nothing behind: no
// buffer, no retrying goroutine, no statistics); at most MaxPending tags
// load their first segment at once; and buffers idle for IdleAfter are
// dropped (their unused IDs are skipped, as at a restart).
type Engine struct {
	store Allocator
	cfg   Settings

	// The buffers whose first segment loaded: read is an immutable map, the
	// lock-free fast path; buffers promoted since it was built wait in dirty
	// until enough lookups missed read to pay for a new copy (a copy per new
	// tag would be quadratic in the number of tags).
	read atomic.Pointer[map[string]*Buffer]

	mu        sync.Mutex            // guards dirty, misses, pending; taken after a Buffer's mu, never before
	dirty     map[string]*Buffer    // promoted, not yet in read
	misses    int                   // lookups found in dirty since read was built
	pending   map[string]*Buffer    // buffers whose first segment has not loaded yet
	firstFail atomic.Int64          // when a first load last failed on an outage (Clock, ns)
	firstErr  atomic.Pointer[error] // and why: a first load refused at once says it (store_lost_data is not store_unavailable)
	rebuilds  atomic.Int64          // copies of the read map made (tests)
	retired   atomic.Int64          // IDs handed out by dropped buffers
	seen      atomic.Int64          // the highest Overview.Issued answered

	ctx    context.Context // cancelled by Close: ends store calls
	cancel context.CancelFunc
	stop   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// Allocator is what the engine needs of a store: frond.SegmentStore's
// Allocate, with its contract. A store is one; so is frond's client, whose
// allocations are ranges leased from frond servers.
type Allocator interface {
	Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error)
}

// New returns an engine over store.
func New(store Allocator, s Settings) (*Engine, error) {
	cfg, err := s.normalize()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{store: store, cfg: cfg, ctx: ctx, cancel: cancel, stop: make(chan struct{}), pending: map[string]*Buffer{}, dirty: map[string]*Buffer{}}
	e.read.Store(&map[string]*Buffer{})
	if cfg.IdleAfter > 0 {
		e.wg.Add(1)
		go e.every(cfg.IdleAfter/4, e.Sweep)
	}
	e.wg.Add(1)
	go e.every(RateWindow, e.Sample)
	return e, nil
}

// Settings returns the engine's settings, the defaults filled in.
func (e *Engine) Settings() Settings { return e.cfg }

// Buffer returns the buffer of tag, creating it (without a store call) if
// needed. Hold on to it to skip the tag lookup on every call; a handle whose
// buffer was dropped (idle, or the tag deleted) goes through the engine. It
// returns an error wrapping frond.ErrInvalidArgument for an invalid tag
// name, and one wrapping frond.ErrStoreUnavailable when MaxPending tags are
// loading their first segment.
func (e *Engine) Buffer(tag string) (*Buffer, error) {
	if b, ok := (*e.read.Load())[tag]; ok {
		return b, nil
	}
	if err := frond.ValidateTagName(tag); err != nil {
		return nil, err
	}
	if e.closed.Load() {
		return nil, fmt.Errorf("segment engine: %w", frond.ErrClosed)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := (*e.read.Load())[tag]; ok {
		return b, nil
	}
	if b, ok := e.dirty[tag]; ok {
		if e.misses++; e.misses > 64+len(*e.read.Load())/64 {
			e.rebuildLocked("") // amortized: at most 64 entries copied per miss
		}
		return b, nil
	}
	if b := e.pending[tag]; b != nil {
		return b, nil
	}
	if len(e.pending) >= e.cfg.MaxPending {
		return nil, fmt.Errorf("%w: %d tags are loading their first segment: try again", frond.ErrStoreUnavailable, len(e.pending))
	}
	if e.cfg.Admit != nil {
		if err := e.cfg.Admit(tag); err != nil {
			return nil, err
		}
	}
	b := newBuffer(e, tag)
	e.pending[tag] = b
	return b, nil
}

// promote makes b, whose first segment loaded, the buffer of its tag. The
// caller holds b.mu.
func (e *Engine) promote(b *Buffer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending[b.tag] == b {
		delete(e.pending, b.tag)
		e.dirty[b.tag] = b
	}
}

// rebuildLocked builds a new read map from read and dirty, without the
// buffer of drop (if any), and empties dirty.
func (e *Engine) rebuildLocked(drop string) {
	old := *e.read.Load()
	m := make(map[string]*Buffer, len(old)+len(e.dirty))
	for k, v := range old {
		m[k] = v
	}
	for k, v := range e.dirty {
		m[k] = v
	}
	delete(m, drop)
	e.read.Store(&m)
	clear(e.dirty)
	e.misses = 0
	e.rebuilds.Add(1)
}

// unmap takes bs out of the lookup maps with one rebuild of the read map.
// A lookup of their tags afterwards makes a new buffer; calls through a
// handle still reach them until they are dropped.
func (e *Engine) unmap(bs []*Buffer) {
	if len(bs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	inRead := false
	read := *e.read.Load()
	for _, b := range bs {
		if e.dirty[b.tag] == b {
			delete(e.dirty, b.tag)
		}
		if e.pending[b.tag] == b {
			delete(e.pending, b.tag)
		}
		inRead = inRead || read[b.tag] == b
	}
	if !inRead {
		return
	}
	m := make(map[string]*Buffer, len(read)+len(e.dirty))
	for k, v := range read {
		m[k] = v
	}
	for k, v := range e.dirty {
		m[k] = v
	}
	for _, b := range bs {
		if m[b.tag] == b {
			delete(m, b.tag)
		}
	}
	e.read.Store(&m)
	clear(e.dirty)
	e.misses = 0
	e.rebuilds.Add(1)
}

// buffers returns every buffer whose first segment loaded.
func (e *Engine) buffers() []*Buffer {
	e.mu.Lock()
	defer e.mu.Unlock()
	read := *e.read.Load()
	out := make([]*Buffer, 0, len(read)+len(e.dirty))
	for _, b := range read {
		out = append(out, b)
	}
	for _, b := range e.dirty {
		out = append(out, b)
	}
	return out
}

// remove drops b, pending or not, if it is still the buffer of its tag.
// The caller holds b.mu.
func (e *Engine) remove(b *Buffer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending[b.tag] == b {
		delete(e.pending, b.tag)
	}
	if e.dirty[b.tag] == b {
		delete(e.dirty, b.tag)
	}
	if (*e.read.Load())[b.tag] == b {
		// A dropped buffer must leave the fast path at once: calls through
		// it go to the engine, which must not hand it out again.
		e.rebuildLocked(b.tag)
	}
}

// Forget drops the buffer of tag and the IDs it holds, so the next request
// reads the store afresh. Call it after deleting a tag.
func (e *Engine) Forget(tag string) {
	b, ok := (*e.read.Load())[tag]
	if !ok {
		e.mu.Lock()
		b, ok = e.dirty[tag]
		if !ok {
			b, ok = e.pending[tag] // loading its first segment: not kept either
		}
		e.mu.Unlock()
	}
	if ok {
		b.drop()
	}
}

// Sweep drops the buffers that handed out no ID for IdleAfter (their unused
// IDs are skipped, as at a restart), and the pending ones created that long
// ago that are not loading. The engine runs it every IdleAfter/4; tests call
// it with their clock.
func (e *Engine) Sweep() {
	now := e.cfg.Clock.Now()
	var idle []*Buffer
	for _, b := range e.buffers() {
		if b.idle(now) {
			idle = append(idle, b)
		}
	}
	// Out of the lookup maps all at once (one copy of the read map, not one
	// per buffer: thousands of per-period serial tags going idle together
	// would make that quadratic), then dropped, each finding itself gone.
	e.unmap(idle)
	for _, b := range idle {
		b.drop()
		if e.cfg.OnEvict != nil {
			e.cfg.OnEvict(b.tag)
		}
	}
	e.mu.Lock()
	pending := make([]*Buffer, 0, len(e.pending))
	for _, b := range e.pending {
		pending = append(pending, b)
	}
	e.mu.Unlock()
	for _, b := range pending {
		b.mu.Lock()
		stale := !b.filling && now.Sub(b.created) >= e.cfg.IdleAfter
		b.mu.Unlock()
		if stale {
			b.drop()
		}
	}
}

// every runs f every d until Close (the sweep, the rate samples).
func (e *Engine) every(d time.Duration, f func()) {
	defer e.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			f()
		}
	}
}

// RateWindow is the window of a tag's rate (Stats.Rate): the engine samples
// every tag's count of IDs handed out this often, so a rate is the same
// whoever looks and whenever (a dashboard opened now, a scrape), and an idle
// tag's falls to 0 within one window.
const RateWindow = 10 * time.Second

// Sample measures every tag's rate over the time since the last sample.
// The engine runs it every RateWindow; tests call it with their clock.
func (e *Engine) Sample() {
	now := e.cfg.Clock.Now()
	for _, b := range e.buffers() {
		b.sample(now)
	}
}

// Next returns the next ID of tag; see Buffer.Next for the errors.
func (e *Engine) Next(ctx context.Context, tag string) (int64, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return 0, err
	}
	return b.Next(ctx)
}

// NextMapped is Next with the mapping of the ID's segment; see
// Buffer.NextMapped.
func (e *Engine) NextMapped(ctx context.Context, tag string) (int64, string, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return 0, "", err
	}
	return b.NextMapped(ctx)
}

// NextNMapped is NextN with the mapping of the IDs' segments; see
// Buffer.NextNMapped.
func (e *Engine) NextNMapped(ctx context.Context, tag string, n int64) ([]frond.Range, string, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return nil, "", err
	}
	return b.NextNMapped(ctx, n)
}

// NextRunMapped is NextRun with the mapping of the segment; see
// Buffer.NextRunMapped.
func (e *Engine) NextRunMapped(ctx context.Context, tag string, n int64) (frond.Range, string, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return frond.Range{}, "", err
	}
	return b.NextRunMapped(ctx, n)
}

// NextRun returns up to n IDs of tag from one segment; see Buffer.NextRun.
func (e *Engine) NextRun(ctx context.Context, tag string, n int64) (frond.Range, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return frond.Range{}, err
	}
	return b.NextRun(ctx, n)
}

// NextN returns n IDs of tag as ranges; see Buffer.NextN.
func (e *Engine) NextN(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	b, err := e.Buffer(tag)
	if err != nil {
		return nil, err
	}
	return b.NextN(ctx, n)
}

// Stats returns the statistics of every tag in use, ordered by tag.
func (e *Engine) Stats() []Stats {
	bufs := e.buffers()
	out := make([]Stats, 0, len(bufs))
	for _, b := range bufs {
		out = append(out, b.Stats())
	}
	slices.SortFunc(out, func(a, b Stats) int { return strings.Compare(a.Tag, b.Tag) })
	return out
}

// Overview is every tag in use at once, for monitoring.
type Overview struct {
	// Issued is how many IDs the engine has handed out since it started,
	// those of dropped buffers included: a counter that never goes down,
	// unlike the sum of Tags' Issued.
	Issued int64
	// Tags are the statistics of every tag in use, in no order.
	Tags []Stats
	// Runway is the engine's Settings.Runway: a tag whose horizon is
	// shorter is low.
	Runway time.Duration
}

// Overview returns every tag's statistics and the engine's count of IDs.
func (e *Engine) Overview() Overview {
	o := Overview{Issued: e.retired.Load(), Runway: e.cfg.Runway} // before the maps: see Buffer.dropLocked
	bufs := e.buffers()
	o.Tags = make([]Stats, 0, len(bufs))
	for _, b := range bufs {
		st := b.Stats()
		o.Issued += st.Issued
		o.Tags = append(o.Tags, st)
	}
	// A buffer dropped while this ran (out of the maps, its IDs not yet
	// retired; or retired after retired was read) is missing from the sum:
	// the true count only grows, so the highest answered is kept.
	o.Issued = HighWater(&e.seen, o.Issued)
	return o
}

// HighWater raises mark to v if v is higher and returns the mark: a count
// read in parts that may briefly miss some, answered as a counter that
// never goes down and never overstates (each part is a true lower bound).
func HighWater(mark *atomic.Int64, v int64) int64 {
	for {
		m := mark.Load()
		if v <= m {
			return m
		}
		if mark.CompareAndSwap(m, v) {
			return v
		}
	}
}

// goFill starts b.fill unless the engine is closed.
func (e *Engine) goFill(b *Buffer) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		b.fill()
	}()
	return true
}

// Close stops background loads and waits for them to end. Later calls that
// need the store fail with frond.ErrClosed; IDs already in a buffer are still
// handed out. Close does not close the store.
func (e *Engine) Close() error {
	e.mu.Lock()
	already := e.closed.Swap(true)
	e.mu.Unlock()
	if already {
		return nil
	}
	close(e.stop)
	e.cancel()
	e.wg.Wait()
	return nil
}
