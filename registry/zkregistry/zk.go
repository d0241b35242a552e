// Package zkregistry is the snowflake worker registry on ZooKeeper, in
// Meituan Leaf's node layout so that a Leaf cluster's ZooKeeper can be
// shared, with what Leaf gets wrong fixed.
//
// # Nodes
//
// Under the root (the URL's path; Leaf uses /snowflake/{leaf.name}):
//
//	forever/{ip}:{port}-{seq10}  persistent (sequential when first made): Leaf's node, data
//	                             exactly Leaf's {"ip","port","timestamp"}; the worker ID is seq
//	frond/last/{seq}             persistent {"owner","last_ns","claim"}: the exact last time saved, the last claim
//	frond/live/{seq}             ephemeral {"owner","time_ns","token"}: the live holder, its clock, its claim
//
// # The protocol's primitives
//
// It is a registry.Backend (registry.Protocol decides which ID, from which
// time, and when it is lost). An identity's own IDs are its forever nodes
// (host:port); a new ID is a new persistent sequential forever node, whose
// sequence number is the ID (Leaf takes ID 0 whenever the root was missing
// when it looked, so two nodes starting together on a fresh root both issue
// as worker 0; frond reads the ID from the name of the node it created),
// until the sequence passes the layout's maximum; a claim is one
// multi-operation that creates the live node (ZooKeeper refuses a second
// one: the lock) and writes the last node at the version read, and, for a
// recycled ID, deletes the gone holder's forever node at the version read
// and creates one named for this node with the same sequence number.
// Continuing this process's own claim replaces its live node (deleted at
// its version, created anew) in the same multi. Only IDs frond has held
// (with a last node) are recycled: a Leaf node keeps issuing while cut off
// from ZooKeeper and has no live node to show it is alive.
//
// The last time of an ID is frond's exact last_ns, or, when Leaf wrote the
// forever node after frond's last write (its Mzxid is later) or frond never
// wrote, Leaf's timestamp plus 3 s: Leaf records its time every 3 s, after
// the fact.
//
// # Loss
//
// Worker.Lost is closed when the session expires, when the connection drops
// (the session may then expire without this node hearing of it; the
// protocol takes the ID back at once if the session survived, continuing
// its own claim), and when the live node is deleted or rewritten by someone
// else. Saves write the live node at the version they last wrote, on the
// session that created it, so a lost ID is never saved to.
//
// # Peer clocks
//
// Every write of a live node records the writer's clock (time_ns) and, in
// the node's Mtime, the ZooKeeper leader's clock. A peer's offset from this
// node is (its time_ns − its Mtime) − (ours − our Mtime), measured by
// rewriting our live node; the error is the write's transit time plus
// Mtime's millisecond resolution.
//
// URL: zk://host1:2181,host2:2181/snowflake/frond[?frond_session_timeout=10s&frond_timeout=5s]
// (the session timeout defaults to registry.Options.LeaseTTL; ZooKeeper
// bounds it between 2 and 20 ticks).
package zkregistry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/frond-id/frond/registry"
	"github.com/go-zookeeper/zk"
)

var _ registry.Backend = (*Backend)(nil)

// Defaults of the URL.
const (
	DefaultRoot    = "/snowflake/frond"
	DefaultPort    = "2181"
	DefaultTimeout = 5 * time.Second
	// LeafReportLag is added to a timestamp Leaf wrote: Leaf records its
	// clock every 3 s, so it may have issued up to 3 s past it.
	LeafReportLag = 3 * time.Second
)

// Config is a parsed zk:// URL.
type Config struct {
	Servers        []string // host:port
	Root           string
	SessionTimeout time.Duration // 0: registry.Options.LeaseTTL
	Timeout        time.Duration
}

