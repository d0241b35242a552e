package segment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/frond-id/frond"
)

// Engine hands out segment IDs for every tag of a store. It is safe for
// concurrent use. Tags need no registration: the first request for a tag
// loads its first segment; a tag the store does not know is not kept.
type Engine struct {
	store frond.SegmentStore
	cfg   Settings

	mu   sync.Mutex // guards writes to bufs
	bufs atomic.Pointer[map[string]*Buffer]

	ctx    context.Context // cancelled by Close: ends store calls
	cancel context.CancelFunc
	stop   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup
}

// New returns an engine over store.
func New(store frond.SegmentStore, s Settings) (*Engine, error) {
	cfg, err := s.normalize()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{store: store, cfg: cfg, ctx: ctx, cancel: cancel, stop: make(chan struct{})}
	m := map[string]*Buffer{}
	e.bufs.Store(&m)
	return e, nil
}

// Buffer returns the buffer of tag, creating it (without a store call) if
// needed. Hold on to it to skip the tag lookup on every call. It returns an
// error wrapping frond.ErrInvalidArgument for an invalid tag name.
func (e *Engine) Buffer(tag string) (*Buffer, error) {
	if b, ok := (*e.bufs.Load())[tag]; ok {
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
	old := *e.bufs.Load()
	if b, ok := old[tag]; ok {
		return b, nil
	}
	m := make(map[string]*Buffer, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	b := newBuffer(e, tag)
	m[tag] = b
	e.bufs.Store(&m)
	return b, nil
}

// remove drops b if it is still the buffer of its tag.
func (e *Engine) remove(b *Buffer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	old := *e.bufs.Load()
	if old[b.tag] != b {
		return
	}
	m := make(map[string]*Buffer, len(old))
	for k, v := range old {
		if k != b.tag {
			m[k] = v
		}
	}
	e.bufs.Store(&m)
}

// Forget drops the buffer of tag and the IDs it holds, so the next request
// reads the store afresh. Call it after deleting a tag.
func (e *Engine) Forget(tag string) {
	if b, ok := (*e.bufs.Load())[tag]; ok {
		b.mu.Lock()
		b.removed = true
		b.mu.Unlock()
		e.remove(b)
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
	bufs := *e.bufs.Load()
	out := make([]Stats, 0, len(bufs))
	for _, b := range bufs {
		out = append(out, b.Stats())
	}
	slices.SortFunc(out, func(a, b Stats) int { return strings.Compare(a.Tag, b.Tag) })
	return out
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
