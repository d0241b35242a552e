package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/service"
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
			log := commandLogger(e)
			a := &auditor{cfg: cfg, log: log}
			p := &auditPrinter{w: e.stdout, json: asJSON}
			counts := a.run(c.Context(), sample, p.print)
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

func (p *auditPrinter) print(f finding) {
	if f.Level == auditDanger {
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
	total := counts[auditOK] + counts[auditWarn] + counts[auditDanger]
	line := fmt.Sprintf("tags: %d, %d dangerous, %d with warnings", total, counts[auditDanger], counts[auditWarn])
	if len(p.named) > 0 {
		more := ""
		if counts[auditDanger] > len(p.named) {
			more = ", ..."
		}
		line += " (" + strings.Join(p.named, ", ") + more + ")"
	}
	_, err := fmt.Fprintln(p.w, line)
	return err
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
	i      int
	name   string
	store  frond.SegmentStore
	read   time.Duration // the quickest read of a page of its tags
	unread bool          // a read of its tags failed (said once)
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

// run makes every check and hands each finding to emit: those about the
// stores and the layout first, the most serious first, then one row per
// tag in the order of names, as the tags are checked (a store of a million
// tags is not held as findings). It returns the tags' count by level.
func (a *auditor) run(ctx context.Context, sample time.Duration, emit func(finding)) map[string]int {
	stores := a.open(ctx)
	defer closeAll(stores)
	a.places(ctx, stores)
	var first []*tagTable
	var elapsed time.Duration
	if sample > 0 && len(stores) > 0 {
		t1 := time.Now()
		first = a.snapshot(ctx, stores)
		select {
		case <-time.After(sample):
		case <-ctx.Done():
		}
		// From the start of one read to the start of the next: a tag
		// read late in the first is read about as late in the second.
		elapsed = time.Since(t1)
	}
	tables := a.snapshot(ctx, stores)
	a.settle(tables, first)
	a.layout()
	slices.SortStableFunc(a.found, func(x, y finding) int { return auditRank[x.Level] - auditRank[y.Level] })
	for _, f := range a.found {
		emit(f)
	}
	counts := map[string]int{}
	a.walkTags(stores, tables, first, elapsed, func(name string, rows []tagRow, missing []string, rate float64, measured bool) {
		f, ok := a.checkTag(name, rows, missing, len(stores), rate, measured, sample)
		if !ok {
			f.Level = auditOK
		}
		counts[f.Level]++
		if ok {
			emit(f)
		}
	})
	return counts
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

// settle picks the read of each store to audit: the second, or the first
// (without a rate) when the second failed; none read is a danger.
func (a *auditor) settle(tables, first []*tagTable) {
	read := 0
	for i := range tables {
		if tables[i] == nil && first != nil && first[i] != nil {
			tables[i], first[i] = first[i], nil
		}
		if tables[i] != nil {
			read++
		}
	}
	if read == 0 && len(tables) > 0 {
		a.add(auditDanger, "tags", "no store's tags could be read: no tag was audited")
	}
}

// tagTable is one read of a store's tags as the audit keeps them: the
// names in one buffer, max_id, step and whether the tag is a sequence tag
// in arrays beside it, and an index ordered by name in bytes (a store
// lists them in its own collation's order). About 40 bytes a tag, where
// frond.Tag values in maps took about 600: a store of a million tags is
// audited in tens of megabytes.
type tagTable struct {
	buf  []byte
	end  []uint32 // name i is buf[end[i-1]:end[i]]
	max  []int64
	step []int64
	seq  []bool
	// mapping is the tag's mapping (frond.Tag.Mapping), as an index of
	// auditMappings.
	mapping []uint8
	order   []uint32 // indexes by name
}

// auditMappings are the mappings a tagTable records: plain (empty), mist,
// opaque, the two changes of mapping under way (frond.MappingChange), and
// any other a store holds.
var auditMappings = []string{"", frond.MappingMist, frond.MappingOpaque,
	frond.MappingChange(frond.MappingMist, frond.MappingPlain), frond.MappingChange(frond.MappingPlain, frond.MappingMist), "another"}

func mappingCode(m string) uint8 {
	if i := slices.Index(auditMappings[:len(auditMappings)-1], m); i >= 0 {
		return uint8(i)
	}
	return uint8(len(auditMappings) - 1)
}

func (t *tagTable) add(tag frond.Tag) {
	t.buf = append(t.buf, tag.Name...)
	t.end = append(t.end, uint32(len(t.buf)))
	t.max = append(t.max, tag.MaxID)
	t.step = append(t.step, tag.Step)
	t.seq = append(t.seq, tag.Mode == frond.ModeSequence)
	t.mapping = append(t.mapping, mappingCode(tag.Mapping))
}

func (t *tagTable) len() int { return len(t.end) }

func (t *tagTable) name(i uint32) []byte {
	var start uint32
	if i > 0 {
		start = t.end[i-1]
	}
	return t.buf[start:t.end[i]]
}

// index orders the table by name.
func (t *tagTable) index() {
	t.order = make([]uint32, t.len())
	for i := range t.order {
		t.order[i] = uint32(i)
	}
	slices.SortFunc(t.order, func(x, y uint32) int { return bytes.Compare(t.name(x), t.name(y)) })
}

// find is the tag named name, if the table has it.
func (t *tagTable) find(name []byte) (uint32, bool) {
	k, ok := slices.BinarySearchFunc(t.order, name, func(i uint32, n []byte) int { return bytes.Compare(t.name(i), n) })
	if !ok {
		return 0, false
	}
	return t.order[k], true
}

// snapshot reads every store's tags; a store that cannot be read is a
// finding, and nil in the result.
func (a *auditor) snapshot(ctx context.Context, stores []*auditStore) []*tagTable {
	out := make([]*tagTable, len(stores))
	for i, s := range stores {
		t := &tagTable{}
		read, err := readTags(ctx, s.store, t.add)
		if err != nil {
			if !s.unread { // said once, if both reads fail
				a.add(auditWarn, s.name, "its tags cannot be read: %v", err)
			}
			s.unread = true
			continue
		}
		if s.read == 0 || read < s.read {
			s.read = read
		}
		t.index()
		out[i] = t
	}
	return out
}

// auditPage is how many tags one read of the audit asks a store for.
var auditPage = 5000

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
			return max(quickest, 1), nil
		}
		after = page[len(page)-1].Name
	}
}

