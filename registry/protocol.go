package registry

// This file is the worker-ID protocol, written once. Every network registry
// (etcd, ZooKeeper, Redis, SQL) is a Backend: it maps the few primitives
// below onto its own compare-and-set, lease and watch, and keeps its own
// layout on disk. What follows is the argument for the two promises of
// frond.WorkerRegistry, for every backend at once.
//
// # No two live nodes hold one ID
//
// A node holds an ID only through a claim: one atomic step of the backend
// that succeeds only if no live claim holds the ID (a live key created only
// if absent, an ephemeral node, an UPDATE whose WHERE requires the lease to
// have run out) and the ID is still as the node read it (a revision, a
// version, the last time and token compared). Two nodes racing for one ID:
// one claim fails with ErrRace and that node reads again. A claim lives
// while its lease does (etcd lease, ZooKeeper session, a TTL the node
// renews); the node gives the ID up (Hold.Lost) no later than the backend
// would let the lease expire, and every write it makes is conditional on its
// claim still being there, so a node that lost its claim never records a
// time under a newer holder.
//
// The one exception is a takeover: the claim named by this process's own
// record (the hold it lost, or, through package cache, the claim of an
// earlier run on the same data directory, whose lock proves that run has
// ended: a process that still ran would hold the lock) is replaced without
// waiting for its lease to run out. The claim compares that token, so only
// that claim is replaced, never another node's.
//
// # A recycled ID never meets its old times
//
// Every node issues only past the ID's last recorded time (Worker.
// LastIssued), and records a time before it issues up to it (the service's
// reservations). An ID whose holder is gone goes to another node only once
// that node's clock is past last + RecycleAfter, and the claim itself
// records last + RecycleAfter as the ID's time (the floor): the new holder
// starts there, and so does anyone after it, even if it stops before its
// first save. The old holder, cut off from the registry, may go on issuing
// from its local record up to its confirmed time + RecycleAfter and no
// further (package cache): up to the floor, never past it.
//
// # Exact times need proof
//
// A node may issue past its reservation only from its local record, and only
// up to what the record allows (package cache): the confirmed time +
// LeaseTTL while its claim stands, + RecycleAfter when it started from the
// record with the registry down. So the time the registry holds for an ID
// is exact only for the process that continues the last claim on it (Slot.
// Claim is the token its record names, Resume). Anyone else, this node's
// identity included (a second process, or a restart on a fresh data
// directory), takes the ID from last + RecycleAfter, once that is behind
// its clock: the same rule as recycling.
//
// # The order of choice
//
//  1. An ID bound to this identity whose last claim is the one the record
//     names (Policy.OwnFirst): from its exact last time, replacing that
//     claim if it still stands; or another system's node of this identity
//     (Slot.Foreign: Leaf's), from its last time.
//  2. An ID bound to this identity, not held, once last + RecycleAfter is
//     behind this node's clock: from there. A backend that never recycles
//     (Policy.Recycle false) waits for it (RecycleLater); others go on.
//  3. An ID nobody has held: the backend's own allocator (a sequential
//     node, a counter, an auto-increment row, the lowest unused key). One
//     that turns out to have a time (a counter reset by hand) is left for
//     recycling.
//  4. With Policy.Recycle, the ID not held whose last time is the oldest,
//     once last + RecycleAfter is behind this node's clock, from there;
//     before that, RecycleLater (retried).
//  5. Otherwise frond.ErrNoWorkerID: every ID is held. Never a wrap-around.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/secret"
)

// ErrRace is a Backend's answer when the ID it was asked to claim changed
// since it was read (another node claimed or wrote it): the protocol reads
// again.
var ErrRace = errors.New("worker registry: the worker ID changed since it was read")

// Slot is what a Backend read about one worker ID.
type Slot struct {
	ID int64
	// Owner is the identity ("host:port") the ID is bound to; "" if none.
	Owner string
	// Last is the latest time recorded for the ID, in Unix nanoseconds; 0 if
	// none.
	Last int64
	// Holder is the token of the live claim on the ID; "" when no live
	// claim holds it.
	Holder string
	// Claim is the token of the last claim on the ID, live or ended; "" if
	// none was recorded.
	Claim string
	// Foreign marks an ID held by another system (a Leaf node): never
	// recycled, since it has no live claim to show it is alive, and taken
	// by a node of its identity from its last time (the backend's estimate),
	// as that system would take it back itself.
	Foreign bool
	// Rev is the backend's record of the state it read, compared by Claim.
	Rev any
}

