package httpapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/service"
)

// ForwardedHeader marks a keyed sequence request one node forwarded to the
// owner of its section: the owner answers it or refuses it, and never
// forwards it again.
const ForwardedHeader = "X-Frond-Forwarded"

// TimeoutHeader says how long the caller waits for a keyed sequence
// request, in milliseconds (Frond-Timeout: 2000), as gRPC's deadline does:
// a request that would wait (a section between owners, an owner that does
// not answer) is answered 503 store_unavailable with Retry-After a fifth of
// that time before it (at most 500 ms; keyseq.Spaces.Next), so that the
// caller reads the refusal instead of timing out. Without it the wait is
// bounded by the lease. The clients send their per-attempt timeout.
const TimeoutHeader = "Frond-Timeout"

// maxTimeoutMs is the most Frond-Timeout says: ten minutes.
const maxTimeoutMs = 600_000

// callerTimeout reads Frond-Timeout: 0 when absent, else 1 to 600,000 ms.
func callerTimeout(raw string, present bool) (time.Duration, error) {
	if !present {
		return 0, nil
	}
	ms, ok := service.Digits(raw)
	if !ok || ms < 1 || ms > maxTimeoutMs {
		return 0, badRequest("%s: %s: the caller's wait in milliseconds, a whole number from 1 to %d", TimeoutHeader, service.Quote(raw), maxTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// seqJSON is the answer of GET /v1/seq/{space}/{key}: one value, or with
// n the first and last of n (each above every value the key was given).
type seqJSON struct {
	Space    string `json:"space"`
	Key      string `json:"key"`
	Value    *int64 `json:"value,omitempty"`
	ValueStr string `json:"value_str,omitempty"`
	First    *int64 `json:"first,omitempty"`
	Last     *int64 `json:"last,omitempty"`
	FirstStr string `json:"first_str,omitempty"`
	LastStr  string `json:"last_str,omitempty"`
	Count    int64  `json:"count,omitempty"`
}

// v1Seq: GET|POST /v1/seq/{space}/{key}[?n=N][&token=T]: the next value (or
// n values) of key in a keyed sequence space.
// A request another node of the cluster forwarded and signed
// (peerOf) skips the token check: its caller was checked where it came in,
// and its token was not sent on. A request marked forwarded without a
// valid signature is a client's like any other (it is only not forwarded
// again).
func (s *Server) v1Seq(w http.ResponseWriter, r *http.Request) {
	w, peer := s.peerOf(w, r)
	if peer {
		defer w.(*peerProof).flush()
	}
	raw, present := r.Header[TimeoutHeader]
	wait, err := callerTimeout(strings.Join(raw, ","), present)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		r = r.WithContext(ctx)
	}
	s.v1Take(w, r, []string{"n", "token"}, func(q query, req *service.Request) error {
		n, err := parseCount(q, service.MaxBatch)
		token, _ := q.get("token")
		*req = service.Request{Kind: service.KindSeq, Name: r.PathValue("space"), Key: r.PathValue("key"), Count: n,
			Token: tagToken(r, token), Forwarded: r.Header.Get(ForwardedHeader) != "", Peer: peer}
		return err
	}, func(a service.Answer) any {
		// Which section the key is in, and whether this node serves it: a
		// client sends the section's next keys straight here, as over gRPC
		// (keyseq.RouteHeader: Frond-Seq-Section: 5/1024 self).
		if sp := s.svc.Spaces(); sp != nil {
			if sec, n, mine := sp.Serves(a.Request.Name, a.Request.Key); n > 0 {
				w.Header().Set(keyseq.RouteHeader, keyseq.Route{Section: sec, Sections: n, Mine: mine}.String())
			}
		}
		return seqAnswer(a)
	})
}

func seqAnswer(a service.Answer) any {
	out := seqJSON{Space: a.Request.Name, Key: a.Request.Key}
	first, last := a.Nums[0], a.Nums[len(a.Nums)-1]
	if a.Request.Count == 0 {
		out.Value, out.ValueStr = &first, strconv.FormatInt(first, 10)
		return out
	}
	out.First, out.Last, out.Count = &first, &last, int64(len(a.Nums))
	out.FirstStr, out.LastStr = strconv.FormatInt(first, 10), strconv.FormatInt(last, 10)
	return out
}

// spaceJSON is a keyed sequence space in the admin API.
type spaceJSON struct {
	Name     string `json:"name"`
	Step     int64  `json:"step"`
	Sections int    `json:"sections"`
	Slots    int    `json:"slots"`
	// This node's view (GET /v1/spaces): how many sections it serves (and
	// which, with ?sections=true), the live owners with how many sections
	// each, how many nodes share the space.
	Held         int            `json:"held"`
	HeldSections []int          `json:"held_sections,omitempty"`
	Owners       map[string]int `json:"owners,omitempty"`
	Members      int            `json:"members,omitempty"`
	// Floor: the highest maximum this node raised a section to; Lost: the
	// sections it refuses because the store lost data (docs/sequences.md).
	Floor int64 `json:"floor,omitempty"`
	Lost  int   `json:"lost,omitempty"`
}

// rearmJSON is the answer of a re-arm (keyseq.Rearmed).
type rearmJSON struct {
	Space   string            `json:"space"`
	Above   int64             `json:"above"`
	Asked   []string          `json:"asked"`
	Unasked map[string]string `json:"unasked,omitempty"`
	Fence   string            `json:"fence,omitempty"`
	Lifted  bool              `json:"lifted"`
	Kept    string            `json:"kept,omitempty"`
}

// v1RearmSpace: POST /v1/spaces/{space}/rearm {"above": N} (admin), after
// the store lost data: every section raised to at least N and every floor
// gathered from the nodes (N absent or 0: the floors alone), and the
// store's lost-data fence taken off when it is the space's.
func (s *Server) v1RearmSpace(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Above *int64 `json:"above"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	var above int64
	if in.Above != nil {
		above = *in.Above
	}
	res, err := s.svc.RearmSpace(r.Context(), r.PathValue("space"), above)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rearmJSON{Space: res.Space, Above: res.Above, Asked: res.Asked, Unasked: res.Unasked, Fence: res.Fence, Lifted: res.Lifted, Kept: res.Kept})
}

// floorsJSON is a node's floors of a space, by section.
type floorsJSON struct {
	Space  string  `json:"space"`
	Floors []int64 `json:"floors"`
}

// v1SpaceFloors: GET /v1/spaces/{space}/floors (admin, or a node of the
// cluster, signed as in forwarding: a re-arm gathering every node's): the
// floors this node keeps of the space, by section (empty: none kept).
func (s *Server) v1SpaceFloors(w http.ResponseWriter, r *http.Request) {
	answer := func(w http.ResponseWriter, r *http.Request) {
		f, err := s.svc.SpaceFloors(r.Context(), r.PathValue("space"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, floorsJSON{Space: r.PathValue("space"), Floors: append([]int64{}, f...)})
	}
	if pw, peer := s.peerOf(w, r); peer {
		answer(pw, r)
		pw.(*peerProof).flush()
		return
	}
	s.admin(answer)(w, r)
}

// v1CreateSpace: POST /v1/spaces {"name", "step", "sections", "slots"}
// (admin): zero or absent fields take the defaults.
func (s *Server) v1CreateSpace(w http.ResponseWriter, r *http.Request) {
	var in spaceJSON
	if err := decodeBody(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	sp, err := s.svc.CreateSpace(r.Context(), keyseq.Space{Name: in.Name, Step: in.Step, Sections: in.Sections, Slots: in.Slots})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/spaces/"+url.PathEscape(sp.Name))
	writeJSON(w, http.StatusCreated, spaceJSON{Name: sp.Name, Step: sp.Step, Sections: sp.Sections, Slots: sp.Slots})
}

// v1ListSpaces: GET /v1/spaces (admin): every space with this node's view.
func (s *Server) v1ListSpaces(w http.ResponseWriter, r *http.Request) {
	sections := false // the numbers of the sections held, on request: 1,024 integers a space
	if v := r.URL.Query().Get("sections"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.writeError(w, r, badRequest("sections=%q: true or false", v))
			return
		}
		sections = b
	}
	list, err := s.svc.ListSpaces(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]spaceJSON, len(list))
	for i, st := range list {
		out[i] = spaceJSON{Name: st.Name, Step: st.Step, Sections: st.Sections, Slots: st.Slots, Held: len(st.Held), Owners: st.Owners, Members: st.Members, Floor: st.Floor, Lost: st.Lost}
		if sections {
			out[i].HeldSections = st.Held
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"spaces": out})
}

// ProbeNode asks the node at addr for its probe name (keyseq.ProbeHeader of
// /healthz), following no redirect: keyseq.Spaces.CheckAdvertise's probe.
func ProbeNode(tlsConfig *tls.Config) keyseq.Prober {
	scheme := "http"
	tr := &http.Transport{DisableKeepAlives: true}
	if tlsConfig != nil {
		scheme, tr.TLSClientConfig = "https", tlsConfig
	}
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(ctx context.Context, addr string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/healthz", nil)
		if err != nil {
			return "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("it answered %s", resp.Status)
		}
		return resp.Header.Get(keyseq.ProbeHeader), nil
	}
}

// The headers of a forwarded request between the nodes of a cluster
// (keyseq.Peer): who forwards it, when, and its signature; the owner's
// answer carries its proof.
const (
	PeerHeader      = "X-Frond-Peer"
	PeerTimeHeader  = "X-Frond-Peer-Time"
	PeerSigHeader   = "X-Frond-Peer-Sig"
	PeerProofHeader = "X-Frond-Peer-Proof"
)

// SeqForwarder is the keyseq.Forwarder of a node whose peers answer HTTP
// (https when tlsConfig is set): GET /v1/seq/{space}/{key}?n= on the
// owner, marked forwarded and signed as the node (keyseq.Peer), without
// the caller's token (checked where the caller came in). It follows no
// redirect, keeps at most 32 connections to a peer, and takes an answer
// only with the owner's proof that a node of the cluster answered: a
// refusal comes back as its code alone (a code of frond's table), never
// with what the peer wrote.
func SeqForwarder(tlsConfig *tls.Config, timeout time.Duration) keyseq.Forwarder {
	pc := newPeerClient(tlsConfig, timeout)
	return func(ctx context.Context, addr, space, key string, count int64, peer keyseq.Peer) (int64, int64, error) {
		target := "/v1/seq/" + url.PathEscape(space) + "/" + PathSegment(key) + "?n=" + strconv.FormatInt(count, 10)
		resp, body, err := pc.get(ctx, addr, target, peer, 4<<10, true)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %w: %v", frond.ErrStoreUnavailable, keyseq.ErrOwnerUnreachable, err)
		}
		if resp.StatusCode != http.StatusOK {
			// The owner's refusal, as its code of frond's table only.
			var e errorBody
			code := frond.CodeStoreUnavailable
			if json.Unmarshal(body, &e) == nil {
				if _, ok := frond.LookupCode(e.Error.Code); ok {
					code = e.Error.Code
				}
			}
			fe := &api.Error{Code: code, Msg: fmt.Sprintf("keyed sequence space %q: the node that owns the key's section refused it (%s)", space, code)}
			if c, _ := frond.LookupCode(code); c.Retryable {
				fe.RetryAfter = time.Second
				if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && secs <= 60 {
					fe.RetryAfter = time.Duration(secs) * time.Second
				}
			}
			if code == frond.CodeStoreUnavailable || code == frond.CodeUnavailable {
				// Perhaps given away since, or the owner is stopping
				// (its sections given back): the caller reads the table
				// again.
				return 0, 0, fmt.Errorf("%w: %w", keyseq.ErrOwnerMoved, fe)
			}
			return 0, 0, fe
		}
		var out seqJSON
		if err := json.Unmarshal(body, &out); err != nil || out.First == nil || out.Last == nil || *out.Last-*out.First+1 != count {
			return 0, 0, fmt.Errorf("%w: %w: the owner's answer does not read as %d values", frond.ErrStoreUnavailable, keyseq.ErrOwnerUnreachable, count)
		}
		return *out.First, *out.Last, nil
	}
}

// SeqFloorsAsker is the keyseq.FloorsAsker of a node whose peers answer
// HTTP: GET /v1/spaces/{space}/floors on the node, signed as in
// forwarding, taken only with the node's proof.
func SeqFloorsAsker(tlsConfig *tls.Config, timeout time.Duration) keyseq.FloorsAsker {
	pc := newPeerClient(tlsConfig, timeout)
	return func(ctx context.Context, addr, space string, peer keyseq.Peer) ([]int64, error) {
		resp, body, err := pc.get(ctx, addr, "/v1/spaces/"+url.PathEscape(space)+"/floors", peer, 32<<20, false)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the node answered %d", resp.StatusCode)
		}
		var out floorsJSON
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, fmt.Errorf("the node's answer does not read as floors: %v", err)
		}
		return out.Floors, nil
	}
}

// peerClient sends requests signed as a node of the cluster (keyseq.Peer)
// to another node: it follows no redirect, keeps at most 32 connections a
// node, and takes an answer only with the node's proof.
type peerClient struct {
	scheme string
	c      *http.Client
}

func newPeerClient(tlsConfig *tls.Config, timeout time.Duration) *peerClient {
	pc := &peerClient{scheme: "http"}
	tr := &http.Transport{MaxIdleConnsPerHost: 32, MaxConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}
	if tlsConfig != nil {
		pc.scheme, tr.TLSClientConfig = "https", tlsConfig
	}
	pc.c = &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return pc
}

// get asks the node at addr for target (a path and query), signed as peer
// (marked forwarded when forwarded is set), and reads at most limit bytes
// of the answer; an error when the answer lacks the node's proof.
func (pc *peerClient) get(ctx context.Context, addr, target string, peer keyseq.Peer, limit int64, forwarded bool) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pc.scheme+"://"+addr+target, nil)
	if err != nil {
		return nil, nil, err
	}
	ts, sig := peer.Sign(keyseq.PeerRequest{Method: http.MethodGet, To: addr, Target: target}, time.Now())
	if forwarded {
		req.Header.Set(ForwardedHeader, "1")
	}
	req.Header.Set(PeerHeader, peer.Token)
	req.Header.Set(PeerTimeHeader, ts)
	req.Header.Set(PeerSigHeader, sig)
	resp, err := pc.c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	if !peer.CheckProof(sig, resp.StatusCode, body, resp.Header.Get(PeerProofHeader)) {
		// Not a node of this cluster (or none at all), or a body changed
		// on the way: nothing it says reaches the caller.
		return nil, nil, fmt.Errorf("the address answered %d without the proof of a node of this cluster", resp.StatusCode)
	}
	return resp, body, nil
}

// PathSegment escapes a key as one segment of a path that no one cleans
// away: url.PathEscape, and "." and ".." as %2E (issue 59).
func PathSegment(key string) string {
	if key == "." || key == ".." {
		return strings.Repeat("%2E", len(key))
	}
	return url.PathEscape(key)
}

// peerProof holds the answer to a request a node of the cluster signed
// until the handler is done (flush): its proof covers the status and the
// body, so that neither can be changed on the way (issue 69).
type peerProof struct {
	http.ResponseWriter
	peer   keyseq.Peer
	sig    string
	status int
	body   []byte
}

func (p *peerProof) WriteHeader(status int) {
	if p.status == 0 {
		p.status = status
	}
}

func (p *peerProof) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	if len(p.body)+len(b) > 64<<20 {
		return 0, fmt.Errorf("an answer to a node over 64 MiB")
	}
	p.body = append(p.body, b...)
	return len(b), nil
}

// flush writes the answer with its proof.
func (p *peerProof) flush() {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	p.Header().Set(PeerProofHeader, p.peer.Proof(p.sig, p.status, p.body))
	p.ResponseWriter.WriteHeader(p.status)
	p.ResponseWriter.Write(p.body)
}

func (p *peerProof) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// peerCtx is the verdict on a request's node signature, made once per
// request (verifyPeer): a signature is good for one request only.
type peerCtx struct {
	peer keyseq.Peer
	sig  string
	ok   bool
}

type peerCtxKey struct{}

// verifyPeer checks, once, a request that carries a node's signature and
// keeps the verdict in its context: a node of this cluster signed it for
// this node (its advertised address), with this method, path and query
// and an empty body, within PeerSkew, and its number was not seen before
// (keyseq.Replays). A request with no signature is returned as it is.
func (s *Server) verifyPeer(r *http.Request) *http.Request {
	sig := r.Header.Get(PeerSigHeader)
	if sig == "" {
		return r
	}
	v := &peerCtx{}
	r = r.WithContext(context.WithValue(r.Context(), peerCtxKey{}, v))
	sp := s.svc.Spaces()
	if sp == nil || r.ContentLength != 0 || r.Method != http.MethodGet {
		return r
	}
	peer, err := sp.Peer(r.Context())
	if err != nil {
		return r
	}
	req := keyseq.PeerRequest{Method: r.Method, To: sp.Me().Addr, Target: r.URL.RequestURI()}
	token, ts := r.Header.Get(PeerHeader), r.Header.Get(PeerTimeHeader)
	now := time.Now()
	if peer.Verify(token, ts, req, sig, now, nil) != nil {
		// Perhaps signed with the key in the store now, which this node
		// has not read (the store lost its data and a node made a new
		// one): read it again, at most once a second.
		fresh, changed := sp.RefreshPeer(r.Context())
		if !changed || fresh.Verify(token, ts, req, sig, now, nil) != nil {
			return r
		}
		peer = fresh
	}
	if peer.Verify(token, ts, req, sig, now, sp.Replays()) != nil {
		return r // seen before: a replay
	}
	v.peer, v.sig, v.ok = peer, sig, true
	return r
}

// fromPeer reports whether r was signed by a node of this cluster for this
// node (verifyPeer): the guard's limits per address were applied where
// its client came in, and the owner does not limit every client of a
// forwarding node as one address (issue 59: three clients within
// limits.rate made a bystander on the same forwarding node lose half its
// requests).
func (s *Server) fromPeer(r *http.Request) bool {
	v, _ := r.Context().Value(peerCtxKey{}).(*peerCtx)
	return v != nil && v.ok
}

// peerOf is, for a request a node of this cluster signed for this node
// (verifyPeer), the writer that holds its answer until flush and proves
// it, and true (its caller was checked where it came in); else w and
// false (it is a client's: no privilege).
func (s *Server) peerOf(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, bool) {
	v, _ := r.Context().Value(peerCtxKey{}).(*peerCtx)
	if v == nil || !v.ok {
		return w, false
	}
	return &peerProof{ResponseWriter: w, peer: v.peer, sig: v.sig}, true
}
