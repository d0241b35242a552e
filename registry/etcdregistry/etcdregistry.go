// Package etcdregistry is the snowflake worker registry on etcd (v3 API):
// the worker ID is a key held under a lease that the node keeps alive.
//
// It is a registry.Backend: the protocol (which ID, from which time, when
// an ID is lost) is registry.Protocol's; this package maps it onto etcd.
//
// Keys, under the prefix (default /frond/):
//
//	workers/ids/{id}   JSON {owner, last_ns, claim}  persistent: who had the ID, the latest time saved, the last claim
//	workers/live/{id}  JSON {owner, time_ns, token}  under the holder's lease: the ID is held, by which claim
//	workers/ping/{id}  under the lease: a node measuring its peers' clocks
//
// A claim is one transaction that compares the ID key's revision and
// requires the live key to be absent (or, to continue this process's own
// claim, to be under that claim's lease), then writes both keys, the live
// key under a new lease: the live key is the lock. The smallest ID never
// used is claimed by requiring both keys to be absent.
//
// When the lease cannot be kept alive (etcd unreachable for the TTL, or the
// lease revoked), Worker.Lost is closed and every later write, which
// compares the lease, fails: the service stops snowflake IDs until it holds
// an ID again.
//
// Peer clocks (frond.PeerClock): the measuring node writes a ping key; every
// holder watches the ping keys and answers by rewriting its live key with
// its clock; the offset of a peer is its time minus the midpoint of the
// round trip, so it is known to within half the round trip.
//
// URL: etcd://host:2379[,host2:2379...][?frond_prefix=/frond/&frond_timeout=5s]
package etcdregistry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/frond-id/frond/internal/etcdconn"
	"github.com/frond-id/frond/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	_ registry.Backend = (*Backend)(nil)
)

// Backend is the etcd backend of the worker registry.
type Backend struct {
	c         *clientv3.Client
	o         registry.Options
	prefix    string
	layoutKey string // {prefix}layout, of every datacenter (registry.LayoutRecorder)
	timeout   time.Duration
	endpoints []string
	url       etcdconn.URL // its user and secrets (every error is masked with them)
}

// claim is an etcd claim's own state (registry.Hold.Ext).
type claim struct{ lease clientv3.LeaseID }

type idValue struct {
	Owner  string `json:"owner"`
	LastNs int64  `json:"last_ns"`
	Claim  string `json:"claim,omitempty"`
}

type liveValue struct {
	Owner  string `json:"owner"`
	TimeNs int64  `json:"time_ns"`
	Token  string `json:"token,omitempty"`
}

// rev is what a Slot read: the ID key's revision, the live key's lease.
type rev struct {
	mod   int64
	lease clientv3.LeaseID
}

// Check parses rawURL as Open does, without contacting anything.
func Check(rawURL string) error {
	u, err := etcdconn.Parse(rawURL, "frond_prefix", "frond_timeout")
	if err == nil && u.Params["frond_timeout"] != "" {
		_, err = etcdconn.Duration("frond_timeout", u.Params["frond_timeout"])
	}
	return err
}

// Open parses rawURL and makes a client; it does not wait for the cluster
// (Acquire does).
func Open(ctx context.Context, rawURL string, o registry.Options) (*registry.Protocol, error) {
	u, err := etcdconn.Parse(rawURL, "frond_prefix", "frond_timeout")
	if err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	b := &Backend{o: o.WithDefaults(), prefix: "/frond/", timeout: 5 * time.Second, endpoints: u.Endpoints, url: u}
	if v, ok := u.Params["frond_prefix"]; ok {
		b.prefix = v
	}
	b.layoutKey = b.prefix + "layout"
	b.prefix += o.DatacenterSuffix("dc") // "/frond/dc1/workers/...": the datacenter's own worker IDs
	if o.Datacenter != 0 {
		b.prefix += "/"
	}
	if v, ok := u.Params["frond_timeout"]; ok {
		if b.timeout, err = etcdconn.Duration("frond_timeout", v); err != nil {
			return nil, err
		}
	}
	if b.c, err = etcdconn.Client(ctx, u, b.timeout); err != nil {
		return nil, err
	}
	return registry.NewProtocol(b, b.o), nil
}

