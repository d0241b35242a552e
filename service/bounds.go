package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
)

// ParseTime reads a time given to a front door (the bounds of a range, the
// time of an ID to compose): RFC 3339 with any fraction
// (2026-11-29T12:00:00.5Z, an offset or Z required), a date (2026-11-29:
// its midnight UTC), or an integer of Unix milliseconds (1764417600000, as
// JavaScript's Date.now() gives). Anything else is ErrInvalidArgument,
// naming what was wrong without repeating more than the first 40 bytes.
func ParseTime(what, in string) (time.Time, error) {
	if in == "" {
		return time.Time{}, fmt.Errorf("%w: %s: a time is required (RFC 3339, a date, or Unix milliseconds)", frond.ErrInvalidArgument, what)
	}
	if in[0] == '-' || in[0] >= '0' && in[0] <= '9' {
		if ms, err := strconv.ParseInt(in, 10, 64); err == nil {
			if ms < minUnixMs || ms > maxUnixMs {
				return time.Time{}, fmt.Errorf("%w: %s %d: Unix milliseconds from %d to %d (years 1 to 9999)", frond.ErrInvalidArgument, what, ms, int64(minUnixMs), int64(maxUnixMs))
			}
			return time.UnixMilli(ms).UTC(), nil
		}
	}
	if len(in) == len(time.DateOnly) {
		if t, err := time.Parse(time.DateOnly, in); err == nil {
			return t, nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, in)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %s: not a time: RFC 3339 (2026-11-29T12:00:00Z, with Z or an offset), a date (2026-11-29, midnight UTC), or Unix milliseconds", frond.ErrInvalidArgument, what, Quote(in))
	}
	return t.UTC(), nil
}

// minUnixMs and maxUnixMs keep a time in Unix milliseconds within years 1
// to 9999 (0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z).
const (
	minUnixMs = -62135596800000
	maxUnixMs = 253402300799999
)

// BoundsRequest asks for the first and the last ID of a kind issued at an
// instant in [From, To): Kind snowflake (of Layout: "" the node's) or
// uuid (of Version 1, 6 or 7; Form typeid with Prefix for TypeIDs of
// version 7).
type BoundsRequest struct {
	Kind     string
	Layout   string
	Version  int
	Form     string
	Prefix   string
	From, To time.Time
}

