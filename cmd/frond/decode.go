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
	var dcBits uint
	c := &cobra.Command{
		Use:   "decode ID",
		Short: "Split a snowflake ID into time, node (worker ID) and sequence (offline)",
		Example: `  frond decode 1861083629105360902
  frond decode 123456789 --layout sonyflake --json
  frond decode 1861083629105360902 --datacenter-bits 5   # node = datacenter and worker`,
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
			if l.DatacenterBits = dcBits; dcBits > 0 && dcBits >= l.NodeBits {
				return usagef("--datacenter-bits %d: fewer than the %d node bits of layout %s", dcBits, l.NodeBits, l.Name)
			}
			d, err := service.DecodeWith(l, id)
			if err != nil {
				return usageError{err}
			}
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
			width := 0
			for _, r := range rows {
				width = max(width, len(r[0].(string)))
			}
			for _, r := range rows { // one column of values: two spaces after the longest name
				fmt.Fprintf(e.stdout, "%-*s  %v\n", width, r[0], r[1])
			}
			return nil
		},
	}
	c.Flags().StringVar(&layout, "layout", "twitter", "layout: twitter, sonyflake, uid-generator, javascript")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().UintVar(&dcBits, "datacenter-bits", 0, "how many of the node bits, from the top, are the datacenter (snowflake.datacenter_bits)")
	return c
}
