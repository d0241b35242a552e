package service

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/google/uuid"
	"go.jetify.com/typeid"
)

// UUID versions frond gives (RFC 9562): 1 and 6 (time and node), 3 and 5
// (name-based: MD5 and SHA-1 of a namespace and a name), 4 (random) and 7
// (Unix time in ms, then random).
var uuidVersions = []int{1, 3, 4, 5, 6, 7}

// MaxUUIDName is the longest name a name-based UUID (version 3 or 5) takes,
// in bytes.
const MaxUUIDName = 4096

// uuidNamespaces are RFC 9562's predefined namespaces (section 6.6), by the
// names the requests use.
var uuidNamespaces = map[string]uuid.UUID{
	"dns":  uuid.NameSpaceDNS,
	"url":  uuid.NameSpaceURL,
	"oid":  uuid.NameSpaceOID,
	"x500": uuid.NameSpaceX500,
}

// nameBased reports whether UUIDs of version v come from a namespace and a
// name.
func nameBased(v int) bool { return v == 3 || v == 5 }

// CheckUUID checks the UUID fields of r (Version filled), and the count:
// a name-based UUID is one per name.
func CheckUUID(r *Request) error {
	if r.Version == 0 {
		r.Version = 4
	}
	ok := false
	for _, v := range uuidVersions {
		ok = ok || v == r.Version
	}
	if !ok {
		return fmt.Errorf("%w: UUID version %d: 1, 3, 4, 5, 6 or 7", frond.ErrInvalidArgument, r.Version)
	}
	switch r.Form {
	case "":
		if r.Prefix != "" {
			return fmt.Errorf("%w: a prefix is for UUIDs in form typeid", frond.ErrInvalidArgument)
		}
	case FormTypeID:
		if r.Version != 7 {
			return fmt.Errorf("%w: form typeid is a form of UUID version 7 (TypeID's suffix), not %d", frond.ErrInvalidArgument, r.Version)
		}
		if err := CheckPrefix(r.Prefix); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: form %s: UUIDs come in their own form, or typeid (version 7)", frond.ErrInvalidArgument, Quote(r.Form))
	}
	if !nameBased(r.Version) {
		if r.Namespace != "" || r.Name != "" {
			return fmt.Errorf("%w: a namespace and a name are for UUID versions 3 and 5 (name-based), not %d", frond.ErrInvalidArgument, r.Version)
		}
		return nil
	}
	if _, err := uuidNamespace(r.Namespace); err != nil {
		return err
	}
	if r.Name == "" {
		return fmt.Errorf("%w: UUID version %d needs a name (and a namespace): the same namespace and name always give the same UUID", frond.ErrInvalidArgument, r.Version)
	}
	if len(r.Name) > MaxUUIDName {
		return fmt.Errorf("%w: a UUID name of %d bytes: at most %d", frond.ErrInvalidArgument, len(r.Name), MaxUUIDName)
	}
	if r.Count > 1 {
		return fmt.Errorf("%w: count %d: a name-based UUID (version %d) is one per namespace and name, always the same", frond.ErrInvalidArgument, r.Count, r.Version)
	}
	return nil
}

// uuidNamespace is the namespace of a name-based UUID: dns, url, oid, x500
// or a UUID in its 36-character form.
func uuidNamespace(ns string) (uuid.UUID, error) {
	if ns == "" {
		return uuid.Nil, fmt.Errorf("%w: a name-based UUID needs a namespace: dns, url, oid, x500 or a UUID", frond.ErrInvalidArgument)
	}
	if u, ok := uuidNamespaces[strings.ToLower(ns)]; ok {
		return u, nil
	}
	u, err := uuid.Parse(ns)
	if err != nil || len(ns) != 36 {
		return uuid.Nil, fmt.Errorf("%w: namespace %s: dns, url, oid, x500 or a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", frond.ErrInvalidArgument, Quote(ns))
	}
	return u, nil
}

// UUIDs returns n UUIDs of version 1, 4, 6 or 7 (see NewUUID; for versions
// 3 and 5, which need a name, use NameUUID).
func UUIDs(version, n int) ([]string, error) {
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, n, MaxBatch)
	}
	if nameBased(version) {
		return nil, fmt.Errorf("%w: UUID version %d is name-based: it needs a namespace and a name", frond.ErrInvalidArgument, version)
	}
	out := make([]string, n)
	for i := range out {
		u, err := NewUUID(version)
		if err != nil {
			return nil, err
		}
		out[i] = u.String()
	}
	return out, nil
}

