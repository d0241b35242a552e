// Package etcdregistry is the snowflake worker registry on etcd (v3 API):
// the worker ID is a key held under a lease that the node keeps alive.
//
// Keys, under the prefix (default /frond/):
//
//	workers/ids/{id}   JSON {owner, last_ns}   persistent: who had the ID, the latest time saved
//	workers/live/{id}  JSON {owner, time_ns}   under the holder's lease: the ID is held
//	workers/ping/{id}  under the lease: a node measuring its peers' clocks
//
// Acquire takes, in one transaction each, the ID this node's identity
// (host:port) had, else the smallest ID never used, else an ID with no live
// key whose last time plus RecycleAfter is behind this node's clock. Every
// transaction compares revisions, so two nodes never both take an ID; the
// live key is the lock. It never wraps around: with every ID held it fails
// with frond.ErrNoWorkerID.
//
// When the lease cannot be kept alive (etcd unreachable for the TTL, or the
// lease revoked), Worker.Lost is closed and Save fails with
// frond.ErrWorkerLost: the service stops snowflake IDs until it holds an ID
// again.
//
// Peer clocks (frond.PeerClock): the measuring node writes a ping key; every
// holder watches the ping keys and answers by rewriting its live key with
// its clock; the offset of a peer is its time minus the midpoint of the
// round trip, so it is known to within half the round trip.
//
// URL: etcd://host:2379[,host2:2379...][?frond_prefix=/frond/&frond_timeout=5s]
package etcdregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/etcdconn"
	"github.com/frond-id/frond/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
	_ frond.PeerClock      = (*Registry)(nil)
)

// Registry is an etcd worker registry.
type Registry struct {
	c         *clientv3.Client
	o         registry.Options
	prefix    string
	timeout   time.Duration
	endpoints []string

	mu   sync.Mutex
	hold *hold // nil: no ID held
}

// hold is one holding of an ID under one lease.
type hold struct {
	*registry.Hold
	lease  clientv3.LeaseID
	cancel context.CancelFunc // stops the keep-alive and the ping watcher
}

type idValue struct {
	Owner  string `json:"owner"`
	LastNs int64  `json:"last_ns"`
}

type liveValue struct {
	Owner  string `json:"owner"`
	TimeNs int64  `json:"time_ns"`
}

// Open parses rawURL and makes a client; it does not wait for the cluster
// (Acquire does).
func Open(ctx context.Context, rawURL string, o registry.Options) (*Registry, error) {
	u, err := etcdconn.Parse(rawURL, "frond_prefix", "frond_timeout")
	if err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	r := &Registry{o: o.WithDefaults(), prefix: "/frond/", timeout: 5 * time.Second, endpoints: u.Endpoints}
	if v, ok := u.Params["frond_prefix"]; ok {
		r.prefix = v
	}
	if v, ok := u.Params["frond_timeout"]; ok {
		if r.timeout, err = etcdconn.Duration("frond_timeout", v); err != nil {
			return nil, err
		}
	}
	if r.c, err = etcdconn.Client(ctx, r.endpoints, r.timeout); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Registry) idKey(id int64) string {
	return r.prefix + "workers/ids/" + strconv.FormatInt(id, 10)
}
func (r *Registry) liveKey(id int64) string {
	return r.prefix + "workers/live/" + strconv.FormatInt(id, 10)
}
func (r *Registry) pingKey(id int64) string {
	return r.prefix + "workers/ping/" + strconv.FormatInt(id, 10)
}

func (r *Registry) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < r.timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.timeout)
}

func (r *Registry) fail(op string, err error) error {
	return fmt.Errorf("worker registry: %s on etcd %v: %w: %w", op, r.endpoints, frond.ErrStoreUnavailable, err)
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

func (r *Registry) read(ctx context.Context) (snapshot, error) {
	resp, err := r.c.Get(ctx, r.prefix+"workers/", clientv3.WithPrefix())
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{rev: resp.Header.Revision, ids: map[int64]idEntry{}, live: map[int64]liveEntry{}}
	for _, kv := range resp.Kvs {
		kind, num, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), r.prefix+"workers/"), "/")
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

