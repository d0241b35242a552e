package snowflake

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
	"time"
)

// Errors of the snowflake package. ClockError unwraps to ErrClockBackwards.
var (
	// ErrInvalidLayout means a layout or a node ID failed validation.
	ErrInvalidLayout = errors.New("invalid snowflake layout")
	// ErrInvalidSettings means a generator setting other than the layout
	// is out of range.
	ErrInvalidSettings = errors.New("invalid snowflake settings")
	// ErrClockBackwards means the clock is behind the last timestamp the
	// generator issued, by more than it may wait out. See ClockError.
	ErrClockBackwards = errors.New("clock moved backwards")
	// ErrLayoutExpired means the layout's time field has run out: no ID can
	// be issued any more without reusing timestamps.
	ErrLayoutExpired = errors.New("snowflake layout time field exhausted")
	// ErrUnreserved means the next ID would carry a time later than the
	// limit set with Generator.SetLimit: the worker registry has not yet
	// recorded that time, so a crash could lead to reuse. Retry shortly.
	ErrUnreserved = errors.New("snowflake time not yet reserved in the worker registry")
	// ErrSealed means the generator was sealed (Seal): it issues no more IDs.
	ErrSealed = errors.New("snowflake generator stopped")
	// ErrInvalidID means an ID does not fit the layout (negative, or wider
	// than the layout's bits).
	ErrInvalidID = errors.New("invalid snowflake ID")
)

// Layout describes how a 63-bit ID is cut: from the top, TimeBits of ticks of
// Unit since Epoch, then NodeBits of worker ID, then SeqBits of sequence,
// then ShardBits of shard (none in the presets). The sign bit is always 0.
//
//	| 0 | time (TimeBits) | node (NodeBits) | sequence (SeqBits) | shard (ShardBits) |
//
// The node field may be split (seed 000's 5+5): its top DatacenterBits are
// the datacenter, the rest the worker within it.
//
//	node = | datacenter (DatacenterBits) | worker (NodeBits - DatacenterBits) |
type Layout struct {
	// Name is informational (presets have one; custom layouts may not).
	Name string
	// Unit is the length of one tick of the time field.
	Unit time.Duration
	// TimeBits, NodeBits and SeqBits add up to at most 63.
	TimeBits uint
	NodeBits uint
	SeqBits  uint
	// DatacenterBits of NodeBits, from the top, are the datacenter; 0 (the
	// presets) means the node field is all worker ID.
	DatacenterBits uint
	// ShardBits, the lowest bits, are the shard a caller names (a gene ID:
	// id % 2^ShardBits routes the row to its shard). The generator issues
	// its IDs with the shard 0 (the caller sets it: WithShard): the time,
	// node and sequence above keep the IDs of every node apart, whatever
	// shard each ID carries. 0 to MaxShardBits.
	ShardBits uint
	// Epoch is tick zero. It must be in the past and after 1970.
	Epoch time.Time
}

// Preset names.
const (
	Twitter      = "twitter"
	Leaf         = "leaf" // alias of twitter
	Sonyflake    = "sonyflake"
	UIDGenerator = "uid-generator"
	JavaScript   = "javascript"
	CosId        = "cosid"
)

// The epochs of the presets. Twitter's is Leaf's twepoch. UidGenerator's own
// epoch (2016-05-20) ran out in 2024 with 28 bits of seconds; frond's
// uid-generator preset starts on 2025-01-01 and lasts until 2033-07-05. Use a
// custom layout (for example 31 time bits) for a longer life.
var (
	TwitterEpoch      = time.UnixMilli(1288834974657).UTC()
	SonyflakeEpoch    = time.Date(2014, 9, 1, 0, 0, 0, 0, time.UTC)
	UIDGeneratorEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	JavaScriptEpoch   = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// CosIdEpoch is CosId's CosId.COSID_EPOCH, 1577203200000 ms.
	CosIdEpoch = time.UnixMilli(1577203200000).UTC()
)