// Held reports whether a live claim holds the ID.
func (s Slot) Held() bool { return s.Holder != "" }

// Policy is what a backend's assignment promises.
type Policy struct {
	// OwnFirst: a node takes back the ID bound to its identity before any
	// other (ZooKeeper, etcd, Redis, SQL with frond_mode=reuse).
	OwnFirst bool
	// Recycle: the IDs of gone holders go to other nodes (not Redis with
	// frond_mode=fixed, which binds an ID to an address for good).
	Recycle bool
}

// Backend is a registry's storage: the primitives the protocol runs on.
// Every method that takes a context must give up when it ends. Errors of an
// unreachable backend wrap frond.ErrStoreUnavailable; of a closed one
// frond.ErrClosed.
type Backend interface {
	// Policy says how the backend assigns IDs.
	Policy() Policy
	// Where names the backend in messages, without secrets.
	Where() string
	// Prepare readies the backend for claims (connects, creates tables or
	// parent nodes, checks persistence); it is called by every Acquire and
	// may remember that it succeeded.
	Prepare(ctx context.Context) error
	// Own returns the slots bound to this node's identity within
	// 0..maxNode. Only called with Policy.OwnFirst.
	Own(ctx context.Context, maxNode int64) ([]Slot, error)
	// New claims, in one atomic step, an ID within 0..maxNode that no node
	// has held, for h (h.ID is set on success), and returns its last time (0
	// unless the backend kept one). ok is false when the backend has none
	// left; ErrRace makes the protocol try again.
	New(ctx context.Context, maxNode int64, h *Hold) (last int64, ok bool, err error)
	// Idle returns the slots within 0..maxNode that no live claim holds:
	// the candidates for recycling. Only called with Policy.Recycle.
	Idle(ctx context.Context, maxNode int64) ([]Slot, error)
	// Claim takes s for h in one atomic step, only if s is as read and
	// either no live claim holds it or (a takeover) s.Holder's still does:
	// the ID is then bound to this identity, its last time is floor, and h's
	// claim (h.Token) holds it and is its last claim. It returns ErrRace
	// when s changed.
	Claim(ctx context.Context, s Slot, floor int64, h *Hold) error
	// Keep starts what keeps h's claim alive (a lease keep-alive, renewals,
	// a session watch) and marks h lost (Hold.MarkLost) when it ends; Hold.
	// Stop stops it.
	Keep(h *Hold)
	// Write records ns as the ID's last time, only while h's claim holds
	// the ID: exact replaces the recorded time and ends the claim (a clean
	// stop); otherwise the later of the two times is kept. It returns false
	// (and no error) when the claim no longer holds the ID.
	Write(ctx context.Context, h *Hold, ns int64, exact bool) (bool, error)
	// End ends h's claim if it still holds the ID, best effort.
	End(h *Hold)
	// Close releases the backend's connections.
	Close() error
}

// Protocol is a frond.WorkerRegistry over a Backend.
type Protocol struct {
	b Backend
	o Options

	mu     sync.Mutex // held across every call to the backend but PeerOffsets
	hold   *Hold      // nil: no ID held
	resume string     // the claim this process continues (see Resume)
	legacy int64      // the ID an earlier frond's record names (see Resume); -1: none
	closed bool
}

var (
	_ frond.WorkerRegistry = (*Protocol)(nil)
	_ frond.Releaser       = (*Protocol)(nil)
	_ frond.PeerClock      = (*Protocol)(nil)
	_ frond.Warner         = (*Protocol)(nil)
)

// CheckByOpen checks rawURL with a backend's Open that only parses (it
// contacts nothing): it opens and closes.
func CheckByOpen(rawURL string, open func(string, Options) (*Protocol, error)) error {
	return CheckIn(rawURL, Options{}, open)
}

