package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/spf13/cobra"
)

// Levels of an audit finding.
const (
	auditOK     = "ok"
	auditWarn   = "warn"
	auditDanger = "danger" // duplicates possible, or IDs or time run out within a year
)

// finding is one line of frond audit.
type finding struct {
	Level   string `json:"level"`
	Subject string `json:"subject"`
	Message string `json:"message"`
}

// errAuditDanger makes frond audit exit 1 after its report.
var errAuditDanger = errors.New("the audit found dangers (above)")

const year = 365 * 24 * time.Hour

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
			log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			a := &auditor{cfg: cfg, log: log}
			found := a.run(c.Context(), sample)
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(found); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				for _, f := range found {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(f.Level), f.Subject, f.Message)
				}
				tw.Flush()
			}
			for _, f := range found {
				if f.Level == auditDanger {
					return errAuditDanger
				}
			}
			return nil
		},
	}
	config.AddFlags(c.Flags())
	c.Flags().DurationVar(&sample, "sample", 10*time.Second, "read max_id twice this far apart to measure the rate (0: no rate checks)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return c
}

// auditRank orders the levels, the most serious first.
var auditRank = map[string]int{auditDanger: 0, auditWarn: 1, auditOK: 2}

type auditor struct {
	cfg   *config.Config
	log   *slog.Logger
	found []finding
}

func (a *auditor) add(level, subject, format string, args ...any) {
	a.found = append(a.found, finding{Level: level, Subject: subject, Message: fmt.Sprintf(format, args...)})
}

// auditStore is one configured store, opened.
type auditStore struct {
	i     int
	name  string
	store frond.SegmentStore
	tags  map[string]frond.Tag
	read  time.Duration // how long listing the tags took
}

func (a *auditor) open(ctx context.Context) []*auditStore {
	urls := secret.Fields(a.cfg.Store)
	var out []*auditStore
	for i, raw := range urls {
		subject := fmt.Sprintf("store %d (%s)", i, storeName(raw))
		if len(urls) == 1 {
			subject = "store " + storeName(raw)
		}
		s, err := openStoreNow(ctx, raw, a.log) // no background retries: a store that cannot be opened is a finding
		if err != nil {
			a.add(auditDanger, subject, "cannot be opened, so it was not audited: %v", err)
			continue
		}
		if b, _ := backendOf(raw); b != nil && b.volatile {
			a.add(auditDanger, subject, "the memory store keeps nothing: every restart hands out the same IDs again")
		}
		if w, ok := s.(frond.Warner); ok {
			for _, msg := range w.Warnings() {
				a.add(auditWarn, subject, "%s", msg)
			}
		}
		out = append(out, &auditStore{i: i, name: subject, store: s})
	}
	return out
}

func closeAll(stores []*auditStore) {
	for _, s := range stores {
		s.store.Close()
	}
}

// run makes every check and returns the findings, the most serious first.
func (a *auditor) run(ctx context.Context, sample time.Duration) []finding {
	stores := a.open(ctx)
	defer closeAll(stores)
	a.places(ctx, stores)
	first := a.snapshot(ctx, stores)
	var rates map[string]float64
	var elapsed time.Duration
	if sample > 0 && len(stores) > 0 {
		t0 := time.Now()
		select {
		case <-time.After(sample):
		case <-ctx.Done():
		}
		second := a.snapshot(ctx, stores)
		elapsed = time.Since(t0)
		rates = map[string]float64{}
		for key, v := range second {
			if w, ok := first[key]; ok && v >= w {
				rates[key.tag] += float64(v-w) / elapsed.Seconds()
			}
		}
	}
	a.tags(stores, rates, sample)
	a.layout()
	slices.SortStableFunc(a.found, func(x, y finding) int { return auditRank[x.Level] - auditRank[y.Level] })
	return a.found
}