// Acquire implements frond.WorkerRegistry.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hold; h != nil && !h.IsLost() {
		return h.Worker(), nil
	}
	r.dropLocked()
	if r.c == nil {
		return frond.Worker{}, fmt.Errorf("worker registry: %w", frond.ErrClosed)
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	ttl := int64(math.Ceil(r.o.LeaseTTL.Seconds()))
	lease, err := r.c.Grant(ctx, ttl)
	if err != nil {
		return frond.Worker{}, r.fail("grant lease", err)
	}
	id, last, err := r.take(ctx, maxNode, lease.ID)
	if err != nil {
		r.revoke(lease.ID)
		return frond.Worker{}, err
	}
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hold{Hold: registry.NewHold(id, last), lease: lease.ID, cancel: hcancel}
	ka, err := r.c.KeepAlive(hctx, lease.ID)
	if err != nil {
		hcancel()
		r.revoke(lease.ID)
		return frond.Worker{}, r.fail("keep the lease alive", err)
	}
	go func() {
		for range ka { // closed when the lease cannot be kept alive or hctx ends
		}
		h.MarkLost()
	}()
	go r.answerPings(hctx, h)
	r.hold = h
	r.o.Logger.Info("worker ID held in etcd", "worker", id, "lease", int64(lease.ID), "owner", r.o.Identity())
	return h.Worker(), nil
}

// take picks an ID and claims it in a transaction, re-reading on conflict.
func (r *Registry) take(ctx context.Context, maxNode int64, lease clientv3.LeaseID) (int64, int64, error) {
	me := r.o.Identity()
	live, _ := json.Marshal(liveValue{Owner: me, TimeNs: r.o.Now().UnixNano()})
	for range 50 {
		s, err := r.read(ctx)
		if err != nil {
			return 0, 0, r.fail("read workers", err)
		}
		id, cmp, why := r.choose(s, maxNode, me)
		if id < 0 {
			return 0, 0, why
		}
		old := s.ids[id]
		last := old.v.LastNs
		if last != 0 && old.v.Owner != me {
			// Recycled: issue only past last + RecycleAfter, the earliest
			// the old holder's local record stops vouching (already behind
			// this node's clock). Recorded in the claim: the next holder,
			// and this node's own record, must not start from the old
			// holder's time if this node stops before its first save.
			last = time.Unix(0, last).Add(r.o.RecycleAfter).UnixNano()
		}
		val, _ := json.Marshal(idValue{Owner: me, LastNs: last})
		resp, err := r.c.Txn(ctx).If(append(cmp, clientv3.Compare(clientv3.CreateRevision(r.liveKey(id)), "=", 0))...).
			Then(clientv3.OpPut(r.idKey(id), string(val)), clientv3.OpPut(r.liveKey(id), string(live), clientv3.WithLease(lease))).
			Commit()
		if err != nil {
			return 0, 0, r.fail("claim worker ID", err)
		}
		if resp.Succeeded {
			return id, last, nil
		}
	}
	return 0, 0, fmt.Errorf("worker registry: %w: too much contention for worker IDs on etcd; retrying", frond.ErrStoreUnavailable)
}

// choose returns the ID to claim with the comparisons that make the claim
// safe, or -1 and why none can be claimed.
func (r *Registry) choose(s snapshot, maxNode int64, me string) (int64, []clientv3.Cmp, error) {
	modIs := func(id int64) []clientv3.Cmp {
		return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(r.idKey(id)), "=", s.ids[id].mod)}
	}
	// 1. The ID this identity had.
	for id, e := range s.ids {
		if e.v.Owner != me || id > maxNode {
			continue
		}
		if _, held := s.live[id]; held {
			return -1, nil, registry.HeldElsewhere(fmt.Sprintf("worker ID %d of %s (under another lease, which expires within %v)", id, me, r.o.LeaseTTL))
		}
		return id, modIs(id), nil
	}
	// 2. The smallest ID never used.
	for id := int64(0); id <= maxNode; id++ {
		if _, used := s.ids[id]; !used {
			if _, held := s.live[id]; !held {
				return id, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(r.idKey(id)), "=", 0)}, nil
			}
		}
	}
	// 3. An ID whose holder is gone and whose last time is old enough.
	now := r.o.Now()
	var ids []int64
	for id := range s.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var soonest time.Time
	for _, id := range ids {
		e := s.ids[id]
		if _, held := s.live[id]; held || id > maxNode {
			continue
		}
		free := time.Unix(0, e.v.LastNs).Add(r.o.RecycleAfter)
		if now.After(free) {
			return id, modIs(id), nil
		}
		if soonest.IsZero() || free.Before(soonest) {
			soonest = free
		}
	}
	all := fmt.Sprintf("all %d worker IDs (0..%d)", maxNode+1, maxNode)
	if !soonest.IsZero() {
		return -1, nil, registry.RecycleLater(all, soonest, r.o.RecycleAfter)
	}
	return -1, nil, fmt.Errorf("worker registry: %w: %s are held", frond.ErrNoWorkerID, all)
}

// Save implements frond.WorkerRegistry.
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, false)
}

// Release implements frond.Releaser: it records last exactly and revokes
// the lease.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	if err := r.write(ctx, last, true); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked()
	return nil
}