// CheckIn is CheckByOpen with the node's options (its datacenter, which
// some registries' names carry).
func CheckIn(rawURL string, o Options, open func(string, Options) (*Protocol, error)) error {
	p, err := open(rawURL, o)
	if err == nil {
		p.Close()
	}
	return err
}

// NewProtocol runs the protocol on b; o must have its defaults
// (Options.WithDefaults).
func NewProtocol(b Backend, o Options) *Protocol { return &Protocol{b: b, o: o, legacy: -1} }

// Backend returns the backend.
func (p *Protocol) Backend() Backend { return p.b }

// Held returns the current hold, or nil.
func (p *Protocol) Held() *Hold {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hold
}

// Resume names the claim this process continues: the one its local record
// names (Worker.Claim of an earlier run on the same data directory), and
// that record's ID. The caller vouches that the run which held it has ended
// (package cache holds the data directory's lock). The next Acquire takes
// that claim's ID from its exact last time, at once, even while the claim's
// lease runs. A process continues its own lost holds by itself.
//
// A record written before claims were recorded (no claim) vouches for its
// ID only where the registry recorded no claim either (an ID last held by
// such a frond): the one upgrade from it keeps its IDs and times.
func (p *Protocol) Resume(claim string, id int64) {
	p.mu.Lock()
	p.resume, p.legacy = claim, -1
	if claim == "" {
		p.legacy = id
	}
	p.mu.Unlock()
}

// continues reports whether this process continues s's last claim.
func (p *Protocol) continues(s Slot) bool {
	if s.Claim == "" {
		return p.legacy == s.ID
	}
	return s.Claim == p.resume
}

// Acquire implements frond.WorkerRegistry.
//
// No error of the Protocol shows a secret the process remembers (secret.
// Remember: a registry URL's password, however the backend's client quotes
// it): each passes through secret.Hide on its way out.
func (p *Protocol) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	w, err := p.acquire(ctx, maxNode)
	return w, secret.Hide(err)
}

func (p *Protocol) acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return frond.Worker{}, fmt.Errorf("worker registry: %w", frond.ErrClosed)
	}
	if h := p.hold; h != nil && !h.IsLost() {
		return h.Worker(), nil
	}
	p.dropLocked(true)
	if maxNode < 0 {
		return frond.Worker{}, fmt.Errorf("%w: layout with no worker IDs (max %d)", frond.ErrNoWorkerID, maxNode)
	}
	if err := p.b.Prepare(ctx); err != nil {
		return frond.Worker{}, err
	}
	if err := p.checkLayout(ctx); err != nil {
		return frond.Worker{}, err
	}
	for range 10 {
		h := NewHold(-1, 0)
		h.Token = NewToken()
		sent := time.Now()
		err := p.claim(ctx, maxNode, h)
		if errors.Is(err, ErrRace) {
			continue
		}
		if err != nil {
			return frond.Worker{}, err
		}
		h.Sent = sent
		p.b.Keep(h)
		p.hold = h
		p.resume, p.legacy = h.Token, -1
		p.o.Logger.Info("worker ID held in the registry", "worker", h.ID, "owner", p.o.Identity(), "registry", p.b.Where())
		return h.Worker(), nil
	}
	return frond.Worker{}, fmt.Errorf("worker registry: %w: other nodes kept taking the worker IDs this node chose on %s; retrying",
		frond.ErrStoreUnavailable, p.b.Where())
}

// LayoutRecorder is a Backend that keeps the snowflake layout its worker
// IDs serve (registry.Options.Layout), once for the whole registry, all
// datacenters together.
type LayoutRecorder interface {
	// RecordLayout records layout if the registry keeps none yet, in one
	// atomic step, and returns the layout it keeps (layout itself when it
	// was recorded now).
	RecordLayout(ctx context.Context, layout string) (string, error)
}

// ErrLayoutMismatch means the registry serves another snowflake layout than
// this node's. It wraps frond.ErrInvalidArgument: a node refuses to start.
var ErrLayoutMismatch = fmt.Errorf("%w: another snowflake layout", frond.ErrInvalidArgument)

