package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"
	"unicode"

	"github.com/frond-id/frond"
	"github.com/spf13/cobra"
)

type tagOut struct {
	Name        string      `json:"name"`
	MaxID       json.Number `json:"max_id"`
	Step        json.Number `json:"step"`
	Description string      `json:"description"`
	UpdatedAt   string      `json:"updated_at"`
	Mode        string      `json:"mode"`
	Mapping     string      `json:"mapping"`
}

func printTags(e env, tags ...tagOut) {
	printTagPage(e, true, tags)
}

// printTagPage prints a page of tags, with the header on the first page.
func printTagPage(e env, header bool, tags []tagOut) {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(w, "TAG\tMODE\tMAPPING\tMAX_ID\tSTEP\tUPDATED\tDESCRIPTION")
	}
	for _, t := range tags {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(t.Name), printable(t.Mode), printable(t.Mapping), t.MaxID, t.Step, printable(t.UpdatedAt), printable(t.Description))
	}
	w.Flush()
}

// printable is s for a terminal: as it is when every character prints,
// else quoted with escapes, so that a description stored before control
// characters were refused (or by another program) cannot send ESC
// sequences to the operator's terminal.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) && r != ' ' || unicode.Is(unicode.Bidi_Control, r) {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}

func tagArg(a []string) (string, error) {
	if err := frond.ValidateTagName(a[0]); err != nil {
		return "", usageError{err}
	}
	return a[0], nil
}

func newTagCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "tag",
		Short: "Administer segment tags on a running server",
		Long:  "Administer segment tags. When the server has an admin token, pass it with --token or FROND_ADMIN_TOKEN.",
		Example: `  frond tag create order --step 1000
  FROND_ADMIN_TOKEN=$(cat /etc/frond/token) frond tag list`,
	}
	cl := addClientFlags(c, e)

	list := &cobra.Command{
		Use: "list", Short: "List tags", Long: "List the tags, by name: read from the server a page of 1000 at a time, each printed as it arrives.",
		Example: "  frond tag list", Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			after := ""
			for page := 0; ; page++ {
				var out struct {
					Tags []tagOut
					Next string
				}
				path := "/v1/tags"
				if after != "" {
					path += "?after=" + url.QueryEscape(after)
				}
				if err := cl.do(c.Context(), "GET", path, nil, &out); err != nil {
					return err
				}
				printTagPage(e, page == 0, out.Tags)
				if out.Next == "" || out.Next == after {
					return nil
				}
				after = out.Next
			}
		},
	}
	get := &cobra.Command{
		Use: "get TAG", Short: "Show one tag", Example: "  frond tag get order", Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			tag, err := tagArg(a)
			if err != nil {
				return err
			}
			var out tagOut
			if err := cl.do(c.Context(), "GET", "/v1/tags/"+url.PathEscape(tag), nil, &out); err != nil {
				return err
			}
			printTags(e, out)
			return nil
		},
	}

	var step, maxID int64
	var desc, mode, mapping string
	create := &cobra.Command{
		Use:   "create TAG --step N [--max-id M] [--description TEXT] [--mode segment|sequence] [--mapping plain|mist|opaque|shard:K]",
		Short: "Create a tag",
		Long: `Create a tag. Its first segment starts at --max-id (default 1, as Leaf's table).
With --mode sequence every ID is taken from the store when it is asked for:
IDs increase across all nodes in the order they are answered (docs/kinds.md).
The mode is fixed for the tag's life.

--mapping is how its counter becomes the numbers it hands out, the same on
every node: plain (the counter), mist (the counter and two random bytes) or
opaque (a keyed permutation), or shard:K (K shard bits, 1 to 16: the counter
moved up by K bits, the shard each request gives below, for sharded
databases: docs/kinds.md#shard-bits-gene-ids). Without it, the one the
server's configured form for the tag names (forms:), else plain
(docs/kinds.md#a-tags-mapping).`,
		Example: `  frond tag create order --step 1000
  frond tag create pay --step 2000 --max-id 100000 --description "payment serial numbers"
  frond tag create ticket --step 1 --mode sequence
  frond tag create invite --step 1000 --mapping mist
  frond tag create orders --step 1000 --mapping shard:4   # IDs carry 4 shard bits: id % 16`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			tag, err := tagArg(a)
			if err != nil {
				return err
			}
			if !c.Flags().Changed("step") {
				return usagef("--step is required: frond tag create %s --step N", tag)
			}
			t := frond.Tag{Name: tag, MaxID: maxID, Step: step, Description: desc, Mode: mode, Mapping: mapping}
			if err := t.Validate(); err != nil {
				return usageError{err}
			}
			var out tagOut
			in := map[string]any{"name": tag, "step": step, "max_id": maxID, "description": desc, "mode": mode, "mapping": mapping}
			if err := cl.do(c.Context(), "POST", "/v1/tags", in, &out); err != nil {
				return err
			}
			printTags(e, out)
			return nil
		},
	}
	create.Flags().Int64Var(&step, "step", 0, "segment length (required)")
	create.Flags().Int64Var(&maxID, "max-id", 1, "first ID to hand out")
	create.Flags().StringVar(&desc, "description", "", "free text")
	create.Flags().StringVar(&mode, "mode", frond.ModeSegment, "segment (buffered segments, the fastest) or sequence (IDs increase across nodes in answer order)")
	create.Flags().StringVar(&mapping, "mapping", "", "plain, mist, opaque or shard:K (default: the server's configured form's, else plain)")
	// Not MarkFlagRequired: cobra's error for it would not be a usage error (exit 2).

	var sStep, sMax int64
	var sDesc, sMapping string
	var sAdopt bool
	set := &cobra.Command{
		Use:   "set TAG [--step N] [--max-id M] [--description TEXT] [--mapping plain|mist]",
		Short: "Change a tag's step, description or mapping, or raise its max_id",
		Long: `Change a tag. max_id can only be raised: lowering it would hand out IDs again.

--mapping changes how the tag's counter becomes its numbers, with the raise
that moves it past every number the old mapping gave: plain to mist raises
max_id a little (a headroom); mist to plain multiplies it by 65,536. To or
from opaque is refused: use a new tag (docs/kinds.md#a-tags-mapping).

--adopt records --mapping mist or opaque on a tag with no mapping recorded,
without a raise: for a tag whose numbers a server's configured form (forms:)
has always given in that mapping, before frond kept mappings with tags. It
is your word that no node ever handed out its plain numbers.`,
		Example: `  frond tag set order --step 5000
  frond tag set order --max-id 2000000 --description "orders, after migration"
  frond tag set invite --mapping mist`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			tag, err := tagArg(a)
			if err != nil {
				return err
			}
			in := map[string]any{}
			if c.Flags().Changed("step") {
				in["step"] = sStep
			}
			if c.Flags().Changed("max-id") {
				in["max_id"] = sMax
			}
			if c.Flags().Changed("description") {
				in["description"] = sDesc
			}
			if c.Flags().Changed("mapping") {
				if err := frond.CheckMapping(sMapping); err != nil {
					return usageError{err}
				}
				in["mapping"] = sMapping
				if sAdopt {
					in["adopt"] = true
				}
			} else if sAdopt {
				return usagef("--adopt goes with --mapping mist or --mapping opaque")
			}
			if len(in) == 0 {
				return usagef("nothing to change: give --step, --max-id, --description or --mapping")
			}
			var out tagOut
			if err := cl.do(c.Context(), "PATCH", "/v1/tags/"+url.PathEscape(tag), in, &out); err != nil {
				return err
			}
			printTags(e, out)
			return nil
		},
	}
	set.Flags().Int64Var(&sStep, "step", 0, "new step")
	set.Flags().Int64Var(&sMax, "max-id", 0, "new max_id (raise only)")
	set.Flags().StringVar(&sDesc, "description", "", "new description")
	set.Flags().StringVar(&sMapping, "mapping", "", "new mapping: plain or mist, with its raise")
	set.Flags().BoolVar(&sAdopt, "adopt", false, "record --mapping (mist or opaque) on a tag with none recorded, without a raise: its numbers were always in it")

	del := &cobra.Command{
		Use:   "delete TAG",
		Short: "Delete a tag",
		Long: `Delete a tag. Creating it again later starts from the max_id given then, so
IDs handed out before can be issued again: make sure no one uses the tag.`,
		Example: "  frond tag delete old-orders",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			tag, err := tagArg(a)
			if err != nil {
				return err
			}
			if err := cl.do(c.Context(), "DELETE", "/v1/tags/"+url.PathEscape(tag), nil, nil); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, "deleted", tag)
			return nil
		},
	}
	c.AddCommand(list, get, create, set, del)
	return c
}
