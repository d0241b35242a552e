package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/frond-id/frond"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/segment"
)

// Next returns the next segment ID of tag from the client's lease. It makes
// a network call only when both leased ranges are used up (the next lease
// is fetched in the background before that); see Tag to skip the tag
// lookup too.
//
// Two kinds of tag cannot be leased, and the server says so at the first
// lease; from then on every ID of the tag is one call to a server:
//   - a sequence tag (its IDs linearizable across nodes);
//   - a tag with a configured form (forms: in the server's configuration,
//     docs/kinds.md#forms-across-protocols): a lease is plain numbers, the
//     form is the server's. Next answers the IDs of a numeric form (opaque,
//     mist);
//     of a text form (opaque62, base62, base32) it returns an error of
//     frond.ErrFormNotCarried: use NextStrings.
func (c *Client) Next(ctx context.Context, tag string) (int64, error) {
	if !c.isUnleased(tag) {
		id, err := c.engine.Next(ctx, tag)
		if err == nil || !c.markUnleased(tag, err) { // nil first: the hot path skips errors.Is
			return id, err
		}
	}
	ids, err := c.unleased(ctx, tag, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// How the IDs of a tag that cannot be leased are asked for.
const (
	viaRanges = 1 // a sequence tag: ranges of plain numbers, call by call
	viaForm   = 2 // a tag with a configured form: IDs in the form, call by call
)

// isUnleased reports whether tag is known not to be leasable: one atomic
// load while none is (small enough to be inlined on the hot path).
func (c *Client) isUnleased(tag string) bool {
	return c.unleasedSeen.Load() && c.via(tag) != 0
}

// via is how tag's IDs are asked for when it cannot be leased (0: it can).
func (c *Client) via(tag string) int {
	v, _ := c.unleasedTags.Load(tag)
	n, _ := v.(int)
	return n
}

// markUnleased remembers tag as one that cannot be leased, when err (of a
// lease) says so, and reports whether it did.
func (c *Client) markUnleased(tag string, err error) bool {
	switch {
	case errors.Is(err, frond.ErrNotLeasable):
		c.markVia(tag, viaRanges)
	case errors.Is(err, frond.ErrFormNotCarried):
		c.markVia(tag, viaForm)
	default:
		return false
	}
	return true
}

func (c *Client) markVia(tag string, via int) {
	c.unleasedTags.Store(tag, via)
	c.unleasedSeen.Store(true)
}

// unleased asks a server for n IDs of a tag that cannot be leased, now.
func (c *Client) unleased(ctx context.Context, tag string, n int64) ([]int64, error) {
	if c.via(tag) == viaForm {
		return c.formNumbers(ctx, tag, n)
	}
	rs, err := c.direct(ctx, tag, n)
	if errors.Is(err, frond.ErrFormNotCarried) {
		// A sequence tag given a form since it was marked: by form now.
		c.markVia(tag, viaForm)
		return c.formNumbers(ctx, tag, n)
	}
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, n)
	for _, r := range rs {
		ids = r.Append(ids)
	}
	return ids, nil
}

// direct asks a server for n IDs of a sequence tag, now, as ranges.
func (c *Client) direct(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	var out *frondv1.Ranges
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSegmentRanges(ctx, &frondv1.NextSegmentRangesRequest{Tag: tag, N: n})
		return err
	})
	if err != nil {
		return nil, err
	}
	rs := make([]frond.Range, 0, len(out.GetRanges()))
	for _, r := range out.GetRanges() {
		rs = append(rs, frond.Range{Start: r.GetStart(), End: r.GetEnd(), Stride: r.GetStride()})
	}
	if len(rs) == 0 || rs[0].Len() < 1 {
		return nil, fmt.Errorf("%w: tag %q: the server answered no ID", frond.ErrStoreUnavailable, tag)
	}
	return rs, nil
}