// checkLayout records this node's layout in the registry, or checks it
// against the one recorded.
func (p *Protocol) checkLayout(ctx context.Context) error {
	lr, ok := p.b.(LayoutRecorder)
	if p.o.Layout == "" || !ok {
		return nil
	}
	got, err := lr.RecordLayout(ctx, p.o.Layout)
	if err != nil {
		return err
	}
	if got != p.o.Layout {
		return fmt.Errorf("worker registry: %w: %s serves the layout %q, and this node's is %q: "+
			"the node fields of two layouts meet, so their nodes could issue the same ID. Give every node of this registry the same "+
			"snowflake.layout, snowflake.datacenter_bits and snowflake.shard_bits, or give this one another registry (docs/registries.md#one-layout-per-registry)",
			ErrLayoutMismatch, p.b.Where(), got, p.o.Layout)
	}
	return nil
}

// claim runs the order of choice once.
func (p *Protocol) claim(ctx context.Context, maxNode int64, h *Hold) error {
	pol := p.b.Policy()
	now := p.o.Now().UnixNano()
	var ownFrees int64 // when the soonest own ID may be taken again (0: none waits)
	if pol.OwnFirst {
		own, err := p.b.Own(ctx, maxNode)
		if err != nil {
			return err
		}
		for _, s := range own {
			if p.continues(s) {
				if s.Held() {
					p.o.Logger.Info("worker ID taken over from this process's earlier claim", "worker", s.ID, "registry", p.b.Where())
				}
				return p.take(ctx, s, s.Last, h)
			}
		}
		for _, s := range own {
			if s.Held() {
				continue // another process of this identity, or a crashed run of it without its record
			}
			if s.Foreign {
				// Another system's node of this identity (Leaf's, moving to
				// frond): from its own last time, as it would itself.
				return p.take(ctx, s, s.Last, h)
			}
			floor := Floor(s.Last, p.o.RecycleAfter)
			if now > floor {
				return p.take(ctx, s, floor, h)
			}
			if ownFrees == 0 || floor < ownFrees {
				ownFrees = floor
			}
		}
		if !pol.Recycle && len(own) > 0 {
			// The identity keeps its ID for good: wait for it.
			what := fmt.Sprintf("worker ID %d of %s on %s", own[0].ID, p.o.Identity(), p.b.Where())
			if ownFrees == 0 {
				return HeldElsewhere(what + fmt.Sprintf(" (its claim ends within lease_ttl %v of its holder's last renewal)", p.o.LeaseTTL))
			}
			return RecycleLater(what, time.Unix(0, ownFrees), p.o.RecycleAfter)
		}
	}
	last, ok, err := p.b.New(ctx, maxNode, h)
	switch {
	case err != nil:
		return err
	case ok && last != 0:
		// An ID nobody should have held has a time: someone did (a counter
		// reset or nodes deleted by hand), and may have issued past it from
		// a local record. Leave it to be recycled and take the next one.
		p.o.Logger.Warn("worker registry: a new worker ID already has a last time; leaving it for recycling", "worker", h.ID, "last", time.Unix(0, last).UTC())
		p.b.End(h)
		return ErrRace
	case ok:
		return nil
	}
	all := fmt.Sprintf("all %d worker IDs (0..%d) on %s", maxNode+1, maxNode, p.b.Where())
	if !pol.Recycle {
		return fmt.Errorf("worker registry: %w: %s were handed out, and this registry never recycles them", frond.ErrNoWorkerID, all)
	}
	idle, err := p.b.Idle(ctx, maxNode)
	if err != nil {
		return err
	}
	s, ok := Oldest(idle)
	if !ok {
		return fmt.Errorf("worker registry: %w: %s are held", frond.ErrNoWorkerID, all)
	}
	floor := Floor(s.Last, p.o.RecycleAfter)
	if now <= floor {
		return RecycleLater(all, time.Unix(0, floor), p.o.RecycleAfter)
	}
	if err := p.take(ctx, s, floor, h); err != nil {
		return err
	}
	p.o.Logger.Info("worker ID recycled", "worker", s.ID, "from", s.Owner, "last", time.Unix(0, s.Last).UTC(), "recycle_after", p.o.RecycleAfter)
	return nil
}

