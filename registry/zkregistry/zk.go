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
//	frond/last/{seq}             persistent {"owner","last_ns"}: the exact last time saved
//	frond/live/{seq}             ephemeral {"owner","time_ns"}: the live holder, its clock
//
// # Acquire
//
// The ID of this node's forever node (host:port) if it has one; else a new
// persistent sequential forever node, whose sequence number is the ID (Leaf
// takes ID 0 whenever the root was missing when it looked, so two nodes
// starting together on a fresh root both issue as worker 0; frond reads the
// ID from the name of the node it created); else, when the sequence has
// passed the layout's maximum, the forever node of a gone holder whose last
// time plus registry.Options.RecycleAfter is behind this node's clock,
// taken over in one multi-operation: the live node is created, the old
// forever node deleted (at the version read) and a forever node named for
// this node created with the same sequence number. Creating the live node
// is the lock: ZooKeeper refuses a second one, so two live nodes never hold
// one ID. It never wraps around: with every ID held or used too recently,
// Acquire fails with frond.ErrNoWorkerID.
//
// The last time of an ID is frond's exact last_ns, or, when Leaf wrote the
// forever node after frond's last write (its Mzxid is later) or frond never
// wrote, Leaf's timestamp plus 3 s: Leaf records its time every 3 s, after
// the fact.
//
// # Loss
//
// Worker.Lost is closed when the session expires, when the connection drops
// (the session may then expire without this node hearing of it; Acquire
// takes the ID back at once if the session survived), and when the live
// node is deleted or rewritten by someone else. Save writes the live node at
// the version it last wrote, so a lost ID is never saved to.
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
	"github.com/frond-id/frond/registry"
	"github.com/go-zookeeper/zk"
)

var (
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
	_ frond.PeerClock      = (*Registry)(nil)
)

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
}

type liveValue struct {
	Owner  string `json:"owner"`
	TimeNs int64  `json:"time_ns"`
}

// Registry is a ZooKeeper worker registry.
type Registry struct {
	cfg  Config
	o    registry.Options
	conn *zk.Conn
	cur  atomic.Pointer[hold] // the hold the session watcher may mark lost

	mu     sync.Mutex // held across Acquire, Save, Release, PeerOffsets and Close
	ready  bool       // the parent nodes exist
	hold   *hold
	closed bool
}

// hold is one holding of an ID in one session.
type hold struct {
	*registry.Hold
	forever     string // the forever node's path
	session     int64  // the session that created the live node
	liveVersion int32  // the live node's version as we last wrote it
	lastExists  bool   // the last node exists
	stopWatch   context.CancelFunc
}

// zkLogger passes the client's messages to the registry's logger.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, a ...any) {
	z.l.Debug("zookeeper client: " + fmt.Sprintf(format, a...))
}

// Open parses rawURL and starts connecting; it does not wait for the
// server (Acquire does).
func Open(rawURL string, o registry.Options) (*Registry, error) {
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
	r := &Registry{cfg: cfg, o: o}
	conn, events, err := zk.Connect(cfg.Servers, cfg.SessionTimeout, zk.WithLogger(zkLogger{o.Logger}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("%w: zookeeper: %v", frond.ErrInvalidArgument, err)
	}
	r.conn = conn
	go r.watchSession(events)
	return r, nil
}

// watchSession marks the hold lost when the connection drops or the
// session expires.
func (r *Registry) watchSession(events <-chan zk.Event) {
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
			if h := r.cur.Load(); h != nil && !h.IsLost() {
				r.o.Logger.Warn("worker ID lost: the zookeeper session is disconnected or expired", "worker", h.ID, "state", ev.State.String())
				h.MarkLost()
			}
		}
	}
}

// sessionIs reports whether the client has the session id now.
func (r *Registry) sessionIs(id int64) bool {
	return r.conn.State() == zk.StateHasSession && r.conn.SessionID() == id
}

func (r *Registry) path(parts ...string) string {
	return r.cfg.Root + "/" + strings.Join(parts, "/")
}

func (r *Registry) foreverDir() string { return r.path("forever") }
func (r *Registry) livePath(id int64) string {
	return r.path("frond", "live", strconv.FormatInt(id, 10))
}
func (r *Registry) lastPath(id int64) string {
	return r.path("frond", "last", strconv.FormatInt(id, 10))
}

func (r *Registry) fail(op string, err error) error {
	if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) && r.closed {
		return fmt.Errorf("worker registry: %s: %w", op, frond.ErrClosed)
	}
	return fmt.Errorf("worker registry: %s on zookeeper %s: %w: %w", op, strings.Join(r.cfg.Servers, ","), frond.ErrStoreUnavailable, err)
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

