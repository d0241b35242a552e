package client

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/frond-id/frond/keyseq"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
)

// Snowflake returns n (0 means 1) snowflake IDs from a server, in order.
func (c *Client) Snowflake(ctx context.Context, n int) ([]int64, error) {
	var out *frondv1.IDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{N: int64(n)})
		return err
	})
	return out.GetIds(), err
}

// UUIDs returns n (0 means 1) UUIDs of version 1, 4, 6 or 7 (0 means 4);
// see NameUUID for versions 3 and 5.
func (c *Client) UUIDs(ctx context.Context, version, n int) ([]string, error) {
	var out *frondv1.UUIDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextUUID(ctx, &frondv1.NextUUIDRequest{Version: int32(version), N: int64(n)})
		return err
	})
	return out.GetUuids(), err
}

// Serials returns n (0 means 1) serial numbers of a configured serial.
func (c *Client) Serials(ctx context.Context, name string, n int) ([]string, error) {
	var out *frondv1.Serials
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSerial(ctx, &frondv1.NextSerialRequest{Name: name, N: int64(n)})
		return err
	})
	return out.GetSerials(), err
}

// Seq returns the next n (0 means 1) values of key in a keyed sequence
// space, first to last: each above every value the key was given before,
// whichever server answered (docs/sequences.md). A call whose answer was
// lost and is retried skips values, never repeats them.
//
// The client sends a key to the server that serves its section, as the
// servers' answers told it (keyed: one hop; another server would send the
// request on to the owner), and any server while it knows none or that one
// is down. A section between owners (its owner killed: the servers answer
// store_unavailable until another takes it, once the owner's lease ran
// out) is asked again, on any server, for up to Options.SeqWait before the
// error is returned.
func (c *Client) Seq(ctx context.Context, space, key string, n int) (first, last int64, err error) {
	var out *frondv1.SeqValues
	want := -1
	rt, _ := c.routes.Load(space)
	if rt != nil {
		r := rt.(*seqRoute)
		switch v := int(r.owner[keyseq.SectionOf(key, len(r.owner))].Load()); {
		case v > 0:
			want = v - 1
		case v < 0:
			want = (-v) % len(c.servers) // the one after the server that sent it on
		}
	}
	var md metadata.MD
	i, err := c.callAt(ctx, want, c.o.SeqWait, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		md = nil
		out, err = ids.NextSeq(ctx, &frondv1.NextSeqRequest{Space: space, Key: key, N: int64(n)}, grpc.Header(&md))
		return err
	})
	if err == nil {
		c.learnRoute(space, md, i)
	}
	return out.GetFirst(), out.GetLast(), err
}

// seqRoute is what a client knows of a space's sections: by section, the
// server that last said it serves it (its index + 1), or the last that said
// it does not (-(index + 1): the next one is asked), or nothing (0).
type seqRoute struct {
	owner []atomic.Int32
}

// learnRoute keeps what server i said of the key's section
// (keyseq.RouteHeader): that it serves it, or that it sent the request on.
func (c *Client) learnRoute(space string, md metadata.MD, i int) {
	v := md.Get(keyseq.RouteHeader)
	if len(v) != 1 {
		return
	}
	r, ok := keyseq.ParseRoute(v[0])
	if !ok {
		return
	}
	var route *seqRoute
	if rt, ok := c.routes.Load(space); ok && len(rt.(*seqRoute).owner) == r.Sections {
		route = rt.(*seqRoute)
	} else {
		route = &seqRoute{owner: make([]atomic.Int32, r.Sections)}
		c.routes.Store(space, route)
	}
	if r.Mine {
		route.owner[r.Section].Store(int32(i + 1))
	} else {
		// i sent it on: the next call asks the server after i.
		route.owner[r.Section].Store(int32(-(i + 1)))
	}
}

// NameUUID returns the name-based UUID of version 3 (MD5) or 5 (SHA-1) of a
// namespace (dns, url, oid, x500 or a UUID) and a name: always the same for
// the same input, as in every implementation of RFC 9562.
func (c *Client) NameUUID(ctx context.Context, version int, namespace, name string) (string, error) {
	var out *frondv1.UUIDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextUUID(ctx, &frondv1.NextUUIDRequest{Version: int32(version), Namespace: namespace, Name: name})
		return err
	})
	if err != nil {
		return "", err
	}
	return out.GetUuids()[0], nil
}

// TypeIDs returns n (0 means 1) TypeIDs: UUIDs of version 7 after prefix
// and an underscore ("user_01h455vb4pex5vsknk084sn02q"), in order.
func (c *Client) TypeIDs(ctx context.Context, prefix string, n int) ([]string, error) {
	var out *frondv1.UUIDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextUUID(ctx, &frondv1.NextUUIDRequest{Version: 7, N: int64(n), Form: "typeid", Prefix: prefix})
		return err
	})
	return out.GetUuids(), err
}

// SnowflakeStrings returns n (0 means 1) snowflake IDs in a text form
// (base62, base32, opaque62 or friendly), each after prefix and an
// underscore when prefix is not empty.
func (c *Client) SnowflakeStrings(ctx context.Context, form, prefix string, n int) ([]string, error) {
	var out *frondv1.IDs
	err := c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSnowflake(ctx, &frondv1.NextSnowflakeRequest{N: int64(n), Form: form, Prefix: prefix})
		return err
	})
	return out.GetIdStrs(), err
}