// ParseURL parses zk://host[:port][,host[:port]...][/root][?frond_session_timeout=&frond_timeout=].
// Errors wrap frond.ErrInvalidArgument.
func ParseURL(raw string) (Config, error) {
	bad := func(format string, a ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: zookeeper URL %q: %s", frond.ErrInvalidArgument, raw, fmt.Sprintf(format, a...))
	}
	rest, ok := strings.CutPrefix(raw, "zk://")
	if !ok {
		return bad("want zk://host:2181[,host2:2181]/root")
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hosts, path = rest[:i], rest[i:]
	}
	c := Config{Root: DefaultRoot, Timeout: DefaultTimeout}
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, DefaultPort
		}
		if n, err := strconv.Atoi(port); host == "" || strings.ContainsAny(host, "[]@/ ") || err != nil || n < 1 || n > 65535 {
			return bad("bad server %q", h)
		}
		c.Servers = append(c.Servers, net.JoinHostPort(host, port))
	}
	if path != "" && path != "/" {
		p, err := url.PathUnescape(path)
		if err != nil || !validPath(p) {
			return bad("bad root %q: /a/b, no empty, . or .. parts", path)
		}
		c.Root = p
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("%v", err)
	}
	for k, vs := range q {
		v := vs[0]
		var d time.Duration
		switch k {
		case "frond_session_timeout", "frond_timeout":
			if d, err = time.ParseDuration(v); err != nil || d <= 0 {
				return bad("%s=%q: a positive duration", k, v)
			}
		default:
			return bad("unknown parameter %s (frond_session_timeout, frond_timeout)", k)
		}
		if k == "frond_timeout" {
			c.Timeout = d
		} else {
			c.SessionTimeout = d
		}
	}
	return c, nil
}

func validPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || len(p) > 512 {
		return false
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "" || part == "." || part == ".." || part == "zookeeper" && !strings.Contains(p[1:], "/") {
			return false
		}
		for _, r := range part {
			if r < 0x20 || r == 0x7f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				return false
			}
		}
	}
	return true
}

// leafEndpoint is the data of Leaf's forever node, exactly.
type leafEndpoint struct {
	IP        string `json:"ip"`
	Port      string `json:"port"`
	Timestamp int64  `json:"timestamp"` // ms
}

type lastValue struct {
	Owner  string `json:"owner"`
	LastNs int64  `json:"last_ns"`
	Claim  string `json:"claim,omitempty"`
}

type liveValue struct {
	Owner  string `json:"owner"`
	TimeNs int64  `json:"time_ns"`
	Token  string `json:"token,omitempty"`
}

// Backend is the ZooKeeper backend of the worker registry.
type Backend struct {
	cfg    Config
	o      registry.Options
	layout string // {root}/frond_layout, of every datacenter (registry.LayoutRecorder)
	conn   *zk.Conn
	cur    atomic.Pointer[registry.Hold] // the hold the session watcher may mark lost

	mu     sync.Mutex // orders Prepare, Write, PeerOffsets and End (they change a claim's versions)
	ready  bool       // the parent nodes exist
	closed atomic.Bool
}

// claim is a ZooKeeper claim's own state (registry.Hold.Ext), under
// Backend.mu.
type claim struct {
	forever     string      // the forever node's path
	session     int64       // the session that created the live node
	liveVersion int32       // the live node's version as we last wrote it
	lastExists  bool        // the last node exists
	ending      atomic.Bool // a release deletes the live node: not a loss
}

// rev is what a Slot read: the node's name and the versions of its nodes
// (-1: the node does not exist).
type rev struct {
	n                                        node
	foreverVersion, liveVersion, lastVersion int32
}

// zkLogger passes the client's messages to the registry's logger.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, a ...any) {
	z.l.Debug("zookeeper client: " + fmt.Sprintf(format, a...))
}

// Check parses rawURL as Open does, without contacting the servers.
func Check(rawURL string) error {
	_, err := ParseURL(rawURL)
	return err
}

// Open parses rawURL and starts connecting; it does not wait for the
// server (Acquire does).
func Open(rawURL string, o registry.Options) (*registry.Protocol, error) {
	cfg, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	o = o.WithDefaults()
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = o.LeaseTTL
	}
	layout := cfg.Root + "/frond_layout"  // beside Leaf's forever/, which Java Leaf nodes alone read
	cfg.Root += o.DatacenterSuffix("/dc") // the datacenter's own worker IDs: /snowflake/frond/dc1/forever/...
	b := &Backend{cfg: cfg, o: o, layout: layout}
	conn, events, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithLogger(zkLogger{o.Logger}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("%w: zookeeper: %v", frond.ErrInvalidArgument, err)
	}
	b.conn = conn
	go b.watchSession(events)
	return registry.NewProtocol(b, o), nil
}

