package audit

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/frond-id/frond"
)

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
	// mappings.
	mapping []uint8
	order   []uint32 // indexes by name
}

// mappings are the mappings a tagTable records: plain (empty), mist,
// opaque, the two changes of mapping under way (frond.MappingChange), and
// any other a store holds.
var mappings = func() []string {
	m := []string{"", frond.MappingMist, frond.MappingOpaque,
		frond.MappingChange(frond.MappingMist, frond.MappingPlain), frond.MappingChange(frond.MappingPlain, frond.MappingMist)}
	for k := 1; k <= frond.MaxShardBits; k++ {
		m = append(m, frond.ShardMapping(k)) // the bits kept: they set the counter's ceiling (ceilingOf)
	}
	return append(m, "another")
}()

func mappingCode(m string) uint8 {
	if i := slices.Index(mappings[:len(mappings)-1], m); i >= 0 {
		return uint8(i)
	}
	return uint8(len(mappings) - 1)
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

// snapshot reads every store's tags, one table per configured store; a
// store not opened is nil in the result, and one that cannot be read is a
// finding and nil.
func (a *auditor) snapshot(ctx context.Context) []*tagTable {
	out := make([]*tagTable, len(a.cfg.Stores))
	for i, s := range a.cfg.Stores {
		if s.Store == nil {
			continue
		}
		t := &tagTable{}
		read, err := a.readTags(ctx, s.Store, t.add)
		if err != nil {
			if !a.unread[i] { // said once, if both reads fail
				a.add(Warn, s.Name, "its tags cannot be read: %v", err)
			}
			a.unread[i] = true
			continue
		}
		if a.read[i] == 0 || read < a.read[i] {
			a.read[i] = read
		}
		t.index()
		out[i] = t
	}
	return out
}

// readTags reads every tag of st a page at a time (each page a store call
// of its own, bounded by the Timeout), calling f with each; it returns the
// quickest page's time, a store round trip's measure.
func (a *auditor) readTags(ctx context.Context, st frond.SegmentStore, f func(frond.Tag)) (time.Duration, error) {
	var quickest time.Duration = -1
	after := ""
	for {
		c, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		t0 := time.Now()
		page, err := frond.TagsAfter(c, st, after, a.cfg.Page)
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
		if len(page) < a.cfg.Page {
			return max(quickest, 1), nil
		}
		after = page[len(page)-1].Name
	}
}

// tagRow is one store's row of a tag.
type tagRow struct {
	max, step int64
	seq       bool
	mapping   uint8         // an index of mappings
	read      time.Duration // the store's round trip
}

// walkTags calls f with each tag of the tables, in the order of names, and
// its row in each store that has it (missing: the stores that do not; a
// store that could not be read is in neither). first is the tables of an
// earlier read, elapsed before: from them a tag's rate, all stores'
// together (measured: read in both, in some store).
func (a *auditor) walkTags(tables, first []*tagTable, elapsed time.Duration,
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
				missing = append(missing, a.cfg.Stores[i].Name)
				continue
			}
			k := t.order[at[i]]
			at[i]++
			rows = append(rows, tagRow{max: t.max[k], step: t.step[k], seq: t.seq[k], mapping: t.mapping[k], read: a.read[i]})
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
