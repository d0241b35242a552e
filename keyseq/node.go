package keyseq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// DefaultLeaseTTL is a section lease's length: a node killed without a
// clean stop has its sections served again by others within about
// DefaultLeaseTTL plus a round (DefaultLeaseTTL/3).
const DefaultLeaseTTL = 3 * time.Second

// NodeOptions configures a Node.
type NodeOptions struct {
	// TTL is the length of the node's leases; zero: DefaultLeaseTTL. The
	// node renews them every TTL/3.
	TTL time.Duration
	// Clock is the node's monotonic clock; nil: time.Now. The store's clock
	// decides when a lease runs out; this one only when the node stops
	// counting on it.
	Clock func() time.Time
	// Logger; nil: slog.Default.
	Logger *slog.Logger
	// Budget is the node's memory for keyed sequences, shared by its
	// spaces: a section's counters are reserved from it before they are
	// allocated, and a node takes no more sections than it can hold. Nil:
	// no bound.
	Budget *Budget
	// MaxSpace is the largest table a space may have on this node
	// (TableBytes); a larger space is refused at creation and not started
	// (ErrMemoryBudget). 0: DefaultMaxSpaceMemory; negative: no bound.
	MaxSpace int64
	// MaxSectionReads bounds the sections the rounds of leases of every
	// space this node runs read from the store per second, each space
	// costing RoundCost (its sections × 3 / TTL): a space past it alone is
	// refused at creation and not started; past it with the others, the
	// one asked for least recently is stopped first, as past MaxSpaces
	// (issue 69: a space of 65,536 sections under a 1 s lease read 196,608
	// a second on SQLite, its rounds ran past their deadline, every lease
	// lapsed and every key answered 503; 20,000 sections under 1 s did the
	// same on a busy machine). 0: DefaultMaxSectionReads;
	// negative: no bound.
	MaxSectionReads float64
	// MaxSpaces bounds the spaces a node serves at once (Spaces): past it,
	// the one asked for least recently is stopped (its sections given
	// back) before another starts, so that requests naming every space
	// cannot make a node run every space's rounds (issue 59). 0:
	// DefaultMaxSpaces; negative: no bound.
	MaxSpaces int
	// MinResidency: a space asked within that long is not stopped to make
	// room for another; a space to start past MaxSpaces when every one was
	// asked within it is refused instead (ErrSpacesFull), so that a client
	// cycling more spaces than MaxSpaces cannot stop the spaces in use
	// (issue 69: 2,937 evictions in 20 s, a victim asked once a second
	// restarted on 17 of 18 requests). 0: DefaultMinResidency; negative:
	// none (the one asked least recently always goes).
	MinResidency time.Duration
	// IdleAfter: a space asked nothing on this node for that long (no
	// request, none forwarded here) is stopped here, its sections given
	// back, so that lease rounds cost only for the spaces in use, not for
	// every space ever asked for (issue 59, item 3); the next request
	// starts it again. 0: DefaultIdleAfter; negative: never.
	IdleAfter time.Duration
	// Rand picks where a node starts looking for free sections; nil: a
	// random source (a model test passes a seeded one to be deterministic).
	Rand *rand.Rand
	// Floors keeps the highest maximum this node raised each section to
	// where it survives a restart (the data directory: FileFloors); a take
	// or a raise below it is refused (LostDataError). Nil: none kept, and a
	// store that lost data is noticed only while a section stays loaded.
	Floors Floors
}

