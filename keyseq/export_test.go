package keyseq

import "time"

// BreakFence makes n answer for the sections it was granted whatever its
// lease: the broken fence the model test must find.
func BreakFence(n *Node) { n.eng.gate.now = func() time.Time { return time.Time{} } }

// UnfenceReleases makes m end a lease given back whatever its maximum: the
// give-back that arrives late and frees a section taken again, which the
// node model must find.
func UnfenceReleases(m *MemLeases) { m.unfenced = true }

// Kill stops n as kill -9 would: no more rounds, no answers, its leases
// left to run out.
func Kill(n *Node) { n.halt(nil) }
