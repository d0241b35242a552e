package client

import (
	"context"

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
func (c *Client) Seq(ctx context.Context, space, key string, n int) (first, last int64, err error) {
	var out *frondv1.SeqValues
	err = c.call(ctx, func(ctx context.Context, ids frondv1.IDServiceClient) error {
		var err error
		out, err = ids.NextSeq(ctx, &frondv1.NextSeqRequest{Space: space, Key: key, N: int64(n)})
		return err
	})
	return out.GetFirst(), out.GetLast(), err
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