func presetLayouts() []Layout {
	return []Layout{
		// Twitter and Leaf: 1+41+10+12, ms; 4,096 IDs per ms per node, until 2080.
		{Name: Twitter, Unit: time.Millisecond, TimeBits: 41, NodeBits: 10, SeqBits: 12, Epoch: TwitterEpoch},
		// Sonyflake: 39 bits of 10 ms, 16 node bits, 8 sequence bits; 25,600 IDs/s per node, until 2188.
		{Name: Sonyflake, Unit: 10 * time.Millisecond, TimeBits: 39, NodeBits: 16, SeqBits: 8, Epoch: SonyflakeEpoch},
		// Baidu UidGenerator: 1+28+22+13, seconds; 8,192 IDs/s per node, 4M workers, until 2033.
		{Name: UIDGenerator, Unit: time.Second, TimeBits: 28, NodeBits: 22, SeqBits: 13, Epoch: UIDGeneratorEpoch},
		// JavaScript-safe: 38 bits of 10 ms + 6 node + 9 sequence = 53 bits, so every ID
		// is below 2^53 (Number.MAX_SAFE_INTEGER); 51,200 IDs/s per node, 64 nodes, until 2112.
		{Name: JavaScript, Unit: 10 * time.Millisecond, TimeBits: 38, NodeBits: 6, SeqBits: 9, Epoch: JavaScriptEpoch},
		// CosId's MillisecondSnowflakeId (3.2.1): 1+41+10+12, ms, from 2019-12-24T16:00Z, until 2089;
		// with CosId's machine IDs (registry cosid+...), frond's nodes and CosId's share one ID space.
		{Name: CosId, Unit: time.Millisecond, TimeBits: 41, NodeBits: 10, SeqBits: 12, Epoch: CosIdEpoch},
	}
}

// Presets returns the built-in layouts.
func Presets() []Layout { return presetLayouts() }

// Preset returns the built-in layout of that name (case-insensitive; "leaf"
// is twitter, "js" is javascript).
func Preset(name string) (Layout, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case Leaf, "":
		n = Twitter
	case "js", "js53":
		n = JavaScript
	case "uidgenerator", "baidu":
		n = UIDGenerator
	}
	for _, l := range presetLayouts() {
		if l.Name == n {
			return l, nil
		}
	}
	names := make([]string, 0, 8)
	for _, l := range presetLayouts() {
		names = append(names, l.Name)
	}
	sort.Strings(names)
	return Layout{}, fmt.Errorf("%w: no preset %q (have %s)", ErrInvalidLayout, name, strings.Join(names, ", "))
}

// Validate checks the layout at time now: the bits add up to at most 63, the
// unit is between 1 microsecond and 1 day, the epoch is after 1970 and not
// after now, and the time field has not run out.
func (l Layout) Validate(now time.Time) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLayout, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Unit < time.Microsecond || l.Unit > 24*time.Hour:
		return bad("unit %v: must be between 1µs and 24h", l.Unit)
	case l.TimeBits < 1 || l.SeqBits < 1:
		return bad("time bits %d, sequence bits %d: each must be at least 1", l.TimeBits, l.SeqBits)
	case l.ShardBits > MaxShardBits:
		return bad("shard bits %d: at most %d", l.ShardBits, MaxShardBits)
	case l.TimeBits > 63 || l.NodeBits > 63 || l.SeqBits > 63 || l.Bits() > 63:
		return bad("time %d + node %d + sequence %d + shard %d bits = %d: at most 63 (the sign bit stays 0)",
			l.TimeBits, l.NodeBits, l.SeqBits, l.ShardBits, l.Bits())
	case l.SeqBits > 30:
		return bad("sequence bits %d: at most 30", l.SeqBits)
	case l.DatacenterBits > 0 && l.DatacenterBits >= l.NodeBits:
		return bad("datacenter bits %d: fewer than the node bits %d, so that each datacenter has worker IDs", l.DatacenterBits, l.NodeBits)
	case l.Epoch.Before(time.Unix(0, 0)):
		return bad("epoch %s: must not be before 1970", l.Epoch.Format(time.RFC3339))
	case l.Epoch.After(now):
		return bad("epoch %s is in the future (now %s)", l.Epoch.Format(time.RFC3339), now.Format(time.RFC3339))
	case !l.Expires().After(now):
		return fmt.Errorf("%w: time field of %d bits of %v from %s ran out on %s",
			ErrLayoutExpired, l.TimeBits, l.Unit, l.Epoch.Format(time.RFC3339), l.Expires().Format(time.RFC3339))
	}
	return nil
}

