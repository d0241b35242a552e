package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/segment"
	"github.com/spf13/cobra"
)

func newStoresCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "stores",
		Short: "Show or change the set of stores that share one ID space (several stores at once)",
		Long: `Several stores share one ID space by residue: a store whose place is residue
i of K hands out only IDs congruent to i modulo K. The place is recorded in
each store and checked by the store on every allocation, so a node reads it
from the store: the order of the stores in a node's configuration does not
matter (docs/stores.md).`,
		Example: "  frond stores show --config /etc/frond/frond.yaml\n" +
			"  frond stores set --store \"mysql://frond:pw@db-a:3306/ids postgres://frond:pw@db-b:5432/ids\"",
		Args: args(cobra.NoArgs),
	}
	show := &cobra.Command{
		Use:     "show",
		Short:   "Print the place of each configured store",
		Example: "  frond stores show --store \"mysql://frond:pw@db-a:3306/ids postgres://frond:pw@db-b:5432/ids\"",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			stores, names, err := openAll(c.Context(), secret.Fields(cfg.Store), e)
			if err != nil {
				return err
			}
			defer closeStores(stores)
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STORE\tIDENTITY\tPLACE")
			for i, s := range stores {
				id, err := frond.IdentityOf(c.Context(), s)
				if err != nil {
					fmt.Fprintf(tw, "%s\t-\tcannot be read: %v\n", names[i], err)
					continue
				}
				p, err := frond.PlaceOf(c.Context(), s)
				if err != nil {
					fmt.Fprintf(tw, "%s\t%s\tcannot be read: %v\n", names[i], id, err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", names[i], id, p.Describe())
			}
			return tw.Flush()
		},
	}
	config.AddFlags(show.Flags(), storeFlags...)
	var retire string
	var margin int64
	var abandon bool
	set := &cobra.Command{
		Use:   "set",
		Short: "Make the configured stores the set, in this order (safe while nodes run)",
		Long: `Make the stores of --store (or the configuration's store) the set of stores
that share one ID space, store i of K handing out the IDs congruent to i
modulo K (one store: the set's only store, which serves nodes that list it alone), and retire the stores of --retire.
It adds a store, removes one, reorders them, places stores for the first
time, or goes back to one store, and is safe while nodes run:

  1. every store's place is read; the stores of the current set must all
     be given (in --store or --retire), since each may hold IDs;
  2. every store is fenced: no node allocates from it until the change is
     done (nodes serve what they hold meanwhile);
  3. every tag's max_id is read in every store, and each store of the new
     set is raised above the highest plus --margin (tags it lacks are
     created);
  4. the new places are written. Nodes read them from the stores.

Each change has an identity, and its fence records the identities of its
stores (frond stores show prints each store's). If it stops midway the
stores stay fenced (safe: no store serves): run it again with exactly the
same --store and --retire, in the same order, to finish it. Any other list
is refused while a change is recorded, and so is another change over its
stores. --abandon with the same stores undoes a change that had not begun
placing stores (each fenced store goes back to its place), and finishes
one that had. Every node must run a frond that checks places (this
version or later): stop or upgrade older nodes first.`,
		Example: "  frond stores set --store \"mysql://frond:pw@db-a:3306/ids postgres://frond:pw@db-b:5432/ids\"\n" +
			"  frond stores set --store \"postgres://frond:pw@db-b:5432/ids\" --retire \"mysql://frond:pw@db-a:3306/ids\"",
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			if margin < -1 {
				return usagef("--margin %d: -1 (each tag's step) or at least 0", margin)
			}
			in, inNames, err := openAll(c.Context(), secret.Fields(cfg.Store), e)
			if err != nil {
				return err
			}
			defer closeStores(in)
			out, outNames, err := openAll(c.Context(), secret.Fields(retire), e)
			if err != nil {
				return err
			}
			defer closeStores(out)
			change := segment.ChangeSet
			if abandon {
				change = segment.AbandonChange
			}
			got, err := change(c.Context(), in, out, segment.SetOptions{
				Margin: margin,
				Names:  append(inNames, outNames...),
				Log:    func(format string, args ...any) { fmt.Fprintf(e.stdout, format+"\n", args...) },
			})
			if err != nil {
				return err
			}
			if got.Abandoned {
				fmt.Fprintf(e.stdout, "abandoned: change %s to generation %d; every store it fenced is back at its place\n", got.Change, got.Gen)
				return nil
			}
			fmt.Fprintf(e.stdout, "done: generation %d (change %s), %d tags, %d raised, %d created", got.Gen, got.Change, got.Tags, got.Raised, got.Created)
			if got.Resumed {
				fmt.Fprint(e.stdout, " (an interrupted change was finished)")
			}
			fmt.Fprintln(e.stdout)
			return nil
		},
	}
	config.AddFlags(set.Flags(), storeFlags...)
	set.Flags().StringVar(&retire, "retire", "", "stores leaving the set, separated by spaces (no node allocates from them again)")
	set.Flags().Int64Var(&margin, "margin", -1, "added to the highest max_id of each tag before the new set is raised to it (-1: the tag's step)")
	set.Flags().BoolVar(&abandon, "abandon", false, "undo the interrupted change of exactly these stores (--store, --retire) instead of finishing it; one that had begun placing stores is finished")
	c.AddCommand(show, set, newFloorsCmd(e), newRearmCmd(e))
	return c
}

// openAll opens the stores at urls for a command (no background retries:
// a store that cannot be opened is an error), with their names.
func openAll(ctx context.Context, urls []string, e env) ([]frond.SegmentStore, []string, error) {
	log := commandLogger(e)
	var stores []frond.SegmentStore
	var names []string
	for _, raw := range urls {
		s, err := openStoreNow(ctx, raw, log)
		if err != nil {
			closeStores(stores)
			return nil, nil, fmt.Errorf("store %s: %w", storeName(raw), err)
		}
		stores = append(stores, s)
		names = append(names, storeName(raw))
	}
	return stores, names, nil
}

func closeStores(stores []frond.SegmentStore) {
	for _, s := range stores {
		s.Close()
	}
}
