package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
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
	var form, snowForm, prefix, snowPrefix string
	var segShard, snowShard shardFlags
	seg := &cobra.Command{
		Use:   "segment TAG",
		Short: "Take segment IDs of a tag",
		Example: `  frond id segment order
  frond id segment order -n 100
  frond id segment order -n 1000000 --ranges   # start end stride, one range per line
  frond id segment order --form base62 --prefix ord   # ord_00000000001
  frond id segment order --form mist
  frond id segment orders --shard-key user-42 -n 3   # a tag with shard bits: each ID % 2^K is user-42's shard`,
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
			segShard.set(c, q)
			if prefix != "" {
				q.Set("prefix", prefix)
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
	seg.Flags().StringVar(&form, "form", "", "form: number, base62, base32, opaque, opaque62, mist (default: the tag's)")
	seg.Flags().StringVar(&prefix, "prefix", "", "prefix of text IDs, before an underscore (default: the tag's)")
	segShard.add(seg, "of a tag with shard bits")

	var sn int64
	snow := &cobra.Command{
		Use:     "snowflake",
		Short:   "Take snowflake IDs",
		Example: "  frond id snowflake\n  frond id snowflake -n 10\n  frond id snowflake --form friendly   # 20261126081530123-5-16\n  frond id snowflake --shard-key user-42   # with snowflake.shard_bits K: each ID % 2^K is user-42's shard",
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
			if snowPrefix != "" {
				q.Set("prefix", snowPrefix)
			}
			snowShard.set(c, q)
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
	snow.Flags().StringVar(&snowForm, "form", "", "form: number, base62, base32, opaque, opaque62, friendly")
	snow.Flags().StringVar(&snowPrefix, "prefix", "", "prefix of text IDs, before an underscore")
	snowShard.add(snow, "with snowflake.shard_bits")

	var un, version int64
	var namespace, name, uform, uprefix string
	uu := &cobra.Command{
		Use:   "uuid",
		Short: "Take UUIDs (versions 1, 3, 4, 5, 6 and 7; TypeIDs)",
		Example: `  frond id uuid
  frond id uuid --version 7 -n 10
  frond id uuid --version 5 --namespace dns --name example.com
  frond id uuid --version 7 --form typeid --prefix user`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			r := service.Request{Kind: service.KindUUID, Version: int(version), Namespace: namespace, Name: name, Form: uform, Prefix: uprefix}
			if c.Flags().Changed("n") {
				r.Count = un
			}
			if err := service.CheckUUID(&r); err != nil { // before the server: a usage error
				return usageError{err}
			}
			if un < 1 || un > service.MaxBatch {
				return usagef("-n %d: must be 1 to %d", un, service.MaxBatch)
			}
			q := url.Values{"version": {strconv.FormatInt(version, 10)}, "n": {strconv.FormatInt(un, 10)}}
			for k, v := range map[string]string{"namespace": namespace, "name": name, "form": uform, "prefix": uprefix} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var out struct{ UUIDs []string }
			if err := cl.do(c.Context(), "GET", "/v1/uuid?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			for _, u := range out.UUIDs {
				fmt.Fprintln(e.stdout, u)
			}
			return nil
		},
	}
	uu.Flags().Int64VarP(&un, "n", "n", 1, "how many UUIDs")
	uu.Flags().Int64Var(&version, "version", 4, "UUID version: 1, 3, 4, 5, 6 or 7")
	uu.Flags().StringVar(&namespace, "namespace", "", "namespace of versions 3 and 5: dns, url, oid, x500 or a UUID")
	uu.Flags().StringVar(&name, "name", "", "name of versions 3 and 5")
	uu.Flags().StringVar(&uform, "form", "", "typeid: version 7 as a TypeID")
	uu.Flags().StringVar(&uprefix, "prefix", "", "prefix of TypeIDs")

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
	var qn int64
	seq := &cobra.Command{
		Use:   "seq SPACE KEY",
		Short: "Take the next values of a key in a keyed sequence space",
		Long:  "Take the next values of a key in a keyed sequence space (frond space create): each above every value the key was given before, on any node (docs/sequences.md).",
		Example: `  frond id seq msgs conversation-42
  frond id seq invoices tenant-7 -n 10`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, a []string) error {
			r := service.Request{Kind: service.KindSeq, Name: a[0], Key: a[1], Count: qn}
			if err := frond.ValidateTagName(r.Name); err != nil {
				return usageError{err}
			}
			if err := keyseq.CheckKey(r.Key); err != nil {
				return usageError{err}
			}
			if qn < 1 || qn > service.MaxBatch {
				return usagef("-n %d: must be 1 to %d", qn, service.MaxBatch)
			}
			var out struct {
				FirstStr string `json:"first_str"`
				LastStr  string `json:"last_str"`
			}
			if err := cl.do(c.Context(), "GET", spacePath(r.Name, r.Key)+"?n="+strconv.FormatInt(qn, 10), nil, &out); err != nil {
				return err
			}
			first, err1 := strconv.ParseInt(out.FirstStr, 10, 64)
			last, err2 := strconv.ParseInt(out.LastStr, 10, 64)
			if err1 != nil || err2 != nil || last-first+1 != qn {
				return fmt.Errorf("the server answered %s..%s for %d values", out.FirstStr, out.LastStr, qn)
			}
			for v := first; v <= last; v++ {
				fmt.Fprintln(e.stdout, v)
			}
			return nil
		},
	}
	seq.Flags().Int64VarP(&qn, "n", "n", 1, "how many values")
	c.AddCommand(seg, snow, uu, ser, seq, newBoundsCmd(e, cl))
	return c
}

