//go:build chaos

package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond/keyseq"
)

// Request outcomes beyond these bounds are failures, unless the node was
// stopped (SIGSTOP) meanwhile.
const (
	clientTimeout = 8 * time.Second
	slowRequest   = 5 * time.Second
)

// kind is an endpoint the clients call.
type kind int

const (
	leafSegment kind = iota // GET /api/segment/get/{tag}
	v1SegmentOne
	v1SegmentN
	v1SegmentRanges
	leafSnowflake // GET /api/snowflake/get/x
	v1SnowflakeOne
	v1SnowflakeN
	numKinds
)

func (k kind) snowflake() bool { return k >= leafSnowflake }
func (k kind) leaf() bool      { return k == leafSegment || k == leafSnowflake }

// snowflakeTag is the key of snowflake IDs in records: one ID space across
// all nodes.
const snowflakeTag = -1

// rec is one ID answered with 200: which tag (or snowflakeTag), by which
// node and which life of it.
type rec struct {
	id   int64
	tag  int16
	node int8
	life int16
}

// honest are the error codes a node may answer under faults, per kind of
// ID: anything else (internal, an unknown code, a segment error on a
// snowflake call) is a failure.
var honest = map[bool]map[string]bool{
	false: {"store_unavailable": true, "unavailable": true},
	true: {"worker_unavailable": true, "clock_backwards": true, "clock_skew": true, "registry_behind": true,
		"no_worker_id": true, "unavailable": true},
}

// probe is one request of the horizon probe.
type probe struct {
	node     int
	life     int
	from, to time.Time
	ok       bool
	outcome  string
}

// result is what one client goroutine saw; merged by the test goroutine.
type result struct {
	recs      []rec
	requests  int
	codes     map[string]int // honest error codes and connection errors
	failures  []string
	nFailures int
	slow      int
	probes    []probe
	seqOps    []seqOp
	keyOps    map[int][]seqOp // by key: the keyed sequence's answers
	tries     []secTry
}

// secTry is one request for a key of a section of the keyed sequence
// space, answered or not.
type secTry struct {
	section  int
	from, to time.Time
	ok       bool
	// lost: the node asked did not answer (killed, stopped, paused): a
	// fault of that node, not of the section, which the other nodes serve.
	lost bool
}

// Keys and sections of the keyed sequence space.
const (
	keyCount    = 64
	keySections = 32
)

// seqOp is one answer of the sequence tag: when it was asked and answered,
// and its smallest and largest ID.
type seqOp struct {
	node     int
	from, to time.Time
	min, max int64
}

func newResult() *result { return &result{codes: map[string]int{}, keyOps: map[int][]seqOp{}} }

func (r *result) fail(format string, args ...any) {
	r.nFailures++
	if len(r.failures) < 20 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	}
}

// client calls the nodes over HTTP.
type client struct {
	h   *harness
	rng *rand.Rand
	res *result
}

// call is one request and its classified outcome.
type call struct {
	node     *node
	life     int
	k        kind
	tag      int
	n        int
	from, to time.Time
	ids      []int64 // on 200
	outcome  string  // "ok", an error code, or a connection error class
}