// tagRow is one store's row of a tag.
type tagRow struct {
	max, step int64
	seq       bool
	mapping   uint8         // an index of auditMappings
	read      time.Duration // the store's round trip
}

// walkTags calls f with each tag of the tables, in the order of names, and
// its row in each store that has it (missing: the stores that do not; a
// store that could not be read is in neither). first is the tables of an
// earlier read, elapsed before: from them a tag's rate, all stores'
// together (measured: read in both, in some store).
func (a *auditor) walkTags(stores []*auditStore, tables, first []*tagTable, elapsed time.Duration,
	f func(name string, rows []tagRow, missing []string, rate float64, measured bool)) {
	at := make([]int, len(tables))
	var rows []tagRow
	var missing []string
	for {
		var least []byte
		for i, t := range tables {
			if t != nil && at[i] < t.len() {
				if n := t.name(t.order[at[i]]); least == nil || bytes.Compare(n, least) < 0 {
					least = n
				}
			}
		}
		if least == nil {
			return
		}
		rows, missing = rows[:0], missing[:0]
		rate, measured := 0.0, false
		for i, t := range tables {
			if t == nil {
				continue
			}
			if at[i] >= t.len() || !bytes.Equal(t.name(t.order[at[i]]), least) {
				missing = append(missing, stores[i].name)
				continue
			}
			k := t.order[at[i]]
			at[i]++
			rows = append(rows, tagRow{max: t.max[k], step: t.step[k], seq: t.seq[k], mapping: t.mapping[k], read: stores[i].read})
			if first == nil || first[i] == nil {
				continue
			}
			if j, ok := first[i].find(least); ok && t.max[k] >= first[i].max[j] {
				rate += float64(t.max[k]-first[i].max[j]) / elapsed.Seconds()
				measured = true
			}
		}
		f(string(least), rows, missing, rate, measured)
	}
}