// newBoundsCmd is frond id bounds: the first and the last ID issued in a
// range of time, as the server's layout cuts it (GET /v1/bounds).
func newBoundsCmd(e env, cl *client) *cobra.Command {
	var from, to, kind, layout, form, prefix string
	var version int64
	var asJSON bool
	c := &cobra.Command{
		Use:   "bounds --from T1 --to T2",
		Short: "Print the first and the last ID issued in [from, to): for WHERE id BETWEEN, partitions, archiving",
		Long: `Print the first and the last ID issued at an instant in [from, to), one per line: every ID
issued in the range lies between them (IDs of the same first and last tick issued just outside it
may too: a tick is the layout's resolution). Snowflake IDs by the server's layout (or --layout),
UUIDs of version 1, 6 or 7, and TypeIDs. Times: RFC 3339, a date (midnight UTC) or Unix
milliseconds.`,
		Example: `  frond id bounds --from 2026-11-01 --to 2026-12-01
  frond id bounds --from 2026-11-29T08:00:00+08:00 --to 2026-11-29T09:00:00+08:00 --json
  frond id bounds --kind uuid --version 7 --form typeid --prefix user --from 2026-11-01 --to 2026-12-01`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			r := service.BoundsRequest{Kind: kind, Layout: layout, Version: int(version), Form: form, Prefix: prefix}
			var err error
			if r.From, err = service.ParseTime("--from", from); err != nil {
				return usageError{err}
			}
			if r.To, err = service.ParseTime("--to", to); err != nil {
				return usageError{err}
			}
			if !r.From.Before(r.To) {
				return usagef("--from %s is not before --to %s", from, to)
			}
			q := url.Values{"kind": {kind}, "from": {r.From.Format(time.RFC3339Nano)}, "to": {r.To.Format(time.RFC3339Nano)}}
			for k, v := range map[string]string{"layout": layout, "form": form, "prefix": prefix} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if version != 0 {
				q.Set("version", strconv.FormatInt(version, 10))
			}
			var out map[string]any
			if err := cl.do(c.Context(), "GET", "/v1/bounds?"+q.Encode(), nil, &out); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			first, last := out["first"], out["last"]
			if s, ok := out["first_str"].(string); ok {
				first, last = s, out["last_str"]
			}
			fmt.Fprintf(e.stdout, "%v\n%v\n", first, last)
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the range's start (inclusive): RFC 3339, a date or Unix milliseconds")
	c.Flags().StringVar(&to, "to", "", "the range's end (exclusive)")
	c.Flags().StringVar(&kind, "kind", service.KindSnowflake, "snowflake or uuid")
	c.Flags().StringVar(&layout, "layout", "", "snowflake layout (default: the server's)")
	c.Flags().Int64Var(&version, "version", 0, "UUID version: 1, 6 or 7 (default 7)")
	c.Flags().StringVar(&form, "form", "", "typeid: version 7 as TypeIDs")
	c.Flags().StringVar(&prefix, "prefix", "", "prefix of TypeIDs")
	c.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return c
}