// Bits returns the number of bits the layout uses (at most 63).
func (l Layout) Bits() uint { return l.TimeBits + l.NodeBits + l.SeqBits + l.ShardBits }

// MaxShardBits is the most shard bits a layout has (frond.MaxShardBits, a
// tag's).
const MaxShardBits = 16

// MaxShard returns the largest shard; 0 without shard bits.
func (l Layout) MaxShard() int64 { return int64(1)<<l.ShardBits - 1 }

// WithShardBits is l with k of its sequence bits, the lowest, made shard
// bits (snowflake.shard_bits; the shard bits it had go back to the
// sequence first): the IDs keep their width and their time, and a node
// issues 2^k times fewer in a tick. At least one sequence bit is left.
func (l Layout) WithShardBits(k uint) (Layout, error) {
	seq := l.SeqBits + l.ShardBits
	if k > MaxShardBits || k >= seq {
		return l, fmt.Errorf("%w: shard bits %d: 0 to %d, fewer than the %d sequence bits of layout %s (at least one is left to the sequence)",
			ErrInvalidLayout, k, min(MaxShardBits, seq-1), seq, l.name())
	}
	l.SeqBits, l.ShardBits = seq-k, k
	return l, nil
}

// WithShard is id, an ID of the layout issued with the shard 0, with the
// shard s (0 to MaxShard) in its shard bits.
func (l Layout) WithShard(id, s int64) int64 { return id | s&l.MaxShard() }

// MaxNode returns the largest node ID.
func (l Layout) MaxNode() int64 { return int64(1)<<l.NodeBits - 1 }

// WorkerBits are the node field's bits below the datacenter's.
func (l Layout) WorkerBits() uint { return l.NodeBits - min(l.DatacenterBits, l.NodeBits) }

// MaxWorker returns the largest worker ID within a datacenter (MaxNode
// without datacenter bits).
func (l Layout) MaxWorker() int64 { return int64(1)<<l.WorkerBits() - 1 }

// MaxDatacenter returns the largest datacenter ID; 0 without datacenter bits.
func (l Layout) MaxDatacenter() int64 { return int64(1)<<l.DatacenterBits - 1 }

// NodeOf is the node field of a worker ID within a datacenter.
func (l Layout) NodeOf(datacenter, worker int64) int64 {
	return datacenter<<l.WorkerBits() | worker
}

// MaxSeq returns the largest sequence number in one tick.
func (l Layout) MaxSeq() int64 { return int64(1)<<l.SeqBits - 1 }

// MaxTick returns the largest value of the time field.
func (l Layout) MaxTick() int64 { return int64(1)<<l.TimeBits - 1 }

// MaxID returns the largest ID the layout can produce.
func (l Layout) MaxID() int64 { return int64(1)<<l.Bits() - 1 }

// Rate returns the most IDs one node can issue per second.
func (l Layout) Rate() float64 {
	return float64(int64(1)<<l.SeqBits) * float64(time.Second) / float64(l.Unit)
}

// Expires returns the first instant the time field can no longer hold:
// Epoch + Unit * 2^TimeBits.
func (l Layout) Expires() time.Time {
	return l.at(new(big.Int).Lsh(big.NewInt(1), l.TimeBits))
}

// at returns Epoch + ticks*Unit without overflowing, capped far in the future.
func (l Layout) at(ticks *big.Int) time.Time {
	total := new(big.Int).Mul(ticks, big.NewInt(int64(l.Unit))) // nanoseconds
	total.Add(total, big.NewInt(l.Epoch.UnixNano()))
	sec, nsec := new(big.Int).DivMod(total, big.NewInt(int64(time.Second)), new(big.Int))
	const maxSec = 1 << 50 // far beyond any date anyone will read
	if !sec.IsInt64() || sec.Int64() > maxSec {
		return time.Unix(maxSec, 0).UTC()
	}
	return time.Unix(sec.Int64(), nsec.Int64()).UTC()
}