func (b *Backend) idKey(id int64) string {
	return b.prefix + "workers/ids/" + strconv.FormatInt(id, 10)
}
func (b *Backend) liveKey(id int64) string {
	return b.prefix + "workers/live/" + strconv.FormatInt(id, 10)
}
func (b *Backend) pingKey(id int64) string {
	return b.prefix + "workers/ping/" + strconv.FormatInt(id, 10)
}

func (b *Backend) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Within(ctx, b.timeout)
}

func (b *Backend) fail(op string, err error) error {
	return fmt.Errorf("worker registry: %s on etcd %v: %w: %w", op, b.endpoints, frond.ErrStoreUnavailable, b.url.Mask(err))
}

// Policy implements registry.Backend.
func (b *Backend) Policy() registry.Policy { return registry.Policy{OwnFirst: true, Recycle: true} }

// Where implements registry.Backend.
func (b *Backend) Where() string { return fmt.Sprintf("etcd %v under %s", b.endpoints, b.prefix) }

// Prepare implements registry.Backend.
func (b *Backend) Prepare(context.Context) error { return nil }

var _ registry.LayoutRecorder = (*Backend)(nil)

// RecordLayout implements registry.LayoutRecorder: the key, created if it
// is absent (etcdconn.CreateOrGet).
func (b *Backend) RecordLayout(ctx context.Context, layout string) (string, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	got, err := etcdconn.CreateOrGet(ctx, b.c, b.layoutKey, layout)
	if err != nil {
		return "", b.fail("record the snowflake layout", err)
	}
	return got, nil
}

// snapshot is the registry's keys at one revision.
type snapshot struct {
	rev  int64
	ids  map[int64]idEntry
	live map[int64]liveEntry
}

type idEntry struct {
	v   idValue
	mod int64
}

type liveEntry struct {
	v     liveValue
	lease clientv3.LeaseID
}

func (b *Backend) read(ctx context.Context) (snapshot, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	resp, err := b.c.Get(ctx, b.prefix+"workers/", clientv3.WithPrefix())
	if err != nil {
		return snapshot{}, b.fail("read workers", err)
	}
	s := snapshot{rev: resp.Header.Revision, ids: map[int64]idEntry{}, live: map[int64]liveEntry{}}
	for _, kv := range resp.Kvs {
		kind, num, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), b.prefix+"workers/"), "/")
		id, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			continue
		}
		switch kind {
		case "ids":
			var v idValue
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				return snapshot{}, fmt.Errorf("worker registry: %s holds %q, not frond's JSON: %w", kv.Key, kv.Value, err)
			}
			s.ids[id] = idEntry{v, kv.ModRevision}
		case "live":
			var v liveValue
			json.Unmarshal(kv.Value, &v) // the key's existence is what matters
			s.live[id] = liveEntry{v, clientv3.LeaseID(kv.Lease)}
		}
	}
	return s, nil
}