// checkTag is a tag's row of the audit: in every store, its headroom, and
// its step against the observed rate. One row per tag, at its worst level,
// its findings joined.
func (a *auditor) checkTag(name string, rows []tagRow, missing []string, nstores int, rate float64, measured bool, sample time.Duration) (finding, bool) {
	maxStep := a.cfg.Segment.MaxStep
	if a.cfg.Segment.FixedStep {
		maxStep = 0
	}
	level, msgs := auditOK, []string(nil)
	note := func(l, format string, args ...any) {
		if auditRank[l] < auditRank[level] {
			level = l
		}
		msgs = append(msgs, fmt.Sprintf(format, args...))
	}
	var t tagRow
	var slowest time.Duration
	for _, r := range rows {
		if r.max >= t.max {
			t = r
		}
		slowest = max(slowest, r.read)
	}
	top := t.max
	if len(missing) > 0 {
		note(auditWarn, "missing from %s: its residue is not served for this tag (create it there with max_id at least that of the others)", strings.Join(missing, ", "))
	}
	a.checkMapping(note, name, rows)
	if t.seq && nstores > 1 {
		note(auditWarn, "a sequence tag on %d stores: unique, but not linearizable across the stores (docs/kinds.md)", nstores)
	}
	left := math.MaxInt64 - top
	lasts := math.Inf(1) // seconds
	if measured && rate > 0 {
		lasts = float64(left) / rate
	}
	switch {
	case left < 100*max(t.step, maxStep):
		note(auditDanger, "max_id %d: fewer than 100 segments left below 2^63 (%d IDs)", top, left)
	case lasts < year.Seconds():
		note(auditDanger, "at %.0f IDs/s the IDs left below 2^63 last %s", rate, humanSeconds(lasts))
	case lasts < 10*year.Seconds():
		note(auditWarn, "at %.0f IDs/s the IDs left below 2^63 last %s", rate, humanSeconds(lasts))
	case top > 1<<62:
		note(auditWarn, "max_id %d: more than half of the 63-bit space is used", top)
	}
	if !measured || rate <= 0 || t.seq {
		if !t.seq && sample > 0 && len(rows) > 0 {
			note(auditOK, "no IDs taken while sampling (%v); max_id %d, step %d", sample, top, t.step)
		}
	} else {
		a.stepCheck(note, t.step, rate, lasts, maxStep, slowest)
	}
	if len(msgs) == 0 {
		return finding{}, false
	}
	return finding{Level: level, Subject: "tag " + name, Message: strings.Join(msgs, "; ")}, true
}

// checkMapping notes a tag whose stores hold different mappings (a change
// of mapping that did not reach every store), and a form configured for
// it that names another mapping than its own: a node of this configuration
// refuses to start (service.checkMappings), and two mappings of one
// counter would hand out the same numbers.
func (a *auditor) checkMapping(note func(level, format string, args ...any), name string, rows []tagRow) {
	if len(rows) == 0 {
		return
	}
	var settled []string
	for _, r := range rows {
		m := auditMappings[r.mapping]
		if from, to, moving := frond.ParseMappingChange(m); moving {
			note(auditWarn, "a change of its mapping from %s to %s was cut short (or runs now): its copies serve no new segment until it is done; finish it: frond tag set %s --mapping %s",
				frond.MappingName(from), frond.MappingName(to), name, frond.MappingName(to))
			return
		}
		if !slices.Contains(settled, frond.MappingName(m)) {
			settled = append(settled, frond.MappingName(m))
		}
	}
	if len(settled) > 1 {
		note(auditDanger, "its stores hold different mappings (%s): the numbers of the two may meet (copies left before tag changes were fenced across the set: docs/stores.md); frond tag set refuses to change it: move the tag's users to a new tag", strings.Join(settled, ", "))
		return
	}
	m := rows[0].mapping
	form := a.cfg.Forms[name]
	if want := service.FormMapping(form); want != "" && mappingCode(want) != m {
		note(auditDanger, "configured form %s is %s numbers, and the tag hands out %s numbers (its mapping): frond serve refuses to start with it; change the tag (frond tag set %s --mapping %s) or the form",
			form, want, frond.MappingName(auditMappings[m]), name, want)
	}
}

// stepCheck notes whether a tag's segments outlast a store round trip at
// its rate.
func (a *auditor) stepCheck(note func(level, format string, args ...any), step int64, rate, lasts float64, maxStep int64, slowest time.Duration) {
	// A node starts loading the next segment when a tenth of the
	// current one is used: the load must end within the rest of it.
	// The rate is all nodes' together: each node's is lower.
	life := time.Duration(float64(step) / rate * float64(time.Second))
	need := 10 * max(slowest, time.Millisecond)
	bestLife := time.Duration(float64(max(step, maxStep)) / rate * float64(time.Second))
	switch {
	case bestLife*9/10 < need:
		note(auditWarn, "at %.0f IDs/s a segment of %d lasts %s, and even one of the largest step (%d) lasts %s, near the time of a store round trip (%s): callers will wait for loads; raise the step or segment.max_step",
			rate, step, human(life), max(step, maxStep), human(bestLife), slowest.Round(time.Microsecond))
	case life*9/10 < need:
		note(auditOK, "at %.0f IDs/s a segment of %d lasts only %s; the adaptive step grows it (up to %d, %s); IDs last %s", rate, step, human(life), maxStep, human(bestLife), humanSeconds(lasts))
	default:
		note(auditOK, "at %.0f IDs/s a segment of %d lasts %s (a store round trip: %s); IDs last %s", rate, step, human(life), slowest.Round(time.Microsecond), humanSeconds(lasts))
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