// segmentIDs asks a server for n IDs of tag in its configured form, now;
// numbers: only as numbers (a text form is refused before any ID is
// taken).
func (c *Client) segmentIDs(ctx context.Context, tag string, n int64, numbers bool) (*frondv1.IDs, error) {
	var out *frondv1.IDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: tag, N: n, Numbers: numbers})
		return err
	})
	if err != nil {
		return nil, err
	}
	if got := max(len(out.GetIds()), len(out.GetIdStrs())); int64(got) != n {
		return nil, fmt.Errorf("%w: tag %q: the server answered %d IDs of %d", frond.ErrStoreUnavailable, tag, got, n)
	}
	return out, nil
}

// formNumbers asks a server for n IDs of a tag whose configured form is
// numeric (opaque); the server refuses a text form (form_not_carried,
// pointing to NextStrings) before it takes any ID.
func (c *Client) formNumbers(ctx context.Context, tag string, n int64) ([]int64, error) {
	out, err := c.segmentIDs(ctx, tag, n, true)
	if err != nil {
		return nil, err
	}
	if len(out.GetIds()) == 0 { // a server from before NextSegmentRequest.numbers
		return nil, fmt.Errorf("%w: tag %q answers in form %q, which is text: Next and NextN answer numbers; use NextStrings",
			frond.ErrFormNotCarried, tag, out.GetForm())
	}
	return out.GetIds(), nil
}

// NextStrings returns n segment IDs of tag as text, in the tag's
// configured form (docs/kinds.md#forms-across-protocols), or in decimal
// for a tag without one. It is one call to a server: the IDs of a tag with
// a text form (opaque62, base62, base32) are asked for this way.
func (c *Client) NextStrings(ctx context.Context, tag string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: n %d: at least 1", frond.ErrInvalidArgument, n)
	}
	out, err := c.segmentIDs(ctx, tag, int64(n), false)
	if err != nil {
		return nil, err
	}
	if strs := out.GetIdStrs(); len(strs) > 0 {
		return strs, nil
	}
	strs := make([]string, len(out.GetIds()))
	for i, id := range out.GetIds() {
		strs[i] = strconv.FormatInt(id, 10)
	}
	return strs, nil
}

// NextN returns n segment IDs of tag, in order (of a tag with a numeric
// configured form, in that form: see Next).
func (c *Client) NextN(ctx context.Context, tag string, n int) ([]int64, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: n %d: at least 1", frond.ErrInvalidArgument, n)
	}
	if !c.isUnleased(tag) {
		rs, err := c.engine.NextN(ctx, tag, int64(n))
		if err == nil || !c.markUnleased(tag, err) {
			if err != nil {
				return nil, err
			}
			ids := make([]int64, 0, n)
			for _, r := range rs {
				ids = r.Append(ids)
			}
			return ids, nil
		}
	}
	return c.unleased(ctx, tag, int64(n))
}

// NextRanges returns n segment IDs of tag as ranges. Ranges are plain
// numbers: a tag with a configured form refuses them
// (frond.ErrFormNotCarried).
func (c *Client) NextRanges(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: n %d: at least 1", frond.ErrInvalidArgument, n)
	}
	if !c.isUnleased(tag) {
		rs, err := c.engine.NextN(ctx, tag, n)
		if err == nil || !c.markUnleased(tag, err) {
			return rs, err
		}
	}
	return c.direct(ctx, tag, n)
}

// Tag is a handle on one tag's lease: its Next skips the tag lookup, for
// the hottest loops. Of a tag that cannot be leased (see Client.Next), it
// asks a server for every ID.
type Tag struct {
	b    *segment.Buffer
	c    *Client
	name string
}

// Tag returns the handle of tag (no network call).
func (c *Client) Tag(tag string) (*Tag, error) {
	b, err := c.engine.Buffer(tag)
	if err != nil {
		return nil, err
	}
	return &Tag{b: b, c: c, name: tag}, nil
}

// Next returns the tag's next ID.
func (t *Tag) Next(ctx context.Context) (int64, error) {
	if !t.c.isUnleased(t.name) {
		id, err := t.b.Next(ctx)
		if err == nil || !t.c.markUnleased(t.name, err) { // nil first: the hot path skips errors.Is
			return id, err
		}
	}
	return t.c.Next(ctx, t.name)
}