func (p *Protocol) take(ctx context.Context, s Slot, floor int64, h *Hold) error {
	h.ID = s.ID
	if err := p.b.Claim(ctx, s, floor, h); err != nil {
		return err
	}
	h.Saved = floor
	return nil
}

// Oldest returns the slot with the oldest last time (then the lowest ID)
// that is neither held nor foreign.
func Oldest(slots []Slot) (Slot, bool) {
	var best Slot
	found := false
	for _, s := range slots {
		if s.Held() || s.Foreign {
			continue
		}
		if !found || s.Last < best.Last || s.Last == best.Last && s.ID < best.ID {
			best, found = s, true
		}
	}
	return best, found
}

// Floor is the time a recycled ID starts from: last + recycleAfter, the
// earliest the old holder's local record stops vouching. An ID with no
// recorded time (0) has none.
func Floor(last int64, recycleAfter time.Duration) int64 {
	if last == 0 {
		return 0
	}
	return time.Unix(0, last).Add(recycleAfter).UnixNano()
}

// Save implements frond.WorkerRegistry: the later of the times recorded,
// while this node's claim holds the ID.
func (p *Protocol) Save(ctx context.Context, last time.Time) error {
	return secret.Hide(p.write(ctx, last, false))
}

// Release implements frond.Releaser: it records last exactly, even below a
// time saved before, and ends the claim.
func (p *Protocol) Release(ctx context.Context, last time.Time) error {
	return secret.Hide(p.write(ctx, last, true))
}

func (p *Protocol) write(ctx context.Context, last time.Time, exact bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.hold
	if h == nil || h.IsLost() {
		return fmt.Errorf("worker registry: %w: no worker ID is held on %s", frond.ErrWorkerLost, p.b.Where())
	}
	ns := max(last.UnixNano(), 0)
	if !exact {
		ns = max(ns, h.Saved)
	}
	ok, err := p.b.Write(ctx, h, ns, exact)
	if err != nil {
		return err
	}
	if !ok {
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: worker ID %d is no longer held by this node's claim on %s (its lease ran out, or another node took it)",
			frond.ErrWorkerLost, h.ID, p.b.Where())
	}
	h.Saved = ns
	if exact {
		p.dropLocked(false)
	}
	return nil
}

// dropLocked forgets the hold, stops what kept it and, with end, ends its
// claim (best effort).
func (p *Protocol) dropLocked(end bool) {
	h := p.hold
	if h == nil {
		return
	}
	p.hold = nil
	h.Stop()
	if end {
		p.b.End(h)
	}
}

// PeerOffsets implements frond.PeerClock when the backend measures its
// peers' clocks; otherwise it returns none.
func (p *Protocol) PeerOffsets(ctx context.Context) ([]frond.PeerOffset, error) {
	pc, ok := p.b.(interface {
		PeerOffsets(ctx context.Context, h *Hold) ([]frond.PeerOffset, error)
	})
	if !ok {
		return nil, nil
	}
	h := p.Held()
	if h == nil || h.IsLost() {
		return nil, fmt.Errorf("worker registry: %w: no worker ID is held on %s", frond.ErrWorkerLost, p.b.Where())
	}
	offsets, err := pc.PeerOffsets(ctx, h)
	return offsets, secret.Hide(err)
}

// Warnings implements frond.Warner with the backend's.
func (p *Protocol) Warnings() []string {
	var out []string
	if w, ok := p.b.(frond.Warner); ok {
		for _, msg := range w.Warnings() {
			out = append(out, secret.HideString(msg))
		}
	}
	return out
}

// Abandon stops keeping the claim and closes the backend without ending
// the claim or recording a time, as a process killed would leave it: the
// claim stands until its lease runs out. Tests use it to crash a node.
func (p *Protocol) Abandon() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.dropLocked(false)
	p.closed = true
	return secret.Hide(p.b.Close())
}

// Close implements frond.WorkerRegistry: it ends the claim if it still
// holds the ID (the ID can be taken again: by this identity at once, by
// another node once RecycleAfter has passed its last time) and closes the
// backend. It is idempotent.
func (p *Protocol) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.dropLocked(true)
	p.closed = true
	return secret.Hide(p.b.Close())
}
