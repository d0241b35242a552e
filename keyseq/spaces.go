package keyseq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	crand "crypto/rand"
	"encoding/hex"

	"github.com/frond-id/frond"
)

// SpaceStore is a LeaseStore that also keeps the spaces' definitions, so
// that every node serves a space as it was created.
type SpaceStore interface {
	LeaseStore
	// CreateSpace records sp (its defaults filled and checked);
	// frond.ErrTagExists if a space of that name exists.
	CreateSpace(ctx context.Context, sp Space) error
	// LookupSpace reads a space; ErrSpaceNotFound if there is none.
	LookupSpace(ctx context.Context, name string) (Space, error)
	// ListSpaces reads every space, by name.
	ListSpaces(ctx context.Context) ([]Space, error)
	// PeerKey returns the cluster's peer key (PeerKeyLen random bytes, made
	// by the first call, atomically: every node reads the same): the
	// nodes that share the store prove themselves to each other with it
	// (Peer).
	PeerKey(ctx context.Context) ([]byte, error)
	// Rearm raises the maximum of every section of sp to at least above
	// (sections never raised too), whoever holds them: after the store
	// lost data, above every value any node answered (frond space rearm).
	Rearm(ctx context.Context, sp Space, above int64) error
}

// ErrSpaceNotFound: no keyed sequence space has the name. It is
// frond.ErrTagNotFound to the protocols (a space is named as a tag is).
var ErrSpaceNotFound = fmt.Errorf("keyed sequence space not found: %w", frond.ErrTagNotFound)

// SpaceNotFound is ErrSpaceNotFound for the space named, with the hint
// the protocols answer instead of the tag's (issue 58).
func SpaceNotFound(name string) error { return &spaceNotFound{name: name} }

type spaceNotFound struct{ name string }

func (e *spaceNotFound) Error() string { return fmt.Sprintf("%v: %q", ErrSpaceNotFound, e.name) }
func (e *spaceNotFound) Unwrap() error { return ErrSpaceNotFound }

// Hint says what to do, in place of tag_not_found's "create the tag".
func (e *spaceNotFound) Hint() string {
	return "create the space first (frond space create " + e.name + ", or POST /v1/spaces: docs/sequences.md)"
}

// ErrOwnerUnreachable: a Forwarder could not reach the owner (its answer
// is not this error, whatever it says). The node reads the table again at
// once: an owner that is gone leaves its sections to be taken when its
// lease runs out.
var ErrOwnerUnreachable = errors.New("keyed sequence: the section's owner did not answer")

// ErrOwnerMoved: the node a request was forwarded to refused it as
// unavailable (a Forwarder wraps the refusal with it): most often it gave
// the section away since the table this node read. The node reads the
// table again and forwards once more, within the wait for a section
// between owners.
var ErrOwnerMoved = errors.New("keyed sequence: the section's owner refused the request as unavailable")

// Forwarder asks the owner at addr for the next count values of key, as
// the node peer (the caller was checked where it came in: its token goes
// no further), marked forwarded (the owner answers it or refuses it, never
// forwards it again). It answers only what a node of the cluster answered
// (Peer's proof): anything else is ErrOwnerUnreachable.
type Forwarder func(ctx context.Context, addr, space, key string, count int64, peer Peer) (first, last int64, err error)

// Spaces is a node's keyed sequence spaces: one Node per space, started
// when the space is created or first asked for on this node, forwarding
// requests for sections another node owns.
type Spaces struct {
	store   SpaceStore
	me      Owner
	probe   string // ProbeID
	o       NodeOptions
	forward Forwarder
	log     *slog.Logger

	mu       sync.Mutex // starts and Close, one at a time
	closed   bool
	idleOnce sync.Once     // stopIdle started
	quit     chan struct{} // closed by Leave: stopIdle returns
	// stopped: Close ran (the store closed too); a node that only left
	// (Leave) still sends requests on to the sections' owners.
	stopped atomic.Bool
	key     atomic.Pointer[[]byte] // the cluster's peer key, once read (again by RefreshPeer)
	keyRead atomic.Int64           // when RefreshPeer last read it (unix ns)
	// misses are the names of spaces found not to exist, with when
	// (missTTL); missCount how many are kept.
	misses    sync.Map
	missCount atomic.Int64
	askFloors FloorsAsker   // how Rearm asks the other nodes for their floors
	mayStart  StartLimit    // whether a request's caller may start a space here now
	replays   Replays       // the numbers of the signed requests of other nodes seen (Verify)
	nodes     sync.Map      // name -> *Node: the spaces started, read without the lock
	starts    atomic.Uint64 // the spaces started so far (LeaseOwner)
}