// slots returns the used IDs within maxNode that keep passes, by ID.
func (s snapshot) slots(maxNode int64, keep func(id int64, e idEntry) bool) []registry.Slot {
	var out []registry.Slot
	for id, e := range s.ids {
		if id > maxNode || !keep(id, e) {
			continue
		}
		sl := registry.Slot{ID: id, Owner: e.v.Owner, Last: e.v.LastNs, Claim: e.v.Claim, Rev: rev{mod: e.mod}}
		if l, held := s.live[id]; held {
			sl.Holder = cmp.Or(l.v.Token, "(a claim without a token)")
			sl.Rev = rev{mod: e.mod, lease: l.lease}
		}
		out = append(out, sl)
	}
	slices.SortFunc(out, func(a, b registry.Slot) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Own implements registry.Backend.
func (b *Backend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	s, err := b.read(ctx)
	if err != nil {
		return nil, err
	}
	me := b.o.Identity()
	return s.slots(maxNode, func(_ int64, e idEntry) bool { return e.v.Owner == me }), nil
}

// Idle implements registry.Backend.
func (b *Backend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	s, err := b.read(ctx)
	if err != nil {
		return nil, err
	}
	return s.slots(maxNode, func(id int64, _ idEntry) bool { _, held := s.live[id]; return !held }), nil
}

// New implements registry.Backend: the smallest ID with neither key.
func (b *Backend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	s, err := b.read(ctx)
	if err != nil {
		return 0, false, err
	}
	for id := int64(0); id <= maxNode; id++ {
		_, used := s.ids[id]
		_, held := s.live[id]
		if used || held {
			continue
		}
		h.ID = id
		err := b.claim(ctx, h, 0, nil, []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(b.idKey(id)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(b.liveKey(id)), "=", 0),
		})
		return 0, err == nil, err
	}
	return 0, false, nil
}

// Claim implements registry.Backend.
func (b *Backend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	r := s.Rev.(rev)
	live := clientv3.Compare(clientv3.CreateRevision(b.liveKey(s.ID)), "=", 0)
	var old *clientv3.LeaseID
	if s.Held() {
		live = clientv3.Compare(clientv3.LeaseValue(b.liveKey(s.ID)), "=", r.lease)
		old = &r.lease
	}
	return b.claim(ctx, h, floor, old, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.idKey(s.ID)), "=", r.mod), live})
}

// claim grants a lease and, if cmps hold, writes h.ID's keys under it; a
// replaced claim's lease (old) is revoked.
func (b *Backend) claim(ctx context.Context, h *registry.Hold, floor int64, old *clientv3.LeaseID, cmps []clientv3.Cmp) error {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	lease, err := b.c.Grant(ctx, int64(math.Ceil(b.o.LeaseTTL.Seconds())))
	if err != nil {
		return b.fail("grant lease", err)
	}
	me := b.o.Identity()
	val, _ := json.Marshal(idValue{Owner: me, LastNs: floor, Claim: h.Token})
	resp, err := b.c.Txn(ctx).If(cmps...).
		Then(clientv3.OpPut(b.idKey(h.ID), string(val)), clientv3.OpPut(b.liveKey(h.ID), string(b.live(h)), clientv3.WithLease(lease.ID))).
		Commit()
	switch {
	case err != nil:
		err = b.fail("claim worker ID", err)
	case !resp.Succeeded:
		err = registry.ErrRace
	}
	if err != nil {
		b.revoke(lease.ID)
		return err
	}
	h.Ext = claim{lease.ID}
	if old != nil {
		b.revoke(*old) // its keys are ours now; what stays under it is its ping key
	}
	return nil
}

func (b *Backend) live(h *registry.Hold) []byte {
	v, _ := json.Marshal(liveValue{Owner: b.o.Identity(), TimeNs: b.o.Now().UnixNano(), Token: h.Token})
	return v
}

// Keep implements registry.Backend: the lease's keep-alive (Lost when it
// ends) and the answers to the peers' clock pings.
func (b *Backend) Keep(h *registry.Hold) {
	lease := h.Ext.(claim).lease
	h.Go(func(ctx context.Context) {
		ka, err := b.c.KeepAlive(ctx, lease)
		if err != nil {
			h.MarkLost()
			return
		}
		for range ka { // closed when the lease cannot be kept alive or ctx ends
		}
		if ctx.Err() == nil {
			b.o.Logger.Warn("worker ID lost: its etcd lease expired or was revoked", "worker", h.ID)
		}
		h.MarkLost()
	})
	h.Go(func(ctx context.Context) { b.answerPings(ctx, h) })
}

// Write implements registry.Backend: under the claim's lease; exact also
// ends the claim (the live key goes, the lease is revoked).
func (b *Backend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	lease := h.Ext.(claim).lease
	val, _ := json.Marshal(idValue{Owner: b.o.Identity(), LastNs: ns, Claim: h.Token})
	live := clientv3.OpPut(b.liveKey(h.ID), string(b.live(h)), clientv3.WithLease(lease))
	if exact {
		live = clientv3.OpDelete(b.liveKey(h.ID))
	}
	ctx, cancel := b.bound(ctx)
	defer cancel()
	resp, err := b.c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(b.liveKey(h.ID)), "=", lease)).
		Then(clientv3.OpPut(b.idKey(h.ID), string(val)), live).
		Commit()
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	if resp.Succeeded && exact {
		b.revoke(lease)
	}
	return resp.Succeeded, nil
}

