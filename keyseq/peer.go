package keyseq

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/frond-id/frond"
)

// Nodes that share a space forward requests to each other (issue 59): a
// node forwards only to a peer that proves it is a node of the same
// cluster, and the owner trusts a forwarded request (its caller's token
// was checked where the caller came in) only from such a peer. The proof
// is an HMAC with the cluster's peer key, which the nodes read from the
// store they share (SpaceStore.PeerKey): whoever can read the store is a
// node of the cluster; nobody else can make or check a proof. A caller's
// token never leaves the node it came in by.

// PeerKeyLen is the length of a cluster's peer key.
const PeerKeyLen = 32

// NewPeerKey returns a random peer key.
func NewPeerKey() []byte {
	b := make([]byte, PeerKeyLen)
	rand.Read(b) // crypto/rand.Read never fails
	return b
}

// DecodePeerKey decodes a peer key as stores keep it (hex), checking it.
func DecodePeerKey(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != PeerKeyLen {
		return nil, fmt.Errorf("%w: the keyed sequence peer key in the store reads %d characters, not %d hexadecimal digits", frond.ErrInvalidArgument, len(s), 2*PeerKeyLen)
	}
	return b, nil
}

// Peer is a node's credential among the nodes of its cluster: its owner
// token (it says who it is) and the cluster's peer key.
type Peer struct {
	Token string
	Key   []byte
}

// PeerSkew is how far a forwarded request's time may be from the owner's
// clock: a signed request is good for that long.
const PeerSkew = 2 * time.Minute

// mac is the HMAC-SHA256 of the parts, in hex.
func (p Peer) mac(parts ...string) string {
	m := hmac.New(sha256.New, p.Key)
	for _, s := range parts {
		m.Write([]byte(strconv.Itoa(len(s))))
		m.Write([]byte{':'})
		m.Write([]byte(s))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Sign signs a forwarded request (target: its path and query) at t.
func (p Peer) Sign(target string, t time.Time) (ts, sig string) {
	ts = strconv.FormatInt(t.UnixMilli(), 10)
	return ts, p.mac("forward", p.Token, ts, target)
}

// Verify checks a forwarded request's signature, made by the peer token
// at ts for target, against now: nil when a node of the cluster made it
// within PeerSkew.
func (p Peer) Verify(token, ts, target, sig string, now time.Time) error {
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || token == "" || len(token) > 64 || sig == "" {
		return fmt.Errorf("%w: not a forwarded request of a node of this cluster", frond.ErrInvalidArgument)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > PeerSkew || d < -PeerSkew {
		return fmt.Errorf("%w: a forwarded request signed %v from this node's clock", frond.ErrInvalidArgument, d.Round(time.Second))
	}
	want := Peer{Token: token, Key: p.Key}.mac("forward", token, ts, target)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return fmt.Errorf("%w: not a forwarded request of a node of this cluster", frond.ErrInvalidArgument)
	}
	return nil
}

// Proof is the owner's answer to a signed request (sig): it proves that a
// node of the cluster answered, with that status.
func (p Peer) Proof(sig string, status int) string {
	return p.mac("answer", sig, strconv.Itoa(status))
}

// CheckProof checks an answer's Proof.
func (p Peer) CheckProof(sig string, status int, proof string) bool {
	return proof != "" && hmac.Equal([]byte(p.Proof(sig, status)), []byte(proof))
}