func (r *Registry) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < r.cfg.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.cfg.Timeout)
}

// connected waits until the client has a session.
func (r *Registry) connected(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for r.conn.State() != zk.StateHasSession {
		select {
		case <-ctx.Done():
			return r.fail("connect", fmt.Errorf("no session (%s): %w", r.conn.State(), ctx.Err()))
		case <-t.C:
		}
	}
	return nil
}

// setup creates the parent nodes once.
func (r *Registry) setup(ctx context.Context) error {
	if r.ready {
		return nil
	}
	var paths []string
	parts := strings.Split(r.cfg.Root[1:], "/")
	for i := range parts {
		paths = append(paths, "/"+strings.Join(parts[:i+1], "/"))
	}
	paths = append(paths, r.foreverDir(), r.path("frond"), r.path("frond", "last"), r.path("frond", "live"))
	for _, p := range paths {
		_, err := call(ctx, func() (string, error) { return r.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return r.fail("create "+p, err)
		}
	}
	r.ready = true
	return nil
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

// Acquire implements frond.WorkerRegistry.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return frond.Worker{}, fmt.Errorf("worker registry: %w", frond.ErrClosed)
	}
	if h := r.hold; h != nil && !h.IsLost() {
		return h.Worker(), nil
	}
	r.dropLocked(false) // a lost hold: its live node is gone or will be taken back below
	if maxNode < 0 {
		return frond.Worker{}, fmt.Errorf("%w: layout with no worker IDs (max %d)", frond.ErrNoWorkerID, maxNode)
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	if err := r.connected(ctx); err != nil {
		return frond.Worker{}, err
	}
	if err := r.setup(ctx); err != nil {
		return frond.Worker{}, err
	}
	for range 10 {
		h, err := r.take(ctx, maxNode)
		if errors.Is(err, errRace) {
			continue
		}
		if err != nil {
			return frond.Worker{}, err
		}
		wctx, wcancel := context.WithCancel(context.Background())
		h.stopWatch = wcancel
		r.hold = h
		r.cur.Store(h)
		go r.watchLive(wctx, h)
		// A disconnection between the claim and r.cur.Store was not seen by
		// watchSession: look again now that it would be.
		if !r.sessionIs(h.session) {
			h.MarkLost()
		}
		r.o.Logger.Info("worker ID held in zookeeper", "worker", h.ID, "owner", r.o.Identity(), "node", h.forever, "session", fmt.Sprintf("%#x", r.conn.SessionID()))
		return h.Worker(), nil
	}
	return frond.Worker{}, fmt.Errorf("worker registry: %w: other nodes kept taking the IDs this node chose; try again", frond.ErrStoreUnavailable)
}

var errRace = errors.New("lost a race")

// take finds and claims an ID: this identity's, a new one, or a recycled one.
func (r *Registry) take(ctx context.Context, maxNode int64) (*hold, error) {
	me := r.o.Identity()
	type listing struct {
		names []string
		st    *zk.Stat
	}
	ls, err := call(ctx, func() (listing, error) {
		c, st, err := r.conn.Children(r.foreverDir())
		return listing{c, st}, err
	})
	if err != nil {
		return nil, r.fail("list "+r.foreverDir(), err)
	}
	names := ls.names
	var nodes []node
	for _, n := range names {
		if nd, ok := parseForever(n); ok {
			nodes = append(nodes, nd)
		}
	}
	slices.SortFunc(nodes, func(a, b node) int { return int(a.seq - b.seq) })
	for _, n := range nodes {
		if n.identity != me {
			continue
		}
		if n.seq > maxNode {
			// Left by a claimNew past the layout whose delete failed, or by
			// a larger layout: not an ID this node can hold.
			continue
		}
		return r.claimOwn(ctx, n)
	}
	// ZooKeeper numbers a sequential node with its parent's cversion: once
	// that has passed the layout, creating one is only churn.
	if ls.st == nil || int64(ls.st.Cversion) <= maxNode {
		h, ok, err := r.claimNew(ctx, maxNode)
		if err != nil || ok {
			return h, err
		}
	}
	return r.recycle(ctx, nodes, maxNode)
}

func (r *Registry) liveData() []byte {
	b, _ := json.Marshal(liveValue{Owner: r.o.Identity(), TimeNs: r.o.Now().UnixNano()})
	return b
}

func (r *Registry) leafData(ms int64) []byte {
	b, _ := json.Marshal(leafEndpoint{IP: r.o.Host, Port: strconv.Itoa(r.o.Port), Timestamp: ms})
	return b
}

// claimOwn creates the live node of this identity's ID, or takes back the
// one this session still has.
func (r *Registry) claimOwn(ctx context.Context, n node) (*hold, error) {
	live := r.livePath(n.seq)
	_, err := call(ctx, func() (string, error) {
		return r.conn.Create(live, r.liveData(), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	})
	version := int32(0)
	if errors.Is(err, zk.ErrNodeExists) {
		st, serr := call(ctx, func() (*zk.Stat, error) {
			_, st, err := r.conn.Get(live)
			return st, err
		})
		switch {
		case errors.Is(serr, zk.ErrNoNode):
			return nil, errRace
		case serr != nil:
			return nil, r.fail("read "+live, serr)
		case st.EphemeralOwner != r.conn.SessionID():
			return nil, registry.HeldElsewhere(fmt.Sprintf("worker ID %d of %s (by another session: its live node %s goes when that session expires, within %v)", n.seq, n.identity, live, r.cfg.SessionTimeout))
		}
		version, err = st.Version, nil // this session's node, kept through a reconnection
	}
	if err != nil {
		return nil, r.fail("create "+live, err)
	}
	last, lastExists, _, err := r.lastTime(ctx, n, true)
	if err != nil {
		return nil, err
	}
	return &hold{Hold: registry.NewHold(n.seq, last), forever: r.path("forever", n.name), session: r.conn.SessionID(), liveVersion: version, lastExists: lastExists}, nil
}

// claimNew creates a sequential forever node; its sequence is the ID if it
// fits the layout (else the node is deleted again).
func (r *Registry) claimNew(ctx context.Context, maxNode int64) (*hold, bool, error) {
	prefix := r.path("forever", r.o.Identity()+"-")
	created, err := call(ctx, func() (string, error) {
		return r.conn.Create(prefix, r.leafData(r.o.Now().UnixMilli()), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	})
	if err != nil {
		return nil, false, r.fail("create "+prefix, err)
	}
	n, ok := parseForever(created[strings.LastIndexByte(created, '/')+1:])
	if !ok {
		return nil, false, fmt.Errorf("worker registry: %w: zookeeper named the node %q", frond.ErrStoreUnavailable, created)
	}
	if n.seq > maxNode {
		if _, err := call(ctx, func() (struct{}, error) { return struct{}{}, r.conn.Delete(created, -1) }); err != nil {
			r.o.Logger.Warn("worker registry: cannot delete a forever node past the layout", "node", created, "err", err)
		}
		return nil, false, nil
	}
	_, err = call(ctx, func() (string, error) {
		return r.conn.Create(r.livePath(n.seq), r.liveData(), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	})
	if err != nil { // a stale live node of a sequence never handed out: leave ours, try again
		return nil, false, r.fail("create "+r.livePath(n.seq), err)
	}
	// The forever node is ours and new: only a last node left by a holder
	// of the sequence (none, unless someone deleted forever nodes) counts.
	last, lastExists, _, err := r.lastTime(ctx, n, false)
	if err != nil {
		return nil, false, err
	}
	h := &hold{Hold: registry.NewHold(n.seq, last), forever: created, session: r.conn.SessionID(), lastExists: lastExists}
	if !lastExists {
		// The last node marks the ID as frond's: only those are recycled
		// (see recycle). Best effort: the first Save creates it otherwise.
		data, _ := json.Marshal(lastValue{Owner: r.o.Identity(), LastNs: 0})
		_, err := call(ctx, func() (string, error) {
			return r.conn.Create(r.lastPath(n.seq), data, 0, zk.WorldACL(zk.PermAll))
		})
		h.lastExists = err == nil
	}
	return h, true, nil
}

// lastTime reads the ID's last time: frond's exact one, or, with leaf,
// Leaf's timestamp plus LeafReportLag when Leaf wrote after frond (or frond
// never wrote).
//
// It also returns the forever node's version as read (-1 if it is gone),
// so that a recycle deletes exactly the node whose time it judged.
func (r *Registry) lastTime(ctx context.Context, n node, leaf bool) (last int64, lastExists bool, foreverVersion int32, err error) {
	type got struct {
		data []byte
		st   *zk.Stat
	}
	get := func(p string) (got, error) {
		return call(ctx, func() (got, error) {
			d, st, err := r.conn.Get(p)
			return got{d, st}, err
		})
	}
	fv, err := get(r.path("forever", n.name))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return 0, false, -1, r.fail("read the forever node", err)
	}
	foreverVersion = -1
	if err == nil {
		foreverVersion = fv.st.Version
	}
	lv, lerr := get(r.lastPath(n.seq))
	if lerr != nil && !errors.Is(lerr, zk.ErrNoNode) {
		return 0, false, -1, r.fail("read the last node", lerr)
	}
	lastExists = lerr == nil
	var lval lastValue
	if lastExists {
		if err := json.Unmarshal(lv.data, &lval); err != nil {
			return 0, false, -1, fmt.Errorf("worker registry: %w: %s holds %q: %v", frond.ErrStoreUnavailable, r.lastPath(n.seq), lv.data, err)
		}
		last = lval.LastNs
	}
	var ep leafEndpoint
	if leaf && err == nil && json.Unmarshal(fv.data, &ep) == nil && ep.Timestamp > 0 {
		leaf := time.UnixMilli(ep.Timestamp).UnixNano()
		if !lastExists || fv.st.Mzxid > lv.st.Mzxid {
			leaf += LeafReportLag.Nanoseconds()
		}
		last = max(last, leaf)
	}
	return last, lastExists, foreverVersion, nil
}

// recycle takes over the forever node of a gone holder with the oldest last
// time, once that time plus RecycleAfter is behind this node's clock. Only
// IDs frond has held (with a last node) are recycled: a Leaf node keeps
// issuing while cut off from ZooKeeper and has no live node to show it is
// alive, so its ID is never taken (Leaf never recycles either).
func (r *Registry) recycle(ctx context.Context, nodes []node, maxNode int64) (*hold, error) {
	var (
		best        node
		bestLast    int64 = -1
		bestVersion int32
		bestFound   bool
	)
	for _, n := range nodes {
		if n.seq > maxNode || bestFound && n.seq == best.seq {
			continue
		}
		held, err := call(ctx, func() (bool, error) {
			ok, _, err := r.conn.Exists(r.livePath(n.seq))
			return ok, err
		})
		if err != nil {
			return nil, r.fail("read "+r.livePath(n.seq), err)
		}
		if held {
			continue
		}
		last, ours, version, err := r.lastTime(ctx, n, true)
		if err != nil {
			return nil, err
		}
		if !ours || version < 0 {
			continue // Leaf's, or gone meanwhile
		}
		if !bestFound || last < bestLast {
			best, bestLast, bestVersion, bestFound = n, last, version, true
		}
	}
	if !bestFound {
		return nil, fmt.Errorf("worker registry: %w: all %d worker IDs (0..%d) under %s are held", frond.ErrNoWorkerID, maxNode+1, maxNode, r.cfg.Root)
	}
	if frees := time.Unix(0, bestLast).Add(r.o.RecycleAfter); !r.o.Now().After(frees) {
		return nil, registry.RecycleLater(fmt.Sprintf("all %d worker IDs (0..%d) under %s", maxNode+1, maxNode, r.cfg.Root), frees, r.o.RecycleAfter)
	}
	oldPath := r.path("forever", best.name)
	newPath := r.path("forever", seqName(r.o.Identity(), best.seq))
	// Issue only past last + RecycleAfter, the earliest the old holder's
	// local record stops vouching (already behind this node's clock).
	// Recorded in the claim, so nobody starts from the old time again if
	// this node stops before its first save.
	from := bestLast
	if bestLast != 0 {
		from = time.Unix(0, bestLast).Add(r.o.RecycleAfter).UnixNano()
	}
	lastData, _ := json.Marshal(lastValue{Owner: r.o.Identity(), LastNs: from})
	acl := zk.WorldACL(zk.PermAll)
	ops := []any{
		&zk.CreateRequest{Path: r.livePath(best.seq), Data: r.liveData(), Acl: acl, Flags: zk.FlagEphemeral},
		// The version read with the time judged: a write since (Leaf's
		// timestamp) makes this a race, retried with the new time.
		&zk.DeleteRequest{Path: oldPath, Version: bestVersion},
		&zk.CreateRequest{Path: newPath, Data: r.leafData(time.Unix(0, from).UnixMilli()), Acl: acl},
	}
	// Record the last time that travels with the ID, whoever wrote it.
	ops = append(ops, &zk.SetDataRequest{Path: r.lastPath(best.seq), Data: lastData, Version: -1})
	err := r.multi(ctx, ops)
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return nil, errRace
	}
	if err != nil {
		return nil, r.fail("recycle worker ID "+strconv.FormatInt(best.seq, 10), err)
	}
	r.o.Logger.Info("worker ID recycled", "worker", best.seq, "from", best.identity, "last", time.Unix(0, bestLast).UTC(), "recycle_after", r.o.RecycleAfter)
	return &hold{Hold: registry.NewHold(best.seq, from), forever: newPath, session: r.conn.SessionID(), lastExists: true}, nil
}

// multi runs ops in one transaction and returns the error of the operation
// that failed (ZooKeeper reports the others as rolled back).
func (r *Registry) multi(ctx context.Context, ops []any) error {
	res, err := call(ctx, func() ([]zk.MultiResponse, error) { return r.conn.Multi(ops...) })
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

// watchLive marks h lost when its live node is deleted or rewritten by
// another (or the session's watches end).
func (r *Registry) watchLive(ctx context.Context, h *hold) {
	live := r.livePath(h.ID)
	for ctx.Err() == nil && !h.IsLost() {
		ok, st, ch, err := r.conn.ExistsW(live)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				h.MarkLost()
			}
			return
		case !ok || st.EphemeralOwner != r.conn.SessionID():
			r.o.Logger.Warn("worker ID lost: its live node is gone or another session's", "worker", h.ID, "node", live)
			h.MarkLost()
			return
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted || ev.Type == zk.EventNotWatching {
				if ctx.Err() == nil {
					r.o.Logger.Warn("worker ID lost: its live node was deleted", "worker", h.ID, "node", live, "event", ev.Type.String())
					h.MarkLost()
				}
				return
			}
		}
	}
}

// Save implements frond.WorkerRegistry: the latest of the times saved, while
// this node's live node is as it wrote it.
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, false)
}