// places reports each store's place in the set of stores, and what a node
// of this configuration would make of it (segment.Multi).
func (a *auditor) places(ctx context.Context, stores []*auditStore) {
	multi := len(secret.Fields(a.cfg.Store)) > 1
	newest := int64(-1)
	read := map[int]frond.Place{}
	for _, s := range stores {
		c, cancel := context.WithTimeout(ctx, storeStartTimeout)
		p, err := frond.PlaceOf(c, s.store)
		cancel()
		if err != nil {
			a.add(auditWarn, s.name, "its place cannot be read: %v", err)
			continue
		}
		read[s.i] = p
		if p.Of > 0 {
			newest = max(newest, p.Gen)
		}
	}
	for _, s := range stores {
		p, ok := read[s.i]
		switch {
		case !ok:
		case p.Moving():
			a.add(auditDanger, s.name, "%s: no node allocates from it until the change is done; if no change is running, it was interrupted: run frond stores set again with the same stores", p.Describe())
		case p.Retired():
			a.add(auditWarn, s.name, "%s: no node allocates from it; remove it from the configuration", p.Describe())
		case !multi && p.Of > 1:
			a.add(auditDanger, s.name, "%s, but this configuration lists it alone: the store refuses such a node (frond serve refuses to start); list the stores of the set", p.Describe())
		case !multi && p.Of == 1:
			a.add(auditOK, s.name, "%s", p.Describe())
		case !multi:
			a.add(auditOK, s.name, "stands alone")
		case p.Alone():
			a.add(auditDanger, s.name, "stands alone, not as a member of a set: nodes listing it with other stores take no ID from it; run frond stores set with the stores of the set")
		case p.Gen < newest:
			a.add(auditDanger, s.name, "%s, of an older set than another store here (generation %d): nodes take no ID from it; it was left out of a change of the set", p.Describe(), newest)
		default:
			a.add(auditOK, s.name, "%s", p.Describe())
		}
	}
}

type storeTag struct {
	store int
	tag   string
}

// snapshot reads every store's tags: their max_id by store and tag.
func (a *auditor) snapshot(ctx context.Context, stores []*auditStore) map[storeTag]int64 {
	out := map[storeTag]int64{}
	for _, s := range stores {
		tags := map[string]frond.Tag{}
		read, err := readTags(ctx, s.store, func(t frond.Tag) {
			tags[t.Name] = frond.Tag{Name: t.Name, MaxID: t.MaxID, Step: t.Step, Mode: t.Mode} // no description: a million tags are read
			out[storeTag{s.i, t.Name}] = t.MaxID
		})
		if err != nil {
			a.add(auditWarn, s.name, "its tags cannot be read: %v", err)
			continue
		}
		if s.tags == nil || read < s.read {
			s.read = read
		}
		s.tags = tags
	}
	return out
}

// auditPage is how many tags one read of the audit asks a store for.
const auditPage = 5000

// readTags reads every tag of st a page at a time (each page a store call
// of its own, bounded as a start-up call), calling f with each; it returns
// the quickest page's time, a store round trip's measure.
func readTags(ctx context.Context, st frond.SegmentStore, f func(frond.Tag)) (time.Duration, error) {
	var quickest time.Duration = -1
	after := ""
	for {
		c, cancel := context.WithTimeout(ctx, storeStartTimeout)
		t0 := time.Now()
		page, err := frond.TagsAfter(c, st, after, auditPage)
		took := time.Since(t0)
		cancel()
		if err != nil {
			return 0, err
		}
		if quickest < 0 || took < quickest {
			quickest = took
		}
		for _, t := range page {
			f(t)
		}
		if len(page) < auditPage {
			return quickest, nil
		}
		after = page[len(page)-1].Name
	}
}