// ttl is the lease TTL, the bound of what waits on others.
func (s *Spaces) ttl() time.Duration {
	if s.o.TTL == 0 {
		return DefaultLeaseTTL
	}
	return s.o.TTL
}

// SpaceStats is a space's NodeStats on this node.
type SpaceStats struct {
	Name string
	NodeStats
}

// Serves reports the section of key in the space, the space's sections,
// and whether this node serves that section now, from what it holds (no
// store read; sections 0: the space is not started here). A client that
// routes keys to their owners learns from it (the gRPC answer's
// frond-seq-section header; issue 58, item 6).
func (s *Spaces) Serves(space, key string) (section, sections int, mine bool) {
	v, ok := s.nodes.Load(space)
	if !ok {
		return 0, 0, false
	}
	n := v.(*Node)
	sections = n.eng.space.Sections
	section = SectionOf(key, sections)
	return section, sections, n.eng.gate.open() && n.eng.granted(section)
}

// StoreCheck pings the keyed sequence store, where it can be pinged, and
// lists its warnings (frond.Warner: a Redis that no longer keeps its data
// across a restart), for readiness.
func (s *Spaces) StoreCheck(ctx context.Context) (warnings []string, err error) {
	if p, ok := s.store.(frond.Pinger); ok {
		ctx, cancel := context.WithTimeout(ctx, s.ttl())
		defer cancel()
		err = p.Ping(ctx)
	}
	if w, ok := s.store.(frond.Warner); ok {
		warnings = w.Warnings()
	}
	return warnings, err
}

// Stats reports each space this node serves, by name.
func (s *Spaces) Stats() []SpaceStats {
	var out []SpaceStats
	s.nodes.Range(func(name, n any) bool {
		out = append(out, SpaceStats{Name: name.(string), NodeStats: n.(*Node).Stats()})
		return true
	})
	slices.SortFunc(out, func(a, b SpaceStats) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NewSpaces returns the spaces of store served by the node me; forward
// may be nil (a single node, or no forwarding: a request for another's
// section gets a *NotOwnerError naming the owner).
func NewSpaces(store SpaceStore, me Owner, o NodeOptions, forward Forwarder) *Spaces {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	var b [12]byte
	crand.Read(b[:])
	return &Spaces{store: store, me: me, o: o, forward: forward, log: log, probe: hex.EncodeToString(b[:]), quit: make(chan struct{})}
}

// Me is the node's owner name.
func (s *Spaces) Me() Owner { return s.me }

// ProbeID is a random name of this node's, which its HTTP API answers
// (ProbeHeader on /healthz): a node checks at start that the address it
// advertises reaches itself (CheckAdvertise). It is no credential.
func (s *Spaces) ProbeID() string { return s.probe }

// ProbeHeader is the header of /healthz that names the node (ProbeID).
const ProbeHeader = "X-Frond-Node"

// Prober asks the node at addr for its ProbeID.
type Prober func(ctx context.Context, addr string) (string, error)

// CheckAdvertise checks that the address this node advertises (Me().Addr:
// requests for its sections are forwarded there) reaches this node, by
// probe, trying for up to tries times a second apart: nil when it does,
// else why not, with what to do. Two nodes on one machine that advertise
// the machine's address and their port, where nothing listens, forward
// nothing (issue 58).
func (s *Spaces) CheckAdvertise(ctx context.Context, probe Prober, tries int) error {
	var err error
	for k := 0; k < max(tries, 1); k++ {
		if k > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
		var id string
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		id, err = probe(c, s.me.Addr)
		cancel()
		switch {
		case err == nil && id == s.probe:
			return nil
		case err == nil:
			err = fmt.Errorf("another node answers there (%s %q)", ProbeHeader, id)
		}
	}
	return fmt.Errorf("the address this node advertises for keyed sequences, %s, does not reach it: %w; "+
		"the other nodes forward requests for its sections there and fail: set sequences.advertise to HOST:PORT where the other nodes reach this node's HTTP API", s.me.Addr, err)
}

// StartLimit says whether the caller of a request (its context's) may
// start space on this node now (nil), or why not: api.Guard.AllowStart,
// sequences.start_rate. A request that finds the space started is not
// asked about.
type StartLimit func(ctx context.Context, space string) error

// SetStartLimit sets the limit on the spaces a request starts (the
// spaces an admin creates start without it), before the node serves.
// Without it any request starts any space that exists (issue 69: every
// start is a round of leases and, past sequences.max_spaces, an eviction).
func (s *Spaces) SetStartLimit(l StartLimit) { s.mayStart = l }

// start returns the space's node, started (its first round run) if it
// was not; asked: for a request (the start limit applies), not a creation.
func (s *Spaces) start(ctx context.Context, sp Space, asked bool) (*Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("keyed sequences: %w", frond.ErrClosed)
	}
	if n, ok := s.nodes.Load(sp.Name); ok {
		return n.(*Node), nil
	}
	if asked && s.mayStart != nil {
		if err := s.mayStart(ctx, sp.Name); err != nil {
			return nil, err
		}
	}
	if err := s.evict(ctx, sp); err != nil {
		return nil, err
	}
	// A new owner for each start (LeaseOwner): a late give-back of an
	// earlier start, stopped idle or to make room, ends nothing of this
	// one's (issue 68, item 2).
	n, err := NewNode(sp, s.store, LeaseOwner(s.me, s.starts.Add(1), s.ttl()), s.o)
	if err != nil {
		return nil, err
	}
	n.used.Store(s.now().UnixNano())
	if err := n.Round(ctx); err != nil {
		// Served once a later round succeeds.
		s.log.Warn("keyed sequence: the first round of leases failed", "space", sp.Name, "err", err)
	}
	n.Run()
	s.nodes.Store(sp.Name, n)
	s.idleOnce.Do(func() { go s.stopIdle() })
	return n, nil
}

// DefaultIdleAfter is how long a space asked nothing on a node keeps
// running there (NodeOptions.IdleAfter).
const DefaultIdleAfter = 10 * time.Minute

func (s *Spaces) idleAfter() time.Duration {
	if s.o.IdleAfter == 0 {
		return DefaultIdleAfter
	}
	return s.o.IdleAfter
}

func (s *Spaces) now() time.Time {
	if s.o.Clock != nil {
		return s.o.Clock()
	}
	return time.Now()
}

func (s *Spaces) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// stopIdle stops, every lease, the spaces idle past idleAfter, until the
// node leaves.
func (s *Spaces) stopIdle() {
	if s.idleAfter() < 0 {
		return
	}
	t := time.NewTicker(s.ttl())
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.StopIdle(context.Background())
		}
	}
}