// Node is one node's part of a space shared by several: it serves the
// sections it holds under leases in the LeaseStore, and takes, renews and
// gives back sections so that every live node holds about its share.
//
// # The fence
//
// A section is answered by one node at a time:
//
//  1. A node answers for a section only while it counts its lease as live
//     (the gate, checked before every answer): until sent + TTL - TTL/10
//     on its own monotonic clock, sent being when it sent the last renewal
//     (or take) the store confirmed. The store ran that renewal after it
//     was sent and counts TTL from then on its own clock, so the node stops
//     before the store can see the lease run out (with TTL/10 to spare for
//     the two clocks' rates).
//  2. Another node takes the section only once the store's clock says the
//     lease ran out (LeaseStore.Take), and the take raises the section's
//     maximum in the same atomic step: its first values are above every
//     value the old owner answered (each was below the maximum, and the
//     old owner answers nothing after its lease).
//  3. A clean stop, or a section given back, stops answering before the
//     store is told, so another may take it at once.
//
// A node paused past its lease (a GC pause, SIGSTOP) wakes with its gate
// shut: it answers nothing until a renewal succeeds, and a renewal keeps
// only the leases the store still has for it.
type Node struct {
	eng    *Engine
	store  LeaseStore
	me     Owner
	o      NodeOptions
	log    *slog.Logger
	table  atomic.Pointer[Table]
	readAt atomic.Int64 // when the table was last read (n.o.Clock, Unix ns)

	round   sync.Mutex // one round at a time
	stop    chan struct{}
	done    chan struct{}
	running atomic.Bool
	kicked  atomic.Pointer[time.Time] // the last round a request ran
	short   atomic.Bool               // the last round left the node short of its share

	// seen is, by section, the lease end (Table.Untils) this node last read
	// and when it first read it (its own clock), under round: a lease that
	// ran out by the store's clock is taken only once it has not changed
	// for a lease here (the store's clock may have stepped).
	seen      map[int]seenUntil
	ignoreAge bool // the broken take the model must find (export_test.go)
	ownTTL    bool // the same: waits out its own lease only (before issue 68)
	lossLocal bool // the same: floors of its own raises only, no fence (before issue 68)

	used atomic.Int64 // when Spaces last asked it for values (unix ns)
	// cut: the last round could not renew or read (the store is out of
	// this node's reach): a request for a section the node knows no owner
	// of is sent to the other members instead (Spaces.Next), as the node
	// cannot learn who took it.
	cut atomic.Bool
	// fencedAt is when this node wrote a lost-data fence into the store
	// (its clock, unix ns): a read begun before then does not lift it here.
	fencedAt atomic.Int64

	raises, takes, releases, lapses, failures atomic.Uint64 // NodeStats
	forwarded                                 atomic.Uint64 // requests Spaces forwarded to an owner
	closed                                    bool          // under round
	// left: the node stopped cleanly and gave its sections back (Close):
	// it answers nothing, but a request that reaches it still is sent on
	// to the section's owner, read from the store, until the process stops
	// listening (issue 58, item 5: a clean stop answers no 503).
	left     atomic.Bool
	leaving  atomic.Bool   // Close began
	gone     chan struct{} // closed when Close has given the sections back (or failed to)
	goneOnce sync.Once
	once     sync.Once
	rnd      *rand.Rand // under round
}