// Release implements frond.Releaser: it records last exactly and deletes
// the live node.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, true)
}

func (r *Registry) write(ctx context.Context, last time.Time, exact bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hold
	if h == nil || h.IsLost() {
		return fmt.Errorf("worker registry: %w: no worker ID is held in zookeeper", frond.ErrWorkerLost)
	}
	ns := max(last.UnixNano(), 0)
	if !exact {
		ns = max(ns, h.Saved)
	}
	if !r.sessionIs(h.session) {
		// A write on a new session could match the versions of a live node
		// another holder created since.
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: the zookeeper session that held worker ID %d has ended", frond.ErrWorkerLost, h.ID)
	}
	lastData, _ := json.Marshal(lastValue{Owner: r.o.Identity(), LastNs: ns})
	acl := zk.WorldACL(zk.PermAll)
	live := r.livePath(h.ID)
	build := func() []any {
		ops := []any{&zk.SetDataRequest{Path: live, Data: r.liveData(), Version: h.liveVersion}}
		if h.lastExists {
			ops = append(ops, &zk.SetDataRequest{Path: r.lastPath(h.ID), Data: lastData, Version: -1})
		} else {
			ops = append(ops, &zk.CreateRequest{Path: r.lastPath(h.ID), Data: lastData, Acl: acl})
		}
		ops = append(ops, &zk.SetDataRequest{Path: h.forever, Data: r.leafData(time.Unix(0, ns).UnixMilli()), Version: -1})
		if exact {
			ops = append(ops, &zk.DeleteRequest{Path: live, Version: h.liveVersion + 1})
		}
		return ops
	}
	if exact {
		h.stopWatch() // the deletion is ours, not a loss
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	err := r.multi(ctx, build())
	if (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists)) && r.resync(ctx, h) {
		// An earlier write of this session timed out here but was applied:
		// once more, on the versions as they are.
		err = r.multi(ctx, build())
	}
	switch {
	case errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) && !r.liveIntact(ctx, h):
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: the live node of worker ID %d was deleted or rewritten by another session", frond.ErrWorkerLost, h.ID)
	case errors.Is(err, zk.ErrNodeExists): // the last node appeared: another holder recycled and wrote
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: worker ID %d's last node was created by another session", frond.ErrWorkerLost, h.ID)
	case err != nil:
		return r.fail("save the last time", err)
	}
	h.liveVersion++
	h.lastExists = true
	h.Saved = ns
	if exact {
		r.dropLocked(false)
	}
	return nil
}

