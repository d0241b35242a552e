package audit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
)

// checkTag is a tag's row of the audit: in every store, its headroom, and
// its step against the observed rate. One row per tag, at its worst level,
// its findings joined.
func (a *auditor) checkTag(name string, rows []tagRow, missing []string, rate float64, measured bool) (Finding, bool) {
	maxStep, sample := a.cfg.MaxStep, a.cfg.Sample
	level, msgs := OK, []string(nil)
	note := func(l, format string, args ...any) {
		if rank[l] < rank[level] {
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
		note(Warn, "missing from %s: its residue is not served for this tag (create it there with max_id at least that of the others)", strings.Join(missing, ", "))
	}
	a.checkMapping(note, name, rows)
	if n := a.open; t.seq && n > 1 {
		note(Warn, "a sequence tag on %d stores: unique, but not linearizable across the stores (docs/kinds.md)", n)
	}
	ceiling, below, space := ceilingOf(mappings[t.mapping])
	left := max(0, ceiling-top)
	lasts := math.Inf(1) // seconds
	if measured && rate > 0 {
		lasts = float64(left) / rate
	}
	switch {
	case left < 100*max(t.step, maxStep):
		note(Danger, "max_id %d: fewer than 100 segments left below %s (%d IDs)", top, below, left)
	case lasts < year.Seconds():
		note(Danger, "at %.0f IDs/s the IDs left below %s last %s", rate, below, humanSeconds(lasts))
	case lasts < 10*year.Seconds():
		note(Warn, "at %.0f IDs/s the IDs left below %s last %s", rate, below, humanSeconds(lasts))
	case top > ceiling/2:
		note(Warn, "max_id %d: more than half of the %s is used", top, space)
	}
	if !measured || rate <= 0 || t.seq {
		if !t.seq && sample > 0 && len(rows) > 0 {
			note(OK, "no IDs taken while sampling (%v); max_id %d, step %d", sample, top, t.step)
		}
	} else {
		stepCheck(note, t.step, rate, lasts, maxStep, slowest)
	}
	if len(msgs) == 0 {
		return Finding{}, false
	}
	return Finding{Level: level, Subject: "tag " + name, Message: strings.Join(msgs, "; ")}, true
}

// ceilingOf is the highest counter a tag of mapping m hands out, and how
// to say it: 2^63 for plain numbers; a tag with K shard bits moves its
// counter up by them (2^(63-K): issue 70, shard bits leave less room);
// Mist's counter is 47 bits.
func ceilingOf(m string) (ceiling int64, below, space string) {
	if k := frond.ShardBits(m); k > 0 {
		return math.MaxInt64 >> k, fmt.Sprintf("2^%d (its %d shard bits)", 63-k, k), fmt.Sprintf("%d-bit space of its counter (its %d shard bits)", 63-k, k)
	}
	if frond.ServedMapping(m) == frond.MappingMist {
		return math.MaxInt64 >> frond.MistShift, fmt.Sprintf("2^%d (Mist's counter)", 63-frond.MistShift), fmt.Sprintf("%d-bit space of Mist's counter", 63-frond.MistShift)
	}
	return math.MaxInt64, "2^63", "63-bit space"
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
		m := mappings[r.mapping]
		if from, to, moving := frond.ParseMappingChange(m); moving {
			note(Warn, "a change of its mapping from %s to %s was cut short (or runs now): its copies serve no new segment until it is done; finish it: frond tag set %s --mapping %s",
				frond.MappingName(from), frond.MappingName(to), name, frond.MappingName(to))
			return
		}
		if !slices.Contains(settled, frond.MappingName(m)) {
			settled = append(settled, frond.MappingName(m))
		}
	}
	if len(settled) > 1 {
		note(Danger, "its stores hold different mappings (%s): the numbers of the two may meet (copies left before tag changes were fenced across the set: docs/stores.md); frond tag set refuses to change it: move the tag's users to a new tag", strings.Join(settled, ", "))
		return
	}
	m := rows[0].mapping
	form := a.cfg.Forms[name]
	if form.Mapping != "" && mappingCode(form.Mapping) != m {
		note(Danger, "configured form %s is %s numbers, and the tag hands out %s numbers (its mapping): frond serve refuses to start with it; change the tag (frond tag set %s --mapping %s) or the form",
			form.Name, form.Mapping, frond.MappingName(mappings[m]), name, form.Mapping)
	}
}

// stepCheck notes whether a tag's segments outlast a store round trip at
// its rate.
func stepCheck(note func(level, format string, args ...any), step int64, rate, lasts float64, maxStep int64, slowest time.Duration) {
	// A node starts loading the next segment when a tenth of the
	// current one is used: the load must end within the rest of it.
	// The rate is all nodes' together: each node's is lower.
	life := time.Duration(float64(step) / rate * float64(time.Second))
	need := 10 * max(slowest, time.Millisecond)
	bestLife := time.Duration(float64(max(step, maxStep)) / rate * float64(time.Second))
	switch {
	case bestLife*9/10 < need:
		note(Warn, "at %.0f IDs/s a segment of %d lasts %s, and even one of the largest step (%d) lasts %s, near the time of a store round trip (%s): callers will wait for loads; raise the step or segment.max_step",
			rate, step, human(life), max(step, maxStep), human(bestLife), slowest.Round(time.Microsecond))
	case life*9/10 < need:
		note(OK, "at %.0f IDs/s a segment of %d lasts only %s; the adaptive step grows it (up to %d, %s); IDs last %s", rate, step, human(life), maxStep, human(bestLife), humanSeconds(lasts))
	default:
		note(OK, "at %.0f IDs/s a segment of %d lasts %s (a store round trip: %s); IDs last %s", rate, step, human(life), slowest.Round(time.Microsecond), humanSeconds(lasts))
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
