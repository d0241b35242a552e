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
