package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frond-id/frond/audit"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/spf13/cobra"
)

// errAuditDanger makes frond audit exit 1 after its report.
var errAuditDanger = errors.New("the audit found dangers (above)")

func newAuditCmd(e env) *cobra.Command {
	var sample time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "audit",
		Short: "Check the configured stores and layout for what could lead to duplicates or exhaustion",
		Long: `Read the stores of the configuration (as frond serve would: --config, FROND_*,
flags) and report, without taking an ID:

  - each store's place in the set of stores (frond stores): a change of the
    set interrupted, a store of the set listed alone, a store outside the
    set or of an older set listed with it;
  - tags missing from some stores of a multi-store, and sequence tags on
    several stores (unique, not linearizable);
  - a tag whose stores hold different mappings, or whose configured form
    (forms:) names another mapping than the tag's (docs/kinds.md);
  - max_id near the top of the ID space, and at the rate observed while the
    audit samples (--sample), how long the IDs last;
  - a step that a load cannot keep up with at that rate;
  - the snowflake layout running out;
  - what each store warns about now (Redis persistence, MySQL collation).

Exit 0 when nothing is dangerous (warnings included), 1 when something is,
2 for a bad configuration.`,
		Example: "  frond audit --config /etc/frond/frond.yaml\n  frond audit --store \"mysql://a/ids postgres://b/ids\" --sample 30s --json",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			if sample < 0 {
				return usagef("--sample %v: 0 (no rate checks) or a positive duration", sample)
			}
			ac := auditConfig(cfg, sample)
			ac.Stores = openAuditStores(c.Context(), cfg.Store, cfg.DataDir, commandLogger(e))
			defer closeAuditStores(ac.Stores)
			p := &auditPrinter{w: e.stdout, json: asJSON}
			counts := audit.Run(c.Context(), ac, p.print)
			if err := p.close(counts); err != nil {
				return err
			}
			if p.dangers > 0 {
				return errAuditDanger
			}
			return nil
		},
	}
	config.AddFlags(c.Flags(), backendFlags...)
	c.Flags().DurationVar(&sample, "sample", 10*time.Second, "read max_id twice this far apart to measure the rate (0: no rate checks)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return c
}

// auditPrinter writes the findings as they come: text in aligned columns
// (aligned a batch at a time), or one JSON array written element by
// element.
type auditPrinter struct {
	w       io.Writer
	json    bool
	tw      *tabwriter.Writer
	n       int      // findings printed
	dangers int      // of them dangerous
	named   []string // the first dangerous tags, for the summary
	err     error
}

// auditBatch is how many rows of text are aligned together.
const auditBatch = 1000

func (p *auditPrinter) print(f audit.Finding) {
	if f.Level == audit.Danger {
		p.dangers++
		if tag, ok := strings.CutPrefix(f.Subject, "tag "); ok && len(p.named) < 10 {
			p.named = append(p.named, tag)
		}
	}
	if p.err != nil {
		return
	}
	if p.json {
		b, err := json.MarshalIndent(f, "  ", "  ")
		sep := ",\n  "
		if p.n == 0 {
			sep = "[\n  "
		}
		if err == nil {
			_, err = fmt.Fprintf(p.w, "%s%s", sep, b)
		}
		p.err = err
		p.n++
		return
	}
	if p.tw == nil {
		p.tw = tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	}
	fmt.Fprintf(p.tw, "%s\t%s\t%s\n", strings.ToUpper(f.Level), f.Subject, f.Message)
	if p.n++; p.n%auditBatch == 0 {
		p.err = p.tw.Flush()
	}
}

// close ends the output; text ends with the tags' count by level, and the
// first dangerous tags (a danger among a million rows is easy to miss).
func (p *auditPrinter) close(counts map[string]int) error {
	if p.err != nil {
		return p.err
	}
	if p.json {
		end := "[]\n"
		if p.n > 0 {
			end = "\n]\n"
		}
		_, err := io.WriteString(p.w, end)
		return err
	}
	if p.tw != nil {
		if err := p.tw.Flush(); err != nil {
			return err
		}
	}
	total := counts[audit.OK] + counts[audit.Warn] + counts[audit.Danger]
	line := fmt.Sprintf("tags: %d, %d dangerous, %d with warnings", total, counts[audit.Danger], counts[audit.Warn])
	if len(p.named) > 0 {
		more := ""
		if counts[audit.Danger] > len(p.named) {
			more = ", ..."
		}
		line += " (" + strings.Join(p.named, ", ") + more + ")"
	}
	_, err := fmt.Fprintln(p.w, line)
	return err
}

// auditConfig is what the audit reads of the configuration, but the
// stores.
func auditConfig(cfg *config.Config, sample time.Duration) audit.Config {
	sf := cfg.ServiceConfig().Snowflake.WithDefaults() // the layout and its warning as the node runs them
	ac := audit.Config{
		MaxStep:       cfg.Segment.MaxStep,
		Forms:         map[string]audit.Form{},
		Layout:        sf.Layout,
		ExpiryWarning: sf.ExpiryWarning,
		Sample:        sample,
		Timeout:       storeStartTimeout,
	}
	if cfg.Segment.FixedStep {
		ac.MaxStep = 0
	}
	for tag, form := range cfg.Forms {
		ac.Forms[tag] = audit.Form{Name: form, Mapping: service.FormMapping(form)}
	}
	return ac
}

// openAuditStores opens each store of the list now, with no background
// retries: a store that cannot be opened is a finding.
func openAuditStores(ctx context.Context, list, dataDir string, log *slog.Logger) []audit.Store {
	urls := secret.Fields(list)
	out := make([]audit.Store, len(urls))
	for i, raw := range urls {
		out[i].Name = fmt.Sprintf("store %d (%s)", i, storeName(raw))
		if len(urls) == 1 {
			out[i].Name = "store " + storeName(raw)
		}
		if st, err := openStoreNow(ctx, raw, log); err != nil {
			out[i].Err = err
		} else {
			out[i].Store = st
		}
		if b, _ := backendOf(raw); b != nil && b.volatile {
			out[i].Volatile = true
		}
		if _, tags, err := segment.ReadFloors(segment.FloorsFile(dataDir, storeName(raw))); err == nil {
			out[i].Floors = tags
		}
	}
	return out
}

func closeAuditStores(stores []audit.Store) {
	for _, s := range stores {
		if s.Store != nil {
			s.Store.Close()
		}
	}
}