// do sends one request of kind k for tag to n and checks the answer's
// form. It returns false when the node is down (nothing was sent).
func (c *client) do(n *node, k kind, tag, count int) (call, bool) {
	url, life := n.current()
	if url == "" {
		return call{}, false
	}
	name := ""
	if tag >= 0 {
		name = c.h.tags[tag]
	}
	path := ""
	switch k {
	case leafSegment:
		path = "/api/segment/get/" + name
	case v1SegmentOne:
		path = "/v1/segment/" + name
	case v1SegmentN:
		path = fmt.Sprintf("/v1/segment/%s?n=%d", name, count)
	case v1SegmentRanges:
		path = fmt.Sprintf("/v1/segment/%s?n=%d&format=ranges", name, count)
	case leafSnowflake:
		path = "/api/snowflake/get/x"
	case v1SnowflakeOne:
		path = "/v1/snowflake"
	case v1SnowflakeN:
		path = fmt.Sprintf("/v1/snowflake?n=%d", count)
	}
	cl := call{node: n, life: life, k: k, tag: tag, n: count, from: time.Now()}
	c.res.requests++
	resp, err := c.h.http.Get(url + path)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	cl.to = time.Now()
	took := cl.to.Sub(cl.from)
	paused := n.pausedDuring(cl.from, cl.to)
	if took > slowRequest && !paused {
		c.res.slow++
		c.res.fail("node %d life %d: %s took %v (err %v)", n.idx, life, path, took.Round(time.Millisecond), err)
	}
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			cl.outcome = "client_timeout"
			if paused {
				cl.outcome = "timeout_while_paused"
			}
		case strings.Contains(err.Error(), "connection refused"):
			cl.outcome = "conn_refused"
		default:
			cl.outcome = "conn_error" // the process died or closed the connection
		}
		c.res.codes[cl.outcome]++
		return cl, true
	}
	if resp.StatusCode == 200 {
		ids, err := parseIDs(k, count, body)
		if err != nil {
			cl.outcome = "malformed"
			c.res.fail("node %d life %d: %s: 200 with %v: %.200q", n.idx, life, path, err, body)
			return cl, true
		}
		cl.ids, cl.outcome = ids, "ok"
		t := int16(tag)
		if k.snowflake() {
			t = snowflakeTag
		}
		for _, id := range ids {
			c.res.recs = append(c.res.recs, rec{id: id, tag: t, node: int8(n.idx), life: int16(life)})
		}
		return cl, true
	}
	code, err := parseError(k, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	if err != nil || !honest[k.snowflake()][code] {
		cl.outcome = "bad_error"
		c.res.fail("node %d life %d: %s: %d %.300q (%v)", n.idx, life, path, resp.StatusCode, body, err)
		return cl, true
	}
	cl.outcome = code
	c.res.codes[code]++
	return cl, true
}