// StopIdle stops the spaces asked nothing on this node for IdleAfter (their
// sections given back) and reports how many it stopped.
func (s *Spaces) StopIdle(ctx context.Context) int {
	if s.idleAfter() < 0 {
		return 0
	}
	before := s.now().Add(-s.idleAfter()).UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	stopped := 0
	s.nodes.Range(func(k, v any) bool {
		n := v.(*Node)
		if n.used.Load() >= before {
			return true
		}
		s.nodes.CompareAndDelete(k, n)
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.ttl())
		if err := n.Close(c); err != nil {
			s.log.Warn("keyed sequence: an idle space stopped here gave its sections back badly (they run out on their own)", "space", k, "err", err)
		}
		cancel()
		stopped++
		s.log.Info("keyed sequence: a space asked nothing here for a while stopped on this node (started again by the next request)", "space", k, "idle_after", s.idleAfter())
		return true
	})
	return stopped
}

// DefaultMaxSpaces is how many spaces a node serves at once by default.
const DefaultMaxSpaces = 64

// DefaultMinResidency is NodeOptions.MinResidency's default.
const DefaultMinResidency = time.Minute

// ErrSpacesFull is the refusal of a space a node would start past
// NodeOptions.MaxSpaces while every space it serves was asked within
// NodeOptions.MinResidency. It wraps frond.ErrStoreUnavailable (503,
// retryable: another node may serve it, or a space goes idle).
var ErrSpacesFull = fmt.Errorf("%w: this node serves sequences.max_spaces spaces, each in use", frond.ErrStoreUnavailable)

func (s *Spaces) minResidency() time.Duration {
	if s.o.MinResidency == 0 {
		return DefaultMinResidency
	}
	return s.o.MinResidency
}

// DefaultMaxSectionReads is NodeOptions.MaxSectionReads' default: the
// rounds of one space of 16,384 sections under DefaultLeaseTTL. A round a
// second reading 65,536 sections took about a third of a core on SQLite
// on a quiet machine; 60,000 a second on a busy one (the tests of every
// package at once, 2 cores) ran past their deadline, lapsing every lease.
const DefaultMaxSectionReads = 16384.0

// RoundCost is the sections a node's rounds of leases of sp read from the
// store per second under leases of ttl: every round (one every ttl/3)
// reads the whole table, whatever share the node holds.
func RoundCost(sp Space, ttl time.Duration) float64 {
	return float64(sp.Sections) * 3 / ttl.Seconds()
}

func (s *Spaces) maxSectionReads() float64 {
	if s.o.MaxSectionReads == 0 {
		return DefaultMaxSectionReads
	}
	return s.o.MaxSectionReads
}