// tags checks each tag: in every store, its headroom, and its step against
// the observed rate.
func (a *auditor) tags(stores []*auditStore, rates map[string]float64, sample time.Duration) {
	names := map[string]bool{}
	for _, s := range stores {
		for n := range s.tags {
			names[n] = true
		}
	}
	maxStep := a.cfg.Segment.MaxStep
	if a.cfg.Segment.FixedStep {
		maxStep = 0
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		// One row per tag, at its worst level, its findings joined.
		level, msgs := auditOK, []string(nil)
		note := func(l, format string, args ...any) {
			if auditRank[l] < auditRank[level] {
				level = l
			}
			msgs = append(msgs, fmt.Sprintf(format, args...))
		}
		var missing []string
		var t frond.Tag
		var top int64
		var slowest time.Duration
		for _, s := range stores {
			st, ok := s.tags[name]
			if !ok {
				missing = append(missing, s.name)
				continue
			}
			if st.MaxID >= top {
				t, top = st, st.MaxID
			}
			slowest = max(slowest, s.read)
		}
		if len(missing) > 0 {
			note(auditWarn, "missing from %s: its residue is not served for this tag (create it there with max_id at least that of the others)", strings.Join(missing, ", "))
		}
		if t.Mode == frond.ModeSequence && len(stores) > 1 {
			note(auditWarn, "a sequence tag on %d stores: unique, but not linearizable across the stores (docs/kinds.md)", len(stores))
		}
		left := math.MaxInt64 - top
		rate, measured := rates[name]
		lasts := math.Inf(1) // seconds
		if measured && rate > 0 {
			lasts = float64(left) / rate
		}
		switch {
		case left < 100*max(t.Step, maxStep):
			note(auditDanger, "max_id %d: fewer than 100 segments left below 2^63 (%d IDs)", top, left)
		case lasts < year.Seconds():
			note(auditDanger, "at %.0f IDs/s the IDs left below 2^63 last %s", rate, humanSeconds(lasts))
		case lasts < 10*year.Seconds():
			note(auditWarn, "at %.0f IDs/s the IDs left below 2^63 last %s", rate, humanSeconds(lasts))
		case top > 1<<62:
			note(auditWarn, "max_id %d: more than half of the 63-bit space is used", top)
		}
		if !measured || rate <= 0 || t.Mode == frond.ModeSequence {
			if t.Mode != frond.ModeSequence && sample > 0 && len(missing) < len(stores) {
				note(auditOK, "no IDs taken while sampling (%v); max_id %d, step %d", sample, top, t.Step)
			}
		} else {
			a.stepCheck(note, t, rate, lasts, maxStep, slowest)
		}
		if len(msgs) > 0 {
			a.add(level, "tag "+name, "%s", strings.Join(msgs, "; "))
		}
	}
}

// stepCheck notes whether a tag's segments outlast a store round trip at
// its rate.
func (a *auditor) stepCheck(note func(level, format string, args ...any), t frond.Tag, rate, lasts float64, maxStep int64, slowest time.Duration) {
	// A node starts loading the next segment when a tenth of the
	// current one is used: the load must end within the rest of it.
	// The rate is all nodes' together: each node's is lower.
	life := time.Duration(float64(t.Step) / rate * float64(time.Second))
	need := 10 * max(slowest, time.Millisecond)
	bestLife := time.Duration(float64(max(t.Step, maxStep)) / rate * float64(time.Second))
	switch {
	case bestLife*9/10 < need:
		note(auditWarn, "at %.0f IDs/s a segment of %d lasts %s, and even one of the largest step (%d) lasts %s, near the time of a store round trip (%s): callers will wait for loads; raise the step or segment.max_step",
			rate, t.Step, human(life), max(t.Step, maxStep), human(bestLife), slowest.Round(time.Microsecond))
	case life*9/10 < need:
		note(auditOK, "at %.0f IDs/s a segment of %d lasts only %s; the adaptive step grows it (up to %d, %s); IDs last %s", rate, t.Step, human(life), maxStep, human(bestLife), humanSeconds(lasts))
	default:
		note(auditOK, "at %.0f IDs/s a segment of %d lasts %s (a store round trip: %s); IDs last %s", rate, t.Step, human(life), slowest.Round(time.Microsecond), humanSeconds(lasts))
	}
}

// layout checks when the snowflake layout runs out.
func (a *auditor) layout() {
	sf := a.cfg.ServiceConfig().Snowflake.WithDefaults() // the layout and its warning as the node runs them
	l, warn := sf.Layout, sf.ExpiryWarning
	left := time.Until(l.Expires())
	subject := "layout " + l.Name
	switch {
	case left < year:
		a.add(auditDanger, subject, "runs out %s (%s): snowflake IDs stop then", l.Expires().UTC().Format(time.DateOnly), human(left))
	case warn > 0 && left < warn:
		a.add(auditWarn, subject, "runs out %s, in %s", l.Expires().UTC().Format(time.DateOnly), human(left))
	default:
		a.add(auditOK, subject, "runs out %s", l.Expires().UTC().Format(time.DateOnly))
	}
}

// humanSeconds is human for spans too long for a time.Duration.
func humanSeconds(s float64) string {
	if s >= 100*year.Seconds() {
		return "more than 100 years"
	}
	return human(time.Duration(s * float64(time.Second)))
}

// human writes d in the largest unit that fits.
func human(d time.Duration) string {
	switch {
	case d < 0:
		return "already"
	case d >= year:
		return fmt.Sprintf("%.1f years", d.Hours()/24/365)
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.1f hours", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1f minutes", d.Minutes())
	}
	return d.Round(time.Millisecond).String()
}
