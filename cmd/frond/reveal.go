package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRevealCmd(e env) *cobra.Command {
	var kind, form string
	var keyVersion int
	c := &cobra.Command{
		Use:   "reveal VALUE --form FORM [--kind segment|snowflake]",
		Short: "Map an ID in another form (opaque, base62, ...) back to the ID (admin)",
		Long: `Map an ID in another form back to the ID. The opaque forms need the
server's obfuscation key, so this asks the server (admin token required).`,
		Example: `  frond reveal 3kTMd9 --form opaque62
  frond reveal 8471029384756 --form opaque --kind snowflake
  frond reveal 3kTMd9 --form opaque62 --key-version 1`,
		Args: args(cobra.ExactArgs(1)),
	}
	cl := addClientFlags(c, e)
	c.RunE = func(c *cobra.Command, a []string) error {
		var out struct {
			IDStr string `json:"id_str"`
		}
		in := map[string]any{"kind": kind, "form": form, "value": a[0], "key_version": keyVersion}
		if err := cl.do(c.Context(), "POST", "/v1/reveal", in, &out); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, out.IDStr)
		return nil
	}
	c.Flags().StringVar(&kind, "kind", "segment", "kind of ID: segment or snowflake")
	c.Flags().StringVar(&form, "form", "opaque62", "form of VALUE: opaque62, opaque, base62, base32, number")
	c.Flags().IntVar(&keyVersion, "key-version", 0, "version of the obfuscation key that gave VALUE (0: the current key)")
	return c
}