// evict makes room for sp: it stops the space asked for least recently
// while the node serves MaxSpaces already, or the rounds of the spaces it
// serves and sp's together would read more than MaxSectionReads, unless
// that space was asked within MinResidency (then sp is refused:
// ErrSpacesFull); called with s.mu held.
func (s *Spaces) evict(ctx context.Context, sp Space) error {
	limit := s.o.MaxSpaces
	if limit == 0 {
		limit = DefaultMaxSpaces
	}
	reads := s.maxSectionReads()
	for {
		count, cost := 0, RoundCost(sp, s.ttl())
		var oldest *Node
		var oldestName string
		s.nodes.Range(func(k, v any) bool {
			n := v.(*Node)
			count++
			cost += RoundCost(n.eng.space, s.ttl())
			if oldest == nil || n.used.Load() < oldest.used.Load() {
				oldest, oldestName = n, k.(string)
			}
			return true
		})
		full := limit >= 0 && count >= limit
		dear := reads >= 0 && cost > reads
		if !full && !dear || oldest == nil {
			return nil
		}
		if r := s.minResidency(); r > 0 && s.now().UnixNano()-oldest.used.Load() < int64(r) {
			if full {
				return fmt.Errorf("%w: space %q is not started here now (sequences.max_spaces %d, every one asked within the last %v): another node may serve it; raise sequences.max_spaces", ErrSpacesFull, sp.Name, limit, r)
			}
			return fmt.Errorf("%w: space %q is not started here now: its rounds of leases and those of the spaces running here would read %.0f sections a second from the store, past sequences.max_section_reads %.0f, and every one was asked within the last %v: another node may serve it", ErrSpacesFull, sp.Name, cost, reads, r)
		}
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.ttl())
		s.nodes.Delete(oldestName)
		if err := oldest.Close(c); err != nil {
			s.log.Warn("keyed sequence: a space stopped to make room gave its sections back badly (they run out on their own)", "space", oldestName, "err", err)
		}
		cancel()
		s.log.Info("keyed sequence: the space asked for least recently stopped here, to serve another within sequences.max_spaces and sequences.max_section_reads", "space", oldestName, "max_spaces", limit, "max_section_reads", reads)
	}
}

// missTTL is how long a node remembers that a space does not exist: a
// request naming no space costs a store read once in that time, not each.
const missTTL = time.Second

// node returns the node of the space named, reading the space from the
// store the first time.
func (s *Spaces) node(ctx context.Context, name string) (*Node, error) {
	if n, ok := s.nodes.Load(name); ok {
		n := n.(*Node)
		if !n.left.Load() || s.isClosed() {
			n.used.Store(s.now().UnixNano())
			return n, nil
		}
		// Stopped here since it was loaded (idle, or to make room): started
		// again below.
		s.nodes.CompareAndDelete(name, n)
	}
	if at, ok := s.misses.Load(name); ok && time.Since(at.(time.Time)) < missTTL {
		return nil, SpaceNotFound(name)
	}
	ctx, cancel := context.WithTimeout(ctx, s.ttl())
	defer cancel()
	sp, err := s.store.LookupSpace(ctx, name)
	if errors.Is(err, ErrSpaceNotFound) {
		if s.missCount.Add(1) > 10_000 { // names made up by the thousand: forget them all
			s.misses.Clear()
			s.missCount.Store(0)
		}
		s.misses.Store(name, time.Now())
	}
	if err != nil {
		return nil, err
	}
	if err := s.fits(sp, ErrMemoryBudget); err != nil {
		return nil, fmt.Errorf("%w; it is not started here", err)
	}
	return s.start(ctx, sp, true)
}

// maxSpace is the largest table a space may have on this node.
func (s *Spaces) maxSpace() int64 {
	if s.o.MaxSpace == 0 {
		return DefaultMaxSpaceMemory
	}
	return s.o.MaxSpace
}

// fits says why sp's table is too large for this node (wrapping why), nil
// when it fits: checked before anything of it is allocated (issue 59).
func (s *Spaces) fits(sp Space, why error) error {
	if limit := s.maxSpace(); limit >= 0 && TableBytes(sp) > limit {
		return fmt.Errorf("%w: keyed sequence space %q: %d sections of %d counters take %d bytes, past this node's limit for one space (sequences.max_space_memory, %d bytes): "+
			"use fewer sections or slots (frond space create --sections --slots)", why, sp.Name, sp.Sections, sp.Slots, TableBytes(sp), limit)
	}
	if reads := s.maxSectionReads(); reads >= 0 && RoundCost(sp, s.ttl()) > reads {
		return fmt.Errorf("%w: keyed sequence space %q: the rounds of leases of %d sections under a lease of %v read %.0f sections a second from the store, past this node's limit (sequences.max_section_reads, %.0f): "+
			"use at most %d sections (frond space create --sections)", why, sp.Name, sp.Sections, s.ttl(), RoundCost(sp, s.ttl()), reads, int(reads*s.ttl().Seconds()/3))
	}
	return nil
}

