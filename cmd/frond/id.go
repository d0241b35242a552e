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
	var form, snowForm string
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
			if form != "" {
				q.Set("form", form)
			}
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
	seg.Flags().StringVar(&form, "form", "", "form: number, base62, base32, opaque, opaque62 (default: the tag's)")

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
			q := url.Values{"n": {strconv.FormatInt(sn, 10)}}
			if snowForm != "" {
				q.Set("form", snowForm)
			}
			if err := cl.do(c.Context(), "GET", "/v1/snowflake?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			for _, id := range out.IDStrs {
				fmt.Fprintln(e.stdout, id)
			}
			return nil
		},
	}
	snow.Flags().Int64VarP(&sn, "n", "n", 1, "how many IDs")
	snow.Flags().StringVar(&snowForm, "form", "", "form: number, base62, base32, opaque, opaque62")

	var un, version int64
	uu := &cobra.Command{
		Use:     "uuid",
		Short:   "Take UUIDs (version 4, random, or 7, time-ordered)",
		Example: "  frond id uuid\n  frond id uuid --version 7 -n 10",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if version != 4 && version != 7 {
				return usagef("--version %d: 4 or 7", version)
			}
			if un < 1 || un > service.MaxBatch {
				return usagef("-n %d: must be 1 to %d", un, service.MaxBatch)
			}
			var out struct{ UUIDs []string }
			if err := cl.do(c.Context(), "GET", fmt.Sprintf("/v1/uuid?version=%d&n=%d", version, un), nil, &out); err != nil {
				return err
			}
			for _, u := range out.UUIDs {
				fmt.Fprintln(e.stdout, u)
			}
			return nil
		},
	}
	uu.Flags().Int64VarP(&un, "n", "n", 1, "how many UUIDs")
	uu.Flags().Int64Var(&version, "version", 4, "UUID version: 4 or 7")

	var srn int64
	ser := &cobra.Command{
		Use:     "serial NAME",
		Short:   "Take business serial numbers of a configured serial",
		Example: "  frond id serial pay -n 5",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if srn < 1 || srn > service.MaxBatch {
				return usagef("-n %d: must be 1 to %d", srn, service.MaxBatch)
			}
			var out struct{ Serials []string }
			if err := cl.do(c.Context(), "GET", fmt.Sprintf("/v1/serial/%s?n=%d", url.PathEscape(a[0]), srn), nil, &out); err != nil {
				return err
			}
			for _, x := range out.Serials {
				fmt.Fprintln(e.stdout, x)
			}
			return nil
		},
	}
	ser.Flags().Int64VarP(&srn, "n", "n", 1, "how many serial numbers")
	c.AddCommand(seg, snow, uu, ser)
	return c
}