// Bounds is the first and the last ID of a range of time: for snowflake
// IDs the numbers FirstID and LastID (First and Last in decimal), for
// UUIDs and TypeIDs the texts First and Last. `WHERE id BETWEEN first AND
// last` holds every ID issued in the range, and may hold IDs of the same
// first and last ticks issued just outside it (a tick, 1 ms for twitter's
// layout, 10 ms for sonyflake's and 100 ns for UUID v1 and v6, is the
// resolution).
type Bounds struct {
	Kind    string    `json:"kind"`
	Layout  string    `json:"layout,omitempty"`
	Version int       `json:"version,omitempty"`
	Form    string    `json:"form,omitempty"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	FirstID int64     `json:"-"`
	LastID  int64     `json:"-"`
	First   string    `json:"first"`
	Last    string    `json:"last"`
}

// IDBounds answers a BoundsRequest: the one check and answer of every
// front door (GET /v1/bounds, gRPC Bounds, RESP BOUNDS, frond id bounds).
func (s *Service) IDBounds(r BoundsRequest) (Bounds, error) {
	if !r.From.Before(r.To) {
		return Bounds{}, fmt.Errorf("%w: from %s is not before to %s: the range [from, to) is empty", frond.ErrInvalidArgument,
			r.From.Format(time.RFC3339Nano), r.To.Format(time.RFC3339Nano))
	}
	b := Bounds{Kind: r.Kind, From: r.From.UTC(), To: r.To.UTC()}
	switch r.Kind {
	case KindSnowflake:
		if r.Version != 0 || r.Form != "" || r.Prefix != "" {
			return Bounds{}, fmt.Errorf("%w: snowflake bounds take a layout, not a version, form or prefix", frond.ErrInvalidArgument)
		}
		l, err := s.LayoutByName(r.Layout)
		if err != nil {
			return Bounds{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
		}
		lo, hi, err := l.Bounds(r.From, r.To)
		if err != nil {
			return Bounds{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
		}
		b.Layout = cmpName(l.Name)
		b.FirstID, b.LastID = lo, hi
		b.First, b.Last = strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
		return b, nil
	case KindUUID:
		if r.Layout != "" {
			return Bounds{}, fmt.Errorf("%w: UUID bounds take a version (1, 6 or 7), not a layout", frond.ErrInvalidArgument)
		}
		if r.Version == 0 {
			r.Version = 7
		}
		if err := CheckUUID(&Request{Kind: KindUUID, Version: r.Version, Form: r.Form, Prefix: r.Prefix, Count: 1}); err != nil {
			return Bounds{}, err
		}
		lo, hi, err := UUIDBounds(r.Version, r.From, r.To)
		if err != nil {
			return Bounds{}, err
		}
		b.Version, b.Form = r.Version, r.Form
		b.First, b.Last = lo.String(), hi.String()
		if r.Form == FormTypeID {
			out := []string{b.First, b.Last}
			if err := typeIDs(r.Prefix, out); err != nil {
				return Bounds{}, err
			}
			b.First, b.Last = out[0], out[1]
		}
		return b, nil
	}
	return Bounds{}, fmt.Errorf("%w: kind %s: bounds are for snowflake IDs and UUIDs (versions 1, 6 and 7, and TypeIDs): segment IDs carry no time", frond.ErrInvalidArgument, Quote(r.Kind))
}

func cmpName(name string) string {
	if name == "" {
		return "custom"
	}
	return name
}

// UUIDBounds is the smallest and the largest UUID of version 1, 6 or 7
// whose timestamp lies in the tick of an instant in [from, to): every
// other field (the clock sequence and node of versions 1 and 6, the random
// bits of version 7) all zeros in the first, all ones in the last. Version
// 7 counts milliseconds since 1970, versions 1 and 6 100 ns since
// 1582-10-15; a range outside what the version holds is cut to it, and
// one that holds none of it refused. Versions 6 and 7 sort by time as
// bytes (a database's BETWEEN); version 1 does not (its low time bits come
// first: store it with MySQL's UUID_TO_BIN(u, 1) to sort it).
func UUIDBounds(version int, from, to time.Time) (lo, hi uuid.UUID, err error) {
	var unit time.Duration
	var epoch time.Time
	var bits uint
	switch version {
	case 7:
		unit, epoch, bits = time.Millisecond, time.Unix(0, 0), 48
	case 1, 6:
		unit, epoch, bits = 100*time.Nanosecond, time.Date(1582, 10, 15, 0, 0, 0, 0, time.UTC), 60
	default:
		return lo, hi, fmt.Errorf("%w: version %d: bounds are for UUID versions 1, 6 and 7 (the versions that carry a time)", frond.ErrInvalidArgument, version)
	}
	// The timestamp as a layout of time bits alone: its IDs are the ticks.
	l := snowflake.Layout{Name: fmt.Sprintf("UUID v%d", version), Unit: unit, TimeBits: bits, Epoch: epoch}
	first, lastTick, err := l.Bounds(from, to)
	if err != nil {
		return lo, hi, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	if version == 7 {
		putV7(&lo, uint64(first), 0)
		putV7(&hi, uint64(lastTick), ^uint64(0))
		return lo, hi, nil
	}
	var zero, ones [6]byte
	for i := range ones {
		ones[i] = 0xff
	}
	return timeUUID(version, uint64(first), 0, zero), timeUUID(version, uint64(lastTick), 0x3fff, ones), nil
}

// putV7 lays out a UUID of version 7 (RFC 9562 section 5.7): ms the 48-bit
// Unix milliseconds, fill the 74 bits of rand_a and rand_b.
func putV7(u *uuid.UUID, ms, fill uint64) {
	binary.BigEndian.PutUint64(u[0:], ms<<16|0x7000|fill&0x0fff)
	binary.BigEndian.PutUint64(u[8:], 0x8000000000000000|fill&0x3fffffffffffffff)
}

// ComposeRequest is the fields of a snowflake ID to compose, of Layout (""
// the node's): its Time (the tick that holds it), and Node, or Datacenter
// and Worker with a layout that has datacenter bits, and Seq; Shard (or
// ShardKey, its shard by frond.ShardOf) with a layout that has shard bits.
type ComposeRequest struct {
	Layout             string
	Time               time.Time
	Node               int64
	Datacenter, Worker *int64
	Seq                int64
	Shard              int64
	ShardKey           string
}

// Compose is the snowflake ID of r's fields, decoded again (Decoded): the
// one check and answer of every front door (GET /v1/compose, gRPC
// Compose, RESP COMPOSE, frond compose).
func (s *Service) Compose(r ComposeRequest) (Decoded, error) {
	l, err := s.LayoutByName(r.Layout)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	return ComposeWith(l, r)
}

// ComposeWith is Compose with the layout l.
func ComposeWith(l snowflake.Layout, r ComposeRequest) (Decoded, error) {
	tick, err := l.TickAt(r.Time)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	node := r.Node
	if r.Datacenter != nil || r.Worker != nil {
		switch {
		case l.DatacenterBits == 0:
			return Decoded{}, fmt.Errorf("%w: layout %s has no datacenter bits: give node", frond.ErrInvalidArgument, cmpName(l.Name))
		case r.Datacenter == nil || r.Worker == nil:
			return Decoded{}, fmt.Errorf("%w: datacenter and worker go together", frond.ErrInvalidArgument)
		case r.Node != 0:
			return Decoded{}, fmt.Errorf("%w: node, or datacenter and worker, not both", frond.ErrInvalidArgument)
		case *r.Datacenter < 0 || *r.Datacenter > l.MaxDatacenter():
			return Decoded{}, fmt.Errorf("%w: datacenter %d out of 0..%d", frond.ErrInvalidArgument, *r.Datacenter, l.MaxDatacenter())
		case *r.Worker < 0 || *r.Worker > l.MaxWorker():
			return Decoded{}, fmt.Errorf("%w: worker %d out of 0..%d", frond.ErrInvalidArgument, *r.Worker, l.MaxWorker())
		}
		node = l.NodeOf(*r.Datacenter, *r.Worker)
	}
	shard := r.Shard
	switch {
	case (r.Shard != 0 || r.ShardKey != "") && l.ShardBits == 0:
		return Decoded{}, fmt.Errorf("%w: layout %s has no shard bits: give no shard", frond.ErrInvalidArgument, cmpName(l.Name))
	case r.Shard != 0 && r.ShardKey != "":
		return Decoded{}, fmt.Errorf("%w: shard or shard_key, not both", frond.ErrInvalidArgument)
	case len(r.ShardKey) > MaxShardKey:
		return Decoded{}, fmt.Errorf("%w: shard_key of %d bytes: at most %d", frond.ErrInvalidArgument, len(r.ShardKey), MaxShardKey)
	case r.ShardKey != "":
		shard = frond.ShardOf(r.ShardKey, int(l.ShardBits))
	}
	id, err := l.Compose(snowflake.Parts{Tick: tick, Node: node, Seq: r.Seq, Shard: shard})
	if err != nil {
		msg := err.Error()
		if _, rest, ok := strings.Cut(msg, ": "); ok && errors.Is(err, snowflake.ErrInvalidID) {
			msg = rest // "node 1024 out of 0..1023"
		}
		return Decoded{}, fmt.Errorf("%w: %s (layout %s)", frond.ErrInvalidArgument, msg, cmpName(l.Name))
	}
	return DecodeWith(l, id)
}
