package keyseq

import (
	"context"
	"fmt"
	"time"
)

// BreakFence makes n answer for the sections it was granted whatever its
// lease: the broken fence the model test must find.
func BreakFence(n *Node) { n.eng.gate.now = func() time.Time { return time.Time{} } }

// UnfenceReleases makes m end a lease given back whatever its maximum: the
// give-back that arrives late and frees a section taken again, which the
// node model must find.
func UnfenceReleases(m *MemLeases) { m.unfenced = true }

// TakeByStoreClock makes n take a section as soon as the store says its
// lease ran out, however recently its owner renewed it: the take a step of
// the store's clock breaks, which the node model must find.
func TakeByStoreClock(n *Node) { n.ignoreAge = true }

// Kill stops n as kill -9 would: no more rounds, no answers, its leases
// left to run out.
func Kill(n *Node) { n.halt(nil) }

// KillSpaces stops every node of s as kill -9 would.
func KillSpaces(s *Spaces) {
	s.nodes.Range(func(_, n any) bool {
		n.(*Node).halt(nil)
		return true
	})
}

// RoundSpace runs a round of the space's node on s.
func RoundSpace(ctx context.Context, s *Spaces, space string) error {
	v, ok := s.nodes.Load(space)
	if !ok {
		return fmt.Errorf("space %q not started", space)
	}
	return v.(*Node).Round(ctx)
}

// WaitOwnTTL makes n wait out only its own lease before taking a lapsed
// section, whatever the last holder declared (the code before issue 68).
func WaitOwnTTL(n *Node) { n.ownTTL = true }

// LoseLocally makes n keep floors only of the sections it raised and
// fence nothing in the store (the code before issue 68, item 1): after a
// store lost data, another node's former sections are served again from
// below, which the node model must find.
func LoseLocally(n *Node) { n.lossLocal = true }

// SnapshotLeases copies what m holds now (every space's maxima, owners,
// leases and members, and the store's place): restore puts m back to it,
// as a store restored from a backup or an older file (or, for a snapshot
// of an empty store, restarted empty).
func SnapshotLeases(m *MemLeases) (restore func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	spaces := map[string]*memSpace{}
	for name, s := range m.spaces {
		c := &memSpace{max: map[int]int64{}, owner: map[int]Owner{}, until: map[int]time.Time{}, members: map[string]memMember{}}
		for i, v := range s.max {
			c.max[i] = v
		}
		for i, v := range s.owner {
			c.owner[i] = v
		}
		for i, v := range s.until {
			c.until[i] = v
		}
		for tok, v := range s.members {
			c.members[tok] = v
		}
		spaces[name] = c
	}
	place := m.place
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.spaces, m.place = spaces, place
	}
}