// watchSession marks the hold lost when the connection drops or the
// session expires.
func (b *Backend) watchSession(events <-chan zk.Event) {
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
			if h := b.cur.Load(); h != nil && !h.IsLost() {
				b.o.Logger.Warn("worker ID lost: the zookeeper session is disconnected or expired", "worker", h.ID, "state", ev.State.String())
				h.MarkLost()
			}
		}
	}
}

// sessionIs reports whether the client has the session id now.
func (b *Backend) sessionIs(id int64) bool {
	return b.conn.State() == zk.StateHasSession && b.conn.SessionID() == id
}

func (b *Backend) path(parts ...string) string {
	return b.cfg.Root + "/" + strings.Join(parts, "/")
}

func (b *Backend) foreverDir() string { return b.path("forever") }
func (b *Backend) livePath(id int64) string {
	return b.path("frond", "live", strconv.FormatInt(id, 10))
}
func (b *Backend) lastPath(id int64) string {
	return b.path("frond", "last", strconv.FormatInt(id, 10))
}

func (b *Backend) fail(op string, err error) error {
	if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) && b.closed.Load() {
		return fmt.Errorf("worker registry: %s: %w", op, frond.ErrClosed)
	}
	return fmt.Errorf("worker registry: %s on zookeeper %s: %w: %w", op, strings.Join(b.cfg.Servers, ","), frond.ErrStoreUnavailable, err)
}

// call runs f, a ZooKeeper request, giving up when ctx ends (the client
// queues requests while it is not connected).
func call[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case res := <-ch:
		return res.v, res.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (b *Backend) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Within(ctx, b.cfg.Timeout)
}

// Policy implements registry.Backend.
func (b *Backend) Policy() registry.Policy { return registry.Policy{OwnFirst: true, Recycle: true} }

// Where implements registry.Backend.
func (b *Backend) Where() string {
	return "zookeeper " + strings.Join(b.cfg.Servers, ",") + " under " + b.cfg.Root
}

// Prepare implements registry.Backend: it waits for a session and creates
// the parent nodes once.
func (b *Backend) Prepare(ctx context.Context) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for b.conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return b.fail("connect", fmt.Errorf("no session (%s): %w", b.conn.State(), ctx.Err()))
		case <-t.C:
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		return nil
	}
	var paths []string
	parts := strings.Split(b.cfg.Root[1:], "/")
	for i := range parts {
		paths = append(paths, "/"+strings.Join(parts[:i+1], "/"))
	}
	paths = append(paths, b.foreverDir(), b.path("frond"), b.path("frond", "last"), b.path("frond", "live"))
	for _, p := range paths {
		_, err := call(ctx, func() (string, error) { return b.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return b.fail("create "+p, err)
		}
	}
	b.ready = true
	return nil
}

var _ registry.LayoutRecorder = (*Backend)(nil)

// RecordLayout implements registry.LayoutRecorder: the persistent node
// {root}/frond_layout, created with the layout unless it exists (Prepare
// made its parents), then read.
func (b *Backend) RecordLayout(ctx context.Context, layout string) (string, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	_, err := call(ctx, func() (string, error) { return b.conn.Create(b.layout, []byte(layout), 0, zk.WorldACL(zk.PermAll)) })
	if err == nil {
		return layout, nil
	}
	if !errors.Is(err, zk.ErrNodeExists) {
		return "", b.fail("record the snowflake layout in "+b.layout, err)
	}
	got, err := call(ctx, func() ([]byte, error) { v, _, err := b.conn.Get(b.layout); return v, err })
	if err != nil {
		return "", b.fail("read the snowflake layout in "+b.layout, err)
	}
	return string(got), nil
}

// node is one forever node.
type node struct {
	name     string // ip:port-seq
	identity string // ip:port
	seq      int64
}

// parseForever splits Leaf's node name {ip}:{port}-{seq10}.
func parseForever(name string) (node, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || len(name)-i-1 != 10 {
		return node{}, false
	}
	seq, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || seq < 0 {
		return node{}, false
	}
	return node{name: name, identity: name[:i], seq: seq}, true
}

func seqName(identity string, seq int64) string { return fmt.Sprintf("%s-%010d", identity, seq) }

