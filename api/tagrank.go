package api

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond/segment"
)

// The views of the tags in use (the metrics' per-tag series, the
// dashboard's stream, /readyz, RESP INFO) show a bounded few of them, as
// many tags as there are: the tags in trouble first, then the busiest. The
// rest are counted, and found by name on demand (docs/operations.md).

// The states of a segment tag, worst first.
const (
	TagFailing = "failing" // its last store call failed
	TagLow     = "low"     // it runs dry within segment.runway at its rate (segment.Stats.Low)
	TagOK      = "ok"
)

// TagState is the state of a tag from its statistics.
func TagState(st *segment.Stats) string {
	switch {
	case st.LastError != "":
		return TagFailing
	case st.Low:
		return TagLow
	}
	return TagOK
}

func stateRank(state string) int {
	switch state {
	case TagFailing:
		return 0
	case TagLow:
		return 1
	}
	return 2
}

// TagSummary is every tag in use at a glance, whatever their number.
type TagSummary struct {
	Total   int `json:"total"`
	Failing int `json:"failing"`
	Low     int `json:"low"`
	// MinHorizon is the shortest horizon of a tag with a measured rate
	// (-1: none measured).
	MinHorizon time.Duration `json:"-"`
}

// ranked is a tag's place in the order of attention.
type ranked struct {
	i       int // index in the stats
	pinned  bool
	state   int
	horizon time.Duration // -1 counts as the longest
	rate    float64
	tag     string
}

func (a ranked) compare(b ranked) int {
	if a.pinned != b.pinned {
		if a.pinned {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.state, b.state); c != 0 {
		return c
	}
	if a.state < 2 && a.horizon != b.horizon {
		switch {
		case a.horizon < 0:
			return 1
		case b.horizon < 0:
			return -1
		}
		return cmp.Compare(a.horizon, b.horizon)
	}
	if c := cmp.Compare(b.rate, a.rate); c != 0 {
		return c
	}
	return strings.Compare(a.tag, b.tag)
}

// RankTags returns the summary of stats and the indices in stats of the
// first n tags in the order of attention: the pinned tags (pinned may be
// nil), then those whose last store call failed, then those running low
// (the shortest horizon first), then the busiest by rate, then by name.
// A negative n ranks them all. It takes O(len(stats) log n) time, so a
// scrape of a node with a hundred thousand tags does not sort them all.
func RankTags(stats []segment.Stats, n int, pinned func(string) bool) (TagSummary, []int) {
	sum := TagSummary{Total: len(stats), MinHorizon: -1}
	if n < 0 || n > len(stats) {
		n = len(stats)
	}
	keep := make([]ranked, 0, min(2*n+1, len(stats)))
	trim := func() {
		slices.SortFunc(keep, ranked.compare)
		keep = keep[:min(n, len(keep))]
	}
	for i := range stats {
		st := &stats[i]
		state := TagState(st)
		switch state {
		case TagFailing:
			sum.Failing++
		case TagLow:
			sum.Low++
		}
		if st.Horizon >= 0 && (sum.MinHorizon < 0 || st.Horizon < sum.MinHorizon) {
			sum.MinHorizon = st.Horizon
		}
		if n == 0 {
			continue
		}
		keep = append(keep, ranked{i: i, pinned: pinned != nil && pinned(st.Tag), state: stateRank(state),
			horizon: st.Horizon, rate: st.Rate, tag: st.Tag})
		if len(keep) > 2*n {
			trim()
		}
	}
	trim()
	out := make([]int, len(keep))
	for i, k := range keep {
		out[i] = k.i
	}
	return sum, out
}
