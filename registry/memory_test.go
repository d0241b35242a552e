package registry

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryServer is an in-memory registry server: the Backend of the
// protocol with nothing underneath, shared by the clients Client makes. It
// keeps leases in its own clock (Now) and does not renew them by itself:
// Renew does, as a client's renewal would. The model test of the protocol
// runs on it, and so can tests of code that needs a registry.
type MemoryServer struct {
	// Now is the server's clock for leases; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	ids  map[int64]*memSlot
	next int64 // the allocator: IDs below it were handed out
}

type memSlot struct {
	owner string
	last  int64
	claim string    // the token of the last claim
	until time.Time // the claim's lease runs until then (zero: ended)
	rev   int64     // bumped by every change
}

// NewMemoryServer returns an empty server.
func NewMemoryServer() *MemoryServer { return &MemoryServer{ids: map[int64]*memSlot{}} }

func (m *MemoryServer) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// MemoryBackend is one client of a MemoryServer.
type MemoryBackend struct {
	S        *MemoryServer
	Identity string
	TTL      time.Duration
	Pol      Policy
}

var _ Backend = (*MemoryBackend)(nil)

// Client returns a Protocol over a new client of m with options o.
func (m *MemoryServer) Client(o Options, pol Policy) *Protocol {
	o = o.WithDefaults()
	return NewProtocol(&MemoryBackend{S: m, Identity: o.Identity(), TTL: o.LeaseTTL, Pol: pol}, o)
}

// Renew extends h's lease as a renewal sent now would; false when h's
// claim no longer holds the ID.
func (m *MemoryServer) Renew(h *Hold, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.liveLocked(h)
	if s == nil {
		return false
	}
	s.until = m.now().Add(ttl)
	return true
}

// Expire ends the lease of id's claim now, as a lease that ran out would.
func (m *MemoryServer) Expire(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.ids[id]; s != nil {
		s.until = time.Time{}
	}
}

// SetLast records ns as id's time, as a write by hand would.
func (m *MemoryServer) SetLast(id, ns int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.ids[id]; s != nil {
		s.last = ns
		s.rev++
	}
}

// Last returns the time recorded for id (0: none).
func (m *MemoryServer) Last(id int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.ids[id]; s != nil {
		return s.last
	}
	return 0
}

func (m *MemoryServer) heldLocked(s *memSlot) bool {
	return m.now().Before(s.until)
}

func (m *MemoryServer) liveLocked(h *Hold) *memSlot {
	s := m.ids[h.ID]
	if s == nil || s.claim != h.Token || !m.heldLocked(s) {
		return nil
	}
	return s
}

func (m *MemoryServer) slotLocked(id int64) Slot {
	s := m.ids[id]
	out := Slot{ID: id, Owner: s.owner, Last: s.last, Claim: s.claim, Rev: s.rev}
	if m.heldLocked(s) {
		out.Holder = s.claim
	}
	return out
}

// Policy implements Backend.
func (b *MemoryBackend) Policy() Policy { return b.Pol }

// Where implements Backend.
func (b *MemoryBackend) Where() string { return "memory" }

// Prepare implements Backend.
func (b *MemoryBackend) Prepare(context.Context) error { return nil }

// Own implements Backend.
func (b *MemoryBackend) Own(_ context.Context, maxNode int64) ([]Slot, error) {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	var out []Slot
	for id := int64(0); id <= maxNode && id < b.S.next; id++ {
		if b.S.ids[id].owner == b.Identity {
			out = append(out, b.S.slotLocked(id))
		}
	}
	return out, nil
}

// New implements Backend.
func (b *MemoryBackend) New(_ context.Context, maxNode int64, h *Hold) (int64, bool, error) {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	if b.S.next > maxNode {
		return 0, false, nil
	}
	h.ID = b.S.next
	b.S.next++
	b.S.ids[h.ID] = &memSlot{owner: b.Identity, claim: h.Token, until: b.S.now().Add(b.TTL), rev: 1}
	return 0, true, nil
}

// Idle implements Backend.
func (b *MemoryBackend) Idle(_ context.Context, maxNode int64) ([]Slot, error) {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	var out []Slot
	for id := int64(0); id <= maxNode && id < b.S.next; id++ {
		if !b.S.heldLocked(b.S.ids[id]) {
			out = append(out, b.S.slotLocked(id))
		}
	}
	return out, nil
}

// Claim implements Backend.
func (b *MemoryBackend) Claim(_ context.Context, s Slot, floor int64, h *Hold) error {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	cur := b.S.ids[s.ID]
	if cur == nil || cur.rev != s.Rev.(int64) {
		return ErrRace
	}
	if held := b.S.heldLocked(cur); held && cur.claim != s.Holder || !held && s.Held() {
		return ErrRace
	}
	cur.owner, cur.last, cur.claim, cur.until = b.Identity, floor, h.Token, b.S.now().Add(b.TTL)
	cur.rev++
	return nil
}

// Keep implements Backend: nothing, the caller renews with
// MemoryServer.Renew.
func (b *MemoryBackend) Keep(*Hold) {}

// Write implements Backend.
func (b *MemoryBackend) Write(_ context.Context, h *Hold, ns int64, exact bool) (bool, error) {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	s := b.S.liveLocked(h)
	if s == nil {
		return false, nil
	}
	if exact {
		s.last, s.until = ns, time.Time{}
	} else {
		s.last = max(s.last, ns)
	}
	s.rev++
	return true, nil
}

// End implements Backend.
func (b *MemoryBackend) End(h *Hold) {
	b.S.mu.Lock()
	defer b.S.mu.Unlock()
	if s := b.S.liveLocked(h); s != nil {
		s.until = time.Time{}
		s.rev++
	}
}

// Close implements Backend.
func (b *MemoryBackend) Close() error { return nil }

// String describes the server's state, for test failures.
func (m *MemoryServer) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := fmt.Sprintf("next %d:", m.next)
	for id := int64(0); id < m.next; id++ {
		s := m.ids[id]
		out += fmt.Sprintf(" [%d owner %s last %d claim %.8s until %v]", id, s.owner, s.last, s.claim, s.until.UnixNano())
	}
	return out
}
