package keyseq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
)

// Owner names one node's holding of sections: a random token (a restart
// is a new owner) and the address where it answers (requests for its
// sections are forwarded there).
type Owner struct {
	Token string
	Addr  string
}

// LeaseOwner is the owner one start of a space on a node leases under:
// the node's token, the start's number (Spaces counts them: a space
// stopped for being idle or to make room and started again is a new
// owner, so that a give-back of the stopped start that reaches the store
// late ends none of the new start's leases, issue 68) and the lease
// length the node counts on (LeaseTTLOf: a node taking a section whose
// lease ran out waits out the owner's lease, not its own).
func LeaseOwner(node Owner, start uint64, ttl time.Duration) Owner {
	node.Token = fmt.Sprintf("%s.%d.%dms", node.Token, start, ttl.Milliseconds())
	return node
}

// LeaseTTLOf is the lease length a token of LeaseOwner declares; false for
// a token of another form (a node of an older version).
func LeaseTTLOf(token string) (time.Duration, bool) {
	i := strings.LastIndexByte(token, '.')
	if i < 0 || !strings.HasSuffix(token, "ms") {
		return 0, false
	}
	ms, err := strconv.ParseInt(token[i+1:len(token)-2], 10, 64)
	if err != nil || ms < 1 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// Taken is a section a Take took, with the values of the raise it made.
type Taken struct {
	Section int
	Range   frond.Range
}

// Given is a section given back (LeaseStore.Release) with the maximum its
// owner last raised it to: the lease the give-back ends, and no later one
// (issue 58).
type Given struct {
	Section int
	Max     int64
}

// GivenSections is the sections of give.
func GivenSections(give []Given) []int {
	out := make([]int, len(give))
	for k, g := range give {
		out[k] = g.Section
	}
	return out
}

// Table is what a LeaseStore read of a space: the owner of each section
// whose lease is live by the store's clock ("" if none), and the nodes
// whose membership lease is live.
type Table struct {
	Owners  []Owner // by section; the zero Owner: no live lease
	Members []Owner // the live members, each once
	// Untils is, by section, when its lease ends on the store's clock (µs),
	// live or run out; 0 when the section was given back or never taken,
	// and on a store whose leases run out by elapsed time (etcd). A node
	// sees an owner's renewals as changes of it: it takes a section whose
	// lease ran out only once its Untils has not changed for a lease on
	// the node's own clock, so that a step of the store's clock cannot
	// end a lease its owner still counts on (issue 58, item 3).
	Untils []int64
	// Holders is, by section, the token of its last lease, live or run
	// out ("" where Untils is 0): a taker waits out the lease length it
	// declares (LeaseTTLOf) when longer than its own, so that nodes with
	// different lease_ttl (a rolling change of it) keep the fence.
	Holders []string
	// Maxima is, by section, its maximum in the store at the read (0:
	// never raised; nil: not read). Every node keeps the highest it read
	// as a floor of the section (Floors), not only those it raised: a
	// store that lost data is refused by a node taking a section it never
	// served (issue 68, item 1).
	Maxima []int64
	// Fence is the store's place as read with the table (frond.Place, as
	// Place.String writes it), where a lost-data fence is recorded
	// (frond.Place.Lost: Fenced): while it is set, every node refuses
	// every section, and a take or a raise is refused by the store in the
	// same atomic step. "" on a store alone and unfenced.
	Fence string
}

// LeaseStore keeps, beside each section's maximum, the section's owner
// under a lease counted on the store's own clock (the database's, Redis
// server's), as the SQL and Redis worker registries keep theirs: one clock
// decides every expiry, whatever the nodes' clocks say.
//
// The promises a Node builds its fence on:
//   - Take takes only sections whose lease has run out by the store's clock
//     (or that the caller holds already), and raises each it takes in the
//     same atomic step: a new owner's first values are above every value
//     the section answered before.
//   - A lease runs from no earlier than when the store ran the take or the
//     renewal that set it, and lasts ttl on the store's clock.
//   - RaiseOwned raises only sections the caller's lease still holds.
//   - Take and RaiseOwned raise nothing while the store's place is fenced
//     for lost data (Fenced), checked in the same atomic step; a store
//     that keeps a place is a frond.PlaceKeeper on the same place as the
//     segment store in the same database, Redis or etcd, so a finding by
//     either fences both.
type LeaseStore interface {
	// Take takes, for me, those of sections that no live lease holds or
	// that me holds, each with a lease of ttl and a raise of step, in one
	// atomic step of the store for them all. It returns those it took.
	Take(ctx context.Context, space string, sections []int, me Owner, ttl time.Duration, step int64) ([]Taken, error)
	// Renew extends every lease me holds in space to ttl from now, and me's
	// membership of the space (made if missing), in one atomic step; it
	// returns the sections me holds.
	Renew(ctx context.Context, space string, me Owner, ttl time.Duration) ([]int, error)
	// RaiseOwned is SectionStore.Raise for sections me's live lease holds;
	// ErrNotOwner (and no raise at all) if one is not.
	RaiseOwned(ctx context.Context, space string, sections []int, step int64, me Owner) ([]frond.Range, error)
	// Release ends me's leases on the sections of give, each only if the
	// section's maximum is still the one given (the maximum of the lease
	// it ends: every take raises it, so a give-back that arrives late,
	// after me took the section again, ends nothing); with give nil, every
	// lease of me and its membership (a clean stop). Others may take what
	// it ended at once.
	Release(ctx context.Context, space string, give []Given, me Owner) error
	// Read reads the space's owners and members, for that many sections.
	Read(ctx context.Context, space string, sections int) (Table, error)
}

// SectionBatcher is a LeaseStore that takes at most MaxSections sections
// in one call (etcd: the operations of one transaction); a node splits a
// larger take into calls of that many (BatchOf).
type SectionBatcher interface {
	MaxSections() int
}

// BatchOf is how many sections st takes in one call.
func BatchOf(st LeaseStore) int {
	if b, ok := st.(SectionBatcher); ok && b.MaxSections() > 0 {
		return b.MaxSections()
	}
	return MaxSections
}

// ErrNotOwner: the section is not this node's (another node's lease holds
// it, or this node's ran out).
var ErrNotOwner = errors.New("keyed sequence: this node does not own the section")

// NotOwnerError is a request for a section this node does not serve: Addr
// is the owner's, from the last read of the table ("" if none is known:
// the section is between owners, try again).
type NotOwnerError struct {
	Space   string
	Section int
	Addr    string
}

// Error says whether another node owns the section, not its address:
// the address is internal, for forwarding and the admin (frond space list),
// not for anonymous callers (issue 59).
func (e *NotOwnerError) Error() string {
	if e.Addr == "" {
		return fmt.Sprintf("keyed sequence space %q section %d: no node owns it now; try again", e.Space, e.Section)
	}
	return fmt.Sprintf("keyed sequence space %q section %d is owned by another node; try again", e.Space, e.Section)
}

// Unwrap: a NotOwnerError is ErrNotOwner, and frond.ErrStoreUnavailable
// to the protocols: not served here now, try again (a node that forwards
// has tried the owner already).
func (e *NotOwnerError) Unwrap() []error { return []error{ErrNotOwner, frond.ErrStoreUnavailable} }

// ownedRaise is the SectionStore of an owner: raises under its lease,
// counted.
type ownedRaise struct {
	store  LeaseStore
	me     Owner
	ttl    time.Duration // a raise's bound: a lease
	raises *atomic.Uint64
}

func (o ownedRaise) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	o.raises.Add(1)
	ctx, cancel := context.WithTimeout(ctx, o.ttl)
	defer cancel()
	return o.store.RaiseOwned(ctx, space, sections, step, o.me)
}

// CheckOwner checks an owner's name and lease: what the columns hold.
func CheckOwner(me Owner, ttl time.Duration) error {
	switch {
	case me.Token == "" || len(me.Token) > 64:
		return fmt.Errorf("%w: owner token of %d bytes: 1 to 64", frond.ErrInvalidArgument, len(me.Token))
	case len(me.Addr) > 255:
		return fmt.Errorf("%w: owner address of %d bytes: up to 255", frond.ErrInvalidArgument, len(me.Addr))
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: lease TTL %v: at least 1ms", frond.ErrInvalidArgument, ttl)
	}
	return nil
}
