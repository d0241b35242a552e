package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/frond-id/frond/keyseq"
	"github.com/spf13/cobra"
)

type spaceOut struct {
	Name     string         `json:"name"`
	Step     int64          `json:"step"`
	Sections int            `json:"sections"`
	Slots    int            `json:"slots"`
	Held     int            `json:"held"`
	Owners   map[string]int `json:"owners"`
	Members  int            `json:"members"`
	Floor    int64          `json:"floor"`
	Lost     int            `json:"lost"`
}

func printSpaces(e env, view bool, spaces ...spaceOut) {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if view {
		fmt.Fprintln(w, "SPACE\tSTEP\tSECTIONS\tSLOTS\tNODES\tHERE\tFLOOR\tLOST\tOWNERS")
	} else {
		fmt.Fprintln(w, "SPACE\tSTEP\tSECTIONS\tSLOTS")
	}
	for _, s := range spaces {
		if !view {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", printable(s.Name), s.Step, s.Sections, s.Slots)
			continue
		}
		owners := make([]string, 0, len(s.Owners))
		for addr, n := range s.Owners {
			owners = append(owners, fmt.Sprintf("%s=%d", printable(addr), n))
		}
		sort.Strings(owners)
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", printable(s.Name), s.Step, s.Sections, s.Slots, s.Members, s.Held, s.Floor, s.Lost, strings.Join(owners, " "))
	}
	w.Flush()
}

func newSpaceCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "space",
		Short: "Administer keyed sequence spaces on a running server",
		Long: `Administer keyed sequence spaces: strictly increasing values per key, for
very many keys (docs/sequences.md). When the server has an admin token, pass
it with --token or FROND_ADMIN_TOKEN.`,
		Example: `  frond space create msgs
  frond space create invoices --step 1000 --sections 64
  frond space list`,
	}
	cl := addClientFlags(c, e)
	var sp keyseq.Space
	create := &cobra.Command{
		Use:   "create SPACE [--step N] [--sections N] [--slots N]",
		Short: "Create a space",
		Long: `Create a keyed sequence space. Its keys' values start at 1 and strictly
increase, with gaps: a restart or a new owner of a section skips at most
--step values of each of its keys. --sections is how many parts the keys are
spread over (each with one persisted maximum, owned by one node at a time);
--slots the counters per section (a power of two: keys beyond them share
counters, which still increase for each). Fixed for the space's life.`,
		Example: `  frond space create msgs
  frond space create invoices --step 1000 --sections 64`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			sp.Name = a[0]
			if err := sp.WithDefaults().Validate(); err != nil {
				return usageError{err}
			}
			var out spaceOut
			if err := cl.do(c.Context(), "POST", "/v1/spaces", map[string]any{"name": sp.Name, "step": sp.Step, "sections": sp.Sections, "slots": sp.Slots}, &out); err != nil {
				return err
			}
			printSpaces(e, false, out)
			return nil
		},
	}
	create.Flags().Int64Var(&sp.Step, "step", keyseq.DefaultStep, "how far a section's persisted maximum is raised at a time")
	create.Flags().IntVar(&sp.Sections, "sections", keyseq.DefaultSections, "sections the keys are spread over")
	create.Flags().IntVar(&sp.Slots, "slots", keyseq.DefaultSlots, "counters per section, a power of two")
	list := &cobra.Command{
		Use: "list", Short: "List spaces, with the server's view of their owners",
		Long: `List the spaces: for each, how many nodes share it (NODES), how many of its
sections the server asked serves (HERE), and the live owners with how many
sections each (OWNERS).`,
		Example: "  frond space list", Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			var out struct{ Spaces []spaceOut }
			if err := cl.do(c.Context(), "GET", "/v1/spaces", nil, &out); err != nil {
				return err
			}
			printSpaces(e, true, out.Spaces...)
			return nil
		},
	}
	var above int64
	rearm := &cobra.Command{
		Use:   "rearm SPACE [--above N]",
		Short: "Re-arm a space after its store lost data: raise every section above every node's floors, take the fence off",
		Long: `After the store lost acknowledged writes (a Redis restarted without its data,
a fail-over to a replica behind, a restored backup), the first node that finds
it fences the store for every node (LOST and store_lost_data). Re-arming asks
every live member of the space for its floors (the highest maximum it raised
or read of each section, in its data directory), raises every section's
maximum in the store to at least the highest of them and N, and takes the
store's fence off when it was this space's finding. It prints the nodes it
could not ask: a node that is down, or that this node cannot reach, may have
answered values above; give --above at least its FLOOR (frond space list on
it, or its data directory). A fence of a segment tag's finding stays until
frond stores rearm. Run again, it raises nothing more.`,
		Example: "  frond space rearm msgs\n  frond space rearm msgs --above 2000000",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if above < 0 {
				return usageError{fmt.Errorf("--above N: at least 0")}
			}
			var out struct {
				Above   int64             `json:"above"`
				Asked   []string          `json:"asked"`
				Unasked map[string]string `json:"unasked"`
				Fence   string            `json:"fence"`
				Lifted  bool              `json:"lifted"`
				Kept    string            `json:"kept"`
			}
			if err := cl.do(c.Context(), "POST", "/v1/spaces/"+url.PathEscape(a[0])+"/rearm", map[string]any{"above": above}, &out); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "space %s re-armed: every section at or above %d (floors of %d nodes: %s)\n", a[0], out.Above, len(out.Asked), strings.Join(out.Asked, " "))
			for _, addr := range slices.Sorted(maps.Keys(out.Unasked)) {
				fmt.Fprintf(e.stdout, "  node %s was not asked (%s): give --above at least its FLOOR, or re-arm again once it answers\n", addr, out.Unasked[addr])
			}
			switch {
			case out.Lifted:
				fmt.Fprintf(e.stdout, "  the store's lost-data fence (%s) is off\n", out.Fence)
			case out.Kept != "":
				fmt.Fprintf(e.stdout, "  the store stays fenced: %s\n", out.Kept)
			}
			return nil
		},
	}
	rearm.Flags().Int64Var(&above, "above", 0, "raise every section's maximum to at least this too (above every value a node not asked answered)")
	c.AddCommand(create, list, rearm)
	return c
}

// spacePath is the route of a key's next values.
func spacePath(space, key string) string {
	return "/v1/seq/" + url.PathEscape(space) + "/" + url.PathEscape(key)
}
