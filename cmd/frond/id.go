package main

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/service"
	"github.com/spf13/cobra"
)

func newIDCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "id",
		Short: "Take IDs from a running server, one per line",
		Example: `  frond id segment order -n 10
  frond id snowflake -n 10 --server http://frond.internal:8080`,
	}
	cl := addClientFlags(c, e)
	var n int64
	var ranges bool
	seg := &cobra.Command{
		Use:   "segment TAG",
		Short: "Take segment IDs of a tag",
		Example: `  frond id segment order
  frond id segment order -n 100
  frond id segment order -n 1000000 --ranges   # start end stride, one range per line`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			tag := a[0]
			if err := frond.ValidateTagName(tag); err != nil {
				return usageError{err}
			}
			limit := int64(service.MaxBatch)
			if ranges {
				limit = service.MaxRangesBatch
			}
			if n < 1 || n > limit {
				return usagef("-n %d: must be 1 to %d", n, limit)
			}
			q := url.Values{"n": {strconv.FormatInt(n, 10)}}
			if ranges {
				q.Set("format", "ranges")
				var out struct {
					Ranges []struct {
						StartStr string `json:"start_str"`
						EndStr   string `json:"end_str"`
						Stride   int64  `json:"stride"`
					} `json:"ranges"`
				}
				if err := cl.do(c.Context(), "GET", "/v1/segment/"+url.PathEscape(tag)+"?"+q.Encode(), nil, &out); err != nil {
					return err
				}
				for _, r := range out.Ranges {
					fmt.Fprintf(e.stdout, "%s %s %d\n", r.StartStr, r.EndStr, r.Stride)
				}
				return nil
			}
			var out struct {
				IDStrs []string `json:"id_strs"`
			}
			if err := cl.do(c.Context(), "GET", "/v1/segment/"+url.PathEscape(tag)+"?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			for _, id := range out.IDStrs {
				fmt.Fprintln(e.stdout, id)
			}
			return nil
		},
	}
	seg.Flags().Int64VarP(&n, "n", "n", 1, "how many IDs")
	seg.Flags().BoolVar(&ranges, "ranges", false, "print ranges (start, end exclusive, stride) instead of IDs")

	var sn int64
	snow := &cobra.Command{
		Use:     "snowflake",
		Short:   "Take snowflake IDs",
		Example: "  frond id snowflake\n  frond id snowflake -n 10",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if sn < 1 || sn > service.MaxBatch {
				return usagef("-n %d: must be 1 to %d", sn, service.MaxBatch)
			}
			var out struct {
				IDStrs []string `json:"id_strs"`
			}
			if err := cl.do(c.Context(), "GET", "/v1/snowflake?n="+strconv.FormatInt(sn, 10), nil, &out); err != nil {
				return err
			}
			for _, id := range out.IDStrs {
				fmt.Fprintln(e.stdout, id)
			}
			return nil
		},
	}
	snow.Flags().Int64VarP(&sn, "n", "n", 1, "how many IDs")
	c.AddCommand(seg, snow)
	return c
}
