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

// UUIDs returns n (0 means 1) UUIDs of version 4 or 7 (0 means 4).
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