// String describes the layout in one line.
func (l Layout) String() string {
	name := l.Name
	if name == "" {
		name = "custom"
	}
	nodes := fmt.Sprintf("%d nodes", l.MaxNode()+1)
	if l.DatacenterBits > 0 {
		nodes = fmt.Sprintf("%d datacenters of %d workers", l.MaxDatacenter()+1, l.MaxWorker()+1)
	}
	shards := ""
	if l.ShardBits > 0 {
		shards = fmt.Sprintf("+%d", l.ShardBits)
		nodes += fmt.Sprintf(", %d shards", l.MaxShard()+1)
	}
	return fmt.Sprintf("%s: 1+%d+%d+%d%s bits, %v ticks from %s, %s, %.0f IDs/s per node, runs out %s",
		name, l.TimeBits, l.NodeBits, l.SeqBits, shards, l.Unit, l.Epoch.UTC().Format(time.RFC3339Nano),
		nodes, l.Rate(), l.Expires().Format("2006-01-02"))
}

// Fingerprint is what makes two layouts issue the same IDs or not, in one
// line: the bits, the tick, the epoch and the datacenter split, without the
// name (twitter and its alias leaf are one layout). Worker registries
// record it (registry.Options.Layout), so that nodes of two layouts never
// share one. A layout without shard bits has the fingerprint it had before
// shard bits existed.
func (l Layout) Fingerprint() string {
	f := fmt.Sprintf("1+%d+%d+%d bits of %v from %s, %d datacenter bits",
		l.TimeBits, l.NodeBits, l.SeqBits, l.Unit, l.Epoch.UTC().Format(time.RFC3339Nano), l.DatacenterBits)
	if l.ShardBits > 0 {
		f += fmt.Sprintf(", %d shard bits", l.ShardBits)
	}
	return f
}

// Parts are the fields of an ID.
type Parts struct {
	Tick int64     // time field: ticks of Unit since Epoch
	Node int64     // the node field: worker ID, with the datacenter above it
	Seq  int64     // sequence within the tick
	Time time.Time // Epoch + Tick*Unit (set by Decompose; ignored by Compose)
	// Datacenter and Worker split Node by the layout's DatacenterBits (set
	// by Decompose; ignored by Compose). Without datacenter bits Worker is
	// Node.
	Datacenter, Worker int64
	// Shard is the shard field (0 without shard bits).
	Shard int64
}

// Compose builds the ID of p, or ErrInvalidID if a field is out of range.
func (l Layout) Compose(p Parts) (int64, error) {
	switch {
	case p.Tick < 0 || p.Tick > l.MaxTick():
		return 0, fmt.Errorf("%w: tick %d out of 0..%d", ErrInvalidID, p.Tick, l.MaxTick())
	case p.Node < 0 || p.Node > l.MaxNode():
		return 0, fmt.Errorf("%w: node %d out of 0..%d", ErrInvalidID, p.Node, l.MaxNode())
	case p.Seq < 0 || p.Seq > l.MaxSeq():
		return 0, fmt.Errorf("%w: sequence %d out of 0..%d", ErrInvalidID, p.Seq, l.MaxSeq())
	case p.Shard < 0 || p.Shard > l.MaxShard():
		return 0, fmt.Errorf("%w: shard %d out of 0..%d", ErrInvalidID, p.Shard, l.MaxShard())
	}
	return (p.Tick<<(l.NodeBits+l.SeqBits)|p.Node<<l.SeqBits|p.Seq)<<l.ShardBits | p.Shard, nil
}

// Decompose splits id into its fields, or returns ErrInvalidID if id is
// negative or wider than the layout.
func (l Layout) Decompose(id int64) (Parts, error) {
	if id < 0 || id > l.MaxID() {
		return Parts{}, fmt.Errorf("%w: %d is not between 0 and %d for layout %s", ErrInvalidID, id, l.MaxID(), l.Name)
	}
	p := Parts{Shard: id & l.MaxShard()}
	id >>= l.ShardBits
	p.Tick, p.Node, p.Seq = id>>(l.NodeBits+l.SeqBits), (id>>l.SeqBits)&l.MaxNode(), id&l.MaxSeq()
	p.Time = l.TickTime(p.Tick)
	p.Datacenter, p.Worker = p.Node>>l.WorkerBits(), p.Node&l.MaxWorker()
	return p, nil
}

// TickTime returns the start of tick t.
func (l Layout) TickTime(t int64) time.Time {
	if t >= 0 && (l.Unit <= 0 || t <= math.MaxInt64/int64(l.Unit)) {
		if d := time.Duration(t) * l.Unit; d >= 0 {
			return l.Epoch.Add(d).UTC()
		}
	}
	return l.at(big.NewInt(t))
}
