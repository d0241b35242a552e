package keyseq

import "time"

// BreakFence makes n answer for the sections it was granted whatever its
// lease: the broken fence the model test must find.
func BreakFence(n *Node) { n.eng.gate.now = func() time.Time { return time.Time{} } }