// forever lists the forever nodes within 0..maxNode (by sequence) and the
// directory's cversion (the next sequence number).
func (b *Backend) forever(ctx context.Context, maxNode int64) ([]node, int64, error) {
	type listing struct {
		names []string
		st    *zk.Stat
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	ls, err := call(ctx, func() (listing, error) {
		c, st, err := b.conn.Children(b.foreverDir())
		return listing{c, st}, err
	})
	if err != nil {
		return nil, 0, b.fail("list "+b.foreverDir(), err)
	}
	var nodes []node
	for _, name := range ls.names {
		if n, ok := parseForever(name); ok && n.seq <= maxNode {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b node) int { return cmp.Compare(a.seq, b.seq) })
	return nodes, int64(ls.st.Cversion), nil
}

type got struct {
	data []byte
	st   *zk.Stat
}

// get reads p; a missing node is (nil, nil).
func (b *Backend) get(ctx context.Context, p string) (*got, error) {
	g, err := call(ctx, func() (got, error) {
		d, st, err := b.conn.Get(p)
		return got{d, st}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, b.fail("read "+p, err)
	}
	return &g, nil
}

func version(g *got) int32 {
	if g == nil {
		return -1
	}
	return g.st.Version
}

// slot reads the forever, live and last nodes of n. The last time is
// frond's exact last_ns, or Leaf's timestamp plus LeafReportLag when Leaf
// wrote after frond (or frond never wrote). ok is false when the forever
// node is gone.
func (b *Backend) slot(ctx context.Context, n node) (registry.Slot, bool, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	fv, err := b.get(ctx, b.path("forever", n.name))
	if err != nil || fv == nil {
		return registry.Slot{}, false, err
	}
	lv, err := b.get(ctx, b.livePath(n.seq))
	if err != nil {
		return registry.Slot{}, false, err
	}
	la, err := b.get(ctx, b.lastPath(n.seq))
	if err != nil {
		return registry.Slot{}, false, err
	}
	s := registry.Slot{ID: n.seq, Owner: n.identity, Foreign: la == nil,
		Rev: rev{n: n, foreverVersion: version(fv), liveVersion: version(lv), lastVersion: version(la)}}
	if la != nil {
		var v lastValue
		if err := json.Unmarshal(la.data, &v); err != nil {
			return registry.Slot{}, false, fmt.Errorf("worker registry: %w: %s holds %q: %v", frond.ErrStoreUnavailable, b.lastPath(n.seq), la.data, err)
		}
		s.Last, s.Claim = v.LastNs, v.Claim
	}
	var ep leafEndpoint
	if json.Unmarshal(fv.data, &ep) == nil && ep.Timestamp > 0 {
		leaf := time.UnixMilli(ep.Timestamp).UnixNano()
		if la == nil || fv.st.Mzxid > la.st.Mzxid {
			leaf += LeafReportLag.Nanoseconds()
		}
		s.Last = max(s.Last, leaf)
	}
	if lv != nil {
		var v liveValue
		json.Unmarshal(lv.data, &v)
		s.Holder = cmp.Or(v.Token, "(a claim without a token)")
	}
	return s, true, nil
}

// Own implements registry.Backend: this identity's forever nodes.
func (b *Backend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	nodes, _, err := b.forever(ctx, maxNode)
	if err != nil {
		return nil, err
	}
	var out []registry.Slot
	for _, n := range nodes {
		if n.identity != b.o.Identity() {
			continue
		}
		if s, ok, err := b.slot(ctx, n); err != nil {
			return nil, err
		} else if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// Idle implements registry.Backend: forever nodes without a live node.
func (b *Backend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	nodes, _, err := b.forever(ctx, maxNode)
	if err != nil {
		return nil, err
	}
	var out []registry.Slot
	for _, n := range nodes {
		s, ok, err := b.slot(ctx, n)
		if err != nil {
			return nil, err
		}
		if ok && !s.Held() {
			out = append(out, s)
		}
	}
	return out, nil
}

func (b *Backend) liveData(h *registry.Hold) []byte {
	v, _ := json.Marshal(liveValue{Owner: b.o.Identity(), TimeNs: b.o.Now().UnixNano(), Token: h.Token})
	return v
}

func (b *Backend) lastData(h *registry.Hold, ns int64) []byte {
	v, _ := json.Marshal(lastValue{Owner: b.o.Identity(), LastNs: ns, Claim: h.Token})
	return v
}

func (b *Backend) leafData(ms int64) []byte {
	v, _ := json.Marshal(leafEndpoint{IP: b.o.Host, Port: strconv.Itoa(b.o.Port), Timestamp: ms})
	return v
}

// New implements registry.Backend: a sequential forever node, if its
// sequence fits the layout (else it is deleted again), then its live and
// last nodes.
func (b *Backend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	// ZooKeeper numbers a sequential node with its parent's cversion: once
	// that has passed the layout, creating one is only churn.
	if _, next, err := b.forever(ctx, maxNode); err != nil || next > maxNode {
		return 0, false, err
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	prefix := b.path("forever", b.o.Identity()+"-")
	created, err := call(ctx, func() (string, error) {
		return b.conn.Create(prefix, b.leafData(b.o.Now().UnixMilli()), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	})
	if err != nil {
		return 0, false, b.fail("create "+prefix, err)
	}
	n, ok := parseForever(created[strings.LastIndexByte(created, '/')+1:])
	if !ok {
		return 0, false, fmt.Errorf("worker registry: %w: zookeeper named the node %q", frond.ErrStoreUnavailable, created)
	}
	if n.seq > maxNode {
		if _, err := call(ctx, func() (struct{}, error) { return struct{}{}, b.conn.Delete(created, -1) }); err != nil {
			b.o.Logger.Warn("worker registry: cannot delete a forever node past the layout", "node", created, "err", err)
		}
		return 0, false, nil
	}
	// The forever node is ours and new: only a last node left by a holder
	// of the sequence (none, unless someone deleted forever nodes) counts.
	la, err := b.get(ctx, b.lastPath(n.seq))
	if err != nil {
		return 0, false, err
	}
	var last int64
	if la != nil {
		var v lastValue
		json.Unmarshal(la.data, &v)
		last = v.LastNs
	}
	h.ID = n.seq
	err = b.claim(ctx, h, last, rev{n: node{name: n.name, identity: b.o.Identity(), seq: n.seq}, foreverVersion: -1, liveVersion: -1, lastVersion: version(la)}, false)
	if errors.Is(err, registry.ErrRace) {
		// A stale live node of a sequence never handed out: leave it, take
		// another.
		return 0, false, err
	}
	return last, err == nil, err
}

// Claim implements registry.Backend.
func (b *Backend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	return b.claim(ctx, h, floor, s.Rev.(rev), s.Held())
}

// claim runs one multi: the live node created (replacing this process's
// own at its version when takeOver), the last node written at the version
// read (created if there was none), and the forever node kept (written at
// its version) or, for another identity's, moved to this one.
func (b *Backend) claim(ctx context.Context, h *registry.Hold, floor int64, r rev, takeOver bool) error {
	acl := zk.WorldACL(zk.PermAll)
	live, last := b.livePath(r.n.seq), b.lastPath(r.n.seq)
	forever := b.path("forever", r.n.name)
	var ops []any
	if takeOver {
		ops = append(ops, &zk.DeleteRequest{Path: live, Version: r.liveVersion})
	}
	ops = append(ops, &zk.CreateRequest{Path: live, Data: b.liveData(h), Acl: acl, Flags: zk.FlagEphemeral})
	if r.lastVersion < 0 {
		ops = append(ops, &zk.CreateRequest{Path: last, Data: b.lastData(h, floor), Acl: acl})
	} else {
		ops = append(ops, &zk.SetDataRequest{Path: last, Data: b.lastData(h, floor), Version: r.lastVersion})
	}
	leaf := b.leafData(time.Unix(0, floor).UnixMilli())
	switch {
	case r.foreverVersion < 0: // New: the node was just created
	case r.n.identity == b.o.Identity():
		ops = append(ops, &zk.SetDataRequest{Path: forever, Data: leaf, Version: r.foreverVersion})
	default:
		moved := b.path("forever", seqName(b.o.Identity(), r.n.seq))
		ops = append(ops, &zk.DeleteRequest{Path: forever, Version: r.foreverVersion}, &zk.CreateRequest{Path: moved, Data: leaf, Acl: acl})
		forever = moved
	}
	err := b.multi(ctx, ops)
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return registry.ErrRace
	}
	if err != nil {
		return b.fail("claim worker ID "+strconv.FormatInt(r.n.seq, 10), err)
	}
	h.Ext = &claim{forever: forever, session: b.conn.SessionID(), lastExists: true}
	return nil
}

// multi runs ops in one transaction and returns the error of the operation
// that failed (ZooKeeper reports the others as rolled back).
func (b *Backend) multi(ctx context.Context, ops []any) error {
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return b.conn.Multi(ops...) })
	if err != nil && !errors.Is(err, zk.ErrUnknown) && !errors.Is(err, zk.ErrAPIError) {
		return err
	}
	var other error
	for _, m := range res {
		switch {
		case errors.Is(m.Error, zk.ErrNoNode), errors.Is(m.Error, zk.ErrNodeExists), errors.Is(m.Error, zk.ErrBadVersion):
			return m.Error
		case m.Error != nil && other == nil:
			other = m.Error
		}
	}
	if other == nil {
		other = err
	}
	return other
}

// Keep implements registry.Backend: the session watcher and a watch of the
// live node mark the hold lost.
func (b *Backend) Keep(h *registry.Hold) {
	b.cur.Store(h)
	h.Go(func(ctx context.Context) { b.watchLive(ctx, h) })
	// A disconnection between the claim and cur.Store was not seen by
	// watchSession: look again now that it would be.
	if !b.sessionIs(h.Ext.(*claim).session) {
		h.MarkLost()
	}
}

// watchLive marks h lost when its live node is deleted or rewritten by
// another (or the session's watches end).
func (b *Backend) watchLive(ctx context.Context, h *registry.Hold) {
	live := b.livePath(h.ID)
	for ctx.Err() == nil && !h.IsLost() {
		ok, st, ch, err := b.conn.ExistsW(live)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				h.MarkLost()
			}
			return
		case !ok || st.EphemeralOwner != b.conn.SessionID():
			b.o.Logger.Warn("worker ID lost: its live node is gone or another session's", "worker", h.ID, "node", live)
			h.MarkLost()
			return
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted || ev.Type == zk.EventNotWatching {
				if ctx.Err() == nil && !h.Ext.(*claim).ending.Load() {
					b.o.Logger.Warn("worker ID lost: its live node was deleted", "worker", h.ID, "node", live, "event", ev.Type.String())
					h.MarkLost()
				}
				return
			}
		}
	}
}

// Write implements registry.Backend: the live node (at the version this
// session last wrote), the last node and Leaf's forever node in one multi;
// exact also deletes the live node.
func (b *Backend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := h.Ext.(*claim)
	if !b.sessionIs(c.session) {
		// A write on a new session could match the versions of a live node
		// another holder created since.
		return false, nil
	}
	acl := zk.WorldACL(zk.PermAll)
	live := b.livePath(h.ID)
	build := func() []any {
		ops := []any{&zk.SetDataRequest{Path: live, Data: b.liveData(h), Version: c.liveVersion}}
		if c.lastExists {
			ops = append(ops, &zk.SetDataRequest{Path: b.lastPath(h.ID), Data: b.lastData(h, ns), Version: -1})
		} else {
			ops = append(ops, &zk.CreateRequest{Path: b.lastPath(h.ID), Data: b.lastData(h, ns), Acl: acl})
		}
		ops = append(ops, &zk.SetDataRequest{Path: c.forever, Data: b.leafData(time.Unix(0, ns).UnixMilli()), Version: -1})
		if exact {
			ops = append(ops, &zk.DeleteRequest{Path: live, Version: c.liveVersion + 1})
		}
		return ops
	}
	if exact {
		b.cur.CompareAndSwap(h, nil) // the deletion is ours, not a loss
		c.ending.Store(true)
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	err := b.multi(ctx, build())
	if (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists)) && b.resync(ctx, h) {
		// An earlier write of this session timed out here but was applied:
		// once more, on the versions as they are.
		err = b.multi(ctx, build())
	}
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return false, nil // rewritten by another session, or its last node created by another holder
	case errors.Is(err, zk.ErrNoNode) && !b.liveIntact(ctx, h):
		return false, nil
	case err != nil:
		return false, b.fail("save the last time", err)
	}
	c.liveVersion++
	c.lastExists = true
	return true, nil
}

