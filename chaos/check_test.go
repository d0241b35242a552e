//go:build chaos

package chaos

import (
	"testing"
	"time"
)

// The checker's parts on made-up answers: they must be able to fail.

func TestDuplicates(t *testing.T) {
	recs := []rec{
		{id: 7, tag: 0, node: 0, life: 1},
		{id: 7, tag: 1, node: 1, life: 1}, // another tag: not a duplicate
		{id: 7, tag: snowflakeTag, node: 2, life: 1},
		{id: 9, tag: 0, node: 1, life: 2},
		{id: 7, tag: 0, node: 2, life: 3}, // tag 0's 7 again
		{id: 9, tag: snowflakeTag, node: 0, life: 1},
		{id: 9, tag: snowflakeTag, node: 1, life: 1}, // across nodes
	}
	pairs, segments, snowflakes := duplicates(recs)
	if len(pairs) != 2 || segments != 4 || snowflakes != 3 {
		t.Fatalf("pairs %v, segments %d, snowflakes %d", pairs, segments, snowflakes)
	}
	if p := pairs[0]; p[0].id != 9 || p[0].tag != snowflakeTag || p[0].node == p[1].node {
		t.Fatalf("first pair %v", p)
	}
	if p := pairs[1]; p[0].id != 7 || p[0].tag != 0 || p[1].tag != 0 {
		t.Fatalf("second pair %v", p)
	}
}

func TestParseIDs(t *testing.T) {
	for _, c := range []struct {
		k     kind
		n     int
		body  string
		valid bool
	}{
		{leafSegment, 1, "42\n", true},
		{leafSegment, 1, "error: x", false},
		{v1SegmentOne, 1, `{"tag":"a","id":5,"id_str":"5"}`, true},
		{v1SegmentOne, 1, `{"tag":"a","id":5,"id_str":"6"}`, false},
		{v1SegmentN, 2, `{"tag":"a","ids":[5,3],"id_strs":["5","3"]}`, true}, // segments may step back (fail-over)
		{v1SegmentN, 3, `{"tag":"a","ids":[5,3],"id_strs":["5","3"]}`, false},
		{v1SnowflakeN, 2, `{"ids":[5,3],"id_strs":["5","3"]}`, false}, // one node's batch must increase
		{v1SnowflakeN, 2, `{"ids":[3,5],"id_strs":["3","5"]}`, true},
		{v1SegmentRanges, 4, `{"tag":"a","count":4,"ranges":[{"start":10,"end":16,"stride":2,"count":3},{"start":31,"end":33,"stride":2,"count":1}]}`, true},
		{v1SegmentRanges, 4, `{"tag":"a","count":4,"ranges":[{"start":10,"end":14,"stride":2,"count":3},{"start":31,"end":33,"stride":2,"count":1}]}`, false},
		{v1SegmentRanges, 4, `{"tag":"a","count":4,"ranges":[{"start":10,"end":16,"stride":2,"count":3}]}`, false},
	} {
		ids, err := parseIDs(c.k, c.n, []byte(c.body))
		if (err == nil) != c.valid {
			t.Errorf("kind %d n %d %s: ids %v, err %v", c.k, c.n, c.body, ids, err)
		}
	}
}

func TestParseError(t *testing.T) {
	for _, c := range []struct {
		k      kind
		status int
		retry  string
		body   string
		code   string
		valid  bool
	}{
		{leafSegment, 500, "1", "error: store_unavailable: the store ...\n", "store_unavailable", true},
		{leafSegment, 500, "", "error: store_unavailable: the store ...\n", "", false},
		{leafSegment, 503, "1", "error: store_unavailable: the store ...\n", "", false},
		{leafSnowflake, 500, "1", "oops", "", false},
		{v1SnowflakeOne, 503, "3", `{"error":{"code":"clock_backwards","message":"m"}}`, "clock_backwards", true},
		{v1SnowflakeOne, 503, "0", `{"error":{"code":"clock_backwards","message":"m"}}`, "", false},
		{v1SnowflakeOne, 500, "1", `{"error":{"code":"internal","message":"m"}}`, "internal", false},
		{v1SegmentN, 503, "1", `<html>`, "", false},
	} {
		code, err := parseError(c.k, c.status, c.retry, []byte(c.body))
		if (err == nil) != c.valid || (c.valid && code != c.code) {
			t.Errorf("kind %d %d %s: code %q, err %v", c.k, c.status, c.body, code, err)
		}
	}
	// internal parses, but is not an honest code for either kind.
	if honest[false]["internal"] || honest[true]["internal"] || honest[false]["worker_unavailable"] {
		t.Error("honest codes")
	}
}

// The linearizability check on made-up answers: an answer asked for after
// another was answered must have larger IDs; overlapping ones may not.
func TestLinearizability(t *testing.T) {
	at := func(ms int) time.Time { return time.Date(2026, 11, 25, 12, 0, 0, ms*int(time.Millisecond), time.UTC) }
	ok := []seqOp{
		{node: 0, from: at(0), to: at(10), min: 1, max: 1},
		{node: 1, from: at(5), to: at(20), min: 3, max: 4}, // overlaps the first
		{node: 2, from: at(6), to: at(8), min: 2, max: 2},  // inside the second: either order
		{node: 0, from: at(21), to: at(30), min: 5, max: 5},
	}
	if bad := linearizability(ok); len(bad) != 0 {
		t.Fatalf("a linearizable history refused: %v", bad)
	}
	bad := append(ok, seqOp{node: 1, from: at(31), to: at(40), min: 4, max: 4}) // asked after 5 was answered
	if got := linearizability(bad); len(got) != 1 {
		t.Fatalf("an answer below an earlier one passed: %v", got)
	}
}
