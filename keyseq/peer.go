package keyseq

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// PeerRequest is what a node signs of a request to another node (issue
// 69: a signature of the token, the time and the path alone was replayed
// from anywhere, any number of times, to the node it was meant for or to
// another): its method, the address of the node it is sent to (the
// receiver's advertised address: another node refuses it), its path and
// query, and its body.
type PeerRequest struct {
	Method, To, Target string
	Body               []byte
}

func (r PeerRequest) parts() []string {
	h := sha256.Sum256(r.Body)
	return []string{r.Method, r.To, r.Target, hex.EncodeToString(h[:])}
}

// peerSeq numbers the requests this process signs: each signature is used
// once (Replays), in the order the node signed them, more or less.
var peerSeq atomic.Uint64

func init() { peerSeq.Store(uint64(time.Now().UnixNano())) }

// Sign signs a request to another node at t: ts is the time and the
// request's number ("1764400000000.42"), sig the HMAC of the node's token,
// ts and the request.
func (p Peer) Sign(r PeerRequest, t time.Time) (ts, sig string) {
	ts = strconv.FormatInt(t.UnixMilli(), 10) + "." + strconv.FormatUint(peerSeq.Add(1), 10)
	return ts, p.mac(append([]string{"forward2", p.Token, ts}, r.parts()...)...)
}

// Verify checks a signed request received as r by this node (r.To: this
// node's own address) against now: nil when a node of the cluster made it
// for this node within PeerSkew, and replays (when set) has not seen its
// number from that node before.
func (p Peer) Verify(token, ts string, r PeerRequest, sig string, now time.Time, replays *Replays) error {
	msStr, seqStr, ok := strings.Cut(ts, ".")
	ms, err := strconv.ParseInt(msStr, 10, 64)
	seq, err2 := strconv.ParseUint(seqStr, 10, 64)
	if !ok || err != nil || err2 != nil || token == "" || len(token) > 200 || sig == "" {
		return fmt.Errorf("%w: not a request of a node of this cluster", frond.ErrInvalidArgument)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > PeerSkew || d < -PeerSkew {
		return fmt.Errorf("%w: a node's request signed %v from this node's clock", frond.ErrInvalidArgument, d.Round(time.Second))
	}
	want := Peer{Token: token, Key: p.Key}.mac(append([]string{"forward2", token, ts}, r.parts()...)...)
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return fmt.Errorf("%w: not a request of a node of this cluster for this node", frond.ErrInvalidArgument)
	}
	if replays != nil && !replays.First(token, seq, now) {
		return fmt.Errorf("%w: a node's signed request seen before (a replay)", frond.ErrInvalidArgument)
	}
	return nil
}

// Proof is the receiver's answer to a signed request (sig): it proves
// that a node of the cluster answered, with that status and that body.
func (p Peer) Proof(sig string, status int, body []byte) string {
	h := sha256.Sum256(body)
	return p.mac("answer2", sig, strconv.Itoa(status), hex.EncodeToString(h[:]))
}

// CheckProof checks an answer's Proof.
func (p Peer) CheckProof(sig string, status int, body []byte, proof string) bool {
	return proof != "" && hmac.Equal([]byte(p.Proof(sig, status, body)), []byte(proof))
}

// ReplayWindow is how many of a node's request numbers below the highest
// seen are still told apart: a request that arrives later than that many
// newer ones of the same node is refused (its sender asks again).
const ReplayWindow = 4096

// Replays remembers the request numbers each node signed within PeerSkew,
// so that a signed request is answered once (issue 69): per node, the
// highest number seen and which of the ReplayWindow below it were.
type Replays struct {
	mu    sync.Mutex
	nodes map[string]*replayWin
}

type replayWin struct {
	top  uint64
	seen [ReplayWindow / 64]uint64
	at   time.Time // last request
}

// First reports whether seq is new from token (and remembers it).
func (r *Replays) First(token string, seq uint64, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodes == nil {
		r.nodes = map[string]*replayWin{}
	}
	w := r.nodes[token]
	if w == nil {
		if len(r.nodes) >= 4096 { // nodes gone for a window: forgotten
			for k, x := range r.nodes {
				if now.Sub(x.at) > 2*PeerSkew {
					delete(r.nodes, k)
				}
			}
		}
		w = &replayWin{top: seq}
		r.nodes[token] = w
		w.set(seq)
		w.at = now
		return true
	}
	w.at = now
	switch {
	case seq > w.top:
		shift := seq - w.top
		if shift >= ReplayWindow {
			w.seen = [ReplayWindow / 64]uint64{}
		} else {
			for i := w.top + 1; i <= seq; i++ {
				w.clear(i)
			}
		}
		w.top = seq
	case w.top-seq >= ReplayWindow:
		return false // too old to tell
	case w.has(seq):
		return false
	}
	w.set(seq)
	return true
}

func (w *replayWin) set(seq uint64)   { w.seen[(seq/64)%(ReplayWindow/64)] |= 1 << (seq % 64) }
func (w *replayWin) clear(seq uint64) { w.seen[(seq/64)%(ReplayWindow/64)] &^= 1 << (seq % 64) }
func (w *replayWin) has(seq uint64) bool {
	return w.seen[(seq/64)%(ReplayWindow/64)]&(1<<(seq%64)) != 0
}