// resync catches h up with writes of its own that timed out on the client
// but were applied: it reports whether the live node is still this
// session's (then nobody else can hold the ID: recycling must create the
// live node), taking its version and whether the last node exists.
func (r *Registry) resync(ctx context.Context, h *hold) bool {
	st, err := r.liveStat(ctx, h)
	if err != nil || st.EphemeralOwner != h.session || !r.sessionIs(h.session) {
		return false
	}
	lastExists, err := call(ctx, func() (bool, error) {
		ok, _, err := r.conn.Exists(r.lastPath(h.ID))
		return ok, err
	})
	if err != nil {
		return false
	}
	h.liveVersion, h.lastExists = st.Version, lastExists
	return true
}

// liveStat reads the stat of h's live node; zk.ErrNoNode when it is gone.
func (r *Registry) liveStat(ctx context.Context, h *hold) (*zk.Stat, error) {
	return call(ctx, func() (*zk.Stat, error) {
		ok, st, err := r.conn.Exists(r.livePath(h.ID))
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	})
}

// liveIntact reports whether h's live node is still as this session wrote
// it: an ErrNoNode then came from another node (a forever node deleted by
// hand) and is not a loss.
func (r *Registry) liveIntact(ctx context.Context, h *hold) bool {
	st, err := r.liveStat(ctx, h)
	return err == nil && st.EphemeralOwner == r.conn.SessionID() && st.Version == h.liveVersion
}