// NewNode returns the node me of space on store; Run (or Round) makes it
// take sections.
func NewNode(space Space, store LeaseStore, me Owner, o NodeOptions) (*Node, error) {
	if me.Token == "" {
		return nil, fmt.Errorf("keyed sequence node: an owner token is needed")
	}
	if o.TTL == 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.TTL < 10*time.Millisecond {
		return nil, fmt.Errorf("keyed sequence node: lease TTL %v: at least 10ms", o.TTL)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	n := &Node{store: store, me: me, o: o, log: o.Logger,
		stop: make(chan struct{}), done: make(chan struct{}), gone: make(chan struct{}), rnd: o.Rand}
	if n.rnd == nil {
		n.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	eng, err := New(space, ownedRaise{store: store, me: me, ttl: o.TTL, raises: &n.raises})
	if err != nil {
		return nil, err
	}
	eng.gate = &gate{now: o.Clock}
	eng.budget = o.Budget
	if o.Floors != nil {
		if err := eng.KeepFloors(o.Floors); err != nil {
			return nil, err
		}
	}
	eng.onLost = n.lostFound
	n.eng = eng
	return n, nil
}

// lostFound fences the store for every node once a raise was refused below
// a floor of this node's (issue 68, item 1): the loss is written into the
// store's place (frond.FenceLost, as a segment tag's is), where every
// node's takes and raises are refused and every node's round reads it.
// Called with a section's lock held: the write is bounded by a lease.
func (n *Node) lostFound(l *LostDataError) {
	pk, ok := n.store.(frond.PlaceKeeper)
	if !ok || n.eng.Fence() != nil || n.lossLocal {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.o.TTL)
	defer cancel()
	finding := frond.LostFinding(time.Now().Unix(), frond.LostSpace(n.eng.space.Name))
	if err := frond.FenceLost(ctx, pk, finding); err != nil {
		n.log.Error("keyed sequence store lost data, and the finding could not be written into the store: this node refuses the sections below its floors, other nodes only theirs",
			"space", n.eng.space.Name, "section", l.Section, "store", l.Store, "floor", l.Floor, "err", err)
		return
	}
	p, err := pk.Place(ctx)
	if err != nil || !p.Fenced() {
		p = frond.Place{Lost: finding}
	}
	n.eng.SetFence(&FencedError{Space: n.eng.space.Name, Fence: p})
	n.fencedAt.Store(n.o.Clock().UnixNano())
	n.log.Error("KEYED SEQUENCE STORE LOST DATA: fenced for every node until re-armed (frond space rearm)",
		"space", n.eng.space.Name, "section", l.Section, "store", l.Store, "floor", l.Floor, "fence", p.Lost)
}

// wentBack is the first section whose maximum read is below its floor
// before the read (a store only raises maxima: it lost data), nil if none.
func wentBack(space string, maxima, floors []int64) *LostDataError {
	for i, m := range maxima {
		if i < len(floors) && m < floors[i] {
			return &LostDataError{Space: space, Section: i, Store: m, Floor: floors[i]}
		}
	}
	return nil
}

// fenceRead takes the store's place as read with the table: a lost-data
// fence refuses every section here; a fence lifted (re-armed) lets the
// sections refused for lost data be taken again, each raise checked
// against the floors as any (not by a read begun before this node wrote
// the fence). It reports whether the store is fenced.
func (n *Node) fenceRead(t Table, readAt time.Time) bool {
	err := Fenced(n.eng.space.Name, t.Fence)
	var f *FencedError
	if errors.As(err, &f) {
		if n.eng.Fence() == nil {
			n.log.Error("keyed sequence store fenced for lost data: every section refused until re-armed (frond space rearm)", "space", n.eng.space.Name, "fence", f.Fence.Lost)
		}
		n.eng.SetFence(f)
		return true
	}
	if n.eng.Fence() != nil && n.fencedAt.Load() < readAt.UnixNano() {
		n.eng.SetFence(nil)
		n.eng.ClearLost()
		n.log.Warn("keyed sequence store's lost-data fence is off (re-armed): sections taken again, each raise checked against this node's floors", "space", n.eng.space.Name)
	}
	return false
}

// NodeStats is what a node did and sees of its space.
type NodeStats struct {
	Sections int // the space's
	Held     int // served by this node now
	Unowned  int // with no live owner at the last read of the table
	Members  int // nodes sharing the space at the last read
	// Refused is how many sections this node refuses for lost data: every
	// one while the store is fenced for it, else those it found below its
	// floors (Engine.LostSections).
	Refused int
	// LeaseLeft is how long this node may still count on its leases (0:
	// its gate is shut).
	LeaseLeft time.Duration
	// Counters since the node started; Forwarded counts the requests for
	// the space this node forwarded to an owner; LostData the raises
	// refused because the store's maximum went below one this node raised
	// a section to (the store lost data: ErrStoreLostData).
	Served, Raises, Takes, Releases, Lapses, RoundFailures, Forwarded, LostData uint64
}

// Stats reports the node's state and counters.
func (n *Node) Stats() NodeStats {
	st := NodeStats{Sections: n.eng.space.Sections, Held: len(n.Held()), Served: n.eng.Served(),
		Raises: n.raises.Load(), Takes: n.takes.Load(), Releases: n.releases.Load(), Lapses: n.lapses.Load(), RoundFailures: n.failures.Load(), Forwarded: n.forwarded.Load(), LostData: n.eng.LostData(), Refused: n.eng.LostSections()}
	if t := n.table.Load(); t != nil {
		st.Members = len(t.Members)
		for _, o := range t.Owners {
			if o.Token == "" {
				st.Unowned++
			}
		}
	} else {
		st.Unowned = st.Sections
	}
	if v := n.eng.gate.valid.Load(); v != nil {
		st.LeaseLeft = max(v.Sub(n.o.Clock()), 0)
	}
	return st
}

// Space is the node's space, its defaults filled.
func (n *Node) Space() Space { return n.eng.space }

// Me is the node's owner name.
func (n *Node) Me() Owner { return n.me }

// Next is Engine.Next for the sections this node holds; for another's it
// answers a *NotOwnerError naming the owner, from the last read of the
// table.
func (n *Node) Next(ctx context.Context, key string, count int64) (first, last int64, err error) {
	first, last, err = n.eng.Next(ctx, key, count)
	if err == nil {
		return first, last, nil
	}
	var no *NotOwnerError
	if n.leaving.Load() && errors.Is(err, frond.ErrClosed) && CheckKey(key) == nil {
		// Stopping cleanly: once the sections are given back, who owns
		// the key's section now (gone from the space, not from the
		// network).
		select {
		case <-n.gone:
		case <-ctx.Done():
			return 0, 0, err
		}
		if n.left.Load() {
			no = &NotOwnerError{Space: n.eng.space.Name, Section: SectionOf(key, n.eng.space.Sections)}
			n.owner(no)
			return 0, 0, no
		}
		return 0, 0, err
	}
	if !errors.As(err, &no) || no.Addr != "" {
		return first, last, err
	}
	if n.owner(no) {
		return first, last, err
	}
	if fe := n.eng.floorFail.Load(); fe != nil {
		// Taken, perhaps, but not served: this node cannot keep its floors
		// (a full disk): said as such, not as a section between owners.
		return 0, 0, fmt.Errorf("keyed sequence space %q section %d: this node cannot keep its floors, so it serves none of the sections it takes: %w", n.eng.space.Name, no.Section, *fe)
	}
	// No live owner known (the section was given back, or its owner's lease
	// ran out), or the table names this node (a round took the section
	// while this call looked): a round now, unless one ran within TTL/10,
	// takes it if this node is short of its share or reads who took it,
	// rather than leaving it to the next timed round; then once more.
	n.kick(ctx)
	if first, last, err = n.eng.Next(ctx, key, count); err != nil && errors.As(err, &no) {
		n.owner(no)
	}
	return first, last, err
}

// isMember reports whether addr is a live member's at the last read of the
// table: the only addresses a request is forwarded to.
func (n *Node) isMember(addr string) bool {
	t := n.table.Load()
	if t == nil {
		return false
	}
	for _, m := range t.Members {
		if m.Addr == addr {
			return true
		}
	}
	return false
}

// readSince reports whether a round read the table at or after t (on the
// node's clock).
func (n *Node) readSince(t time.Time) bool { return n.readAt.Load() >= t.UnixNano() }

// mayTake reports whether a round of this node could take one more
// section: its memory budget holds one. A request for a section no node
// owns waits for a round only then (a node whose budget is spent leaves
// the section to another node).
func (n *Node) mayTake() bool {
	b := n.o.Budget
	return b == nil || b.Left()/SectionBytes(n.eng.space) > int64(n.eng.unallocated())
}

// owner fills no's address from the last read of the table, and reports
// whether it found one.
func (n *Node) owner(no *NotOwnerError) bool {
	if t := n.table.Load(); t != nil && no.Section < len(t.Owners) && t.Owners[no.Section].Token != n.me.Token {
		no.Addr = t.Owners[no.Section].Addr
	}
	return no.Addr != ""
}

// relayTo is the next member of the last read of the table, not this
// node and not in tried, to send a request to while this node cannot read
// who owns a section (cut); "" if none is left.
func (n *Node) relayTo(tried []string) string {
	if !n.cut.Load() {
		return ""
	}
	t := n.table.Load()
	if t == nil {
		return ""
	}
	for _, m := range t.Members {
		if m.Token != n.me.Token && m.Addr != "" && m.Addr != n.me.Addr && !slices.Contains(tried, m.Addr) {
			return m.Addr
		}
	}
	return ""
}

// kick runs a round now (after the one running, if any) unless one was
// kicked within TTL/10.
func (n *Node) kick(ctx context.Context) {
	now := n.o.Clock()
	if last := n.kicked.Load(); last != nil && now.Sub(*last) < n.o.TTL/10 {
		return
	}
	n.kicked.Store(&now)
	ctx, cancel := context.WithTimeout(ctx, n.o.TTL/3)
	defer cancel()
	n.Round(ctx)
}

// Table is the last read of the space's owners (nil before the first
// round).
func (n *Node) Table() *Table { return n.table.Load() }

// Held is the sections the node serves now: none while its gate is shut.
func (n *Node) Held() []int {
	if !n.eng.gate.open() {
		return nil
	}
	var out []int
	for i := range n.eng.sections {
		if n.eng.granted(i) {
			out = append(out, i)
		}
	}
	return out
}

// Run runs rounds every TTL/3 in the background until Close, the first
// one TTL/3 from now (Round runs one at once).
func (n *Node) Run() {
	if !n.running.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer close(n.done)
		every := n.o.TTL / 3
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			if err := n.Round(ctx); err != nil {
				n.log.Warn("keyed sequence: a round of leases failed", "space", n.eng.space.Name, "err", err)
			}
			cancel()
			if n.short.Load() {
				t.Reset(n.o.TTL / 10) // free sections to take: soon again
			} else {
				t.Reset(every)
			}
		}
	}()
}