func (r *Registry) write(ctx context.Context, last time.Time, exact bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hold
	if h == nil || h.IsLost() {
		return fmt.Errorf("worker registry: %w: no worker ID is held in etcd", frond.ErrWorkerLost)
	}
	ns := last.UnixNano()
	if !exact {
		ns = max(ns, h.Saved)
	}
	me := r.o.Identity()
	val, _ := json.Marshal(idValue{Owner: me, LastNs: ns})
	live, _ := json.Marshal(liveValue{Owner: me, TimeNs: r.o.Now().UnixNano()})
	ctx, cancel := r.bound(ctx)
	defer cancel()
	resp, err := r.c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(r.liveKey(h.ID)), "=", h.lease)).
		Then(clientv3.OpPut(r.idKey(h.ID), string(val)), clientv3.OpPut(r.liveKey(h.ID), string(live), clientv3.WithLease(h.lease))).
		Commit()
	if err != nil {
		return r.fail("save the last time", err)
	}
	if !resp.Succeeded {
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: worker ID %d is no longer held under this node's lease", frond.ErrWorkerLost, h.ID)
	}
	h.Saved = ns
	return nil
}

// dropLocked forgets the hold, revoking its lease (best effort).
func (r *Registry) dropLocked() {
	h := r.hold
	if h == nil {
		return
	}
	r.hold = nil
	h.cancel()
	h.MarkLost()
	r.revoke(h.lease)
}

// revoke ends a lease, best effort, within the request timeout: the client
// waits for a connection, so an etcd that went away must not hold up a
// start or a shutdown.
func (r *Registry) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	r.c.Revoke(ctx, id)
}

// answerPings rewrites this node's live key with its clock whenever another
// node writes a ping key (PeerOffsets).
//
// A watch ends when its member loses the leader (or on compaction): it is
// watched again while the hold lasts, so the node keeps answering.
func (r *Registry) answerPings(ctx context.Context, h *hold) {
	me := r.pingKey(h.ID)
	for ctx.Err() == nil && !h.IsLost() {
		for resp := range r.c.Watch(clientv3.WithRequireLeader(ctx), r.prefix+"workers/ping/", clientv3.WithPrefix()) {
			for _, ev := range resp.Events {
				if ev.Type != clientv3.EventTypePut || string(ev.Kv.Key) == me {
					continue
				}
				live, _ := json.Marshal(liveValue{Owner: r.o.Identity(), TimeNs: r.o.Now().UnixNano()})
				wctx, cancel := context.WithTimeout(ctx, r.timeout)
				r.c.Txn(wctx).If(clientv3.Compare(clientv3.LeaseValue(r.liveKey(h.ID)), "=", h.lease)).
					Then(clientv3.OpPut(r.liveKey(h.ID), string(live), clientv3.WithLease(h.lease))).Commit()
				cancel()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// PeerOffsets implements frond.PeerClock. It waits at most 3 s (or ctx) for
// the peers' answers; peers that do not answer are left out.
func (r *Registry) PeerOffsets(ctx context.Context) ([]frond.PeerOffset, error) {
	r.mu.Lock()
	h := r.hold
	r.mu.Unlock()
	if h == nil || h.IsLost() {
		return nil, fmt.Errorf("worker registry: %w: no worker ID is held", frond.ErrWorkerLost)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := r.read(ctx)
	if err != nil {
		return nil, r.fail("read live workers", err)
	}
	waiting := map[string]int64{}
	for id := range s.live {
		if id != h.ID {
			waiting[r.liveKey(id)] = id
		}
	}
	if len(waiting) == 0 {
		return nil, nil
	}
	wc := r.c.Watch(ctx, r.prefix+"workers/live/", clientv3.WithPrefix(), clientv3.WithRev(s.rev+1))
	t0 := r.o.Now()
	if _, err := r.c.Put(ctx, r.pingKey(h.ID), strconv.FormatInt(t0.UnixNano(), 10), clientv3.WithLease(h.lease)); err != nil {
		return nil, r.fail("ping the peers", err)
	}
	var out []frond.PeerOffset
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			r.o.Logger.Warn("peers did not answer the clock ping in time", "missing", len(waiting))
			return out, nil
		case resp, ok := <-wc:
			if !ok {
				return out, nil
			}
			t1 := r.o.Now()
			for _, ev := range resp.Events {
				id, wanted := waiting[string(ev.Kv.Key)]
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

// Close implements frond.WorkerRegistry: it revokes the lease (the ID is
// free for recycling once RecycleAfter has passed) and closes the client.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked()
	if r.c == nil {
		return nil
	}
	err := r.c.Close()
	r.c = nil
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
