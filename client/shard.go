package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/frond-id/frond"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/segment"
)

// NextShard returns the next ID of tag, a tag with shard bits ("mapping":
// "shard:K", docs/kinds.md#shard-bits-gene-ids), on shard: the tag's next
// counter, leased as Next's IDs are (a network call only when the lease
// runs out), moved up by K with shard below, counter << K | shard. So
// id % 2^K is shard, and the IDs of every shard are unique across clients
// and servers (the counter's uniqueness). A shard past 2^K-1, and a tag
// without shard bits, are frond.ErrInvalidArgument; Next refuses a tag
// with them (its IDs need a shard).
//
// The lease is of the tag's counters (NextSegmentRanges with counters):
// a server before shard bits refuses it with frond.ErrFormNotCarried.
func (c *Client) NextShard(ctx context.Context, tag string, shard int64) (int64, error) {
	if shard < 0 || shard >= 1<<frond.MaxShardBits {
		return 0, fmt.Errorf("%w: shard %d: from 0 to 2^K-1", frond.ErrInvalidArgument, shard)
	}
	return c.nextShard(ctx, tag, shard, "")
}

// NextForKey is NextShard on the shard of key (a user, a tenant, a shop):
// the low K bits of frond.KeyHash(key), frond.ShardOf, the hash every
// server and client computes alike, so that the rows of one key and the
// rows whose IDs carry it land on one shard.
func (c *Client) NextForKey(ctx context.Context, tag, key string) (int64, error) {
	if key == "" {
		return 0, fmt.Errorf("%w: an empty shard key", frond.ErrInvalidArgument)
	}
	return c.nextShard(ctx, tag, 0, key)
}

func (c *Client) nextShard(ctx context.Context, tag string, shard int64, key string) (int64, error) {
	if c.shardUnleasedSeen.Load() {
		if _, ok := c.shardUnleased.Load(tag); ok {
			return c.shardDirect(ctx, tag, shard, key)
		}
	}
	eng, err := c.counterEngine()
	if err != nil {
		return 0, err
	}
	n, err := eng.Next(ctx, tag)
	if errors.Is(err, frond.ErrNotLeasable) {
		// A sequence tag with shard bits: its IDs are taken call by call,
		// in the order the servers answer them.
		c.shardUnleased.Store(tag, true)
		c.shardUnleasedSeen.Store(true)
		return c.shardDirect(ctx, tag, shard, key)
	}
	if err != nil {
		return 0, err
	}
	// The bits the tag's lease said (a tag's shard bits never change: the
	// stores refuse a change of mapping to or from them). Of a tag without
	// them the counter is a plain ID, skipped: a gap of one.
	bits, _ := c.shardBits(tag)
	switch {
	case bits == 0:
		return 0, noShardBits(tag)
	case key != "":
		shard = frond.ShardOf(key, bits)
	case shard >= 1<<bits:
		return 0, fmt.Errorf("%w: shard %d: tag %q has %d shard bits (0 to %d)", frond.ErrInvalidArgument, shard, tag, bits, 1<<bits-1)
	}
	if n < 0 || n > math.MaxInt64>>bits {
		return 0, fmt.Errorf("%w: tag %q: counter %d does not fit below its %d shard bits: use a new tag", frond.ErrTagExhausted, tag, n, bits)
	}
	return n<<bits | shard, nil
}

// shardDirect asks a server for the next ID of tag on shard (or key's),
// now: a tag whose counters are not leased.
func (c *Client) shardDirect(ctx context.Context, tag string, shard int64, key string) (int64, error) {
	r := &frondv1.NextSegmentRequest{Tag: tag, N: 1, Numbers: true, ShardKey: key}
	if key == "" {
		r.Shard = &shard
	}
	var out *frondv1.IDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSegment(ctx, r)
		return err
	})
	if err != nil {
		return 0, err
	}
	if len(out.GetIds()) != 1 {
		return 0, fmt.Errorf("%w: tag %q: the server answered %d IDs of 1", frond.ErrStoreUnavailable, tag, len(out.GetIds()))
	}
	return out.GetIds()[0], nil
}

func noShardBits(tag string) error {
	return fmt.Errorf("%w: tag %q has no shard bits: ask with Next", frond.ErrInvalidArgument, tag)
}

// shardBits is the shard bits of tag as its last lease of counters said,
// and whether one said.
func (c *Client) shardBits(tag string) (int, bool) {
	if p := c.counterLease.lastBits.Load(); p != nil && p.tag == tag {
		return p.bits, true // the tag of the last lease: no map lookup
	}
	v, ok := c.counterLease.bits.Load(tag)
	bits, _ := v.(int)
	return bits, ok
}

// tagBits is a tag's shard bits as a lease said.
type tagBits struct {
	tag  string
	bits int
}

// counterEngine is the engine of leases of counters, started at the
// first NextShard: a tag's counters are leased apart from Next's leases
// (which a tag with shard bits refuses).
func (c *Client) counterEngine() (*segment.Engine, error) {
	c.countersOnce.Do(func() {
		c.counterLease = c.newLeaser(true)
		c.counters, c.countersErr = c.newEngine(c.counterLease)
	})
	return c.counters, c.countersErr
}

// shardState is a Client's part for tags with shard bits.
type shardState struct {
	// The tags with shard bits whose counters are not leased (sequence
	// tags): asked for call by call; the flag gates the lookup.
	shardUnleasedSeen atomic.Bool
	shardUnleased     sync.Map
	countersOnce      sync.Once
	counterLease      *leaser
	counters          *segment.Engine
	countersErr       error
}