// Create creates a space and starts serving it.
func (s *Spaces) Create(ctx context.Context, sp Space) (Space, error) {
	sp = sp.WithDefaults()
	if err := sp.Validate(); err != nil {
		return Space{}, err
	}
	if err := s.fits(sp, frond.ErrInvalidArgument); err != nil {
		return Space{}, err // refused before the store records it
	}
	if err := s.store.CreateSpace(ctx, sp); err != nil {
		return Space{}, err
	}
	s.misses.Delete(sp.Name)
	if _, err := s.start(ctx, sp, false); err != nil {
		return Space{}, err
	}
	return sp, nil
}

// Lookup reads a space.
func (s *Spaces) Lookup(ctx context.Context, name string) (Space, error) {
	return s.store.LookupSpace(ctx, name)
}

// SpaceStatus is a space and this node's view of it.
type SpaceStatus struct {
	Space
	// Held is the sections this node serves; Owners the live owners'
	// addresses with how many sections each holds, from the last read of
	// the table; Members how many nodes share the space.
	Held    []int
	Owners  map[string]int
	Members int
	// Floor is the highest maximum this node raised any section of the
	// space to (its data directory keeps it: NodeOptions.Floors); Lost the
	// sections it refuses because the store's maximum went below (the
	// store lost data: re-arm it above the highest Floor of every node).
	Floor int64
	Lost  int
}