// Round renews the node's leases, reads the table, and takes or gives
// back sections towards its share (the sections over the live members).
func (n *Node) Round(ctx context.Context) error {
	n.round.Lock()
	defer n.round.Unlock()
	sp := n.eng.space
	if n.closed {
		if !n.left.Load() {
			return fmt.Errorf("keyed sequence space %q: %w", sp.Name, frond.ErrClosed)
		}
		// Left: only who owns what, for the requests it sends on.
		t, err := n.store.Read(ctx, sp.Name, sp.Sections)
		if err != nil {
			return err
		}
		n.table.Store(&t)
		n.readAt.Store(n.o.Clock().UnixNano())
		return nil
	}
	sent := n.o.Clock()
	held, err := n.store.Renew(ctx, sp.Name, n.me, n.o.TTL)
	if err != nil {
		n.failures.Add(1)
		n.cut.Store(true)
		return err // the gate shuts on its own when the last lease runs out
	}
	// Sections served but no longer the store's for this node (a pause past
	// the lease): stop before the gate is opened again.
	// Marked once: a search of held for each section cost sections × held
	// a round (4 × 10^9 steps with 65,536 sections).
	renewed := make([]bool, len(n.eng.sections))
	for _, i := range held {
		if i >= 0 && i < len(renewed) {
			renewed[i] = true
		}
	}
	var lapsed []int
	for i := range n.eng.sections {
		if !renewed[i] && n.eng.granted(i) {
			n.eng.revoke(i)
			n.lapses.Add(1)
			lapsed = append(lapsed, i)
		}
	}
	lost := len(lapsed) > 0
	if lost {
		// One line a round, however many (65,536 lines a round before).
		n.log.Warn("keyed sequence: sections' leases ran out before their renewal", "space", sp.Name, "sections", SectionsText(lapsed), "count", len(lapsed))
	}
	n.open(sent)
	readAt := n.o.Clock()
	before := n.eng.Floors() // the floors before the read: the store's maxima are at least these unless it lost data
	t, err := n.store.Read(ctx, sp.Name, sp.Sections)
	if err != nil {
		n.failures.Add(1)
		n.cut.Store(true)
		return err
	}
	n.table.Store(&t)
	n.readAt.Store(n.o.Clock().UnixNano())
	n.cut.Store(false)
	n.see(t)
	if n.lossLocal {
		t.Maxima = nil
	}
	if l := wentBack(sp.Name, t.Maxima, before); l != nil && t.Fence == "" {
		// Any section, served here or not: a node finds a loss at its
		// next round, not only when it takes or raises a section.
		n.eng.lost.Add(1)
		n.lostFound(l)
	}
	if err := n.eng.Observe(t.Maxima); err != nil {
		n.log.Warn("keyed sequence: the floors read from the store could not be kept in the data directory (kept in memory)", "space", sp.Name, "err", err)
	}
	if n.fenceRead(t, readAt) {
		n.short.Store(false)
		return nil // the store refuses every take: nothing to do but wait for the re-arm
	}
	// Steady: this node kept its own leases and the store answered within
	// a tenth of a lease. Only a steady node takes a lapsed section beyond
	// its share (below): on a machine or store too slow for the lease,
	// every node's leases lapse now and then, and nodes taking each
	// other's would churn the sections instead of serving them.
	steady := !lost && n.o.Clock().Sub(sent) < n.o.TTL/10
	members := max(len(t.Members), 1)
	share := (sp.Sections + members - 1) / members
	n.short.Store(false)
	if excess := len(held) - share; excess > 0 {
		// Give back the last ones this node serves: stop serving first,
		// then tell the store with each section's maximum (the lease the
		// give-back ends: one that arrives late, after this node took the
		// section again, ends nothing), and forget them as ours (a request
		// for one then reads the table again rather than wait for this
		// node). A section held but not served (a take whose answer was
		// lost) has no maximum known here: it is taken again below first.
		var give []Given
		for k := len(held) - 1; k >= 0 && len(give) < excess; k-- {
			if ceil, ok := n.eng.revoke(held[k]); ok {
				give = append(give, Given{Section: held[k], Max: ceil})
			}
		}
		if len(give) > 0 {
			n.releases.Add(uint64(len(give)))
			n.log.Info("keyed sequence: sections given back", "space", sp.Name, "sections", SectionsText(GivenSections(give)), "count", len(give), "share", share, "members", len(t.Members))
			err := n.store.Release(ctx, sp.Name, give, n.me)
			nt := Table{Owners: slices.Clone(t.Owners), Members: t.Members}
			for _, g := range give {
				nt.Owners[g.Section] = Owner{}
			}
			n.table.Store(&nt)
			return err
		}
	}
	// Take: this node's own sections it does not serve (a take whose answer
	// was lost), and free ones up to the share, from a random place so that
	// nodes starting together take different ones.
	var take []int
	for _, i := range held {
		// A section refused for lost data is held, not taken again: a take
		// raises it, and raises would carry it past this node's floor, not
		// past what other nodes answered (issue 58). It waits for a re-arm.
		if !n.eng.granted(i) && !n.eng.Lost(i) {
			take = append(take, i)
		}
	}
	want := share - len(held)
	room := sp.Sections // sections this node could still hold
	if b := n.o.Budget; b != nil {
		// No more than the node can hold: a section it cannot hold is
		// better served by another node. The sections it holds whose
		// counters are not allocated yet (no request yet) count as held.
		room = int(max(0, min(int64(room), b.Left()/SectionBytes(sp)-int64(n.eng.unallocated()))))
		want = min(want, room)
	}
	start := n.rnd.IntN(sp.Sections)
	waiting, rescuing := false, false
	for k := 0; k < sp.Sections && room > 0; k++ {
		i := (start + k) % sp.Sections
		if t.Owners[i].Token != "" {
			continue
		}
		// Lapsed: its owner's lease ran out (a kill -9, a pause, a cut
		// from the store), not given back.
		lapsed := i < len(t.Untils) && t.Untils[i] != 0
		if !n.free(t, i) {
			// Its lease ran out by the store's clock only just: soon.
			waiting = waiting || want > 0
			rescuing = rescuing || lapsed && steady
			continue
		}
		switch {
		case want > 0:
			want--
		case lapsed && steady:
			// Beyond the share: a section whose owner is gone is taken by
			// every node that watched its lease run out, rather than left
			// to a node that has just started and has yet to watch it for
			// a lease (a kill -9 and a restart: issue 58, item 5); the
			// shares even out at the next rounds, by planned hand-overs.
		default:
			continue
		}
		take = append(take, i)
		room--
	}
	if len(take) == 0 {
		n.short.Store(len(held) < share && (waiting || n.expectRelease(t, share)) || rescuing)
		return nil
	}
	slices.Sort(take)
	var got []Taken
	var takeErr error
	for rest, batch := take, BatchOf(n.store); len(rest) > 0 && takeErr == nil; {
		k := min(batch, len(rest)) // a store's bound on one call (etcd's operations in a transaction)
		var g []Taken
		g, takeErr = n.store.Take(ctx, sp.Name, rest[:k], n.me, n.o.TTL, sp.Step)
		got, rest = append(got, g...), rest[k:]
	}
	if takeErr != nil {
		n.failures.Add(1)
		if f := (*FencedError)(nil); errors.As(takeErr, &f) {
			n.eng.SetFence(f)
		}
		if len(got) == 0 {
			return takeErr
		}
	}
	n.takes.Add(uint64(len(got)))
	n.log.Info("keyed sequence: sections taken", "space", sp.Name, "asked", SectionsText(take), "took", SectionsText(takenSections(got)), "count", len(got), "held", len(held), "share", share, "members", len(t.Members))
	n.short.Store(len(held)+len(got) < share && (len(got) < len(take) || waiting) || rescuing || len(held)+len(got) > share)
	if !n.short.Load() && len(held)+len(got) < share {
		n.short.Store(n.expectRelease(t, share))
	}
	var errs []error
	nt := Table{Owners: slices.Clone(t.Owners), Members: t.Members} // a new one: readers hold the old
	for _, g := range got {
		if g.Section < 0 || g.Section >= sp.Sections {
			errs = append(errs, fmt.Errorf("space %q: the store took section %d of %d", sp.Name, g.Section, sp.Sections))
			continue
		}
		errs = append(errs, n.eng.grant(g.Section, g.Range))
		nt.Owners[g.Section] = n.me
	}
	n.table.Store(&nt)
	// The gate stays at the renewal's lease, the earliest of all: opening
	// it to the take's would lengthen the older sections' too.
	return errors.Join(append(errs, takeErr)...)
}

