package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/segment"
	"github.com/spf13/cobra"
)

// newFloorsCmd is frond stores floors: the floors this node keeps of its
// stores (segment.Floors), read from its data directory, as JSON for
// frond stores rearm.
func newFloorsCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "floors",
		Short: "Print the floors this node keeps of its stores (for frond stores rearm)",
		Long: `Print, as JSON, the floors this node keeps in its data directory: for each
store and tag, the highest end of a range the store gave this node (per
mapping), written before any ID of the range was handed out. A store that
answers below them lost acknowledged writes (docs/operations.md#a-store-that-went-back).
Run it on every node (it reads files only; the node may be running) and
give the outputs to frond stores rearm.`,
		Example: "  frond stores floors --data-dir /var/lib/frond > floors-$(hostname).json",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			reports, err := segment.ReadFloorsDir(cfg.DataDir)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(reports)
		},
	}
	config.AddFlags(c.Flags(), "config", "data-dir")
	return c
}

// newRearmCmd is frond stores rearm: segment.Rearm of every configured
// store, above the floors the nodes reported.
func newRearmCmd(e env) *cobra.Command {
	var files []string
	var above int64
	c := &cobra.Command{
		Use:   "rearm",
		Short: "Re-arm stores that lost acknowledged writes: raise every tag above the nodes' floors, take the fence off",
		Long: `A store that went back (a fail-over to a replica behind, a restored backup,
a Redis restarted empty) is refused by every node (store_lost_data) once one
node finds it. Re-arming raises every tag of each configured store to the
highest floor the nodes report for it (frond stores floors on each node,
given with --floors) and to at least --above, then takes the store's fence
off. A node whose floors are not given is covered by --above only: give
every node's. Tags the floors name that the store lacks are listed: create
each again above its floor. Run again, it raises nothing more.`,
		Example: "  frond stores rearm --config /etc/frond/frond.yaml --floors node-a.json --floors node-b.json\n" +
			"  frond stores rearm --store redis://ids-redis:6379/0 --above 5000000000",
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			if len(files) == 0 && above <= 0 {
				return usagef("give the floors of every node (--floors, from frond stores floors), or --above N")
			}
			var reports []segment.FloorsReport
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				var rs []segment.FloorsReport
				if err := json.Unmarshal(b, &rs); err != nil {
					return usagef("--floors %s: not the output of frond stores floors: %v", f, err)
				}
				reports = append(reports, rs...)
			}
			stores, names, err := openAll(c.Context(), secret.Fields(cfg.Store), e)
			if err != nil {
				return err
			}
			defer closeStores(stores)
			for i, s := range stores {
				floors := floorsOf(names[i], len(stores), reports)
				res, err := segment.Rearm(c.Context(), s, floors, above)
				if err != nil {
					return fmt.Errorf("re-arm %s: %w", names[i], err)
				}
				fence := "it was not fenced"
				switch {
				case res.Stays != "":
					fence = "its fence (" + res.Fence + ") stays: " + res.Stays
				case res.Fence != "":
					fence = "its fence (" + res.Fence + ") is off"
				}
				fmt.Fprintf(e.stdout, "%s: %d tags raised, %d already above the floors of %d reports; %s\n", names[i], len(res.Raised), res.Kept, len(floors), fence)
				for _, n := range res.MissingNames() {
					fmt.Fprintf(e.stdout, "  tag %s is not in the store: create it again above %d (frond tag create %s --max-id %d ...)\n", n, res.Missing[n], n, res.Missing[n]+1)
				}
			}
			return nil
		},
	}
	config.AddFlags(c.Flags(), storeFlags...)
	c.Flags().StringArrayVar(&files, "floors", nil, "a node's floors (the output of frond stores floors); give every node's")
	c.Flags().Int64Var(&above, "above", 0, "raise every tag to at least this max_id too")
	return c
}

// floorsOf picks the floors of the store named name from the reports: those
// that name it; when the configuration has one store, every report (a node
// may name the same store by another address).
func floorsOf(name string, stores int, reports []segment.FloorsReport) []map[string]segment.TagFloors {
	var out []map[string]segment.TagFloors
	for _, r := range reports {
		if r.Store == name || stores == 1 {
			out = append(out, r.Tags)
		}
	}
	return out
}