// resync catches h up with writes of its own that timed out on the client
// but were applied: it reports whether the live node is still this
// session's (then nobody else can hold the ID: recycling must create the
// live node), taking its version and whether the last node exists.
func (b *Backend) resync(ctx context.Context, h *registry.Hold) bool {
	c := h.Ext.(*claim)
	st, err := b.liveStat(ctx, h)
	if err != nil || st.EphemeralOwner != c.session || !b.sessionIs(c.session) {
		return false
	}
	lastExists, err := call(ctx, func() (bool, error) {
		ok, _, err := b.conn.Exists(b.lastPath(h.ID))
		return ok, err
	})
	if err != nil {
		return false
	}
	c.liveVersion, c.lastExists = st.Version, lastExists
	return true
}

// liveStat reads the stat of h's live node; zk.ErrNoNode when it is gone.
func (b *Backend) liveStat(ctx context.Context, h *registry.Hold) (*zk.Stat, error) {
	return call(ctx, func() (*zk.Stat, error) {
		ok, st, err := b.conn.Exists(b.livePath(h.ID))
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	})
}

// liveIntact reports whether h's live node is still as this session wrote
// it: an ErrNoNode then came from another node (a forever node deleted by
// hand) and is not a loss.
func (b *Backend) liveIntact(ctx context.Context, h *registry.Hold) bool {
	st, err := b.liveStat(ctx, h)
	return err == nil && st.EphemeralOwner == b.conn.SessionID() && st.Version == h.Ext.(*claim).liveVersion
}