func takenSections(got []Taken) []int {
	out := make([]int, len(got))
	for k, g := range got {
		out[k] = g.Section
	}
	return out
}

// seenUntil is a section's lease end as read, and when this node first
// read it.
type seenUntil struct {
	until int64
	at    time.Time
}

// see notes the lease ends of t that changed since the last read (an
// owner's renewal, a take, a give-back); called under round.
func (n *Node) see(t Table) {
	if n.seen == nil {
		n.seen = map[int]seenUntil{}
	}
	now := n.o.Clock()
	for i, u := range t.Untils {
		if s, ok := n.seen[i]; !ok || s.until != u {
			n.seen[i] = seenUntil{until: u, at: now}
		}
	}
}

// free reports whether section i, with no live lease in t, may be taken:
// given back or never taken (no lease end), or a store whose leases run
// out by elapsed time (no Untils), or a lease whose end this node has read
// unchanged for a whole lease on its own clock. Its owner's gate closes
// within a lease of the renewal that last changed it (sent before this
// node read it), so no step of the store's clock lets a take overlap an
// owner still answering (issue 58, item 3). Called under round.
//
// The lease waited out is the longer of this node's and the one the last
// holder declared (Table.Holders): nodes with different lease_ttl, a
// rolling change of it, keep the fence (issue 68, item 3: an owner with a
// 6 s lease kept answering for 5.4 s after a renewal that a taker with a
// 1 s lease, the store's clock stepped forward, waited out in 1 s).
func (n *Node) free(t Table, i int) bool {
	if n.ignoreAge || i >= len(t.Untils) || t.Untils[i] == 0 {
		return true
	}
	s, ok := n.seen[i]
	return ok && n.o.Clock().Sub(s.at) >= n.waitOut(t, i)
}

