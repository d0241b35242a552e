package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRevealCmd(e env) *cobra.Command {
	var kind, form, prefix, tag string
	var keyVersion int
	c := &cobra.Command{
		Use:   "reveal VALUE --form FORM [--kind segment|snowflake|uuid]",
		Short: "Map an ID in another form (opaque, base62, mist, friendly, ...) back to the ID (admin)",
		Long: `Map an ID in another form back to the ID, or a TypeID back to its UUID.
The opaque forms need the server's obfuscation key, so this asks the server
(admin token required). A prefixed value ("ord_2XgH4...") must carry
--prefix, or the configured prefix of --tag, when either is given.`,
		Example: `  frond reveal 3kTMd9 --form opaque62
  frond reveal 8471029384756 --form opaque --kind snowflake
  frond reveal 3kTMd9 --form opaque62 --key-version 1
  frond reveal ord_3kTMd9 --form opaque62 --tag order
  frond reveal 20261126081530123-5-16 --form friendly --kind snowflake
  frond reveal user_01h455vb4pex5vsknk084sn02q --kind uuid --form typeid`,
		Args: args(cobra.ExactArgs(1)),
	}
	cl := addClientFlags(c, e)
	c.RunE = func(c *cobra.Command, a []string) error {
		var out struct {
			IDStr string `json:"id_str"`
			UUID  string `json:"uuid"`
		}
		in := map[string]any{"kind": kind, "form": form, "value": a[0], "key_version": keyVersion, "prefix": prefix, "tag": tag}
		if err := cl.do(c.Context(), "POST", "/v1/reveal", in, &out); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, out.IDStr+out.UUID)
		return nil
	}
	c.Flags().StringVar(&kind, "kind", "segment", "kind of ID: segment, snowflake or uuid")
	c.Flags().StringVar(&form, "form", "opaque62", "form of VALUE: opaque62, opaque, base62, base32, number, mist, friendly, typeid")
	c.Flags().StringVar(&prefix, "prefix", "", "the prefix VALUE must carry")
	c.Flags().StringVar(&tag, "tag", "", "the tag VALUE came from (its configured prefix is checked)")
	c.Flags().IntVar(&keyVersion, "key-version", 0, "version of the obfuscation key that gave VALUE (0: the current key)")
	return c
}
