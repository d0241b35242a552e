// Package audit checks a configuration's segment stores and snowflake
// layout for what could lead to duplicate IDs or to IDs running out, without
// taking an ID: each store's place in the set of stores, tags missing from
// some stores, copies of a tag that disagree on its mapping, max_id near the
// top of the ID space, steps a load cannot keep up with, and the layout's
// end. frond audit (cmd/frond) opens the stores, runs it and prints.
package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
)

// Levels of a finding.
const (
	OK     = "ok"
	Warn   = "warn"
	Danger = "danger" // duplicates possible, or IDs or time run out within a year
)

// rank orders the levels, the most serious first.
var rank = map[string]int{Danger: 0, Warn: 1, OK: 2}

// Finding is one line of an audit.
type Finding struct {
	Level   string `json:"level"`
	Subject string `json:"subject"`
	Message string `json:"message"`
}

// Store is one configured store, as the caller opened it.
type Store struct {
	Name     string             // how the findings name it: "store 0 (mysql://db/ids)"
	Store    frond.SegmentStore // nil when Err is set
	Err      error              // it could not be opened: a danger, and it is not audited
	Volatile bool               // it keeps nothing across a restart (the memory store)
	// Floors are the floors this node keeps of the store (segment.Floors,
	// its data directory), nil when it keeps none: a tag whose max_id is
	// below its floor means the store lost acknowledged writes.
	Floors map[string]segment.TagFloors
}

// Form is a form configured for a tag (config's forms:) and the mapping it
// needs of the tag's numbers (service.FormMapping; "" for any).
type Form struct {
	Name, Mapping string
}

// Config is what an audit reads.
type Config struct {
	// Stores are the configured stores in the configuration's order; more
	// than one is a multi-store (segment.Multi).
	Stores []Store
	// MaxStep is the adaptive step's ceiling (segment.max_step); 0 when
	// steps are fixed.
	MaxStep int64
	// Forms are the configured forms by tag.
	Forms map[string]Form
	// Layout is the snowflake layout a node runs, and ExpiryWarning how
	// long before its end the node warns (0: never).
	Layout        snowflake.Layout
	ExpiryWarning time.Duration
	// Sample is how far apart the stores' tags are read twice to measure
	// each tag's rate; 0 reads them once, with no rate checks.
	Sample time.Duration
	// Timeout bounds each store call (3 s when 0).
	Timeout time.Duration
	// Page is how many tags one read asks a store for (5,000 when 0).
	Page int
	// Now is the clock of the layout's check (time.Now when nil).
	Now func() time.Time
}

const year = 365 * 24 * time.Hour

type auditor struct {
	cfg   Config
	found []Finding
	// read is each store's quickest page of tags (a round trip's
	// measure), unread whether a read of its tags failed (said once).
	read   []time.Duration
	unread []bool
	open   int // the stores opened
}

func (a *auditor) add(level, subject, format string, args ...any) {
	a.found = append(a.found, Finding{Level: level, Subject: subject, Message: fmt.Sprintf(format, args...)})
}