// End implements registry.Backend: it revokes the claim's lease.
func (b *Backend) End(h *registry.Hold) {
	if c, ok := h.Ext.(claim); ok {
		b.revoke(c.lease)
	}
}

// revoke ends a lease, best effort, within the request timeout: the client
// waits for a connection, so an etcd that went away must not hold up a
// start or a shutdown.
func (b *Backend) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	b.c.Revoke(ctx, id)
}

// answerPings rewrites this node's live key with its clock whenever another
// node writes a ping key (PeerOffsets).
//
// A watch ends when its member loses the leader (or on compaction): it is
// watched again while the hold lasts, so the node keeps answering.
func (b *Backend) answerPings(ctx context.Context, h *registry.Hold) {
	me, lease := b.pingKey(h.ID), h.Ext.(claim).lease
	for ctx.Err() == nil && !h.IsLost() {
		for resp := range b.c.Watch(clientv3.WithRequireLeader(ctx), b.prefix+"workers/ping/", clientv3.WithPrefix()) {
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut || string(ev.Kv.Key) == me {
					continue
				}
				wctx, cancel := context.WithTimeout(ctx, b.timeout)
				b.c.Txn(wctx).If(clientv3.Compare(clientv3.LeaseValue(b.liveKey(h.ID)), "=", lease)).
					Then(clientv3.OpPut(b.liveKey(h.ID), string(b.live(h)), clientv3.WithLease(lease))).Commit()
				cancel()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// PeerOffsets measures the peers' clocks for registry.Protocol (frond.
// PeerClock). It waits at most 1 s (or ctx) for the peers' answers; peers
// that do not answer, or whose live key goes meanwhile (a peer killed just
// before, its lease running out), are left out.
func (b *Backend) PeerOffsets(ctx context.Context, h *registry.Hold) ([]frond.PeerOffset, error) {
	ctx, cancel := context.WithTimeout(ctx, peerWait)
	defer cancel()
	s, err := b.read(ctx)
	if err != nil {
		return nil, err
	}
	waiting := map[string]int64{}
	for id := range s.live {
		if id != h.ID {
			waiting[b.liveKey(id)] = id
		}
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	wc := b.c.Watch(ctx, b.prefix+"workers/live/", clientv3.WithPrefix(), clientv3.WithRev(s.rev+1))
	t0 := b.o.Now()
	if _, err := b.c.Put(ctx, b.pingKey(h.ID), strconv.FormatInt(t0.UnixNano(), 10), clientv3.WithLease(h.Ext.(claim).lease)); err != nil {
		return nil, b.fail("ping the peers", err)
	}
	var out []frond.PeerOffset
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			b.o.Logger.Warn("peers did not answer the clock ping in time", "missing", len(waiting))
			return out, nil
		case resp, ok := <-wc:
			if !ok {
				return out, nil
			}
			t1 := b.o.Now()
			for _, ev := range resp.Events {
				id, wanted := waiting[string(ev.Kv.Key)]
				if wanted && ev.Type == clientv3.EventTypeDelete {
					delete(waiting, string(ev.Kv.Key)) // gone: nobody to wait for
					continue
				}
				var v liveValue
				if !wanted || ev.Type != clientv3.EventTypePut || json.Unmarshal(ev.Kv.Value, &v) != nil || v.TimeNs == 0 {
					continue
				}
				mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
				out = append(out, frond.PeerOffset{Peer: fmt.Sprintf("%s worker %d", v.Owner, id), Offset: time.Duration(v.TimeNs - mid)})
				delete(waiting, string(ev.Kv.Key))
			}
		}
	}
	return out, nil
}

// Close implements registry.Backend.
func (b *Backend) Close() error {
	err := b.c.Close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// peerWait bounds PeerOffsets: a peer that does not answer within it (a
// killed one whose lease still runs) is left out.
const peerWait = time.Second