// List reads every space with this node's view of each.
func (s *Spaces) List(ctx context.Context) ([]SpaceStatus, error) {
	spaces, err := s.store.ListSpaces(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SpaceStatus, 0, len(spaces))
	for _, sp := range spaces {
		st := SpaceStatus{Space: sp, Owners: map[string]int{}}
		if v, ok := s.nodes.Load(sp.Name); ok {
			n := v.(*Node)
			st.Held = n.Held()
			st.Floor, st.Lost = n.eng.Floor(), n.eng.LostSections()
			if t := n.Table(); t != nil {
				for _, o := range t.Owners {
					if o.Token != "" {
						st.Owners[o.Addr]++
					}
				}
				st.Members = len(t.Members)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// Next answers the next count values of key in the space: from this node
// if it owns the key's section, else from the owner (once: a forwarded
// request is answered or refused where it lands).
//
// What waits on others is bounded by the lease TTL: a raise, a round a
// request runs, the forwarding (Forwarder's timeout); a request that
// cannot be answered within a lease is refused as unavailable rather than
// left waiting. Values from memory wait on nothing.
func (s *Spaces) Next(ctx context.Context, space, key string, count int64, forwarded bool) (first, last int64, err error) {
	if s.stopped.Load() {
		return 0, 0, fmt.Errorf("keyed sequences: %w", frond.ErrClosed)
	}
	n, err := s.node(ctx, space)
	if err != nil {
		return 0, 0, err
	}
	// A section between owners (given back while a node joins, or by a
	// node that stops cleanly; or its owner gone) is waited for, up to a
	// lease, rather than refused at once: this node's rounds, run now and
	// then while it waits, take it or learn who did (issue 58, item 5: a
	// node joining, a clean stop and a rolling restart answered 503 for up
	// to a tenth of a lease before). A hand-over takes about a tenth of a
	// lease (the taker's next round); the rest is for a busy machine.
	window := time.Now().Add(s.ttl())
	deadline := answerBy(ctx, window) // earlier when the caller waits less
	// The whole request within the lease: a forward to an owner that
	// hangs (SIGSTOP) and the round read after it took up to 5.5 s before.
	ctx, cancel := context.WithDeadline(ctx, window)
	defer cancel()
	var gone string      // an owner that did not answer,
	var goneAt time.Time // when (on the node's clock)
	var relayed []string // members asked while this node cannot reach the store
	for {
		if n.left.Load() && !s.isClosed() {
			// Stopped here while this request waited (idle, or to make
			// room): the space's current node here, started again if
			// need be, rather than the stopped one (issue 68, item 4:
			// requests racing an eviction looped on the stopped node for
			// a whole lease, then were refused).
			if m, err := s.node(ctx, space); err == nil {
				n = m
			}
		}
		first, last, err = n.Next(ctx, key, count)
		var no *NotOwnerError
		if err == nil || !errors.As(err, &no) {
			return first, last, err
		}
		if no.Addr != "" && no.Addr == gone {
			if n.readSince(goneAt) {
				// Read again since, and still its: its lease runs on (a
				// kill -9, a pause, or no node at all): refused now, not
				// waited for.
				return first, last, err
			}
			no.Addr = "" // not asked again before the table is read
		}
		if no.Addr != "" && no.Addr != s.me.Addr {
			if forwarded || s.forward == nil {
				return first, last, err // forwarded once at most
			}
			peer, perr := s.Peer(ctx)
			if perr != nil {
				return 0, 0, perr
			}
			n.forwarded.Add(1)
			if n.isMember(no.Addr) {
				// Half the request's window at most: an owner that hangs
				// (SIGSTOP: the connection accepted, no answer) took the
				// whole window before, and the request after it too,
				// while the section was taken by another node; the
				// chaos test's sections went unanswered for 6.1 s through
				// a 6 s SIGSTOP (bound: a lease + 2 s). Now the table is
				// read again meanwhile, and the new owner asked.
				half := time.Now().Add(s.ttl() / 2)
				fctx, cancel := context.WithDeadline(ctx, earliest(half, deadline))
				first, last, err = s.forward(fctx, no.Addr, space, key, count, peer)
				cancel()
				if errors.Is(err, ErrOwnerUnreachable) && deadline.Before(half) && !time.Now().Before(deadline) {
					// The caller's time ran out (a short Frond-Timeout),
					// not the owner's: nothing was learnt of the owner,
					// so nothing is logged or read again (a caller
					// sending 1 ms made a warning a request), and the
					// refusal names no address.
					return 0, 0, no
				}
			} else {
				// An owner's address that is no live member's (a row
				// written by hand, a wrong advertise): nothing is sent
				// there (issue 69); read the table again, as for an owner
				// that did not answer.
				err = fmt.Errorf("%w: %w: the owner's address is no live member's", frond.ErrStoreUnavailable, ErrOwnerUnreachable)
			}
			if errors.Is(err, ErrOwnerMoved) {
				if time.Now().After(deadline) {
					return first, last, err
				}
				n.kick(ctx) // who holds it now: read the table, and forward there
				continue
			}
			if !errors.Is(err, ErrOwnerUnreachable) {
				return first, last, err
			}
			// Said to the admin and the log, not to the caller: the
			// address is internal (issue 59). Perhaps gone (kill -9, a
			// clean stop): read the table now (at most a round every
			// TTL/10), and answer from here if the section is ours by
			// then, or from whoever took it.
			s.log.Warn("keyed sequence: the owner of a section could not be asked", "space", space, "section", no.Section, "owner", no.Addr, "err", err)
			s.RefreshPeer(ctx) // perhaps the nodes' keys differ (a store that lost its data made a new one)
			gone, goneAt = no.Addr, n.o.Clock()
			n.kick(ctx)
			continue
		}
		if no.Addr == "" && !forwarded && s.forward != nil {
			if to := n.relayTo(relayed); to != "" {
				// This node cannot reach the store (its rounds fail): it
				// cannot learn who took the section, nor take it, so it
				// asks the members it last saw, one at a time; the owner
				// answers, any other refuses (a forwarded request goes no
				// further). Without it, a node cut from its store refused
				// its former sections for the whole cut, after a lease's
				// wait each, while others served them.
				relayed = append(relayed, to)
				peer, perr := s.Peer(ctx)
				if perr != nil {
					return 0, 0, perr
				}
				n.forwarded.Add(1)
				rctx, cancel := context.WithDeadline(ctx, earliest(time.Now().Add(s.ttl()/3), deadline)) // a member that hangs leaves time for the next
				first, last, err = s.forward(rctx, to, space, key, count, peer)
				cancel()
				if err == nil ||
					!errors.Is(err, ErrOwnerMoved) && !errors.Is(err, ErrOwnerUnreachable) {
					return first, last, err
				}
				continue
			}
		}
		if forwarded || time.Now().After(deadline) || no.Addr == "" && !n.mayTake() {
			// Forwarded: the node that forwarded waits (a wait here too
			// would spend its window).

			return first, last, err
		}
		pause := min(s.ttl()/30, time.Until(deadline))
		if pause <= 0 {
			return first, last, err
		}
		select {
		case <-ctx.Done():
			return first, last, err
		case <-time.After(pause):
		}
		n.kick(ctx)
	}
}

// answerBy is when a request that waits (a section between owners, an
// owner that does not answer) is answered "try again" at the latest: at
// the end of its lease-long window, or earlier when its caller waits less
// (its context's deadline: gRPC's, or HTTP's Frond-Timeout header), a
// fifth of the caller's time before it (at most 500 ms), so that the
// caller reads the refusal and its Retry-After instead of timing out: a
// client rests a server that answered for the Retry-After, and one that
// timed out for longer (the clients' seq wait, issue 72).
func answerBy(ctx context.Context, window time.Time) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return window
	}
	margin := min(time.Until(d)/5, 500*time.Millisecond)
	return earliest(window, d.Add(-margin))
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// FloorsAsker asks the node at addr for the floors it keeps of space
// (Spaces.Floors), as the node peer: what a re-arm gathers from every
// member of the space (Spaces.Rearm).
type FloorsAsker func(ctx context.Context, addr, space string, peer Peer) ([]int64, error)

// SetFloorsAsker sets how Rearm asks the other nodes for their floors;
// without one it asks none (and says so).
func (s *Spaces) SetFloorsAsker(ask FloorsAsker) { s.askFloors = ask }

// Floors is, by section, the floors this node keeps of space (the highest
// maximum it raised each section to or read: Floors), from its data
// directory; nil when it keeps none.
func (s *Spaces) Floors(ctx context.Context, space string) ([]int64, error) {
	if v, ok := s.nodes.Load(space); ok {
		if f := v.(*Node).eng.Floors(); f != nil {
			return f, nil
		}
	}
	if s.o.Floors == nil {
		return nil, nil
	}
	sp, err := s.store.LookupSpace(ctx, space)
	if err != nil {
		return nil, err
	}
	sp = sp.WithDefaults()
	return s.o.Floors.Load(sp.Name, sp.Sections)
}

// Rearmed is what a re-arm of a space did (Spaces.Rearm).
type Rearmed struct {
	Space string
	// Above is what every section's maximum was raised to at least: the
	// value given, or the highest floor gathered when that is higher.
	Above int64
	// Asked are the nodes whose floors were gathered (their addresses;
	// this node's own first, as "self" when it keeps floors); Unasked the
	// members of the space that could not be asked, with why: a value
	// one of them answered may be above Above (give --above at least
	// its FLOOR, from frond space list on it).
	Asked   []string
	Unasked map[string]string
	// Fence is the store's lost-data finding before the re-arm ("" none);
	// Lifted whether the re-arm took it off (a finding of this space);
	// Kept why not (a finding of a segment tag or another space: re-arm
	// that too).
	Fence  string
	Lifted bool
	Kept   string
}

// Rearm re-arms a space after its store lost data (admin, frond space
// rearm): it gathers the floors of every node it can ask (this node's,
// and every live member's through the FloorsAsker), raises every section
// of the space in the store to at least the highest of them and above,
// takes the store's lost-data fence off if it is this space's finding
// (frond.Place.Lost: a finding of a segment tag or another space is left
// for their re-arm), and has this node take again the sections it refused
// for lost data. Other nodes take theirs again once they read the fence
// off, each raise checked against their floors.
func (s *Spaces) Rearm(ctx context.Context, space string, above int64) (Rearmed, error) {
	out := Rearmed{Space: space, Unasked: map[string]string{}}
	sp, err := s.store.LookupSpace(ctx, space)
	if err != nil {
		return out, err
	}
	sp = sp.WithDefaults()
	if above < 0 {
		return out, fmt.Errorf("%w: re-arm above %d: at least 0 (0: the floors gathered alone)", frond.ErrInvalidArgument, above)
	}
	out.Above = above
	s.RefreshPeer(ctx) // the key the other nodes read from the store now
	if own, err := s.Floors(ctx, space); err != nil {
		return out, fmt.Errorf("read this node's floors of space %q: %w", space, err)
	} else if own != nil {
		out.Asked = append(out.Asked, "self")
		out.Above = max(out.Above, slices.Max(append(own, 0)))
	}
	t, err := s.store.Read(ctx, sp.Name, sp.Sections)
	if err != nil {
		return out, err
	}
	peer, perr := s.Peer(ctx)
	asked := map[string]bool{s.me.Addr: true}
	for _, m := range t.Members {
		if asked[m.Addr] || strings.HasPrefix(m.Token, s.me.Token+".") {
			continue
		}
		asked[m.Addr] = true
		switch {
		case s.askFloors == nil:
			out.Unasked[m.Addr] = "this node asks no other node"
			continue
		case perr != nil:
			out.Unasked[m.Addr] = perr.Error()
			continue
		}
		f, err := s.askFloors(ctx, m.Addr, space, peer)
		if err != nil {
			out.Unasked[m.Addr] = err.Error()
			continue
		}
		out.Asked = append(out.Asked, m.Addr)
		out.Above = max(out.Above, slices.Max(append(f, 0)))
	}
	if out.Above < 1 {
		return out, fmt.Errorf("%w: re-arm space %q: no node's floors were gathered and --above is not given: give --above N, above every value any node answered", frond.ErrInvalidArgument, space)
	}
	if err := s.store.Rearm(ctx, sp, out.Above); err != nil {
		return out, err
	}
	if pk, ok := s.store.(frond.PlaceKeeper); ok {
		p, err := pk.Place(ctx)
		if err != nil {
			return out, fmt.Errorf("raised; read the store's place: %w (run the re-arm again)", err)
		}
		out.Fence = p.Lost
		switch {
		case !p.Fenced():
		case !frond.FindingOfSpace(p.Lost, space):
			out.Kept = "the store is fenced for another finding (" + p.Lost + "): re-arm what it names (frond space rearm, or frond stores rearm for a segment tag)"
		default:
			if out.Lifted, err = frond.LiftLost(ctx, pk, p.Lost); err != nil {
				return out, fmt.Errorf("raised; take the fence off: %w (run the re-arm again)", err)
			}
		}
	}
	s.log.Warn("keyed sequence space re-armed: every section's maximum raised to at least the highest floor gathered and the value given",
		"space", space, "above", out.Above, "asked", out.Asked, "unasked", out.Unasked, "fence", out.Fence, "lifted", out.Lifted)
	if v, ok := s.nodes.Load(space); ok {
		n := v.(*Node)
		if out.Lifted || !strings.Contains(t.Fence, "|lost:") {
			n.eng.SetFence(nil)
			n.eng.ClearLost()
		}
		n.kick(ctx)
	}
	return out, nil
}

// Peer is this node's credential among the nodes of its cluster: its
// owner token and the peer key read from the store (once).
func (s *Spaces) Peer(ctx context.Context) (Peer, error) {
	if k := s.key.Load(); k != nil {
		return Peer{Token: s.me.Token, Key: *k}, nil
	}
	k, err := s.store.PeerKey(ctx)
	if err != nil {
		return Peer{}, err
	}
	s.key.Store(&k)
	return Peer{Token: s.me.Token, Key: k}, nil
}

// Replays are the numbers of the other nodes' signed requests this node
// answered within PeerSkew: each is answered once (Peer.Verify).
func (s *Spaces) Replays() *Replays { return &s.replays }

// RefreshPeer reads the cluster's peer key from the store again, at most
// once a second, and reports whether it changed: a node whose peer's
// signature or proof does not check calls it. A store that lost its data
// loses the key with it, and the next node to read it makes a new one:
// nodes started before keep the old one until they read it again, and
// without this could not forward to, nor be asked by, nodes started after.
func (s *Spaces) RefreshPeer(ctx context.Context) (Peer, bool) {
	now := time.Now().UnixNano()
	last := s.keyRead.Load()
	if now-last < int64(time.Second) || !s.keyRead.CompareAndSwap(last, now) {
		p, _ := s.Peer(ctx)
		return p, false
	}
	k, err := s.store.PeerKey(ctx)
	if err != nil {
		p, _ := s.Peer(ctx)
		return p, false
	}
	old := s.key.Swap(&k)
	changed := old == nil || !bytes.Equal(*old, k)
	if changed && old != nil {
		s.log.Warn("keyed sequence: the cluster's peer key in the store changed (the store lost its data?): this node signs and checks with the new one", "err", nil)
	}
	return Peer{Token: s.me.Token, Key: k}, changed
}

// Close stops every node (each gives its sections back), then closes the
// store if it has a Close.
func (s *Spaces) Close(ctx context.Context) error {
	s.stopped.Store(true)
	errs := []error{s.Leave(ctx)}
	if c, ok := s.store.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := s.o.Floors.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Leave stops every space on this node and gives its sections back (Close
// does it too, then closes the store): called first on a clean stop, while
// the node still answers, so that a node that forwards here is refused as
// unavailable, reads the table and finds the section free at once, rather
// than finding this node gone while the store still names it as owner.
func (s *Spaces) Leave(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		close(s.quit)
	}
	s.closed = true // no start after this: every node is in s.nodes
	var nodes []*Node
	s.nodes.Range(func(_, n any) bool {
		nodes = append(nodes, n.(*Node))
		return true
	})
	s.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.Close(ctx))
	}
	return errors.Join(errs...)
}

// SortSpaces orders spaces by name.
func SortSpaces(sp []Space) {
	slices.SortFunc(sp, func(a, b Space) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}