// waitOut is how long a lease end of section i must stay unchanged before
// this node takes it: its own lease, or the last holder's when longer.
func (n *Node) waitOut(t Table, i int) time.Duration {
	d := n.o.TTL
	if i < len(t.Holders) && !n.ownTTL {
		if h, ok := LeaseTTLOf(t.Holders[i]); ok && h > d {
			d = h
		}
	}
	return d
}

// expectRelease reports whether the table shows a node holding more than
// share sections: one that gives the excess back at its next round, for a
// node short of its share to take soon.
func (n *Node) expectRelease(t Table, share int) bool {
	count := map[string]int{}
	for _, o := range t.Owners {
		if o.Token != "" && o.Token != n.me.Token {
			count[o.Token]++
			if count[o.Token] > share {
				return true
			}
		}
	}
	return false
}

// open moves the gate to sent's lease, never back.
func (n *Node) open(sent time.Time) {
	v := sent.Add(n.o.TTL - n.o.TTL/10)
	for {
		old := n.eng.gate.valid.Load()
		if old != nil && !old.Before(v) {
			return
		}
		if n.eng.gate.valid.CompareAndSwap(old, &v) {
			return
		}
	}
}

// Close stops the node: it answers no more, then gives its sections back
// (best effort within ctx: leases not given back run out on their own).
func (n *Node) Close(ctx context.Context) error {
	var err error
	n.leaving.Store(true)
	n.halt(func() {
		if err = n.store.Release(ctx, n.eng.space.Name, nil, n.me); err != nil {
			return // its leases run out on their own: still its until then
		}
		if t := n.table.Load(); t != nil {
			nt := Table{Owners: slices.Clone(t.Owners), Members: t.Members}
			for i, o := range nt.Owners {
				if o.Token == n.me.Token {
					nt.Owners[i] = Owner{}
				}
			}
			n.table.Store(&nt)
		}
		n.left.Store(true)
	})
	n.goneOnce.Do(func() { close(n.gone) })
	return err
}

// halt stops the rounds and the answers (once), then runs then (nil: the
// leases are left to run out, as after a kill -9).
func (n *Node) halt(then func()) {
	n.once.Do(func() {
		close(n.stop)
		if n.running.Load() {
			<-n.done
		}
		n.round.Lock()
		defer n.round.Unlock()
		n.closed = true
		n.eng.Close()
		if then != nil {
			then()
		}
	})
}

// maxRuns is how many runs of sections SectionsText writes.
const maxRuns = 16

// SectionsText writes sections (in any order) as runs, "0-99 205 300-310",
// at most maxRuns of them and then how many more: a log line of a space of
// 65,536 sections stays short (a line of every number was 765 KB).
func SectionsText(sections []int) string {
	if len(sections) == 0 {
		return ""
	}
	ids := slices.Clone(sections)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var b strings.Builder
	runs := 0
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if runs == maxRuns {
			fmt.Fprintf(&b, " and %d more", len(ids)-i)
			break
		}
		if runs > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		} else {
			fmt.Fprintf(&b, "%d", ids[i])
		}
		runs++
		i = j + 1
	}
	return b.String()
}