// dropLocked forgets the hold and, with del, deletes its live node if it is
// still as we wrote it (best effort).
func (r *Registry) dropLocked(del bool) {
	h := r.hold
	if h == nil {
		return
	}
	r.hold = nil
	r.cur.CompareAndSwap(h, nil)
	if h.stopWatch != nil {
		h.stopWatch()
	}
	h.Stop()
	if del {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		defer cancel()
		call(ctx, func() (struct{}, error) { return struct{}{}, r.conn.Delete(r.livePath(h.ID), h.liveVersion) })
	}
}

// PeerOffsets implements frond.PeerClock from the live nodes: see the
// package documentation.
func (r *Registry) PeerOffsets(ctx context.Context) ([]frond.PeerOffset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hold
	if h == nil || h.IsLost() {
		return nil, fmt.Errorf("worker registry: %w: no worker ID is held in zookeeper", frond.ErrWorkerLost)
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	if !r.sessionIs(h.session) {
		h.MarkLost()
		return nil, fmt.Errorf("worker registry: %w: the zookeeper session that held worker ID %d has ended", frond.ErrWorkerLost, h.ID)
	}
	live := r.livePath(h.ID)
	data := r.liveData()
	st, err := call(ctx, func() (*zk.Stat, error) { return r.conn.Set(live, data, h.liveVersion) })
	if errors.Is(err, zk.ErrBadVersion) && r.resync(ctx, h) {
		st, err = call(ctx, func() (*zk.Stat, error) { return r.conn.Set(live, data, h.liveVersion) })
	}
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		h.MarkLost()
		return nil, fmt.Errorf("worker registry: %w: the live node of worker ID %d was deleted or rewritten", frond.ErrWorkerLost, h.ID)
	}
	if err != nil {
		return nil, r.fail("write the live node", err)
	}
	h.liveVersion = st.Version
	var mine liveValue
	json.Unmarshal(data, &mine)
	myOff := mine.TimeNs - st.Mtime*int64(time.Millisecond)
	ids, err := call(ctx, func() ([]string, error) {
		c, _, err := r.conn.Children(r.path("frond", "live"))
		return c, err
	})
	if err != nil {
		return nil, r.fail("list the live nodes", err)
	}
	var out []frond.PeerOffset
	for _, id := range ids {
		if id == strconv.FormatInt(h.ID, 10) {
			continue
		}
		type got struct {
			data []byte
			st   *zk.Stat
		}
		g, err := call(ctx, func() (got, error) {
			d, st, err := r.conn.Get(r.path("frond", "live", id))
			return got{d, st}, err
		})
		var v liveValue
		if err != nil || json.Unmarshal(g.data, &v) != nil || v.TimeNs == 0 {
			continue // gone meanwhile, or not frond's
		}
		off := v.TimeNs - g.st.Mtime*int64(time.Millisecond)
		out = append(out, frond.PeerOffset{Peer: v.Owner + " worker " + id, Offset: time.Duration(off - myOff)})
	}
	return out, nil
}

// Close implements frond.WorkerRegistry: it deletes the live node if it is
// still ours and closes the session (which would delete it too). It is
// idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if r.conn.State() == zk.StateHasSession {
		r.dropLocked(true)
	} else {
		r.dropLocked(false)
	}
	r.closed = true
	r.conn.Close()
	return nil
}
