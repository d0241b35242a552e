package main

import (
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// shardFlags are the --shard and --shard-key of a command that takes IDs
// of a tag or a layout with shard bits.
type shardFlags struct {
	shard int64
	key   string
}

// add defines the flags on c; which says of what they are the shard.
func (f *shardFlags) add(c *cobra.Command, which string) {
	c.Flags().Int64Var(&f.shard, "shard", 0, "the IDs' shard, "+which+" (0 to 2^K-1)")
	c.Flags().StringVar(&f.key, "shard-key", "", "the IDs' shard as a key's (a user, a tenant), "+which)
}

// set puts the flags c was given into q.
func (f *shardFlags) set(c *cobra.Command, q url.Values) {
	if c.Flags().Changed("shard") {
		q.Set("shard", strconv.FormatInt(f.shard, 10))
	}
	if f.key != "" {
		q.Set("shard_key", f.key)
	}
}