// NextRanges returns n IDs of the tag as ranges.
func (t *Tag) NextRanges(ctx context.Context, n int64) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: n %d: at least 1", frond.ErrInvalidArgument, n)
	}
	if !t.c.isUnleased(t.name) {
		rs, err := t.b.NextN(ctx, n)
		if err == nil || !t.c.markUnleased(t.name, err) {
			return rs, err
		}
	}
	return t.c.direct(ctx, t.name, n)
}

// leaser is the segment engine's store: an allocation is a range leased
// from a server (NextSegmentRanges). A lease that comes as several ranges
// (the server's segment ended within it) is handed to the engine one range
// at a time.
type leaser struct {
	c *Client
	// counters: a lease of a tag's counters (NextShard); bits holds each
	// tag's shard bits as its last lease said (tag -> int).
	counters bool
	bits     sync.Map
	lastBits atomic.Pointer[tagBits] // the last lease's, read first
	mu       sync.Mutex
	pending  map[string][]frond.Range // leased, not yet given to the engine
	last     map[string]int64         // per tag, the end of the highest range leased
}

// maxBehind bounds the leases in a row that lie wholly below the IDs
// already handed out (Options.Unordered) before Allocate gives up.
const maxBehind = 16

// maxRangesRequest is the most IDs the server gives in one ranges request.
const maxRangesRequest = 1_000_000

func (l *leaser) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	o := l.c.o
	if step <= 0 {
		step = o.MinLease
	}
	step = min(max(step, o.MinLease), o.MaxLease)
	if r, ok := l.pop(tag); ok {
		return frond.Allocation{Range: r, Step: o.MinLease}, nil
	}
	n := step
	for range maxBehind {
		var out *frondv1.Ranges
		err := l.c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
			var err error
			out, err = ids.NextSegmentRanges(ctx, &frondv1.NextSegmentRangesRequest{Tag: tag, N: n, Lease: true, Counters: l.counters})
			return err
		})
		if err != nil {
			return frond.Allocation{}, err
		}
		if l.counters {
			l.bits.Store(tag, int(out.GetShardBits()))
			l.lastBits.Store(&tagBits{tag, int(out.GetShardBits())})
		}
		queued, behind := l.push(tag, out.GetRanges())
		if queued {
			r, _ := l.pop(tag)
			return frond.Allocation{Range: r, Step: o.MinLease}, nil
		}
		// The whole lease lay below the IDs already handed out (this server
		// had them buffered when another one served us): ask for what lies
		// between as well, so that a few calls pass it.
		n = min(step+behind, maxRangesRequest)
	}
	return frond.Allocation{}, fmt.Errorf("%w: tag %q: %d leases in a row, the last of %d IDs, lay below the IDs this client handed out: "+
		"the servers' stores interleave (a set of stores, whose IDs do not increase across stores); set Options.Unordered if IDs need not increase per client",
		frond.ErrStoreUnavailable, tag, maxBehind, n)
}

// push queues the ranges of a lease; unless Unordered, ranges below the
// highest leased are skipped. It reports whether any was queued and, when
// none was, how far below the highest leased the lease ended.
func (l *leaser) push(tag string, rs []*frondv1.Range) (queued bool, behind int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	top := int64(0)
	for _, r := range rs {
		x := frond.Range{Start: r.GetStart(), End: r.GetEnd(), Stride: r.GetStride()}
		if x.Len() < 1 {
			continue
		}
		top = max(top, x.End)
		if !l.c.o.Unordered && x.Start < l.last[tag] {
			continue
		}
		l.pending[tag] = append(l.pending[tag], x)
		l.last[tag] = max(l.last[tag], x.End)
		queued = true
	}
	if !queued {
		behind = max(l.last[tag]-top, 0)
	}
	return queued, behind
}

func (l *leaser) pop(tag string) (frond.Range, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.pending[tag]
	if len(q) == 0 {
		return frond.Range{}, false
	}
	r := q[0]
	if len(q) == 1 {
		delete(l.pending, tag)
	} else {
		l.pending[tag] = q[1:]
	}
	return r, true
}