// NewUUID returns a UUID of version 1 or 6 (this process's clock and
// random node; see timeUUIDs), 4 (random) or 7 (time-ordered; monotonic
// within this process, RFC 9562 section 6.2, through google/uuid).
func NewUUID(version int) (uuid.UUID, error) {
	var u uuid.UUID
	var err error
	switch version {
	case 1, 6:
		return timeUUIDs.next(version)
	case 4:
		u, err = uuid.NewRandom()
	case 7:
		u, err = uuid.NewV7()
	default:
		return uuid.Nil, fmt.Errorf("%w: UUID version %d: 1, 4, 6 or 7", frond.ErrInvalidArgument, version)
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: uuid: %v", frond.ErrStoreUnavailable, err)
	}
	return u, nil
}

// NameUUID returns the name-based UUID of version 3 (MD5) or 5 (SHA-1) of
// namespace (dns, url, oid, x500 or a UUID) and name: the same for the
// same input, here and in every implementation of RFC 9562.
func NameUUID(version int, namespace, name string) (uuid.UUID, error) {
	r := Request{Kind: KindUUID, Version: version, Namespace: namespace, Name: name}
	if err := CheckUUID(&r); err != nil {
		return uuid.Nil, err
	}
	if !nameBased(version) {
		return uuid.Nil, fmt.Errorf("%w: UUID version %d is not name-based: 3 or 5", frond.ErrInvalidArgument, version)
	}
	ns, _ := uuidNamespace(namespace)
	if version == 3 {
		return uuid.NewMD5(ns, []byte(name)), nil
	}
	return uuid.NewSHA1(ns, []byte(name)), nil
}

// typeIDs rewrites UUIDs (of version 7) as TypeIDs with prefix.
func typeIDs(prefix string, uuids []string) error {
	for i, u := range uuids {
		tid, err := typeid.FromUUIDWithPrefix(prefix, u)
		if err != nil {
			return fmt.Errorf("%w: typeid: %v", frond.ErrInvalidArgument, err)
		}
		uuids[i] = tid.String()
	}
	return nil
}

// gregorianOffset is the count of 100 ns intervals from 1582-10-15 (the
// epoch of UUID versions 1 and 6) to 1970-01-01.
const gregorianOffset = 0x01B21DD213814000

// timeGen gives UUIDs of versions 1 and 6. Its node ID is random, chosen
// when the process starts, with the multicast bit set (RFC 9562 section
// 6.10): no MAC address leaks into the IDs, and none is needed. Its clock
// sequence is random too, chosen at the same time. Within the process,
// every UUID has a later timestamp than the one before: when the clock
// stands still or steps back, the next timestamp is the last one plus one
// (100 ns), borrowed ahead, so two UUIDs never share a timestamp and the
// clock sequence never needs to change. Across restarts and nodes the
// random node ID and clock sequence (61 bits) keep them apart.
type timeGen struct {
	mu   sync.Mutex
	now  func() time.Time
	last uint64 // the last timestamp given, in 100 ns since 1582-10-15
	seq  uint16 // 14 bits
	node [6]byte
}

var timeUUIDs = newTimeGen(time.Now)

func newTimeGen(now func() time.Time) *timeGen {
	g := &timeGen{now: now}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("frond: no random source for UUID node IDs: " + err.Error())
	}
	copy(g.node[:], b[:6])
	g.node[0] |= 0x01 // multicast: not an IEEE 802 address
	g.seq = binary.BigEndian.Uint16(b[6:]) & 0x3fff
	return g
}

// tick reserves the next timestamp.
func (g *timeGen) tick() uint64 {
	ts := uint64(g.now().UnixNano()/100) + gregorianOffset
	g.mu.Lock()
	if ts <= g.last {
		ts = g.last + 1
	}
	g.last = ts
	g.mu.Unlock()
	return ts
}

func (g *timeGen) next(version int) (uuid.UUID, error) {
	return timeUUID(version, g.tick(), g.seq, g.node), nil
}

// timeUUID lays out a UUID of version 1 or 6 from its fields (RFC 9562
// sections 5.1 and 5.6): ts is the 60-bit timestamp, seq the 14-bit clock
// sequence.
func timeUUID(version int, ts uint64, seq uint16, node [6]byte) uuid.UUID {
	var u uuid.UUID
	if version == 1 {
		binary.BigEndian.PutUint32(u[0:], uint32(ts))
		binary.BigEndian.PutUint16(u[4:], uint16(ts>>32))
		binary.BigEndian.PutUint16(u[6:], uint16(ts>>48)&0x0fff|0x1000)
	} else {
		binary.BigEndian.PutUint32(u[0:], uint32(ts>>28))
		binary.BigEndian.PutUint16(u[4:], uint16(ts>>12))
		binary.BigEndian.PutUint16(u[6:], uint16(ts)&0x0fff|0x6000)
	}
	binary.BigEndian.PutUint16(u[8:], seq&0x3fff|0x8000)
	copy(u[10:], node[:])
	return u
}