// parseIDs reads the IDs of a 200 answer and checks its form.
func parseIDs(k kind, count int, body []byte) ([]int64, error) {
	switch k {
	case leafSegment, leafSnowflake:
		id, err := strconv.ParseInt(strings.TrimSpace(string(body)), 10, 64)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("not an ID")
		}
		return []int64{id}, nil
	case v1SegmentOne, v1SnowflakeOne:
		var v struct {
			ID    *int64 `json:"id"`
			IDStr string `json:"id_str"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, err
		}
		if v.ID == nil || strconv.FormatInt(*v.ID, 10) != v.IDStr {
			return nil, fmt.Errorf("id and id_str disagree")
		}
		return []int64{*v.ID}, nil
	case v1SegmentN, v1SnowflakeN:
		var v struct {
			IDs    []int64  `json:"ids"`
			IDStrs []string `json:"id_strs"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, err
		}
		if len(v.IDs) != count || len(v.IDStrs) != count {
			return nil, fmt.Errorf("%d ids, %d id_strs for n=%d", len(v.IDs), len(v.IDStrs), count)
		}
		for i, id := range v.IDs {
			if strconv.FormatInt(id, 10) != v.IDStrs[i] {
				return nil, fmt.Errorf("ids[%d] %d, id_strs[%d] %q", i, id, i, v.IDStrs[i])
			}
			// One node's snowflake batch strictly increases.
			if k == v1SnowflakeN && i > 0 && id <= v.IDs[i-1] {
				return nil, fmt.Errorf("snowflake batch not increasing at %d: %d after %d", i, id, v.IDs[i-1])
			}
		}
		return v.IDs, nil
	case v1SegmentRanges:
		var v struct {
			Count  int `json:"count"`
			Ranges []struct {
				Start, End, Stride int64
				Count              int
			} `json:"ranges"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, err
		}
		if v.Count != count {
			return nil, fmt.Errorf("count %d for n=%d", v.Count, count)
		}
		var ids []int64
		for _, r := range v.Ranges {
			if r.Stride <= 0 || r.Count <= 0 || r.Start < 0 {
				return nil, fmt.Errorf("range %+v", r)
			}
			for i := 0; i < r.Count; i++ {
				id := r.Start + int64(i)*r.Stride
				if id >= r.End {
					return nil, fmt.Errorf("range %+v: ID %d at or past its end", r, id)
				}
				ids = append(ids, id)
			}
			if r.Start+int64(r.Count)*r.Stride < r.End {
				return nil, fmt.Errorf("range %+v: count short of its end", r)
			}
		}
		if len(ids) != count {
			return nil, fmt.Errorf("ranges hold %d IDs for n=%d", len(ids), count)
		}
		return ids, nil
	}
	return nil, fmt.Errorf("kind %d", k)
}

// parseError reads the code of an error answer and checks its form: Leaf's
// endpoints answer 500 "error: <code>: <message>", /v1 the JSON error with
// 503 for the unavailability codes; both with Retry-After in seconds (every
// code a node may answer under these faults is one where retrying helps).
func parseError(k kind, status int, retryAfter string, body []byte) (string, error) {
	if s, err := strconv.Atoi(retryAfter); err != nil || s < 1 {
		return "", fmt.Errorf("Retry-After %q", retryAfter)
	}
	if k.leaf() {
		rest, ok := strings.CutPrefix(string(body), "error: ")
		code, msg, ok2 := strings.Cut(rest, ": ")
		if status != 500 || !ok || !ok2 || strings.TrimSpace(msg) == "" {
			return "", fmt.Errorf("not Leaf's error form")
		}
		return code, nil
	}
	var v struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", err
	}
	if v.Error.Code == "" || v.Error.Message == "" {
		return "", fmt.Errorf("no code or message")
	}
	if status != 503 {
		return v.Error.Code, fmt.Errorf("status %d for %s", status, v.Error.Code)
	}
	return v.Error.Code, nil
}

// mixed calls random nodes with random kinds and tags until stop.
func (c *client) mixed(stop <-chan struct{}, maxRequests int) {
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n := c.h.nodes[c.rng.IntN(len(c.h.nodes))]
		k := kind(c.rng.IntN(int(numKinds)))
		count := 1
		switch k {
		case v1SegmentN, v1SnowflakeN:
			count = 1 + c.rng.IntN(20)
		case v1SegmentRanges:
			count = 1 + c.rng.IntN(100)
		}
		// A pause between requests leaves CPU to the processes under test
		// and bounds the IDs held for the check (about 10,000 a second).
		cl, sent := c.do(n, k, c.rng.IntN(numTags), count)
		switch {
		case !sent:
			time.Sleep(20 * time.Millisecond)
		case strings.HasPrefix(cl.outcome, "conn_"):
			time.Sleep(10 * time.Millisecond)
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

// sequential takes snowflake IDs from one node, one request at a time, and
// checks that within one life of the node every answer is above the last.
func (c *client) sequential(n *node, stop <-chan struct{}, maxRequests int) {
	lastLife, last := 0, int64(-1)
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			return
		default:
		}
		k, count := leafSnowflake, 1
		if i%2 == 1 {
			k, count = v1SnowflakeN, 1+c.rng.IntN(20)
		}
		cl, sent := c.do(n, k, -1, count)
		if !sent {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if cl.outcome != "ok" {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		time.Sleep(time.Millisecond)
		if cl.life == lastLife && cl.ids[0] <= last {
			c.res.fail("node %d life %d: snowflake ID %d after %d from the same process", n.idx, cl.life, cl.ids[0], last)
		}
		lastLife, last = cl.life, cl.ids[len(cl.ids)-1]
	}
}

// sequence asks random nodes for IDs of the sequence tag, one or a few at a
// time, and keeps every answer for the linearizability check.
func (c *client) sequence(stop <-chan struct{}, maxRequests int) {
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n := c.h.nodes[c.rng.IntN(len(c.h.nodes))]
		k, count := v1SegmentOne, 1
		if i%3 == 2 {
			k, count = v1SegmentN, 1+c.rng.IntN(5)
		}
		cl, sent := c.do(n, k, seqTag, count)
		switch {
		case !sent:
			time.Sleep(20 * time.Millisecond)
		case cl.outcome == "ok":
			c.res.seqOps = append(c.res.seqOps, seqOp{node: n.idx, from: cl.from, to: cl.to, min: slices.Min(cl.ids), max: slices.Max(cl.ids)})
			time.Sleep(2 * time.Millisecond)
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// horizon takes one ID of the probe tag from n every 200 ms: the checker
// looks at the answers during store cuts.
func (c *client) horizon(n *node, stop <-chan struct{}, maxRequests int) {
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
		cl, sent := c.do(n, v1SegmentOne, probeTag, 1)
		if sent {
			c.res.probes = append(c.res.probes, probe{node: n.idx, life: cl.life, from: cl.from, to: cl.to, ok: cl.outcome == "ok", outcome: cl.outcome})
		}
	}
}

// keyed asks random nodes for the next values of random keys of the keyed
// sequence space, and keeps every answer for the per-key check and every
// request for the sections' outages.
func (c *client) keyed(stop <-chan struct{}, maxRequests int) {
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n := c.h.nodes[c.rng.IntN(len(c.h.nodes))]
		url, life := n.current()
		if url == "" || n.pausedDuring(time.Now(), time.Now()) {
			// Down, or stopped (SIGSTOP): a client's health check or its
			// timeout sends it elsewhere. Asked, the stopped node held
			// both keyed clients for the whole pause, and the outages of
			// the sections the other nodes served meanwhile read as long
			// as the pause: nothing asked them (11 s in a 14 s SIGSTOP).
			time.Sleep(20 * time.Millisecond)
			continue
		}
		k, count := c.rng.IntN(keyCount), 1+c.rng.IntN(3)
		key := fmt.Sprintf("k%d", k)
		path := fmt.Sprintf("/v1/seq/%s/%s?n=%d", c.h.space, key, count)
		from := time.Now()
		c.res.requests++
		resp, err := c.h.http.Get(url + path)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		to := time.Now()
		try := secTry{section: keyseq.SectionOf(key, keySections), from: from, to: to}
		paused := n.pausedDuring(from, to)
		if to.Sub(from) > slowRequest && !paused {
			c.res.slow++
			c.res.fail("node %d life %d: %s took %v (err %v)", n.idx, life, path, to.Sub(from).Round(time.Millisecond), err)
		}
		switch {
		case err != nil:
			try.lost = true
			c.res.codes["keyed_conn_error"]++
		case resp.StatusCode == 200:
			var v struct {
				First    *int64 `json:"first"`
				Last     *int64 `json:"last"`
				FirstStr string `json:"first_str"`
				Count    int    `json:"count"`
			}
			if err := json.Unmarshal(body, &v); err != nil || v.First == nil || v.Last == nil || *v.Last-*v.First+1 != int64(count) ||
				v.Count != count || v.FirstStr != strconv.FormatInt(*v.First, 10) {
				c.res.fail("node %d life %d: %s: 200 with %.200q", n.idx, life, path, body)
				break
			}
			try.ok = true
			c.res.keyOps[k] = append(c.res.keyOps[k], seqOp{node: n.idx, from: from, to: to, min: *v.First, max: *v.Last})
		default:
			code, err := parseError(v1SegmentOne, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			if err != nil || !honest[false][code] {
				c.res.fail("node %d life %d: %s: %d %.300q (%v)", n.idx, life, path, resp.StatusCode, body, err)
				break
			}
			c.res.codes["keyed_"+code]++
		}
		c.res.tries = append(c.res.tries, try)
		if try.ok {
			time.Sleep(2 * time.Millisecond)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