func newAuditor(cfg Config) *auditor {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Page <= 0 {
		cfg.Page = 5000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &auditor{cfg: cfg, read: make([]time.Duration, len(cfg.Stores)), unread: make([]bool, len(cfg.Stores))}
	for _, s := range cfg.Stores {
		if s.Store != nil {
			a.open++
		}
	}
	return a
}

// Run makes every check and hands each finding to emit: those about the
// stores and the layout first, the most serious first, then one row per
// tag in the order of names, as the tags are checked (a store of a million
// tags is not held as findings). A tag with nothing to say is counted, not
// emitted. It returns the tags' count by level.
func Run(ctx context.Context, cfg Config, emit func(Finding)) map[string]int {
	a := newAuditor(cfg)
	a.stores()
	a.places(ctx)
	var first []*tagTable
	var elapsed time.Duration
	if a.cfg.Sample > 0 && a.open > 0 {
		t1 := time.Now()
		first = a.snapshot(ctx)
		select {
		case <-time.After(a.cfg.Sample):
		case <-ctx.Done():
		}
		// From the start of one read to the start of the next: a tag
		// read late in the first is read about as late in the second.
		elapsed = time.Since(t1)
	}
	tables := a.snapshot(ctx)
	a.settle(tables, first)
	a.floors(tables)
	a.layout()
	slices.SortStableFunc(a.found, func(x, y Finding) int { return rank[x.Level] - rank[y.Level] })
	for _, f := range a.found {
		emit(f)
	}
	counts := map[string]int{}
	a.walkTags(tables, first, elapsed, func(name string, rows []tagRow, missing []string, rate float64, measured bool) {
		f, ok := a.checkTag(name, rows, missing, rate, measured)
		if !ok {
			f.Level = OK
		}
		counts[f.Level]++
		if ok {
			emit(f)
		}
	})
	return counts
}

// stores reports what the opening of each store found: a store that could
// not be opened, one that keeps nothing, and what each warns about now.
func (a *auditor) stores() {
	for _, s := range a.cfg.Stores {
		if s.Store == nil {
			err := s.Err
			if err == nil {
				err = fmt.Errorf("no store")
			}
			a.add(Danger, s.Name, "cannot be opened, so it was not audited: %v", err)
			continue
		}
		if s.Volatile {
			a.add(Danger, s.Name, "the memory store keeps nothing: every restart hands out the same IDs again")
		}
		if w, ok := s.Store.(frond.Warner); ok {
			for _, msg := range w.Warnings() {
				a.add(Warn, s.Name, "%s", msg)
			}
		}
	}
}

// places reports each store's place in the set of stores, and what a node
// of this configuration would make of it (segment.Multi).
func (a *auditor) places(ctx context.Context) {
	multi := len(a.cfg.Stores) > 1
	newest := int64(-1)
	read := map[int]frond.Place{}
	for i, s := range a.cfg.Stores {
		if s.Store == nil {
			continue
		}
		c, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		p, err := frond.PlaceOf(c, s.Store)
		cancel()
		if err != nil {
			a.add(Warn, s.Name, "its place cannot be read: %v", err)
			continue
		}
		read[i] = p
		if p.Of > 0 {
			newest = max(newest, p.Gen)
		}
	}
	for i, s := range a.cfg.Stores {
		p, ok := read[i]
		switch {
		case !ok:
		case p.Fenced():
			a.add(Danger, s.Name, "%s", p.Describe())
		case p.Moving():
			a.add(Danger, s.Name, "%s: no node allocates from it until the change is done; if no change is running, it was interrupted: run frond stores set again with the same stores", p.Describe())
		case p.Retired():
			a.add(Warn, s.Name, "%s: no node allocates from it; remove it from the configuration", p.Describe())
		case !multi && p.Of > 1:
			a.add(Danger, s.Name, "%s, but this configuration lists it alone: the store refuses such a node (frond serve refuses to start); list the stores of the set", p.Describe())
		case !multi && p.Of == 1:
			a.add(OK, s.Name, "%s", p.Describe())
		case !multi:
			a.add(OK, s.Name, "stands alone")
		case p.Alone():
			a.add(Danger, s.Name, "stands alone, not as a member of a set: nodes listing it with other stores take no ID from it; run frond stores set with the stores of the set")
		case p.Gen < newest:
			a.add(Danger, s.Name, "%s, of an older set than another store here (generation %d): nodes take no ID from it; it was left out of a change of the set", p.Describe(), newest)
		default:
			a.add(OK, s.Name, "%s", p.Describe())
		}
	}
}

// floors compares each store's tags with the floors this node keeps of it:
// a max_id below one (in the tag's mapping) is a store that lost writes.
func (a *auditor) floors(tables []*tagTable) {
	for i, s := range a.cfg.Stores {
		if s.Floors == nil || tables[i] == nil {
			continue
		}
		t := tables[i]
		var below []string
		missing := 0
		for name, tf := range s.Floors {
			j, ok := t.find([]byte(name))
			if !ok {
				missing++
				continue
			}
			m := mappings[t.mapping[j]]
			if from, _, moving := frond.ParseMappingChange(m); moving {
				m = from
			}
			if f := tf.Highest(m, t.seq[j]); t.max[j] < f {
				below = append(below, fmt.Sprintf("%s (max_id %d, floor %d)", name, t.max[j], f))
			}
		}
		slices.Sort(below)
		switch {
		case len(below) > 0:
			if len(below) > 5 {
				below = append(below[:5], fmt.Sprintf("and %d more", len(below)-5))
			}
			a.add(Danger, s.Name, "%d tags are below the floors this node keeps (the highest range the store gave it): the store lost acknowledged writes; "+
				"re-arm it (frond stores floors on every node, then frond stores rearm): %s", len(below), strings.Join(below, ", "))
		case missing > 0:
			a.add(Warn, s.Name, "%d tags this node has floors of are not in the store (deleted, or lost with the store's data): one created again must start above its floor (frond stores floors)", missing)
		default:
			a.add(OK, s.Name, "every tag is at or above the floors this node keeps (%d tags)", len(s.Floors))
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
	if read == 0 && a.open > 0 {
		a.add(Danger, "tags", "no store's tags could be read: no tag was audited")
	}
}

// layout checks when the snowflake layout runs out.
func (a *auditor) layout() {
	l, warn := a.cfg.Layout, a.cfg.ExpiryWarning
	left := l.Expires().Sub(a.cfg.Now())
	subject := "layout " + l.Name
	switch {
	case left < year:
		a.add(Danger, subject, "runs out %s (%s): snowflake IDs stop then", l.Expires().UTC().Format(time.DateOnly), human(left))
	case warn > 0 && left < warn:
		a.add(Warn, subject, "runs out %s, in %s", l.Expires().UTC().Format(time.DateOnly), human(left))
	default:
		a.add(OK, subject, "runs out %s", l.Expires().UTC().Format(time.DateOnly))
	}
}
