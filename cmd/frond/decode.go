package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
	"github.com/spf13/cobra"
)

func newDecodeCmd(e env) *cobra.Command {
	var layout string
	var asJSON bool
	var dcBits, shardBits uint
	c := &cobra.Command{
		Use:   "decode ID",
		Short: "Split a snowflake ID into time, node (worker ID) and sequence (offline)",
		Example: `  frond decode 1861083629105360902
  frond decode 123456789 --layout sonyflake --json
  frond decode 1861083629105360902 --datacenter-bits 5   # node = datacenter and worker
  frond decode 1861083629105360902 --shard-bits 4        # snowflake.shard_bits: the shard, id % 16`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			id, err := strconv.ParseInt(a[0], 10, 64)
			if err != nil || id < 0 {
				return usagef("ID %q: must be a decimal number from 0 to %d", a[0], int64(1<<63-1))
			}
			l, err := snowflake.Preset(layout)
			if err != nil {
				return usageError{err}
			}
			if l, err = cliLayout(l, dcBits, shardBits); err != nil {
				return err
			}
			d, err := service.DecodeWith(l, id)
			if err != nil {
				return usageError{err}
			}
			return printDecoded(e, d, asJSON)
		},
	}
	c.Flags().StringVar(&layout, "layout", "twitter", "layout: twitter, sonyflake, uid-generator, javascript")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().UintVar(&dcBits, "datacenter-bits", 0, "how many of the node bits, from the top, are the datacenter (snowflake.datacenter_bits)")
	c.Flags().UintVar(&shardBits, "shard-bits", 0, "how many of the sequence bits, the lowest, are the shard (snowflake.shard_bits)")
	return c
}

// cliLayout is l with the --datacenter-bits and --shard-bits of decode and
// compose (snowflake.datacenter_bits and snowflake.shard_bits).
func cliLayout(l snowflake.Layout, dcBits, shardBits uint) (snowflake.Layout, error) {
	if l.DatacenterBits = dcBits; dcBits > 0 && dcBits >= l.NodeBits {
		return l, usagef("--datacenter-bits %d: fewer than the %d node bits of layout %s", dcBits, l.NodeBits, l.Name)
	}
	l, err := l.WithShardBits(shardBits)
	if err != nil {
		return l, usagef("--shard-bits: %v", err)
	}
	return l, nil
}

// printDecoded prints a decoded snowflake ID, one field a line (or JSON).
func printDecoded(e env, d service.Decoded, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	rows := [][2]any{{"id", d.ID}, {"layout", d.Layout}, {"time", d.Time.Format(time.RFC3339Nano)},
		{"tick", d.Tick}, {"node", d.Node}, {"sequence", d.Seq}}
	if d.Datacenter != nil {
		rows = append(rows, [2]any{"datacenter", *d.Datacenter}, [2]any{"worker", *d.Worker})
	}
	if d.Shard != nil {
		rows = append(rows, [2]any{"shard", *d.Shard})
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0].(string)))
	}
	for _, r := range rows { // one column of values: two spaces after the longest name
		fmt.Fprintf(e.stdout, "%-*s  %v\n", width, r[0], r[1])
	}
	return nil
}

func newComposeCmd(e env) *cobra.Command {
	var layout, at, shardKey string
	var asJSON bool
	var dcBits, shardBits uint
	var node, seq, dc, worker, shard int64
	c := &cobra.Command{
		Use:   "compose --time T [--node N | --datacenter D --worker W] [--sequence S] [--shard S | --shard-key K]",
		Short: "Build the snowflake ID of a time, a node and a sequence (offline; decode's inverse)",
		Example: `  frond compose --time 2026-11-29T12:00:00.123Z --node 5 --sequence 7
  frond compose --time 1764417600000 --layout sonyflake --json
  frond compose --time 2026-11-29 --datacenter-bits 5 --datacenter 3 --worker 9
  frond compose --time 2026-11-29 --node 5 --shard-bits 4 --shard-key user-42`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			l, err := snowflake.Preset(layout)
			if err != nil {
				return usageError{err}
			}
			if l, err = cliLayout(l, dcBits, shardBits); err != nil {
				return err
			}
			r := service.ComposeRequest{Node: node, Seq: seq, Shard: shard, ShardKey: shardKey}
			if r.Time, err = service.ParseTime("--time", at); err != nil {
				return usageError{err}
			}
			if c.Flags().Changed("datacenter") {
				r.Datacenter = &dc
			}
			if c.Flags().Changed("worker") {
				r.Worker = &worker
			}
			d, err := service.ComposeWith(l, r)
			if err != nil {
				return usageError{err}
			}
			return printDecoded(e, d, asJSON)
		},
	}
	c.Flags().StringVar(&at, "time", "", "the ID's time (its tick is the one that holds it): RFC 3339, a date or Unix milliseconds")
	c.Flags().Int64Var(&node, "node", 0, "the node (worker ID)")
	c.Flags().Int64Var(&seq, "sequence", 0, "the sequence within the tick")
	c.Flags().Int64Var(&dc, "datacenter", 0, "the datacenter (with --datacenter-bits; with --worker, in place of --node)")
	c.Flags().Int64Var(&worker, "worker", 0, "the worker within the datacenter")
	c.Flags().Int64Var(&shard, "shard", 0, "the shard (with --shard-bits)")
	c.Flags().StringVar(&shardKey, "shard-key", "", "the shard as a key's (with --shard-bits)")
	c.Flags().StringVar(&layout, "layout", "twitter", "layout: twitter, sonyflake, uid-generator, javascript, cosid")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().UintVar(&dcBits, "datacenter-bits", 0, "how many of the node bits, from the top, are the datacenter (snowflake.datacenter_bits)")
	c.Flags().UintVar(&shardBits, "shard-bits", 0, "how many of the sequence bits, the lowest, are the shard (snowflake.shard_bits)")
	return c
}