// End implements registry.Backend: it deletes the live node if it is still
// as this session wrote it (best effort).
func (b *Backend) End(h *registry.Hold) {
	b.cur.CompareAndSwap(h, nil)
	c, ok := h.Ext.(*claim)
	if !ok || !b.sessionIs(c.session) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Timeout)
	defer cancel()
	call(ctx, func() (struct{}, error) { return struct{}{}, b.conn.Delete(b.livePath(h.ID), c.liveVersion) })
}

// PeerOffsets measures the peers' clocks for registry.Protocol (frond.
// PeerClock) from the live nodes: see the package documentation.
func (b *Backend) PeerOffsets(ctx context.Context, h *registry.Hold) ([]frond.PeerOffset, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := h.Ext.(*claim)
	ctx, cancel := b.bound(ctx)
	defer cancel()
	if !b.sessionIs(c.session) {
		h.MarkLost()
		return nil, fmt.Errorf("worker registry: %w: the zookeeper session that held worker ID %d has ended", frond.ErrWorkerLost, h.ID)
	}
	live := b.livePath(h.ID)
	data := b.liveData(h)
	st, err := call(ctx, func() (*zk.Stat, error) { return b.conn.Set(live, data, c.liveVersion) })
	if errors.Is(err, zk.ErrBadVersion) && b.resync(ctx, h) {
		st, err = call(ctx, func() (*zk.Stat, error) { return b.conn.Set(live, data, c.liveVersion) })
	}
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		h.MarkLost()
		return nil, fmt.Errorf("worker registry: %w: the live node of worker ID %d was deleted or rewritten", frond.ErrWorkerLost, h.ID)
	}
	if err != nil {
		return nil, b.fail("write the live node", err)
	}
	c.liveVersion = st.Version
	var mine liveValue
	json.Unmarshal(data, &mine)
	myOff := mine.TimeNs - st.Mtime*int64(time.Millisecond)
	ids, err := call(ctx, func() ([]string, error) {
		c, _, err := b.conn.Children(b.path("frond", "live"))
		return c, err
	})
	if err != nil {
		return nil, b.fail("list the live nodes", err)
	}
	var out []frond.PeerOffset
	for _, id := range ids {
		if id == strconv.FormatInt(h.ID, 10) {
			continue
		}
		g, err := b.get(ctx, b.path("frond", "live", id))
		var v liveValue
		if err != nil || g == nil || json.Unmarshal(g.data, &v) != nil || v.TimeNs == 0 {
			continue // gone meanwhile, or not frond's
		}
		off := v.TimeNs - g.st.Mtime*int64(time.Millisecond)
		out = append(out, frond.PeerOffset{Peer: v.Owner + " worker " + id, Offset: time.Duration(off - myOff)})
	}
	return out, nil
}

// Close implements registry.Backend: it closes the session (which deletes
// a live node left).
func (b *Backend) Close() error {
	b.closed.Store(true)
	b.conn.Close()
	return nil
}
