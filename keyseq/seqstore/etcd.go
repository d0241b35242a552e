package seqstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/frond-id/frond/internal/etcdconn"
	"github.com/frond-id/frond/keyseq"
)

// EtcdSections is a keyseq.SpaceStore on etcd. A section's maximum is a key of
// its own ({prefix}seq/{space}/m/{section}, a decimal); its owner is a key
// ({prefix}seq/{space}/o/{section}: "token addr") attached to the owner
// node's etcd lease, which etcd deletes when the lease expires: the
// lease is counted on etcd's clock, as the etcd worker registry's are. A
// node's membership is a key on the same lease ({prefix}seq/{space}/n/
// {token}: its address). Every change is one transaction that compares
// what it read, tried again when another node changed it meanwhile.
//
// One etcd lease serves a node (a token) for every space: Renew keeps it
// alive (KeepAliveOnce) and grants a new one once it has expired; its TTL
// is the lease TTL rounded up to whole seconds (etcd's unit).
type EtcdSections struct {
	c       *clientv3.Client
	url     etcdconn.URL
	prefix  string
	timeout time.Duration
	retries int

	mu     sync.Mutex
	leases map[string]clientv3.LeaseID // by token
}

var (
	_ keyseq.SpaceStore = (*EtcdSections)(nil)
	_ frond.PlaceKeeper = (*EtcdSections)(nil)
)

// OpenEtcd opens the spaces on the etcd cluster of rawURL (etcd://host:port
// [,host:port]/?frond_prefix=&frond_timeout=&frond_retries=, as the store's).
func OpenEtcd(ctx context.Context, rawURL string) (*EtcdSections, error) {
	u, p, err := etcdconn.ParseStore(rawURL)
	if err != nil {
		return nil, err
	}
	s := &EtcdSections{url: u, prefix: p.Prefix, timeout: p.Timeout, retries: p.Retries, leases: map[string]clientv3.LeaseID{}}
	if s.c, err = etcdconn.Client(ctx, u, s.timeout); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the client.
func (s *EtcdSections) Close() error { return s.c.Close() }

func (s *EtcdSections) fail(op string, err error) error {
	if errors.Is(err, keyseq.ErrNotOwner) || errors.Is(err, frond.ErrTagExhausted) || errors.Is(err, frond.ErrInvalidArgument) {
		return err
	}
	return fmt.Errorf("%s on etcd %v: %w: %w", op, s.url.Endpoints, frond.ErrStoreUnavailable, s.url.Mask(err))
}

func (s *EtcdSections) space(space string) string { return s.prefix + "seq/" + space + "/" }
func (s *EtcdSections) maxKey(space string, i int) string {
	return fmt.Sprintf("%sm/%05d", s.space(space), i)
}
func (s *EtcdSections) ownerKey(space string, i int) string {
	return fmt.Sprintf("%so/%05d", s.space(space), i)
}
func (s *EtcdSections) memberKey(space, token string) string { return s.space(space) + "n/" + token }

// placeKey is the store's place, the segment store's under the same
// prefix ({prefix}place: etcdstore): every take and raise compares its
// revision and is refused while it is fenced for lost data.
func (s *EtcdSections) placeKey() string { return s.prefix + "place" }

// Place implements frond.PlaceKeeper.
func (s *EtcdSections) Place(ctx context.Context) (frond.Place, error) {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	p, _, err := etcdconn.GetPlace(c, s.c, s.placeKey())
	if err != nil && !errors.Is(err, frond.ErrWrongPlace) {
		return frond.Place{}, s.fail("read the store's place", err)
	}
	return p, err
}

// SwapPlace implements frond.PlaceKeeper.
func (s *EtcdSections) SwapPlace(ctx context.Context, old, p frond.Place) error {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	ok, err := etcdconn.SwapPlace(c, s.c, s.placeKey(), old, p)
	if err != nil {
		if errors.Is(err, frond.ErrInvalidArgument) {
			return err
		}
		return s.fail("change the store's place", err)
	}
	if !ok {
		now, err := s.Place(ctx)
		if err != nil {
			return err
		}
		if now != old || old != p {
			return fmt.Errorf("%w: etcd is %s, not %s", frond.ErrPlaceChanged, now.Describe(), old.Describe())
		}
	}
	return nil
}

// lease returns me's etcd lease, granted now if it has none.
func (s *EtcdSections) lease(ctx context.Context, me keyseq.Owner, ttl time.Duration) (clientv3.LeaseID, error) {
	s.mu.Lock()
	id, ok := s.leases[me.Token]
	s.mu.Unlock()
	if ok {
		return id, nil
	}
	g, err := s.c.Grant(ctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.leases[me.Token]; ok { // granted by another call meanwhile
		s.c.Revoke(context.WithoutCancel(ctx), g.ID)
		return id, nil
	}
	s.leases[me.Token] = g.ID
	return g.ID, nil
}

// forget drops me's lease if it is still id (expired: a new one next).
func (s *EtcdSections) forget(me keyseq.Owner, id clientv3.LeaseID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[me.Token] == id {
		delete(s.leases, me.Token)
	}
}

// state is what a transaction read of sections: each one's maximum and
// owner, with the revisions it compares.
type state struct {
	max      map[int]int64
	maxRev   map[int]int64 // ModRevision; 0: no key (a maximum of 1)
	owner    map[int]string
	ownerRev map[int]int64 // CreateRevision; 0: no live owner
	lease    map[int]clientv3.LeaseID
	place    string // the store's place (frond.Place.String)
	placeRev int64  // its ModRevision; 0: no key (a store alone)
}

func (s *EtcdSections) read(ctx context.Context, space string, sections []int) (state, error) {
	st := state{max: map[int]int64{}, maxRev: map[int]int64{}, owner: map[int]string{}, ownerRev: map[int]int64{}, lease: map[int]clientv3.LeaseID{}}
	ops := make([]clientv3.Op, 0, 2*len(sections)+1)
	for _, i := range sections {
		ops = append(ops, clientv3.OpGet(s.maxKey(space, i)), clientv3.OpGet(s.ownerKey(space, i)))
	}
	ops = append(ops, clientv3.OpGet(s.placeKey()))
	r, err := s.c.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return st, err
	}
	if kvs := r.Responses[2*len(sections)].GetResponseRange().Kvs; len(kvs) > 0 {
		st.place, st.placeRev = string(kvs[0].Value), kvs[0].ModRevision
	}
	for k, i := range sections {
		st.max[i] = 1
		if kvs := r.Responses[2*k].GetResponseRange().Kvs; len(kvs) > 0 {
			m, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
			if err != nil {
				return st, fmt.Errorf("%s holds %q, not a maximum", kvs[0].Key, kvs[0].Value)
			}
			st.max[i], st.maxRev[i] = m, kvs[0].ModRevision
		}
		if kvs := r.Responses[2*k+1].GetResponseRange().Kvs; len(kvs) > 0 {
			tok, _, _ := strings.Cut(string(kvs[0].Value), " ")
			st.owner[i], st.ownerRev[i], st.lease[i] = tok, kvs[0].CreateRevision, clientv3.LeaseID(kvs[0].Lease)
		}
	}
	return st, nil
}

// cmps are the comparisons that what was read of i is still so.
func (s *EtcdSections) cmps(space string, st state, i int) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(s.maxKey(space, i)), "=", st.maxRev[i]),
		clientv3.Compare(clientv3.CreateRevision(s.ownerKey(space, i)), "=", st.ownerRev[i]),
	}
}

// change runs a transaction built from a read of sections until it
// commits (another node's change in between: read again).
func (s *EtcdSections) change(ctx context.Context, op, space string, sections []int, build func(st state) ([]clientv3.Cmp, []clientv3.Op, error)) error {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	for range s.retries {
		st, err := s.read(c, space, sections)
		if err != nil {
			return s.fail(op, err)
		}
		cmps, ops, err := build(st)
		if err != nil || len(ops) == 0 {
			return err
		}
		// As read: a fence for lost data written since is not passed.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.placeKey()), "=", st.placeRev))
		r, err := s.c.Txn(c).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return s.fail(op, err)
		}
		if r.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("%s on etcd: %w: changed by others %d times in a row", op, frond.ErrStoreUnavailable, s.retries)
}

func raised(space string, st state, i int, step int64) (int64, error) {
	if st.max[i] > math.MaxInt64-step {
		return 0, fmt.Errorf("space %q section %d: the maximum would pass 2^63-1: %w", space, i, frond.ErrTagExhausted)
	}
	return st.max[i] + step, nil
}

// Take implements keyseq.LeaseStore.
func (s *EtcdSections) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	sorted := slices.Sorted(slices.Values(sections))
	out, err := s.take(c, space, sorted, me, ttl, step)
	if errors.Is(err, errLeaseGone) {
		out, err = s.take(c, space, sorted, me, ttl, step) // on a new lease: it runs from now
	}
	return out, err
}

// errLeaseGone: the node's etcd lease expired (a new one is granted on
// the next call).
var errLeaseGone = errors.New("the etcd lease expired")

func (s *EtcdSections) take(c context.Context, space string, sorted []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	id, err := s.lease(c, me, ttl)
	if err != nil {
		return nil, s.fail("take sections", err)
	}
	var out []keyseq.Taken
	err = s.change(c, "take sections", space, sorted, func(st state) ([]clientv3.Cmp, []clientv3.Op, error) {
		out = out[:0]
		if err := keyseq.Fenced(space, st.place); err != nil {
			return nil, nil, err
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for _, i := range sorted {
			if st.ownerRev[i] != 0 && st.owner[i] != me.Token {
				continue // a live lease of another node (etcd deletes expired ones)
			}
			m, err := raised(space, st, i, step)
			if err != nil {
				return nil, nil, err
			}
			cmps = append(cmps, s.cmps(space, st, i)...)
			ops = append(ops, clientv3.OpPut(s.maxKey(space, i), strconv.FormatInt(m, 10)),
				clientv3.OpPut(s.ownerKey(space, i), me.Token+" "+me.Addr, clientv3.WithLease(id)))
			out = append(out, keyseq.Taken{Section: i, Range: frond.Range{Start: m - step, End: m, Stride: 1}})
		}
		return cmps, ops, nil
	})
	if err != nil {
		if strings.Contains(err.Error(), "requested lease not found") {
			s.forget(me, id)
			return nil, fmt.Errorf("%w: %w", errLeaseGone, err)
		}
		return nil, err
	}
	return out, nil
}

// RaiseOwned implements keyseq.LeaseStore.
func (s *EtcdSections) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	out := make([]frond.Range, len(sections))
	err := s.change(ctx, "raise sections", space, sections, func(st state) ([]clientv3.Cmp, []clientv3.Op, error) {
		if err := keyseq.Fenced(space, st.place); err != nil {
			return nil, nil, err
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for k, i := range sections {
			if st.ownerRev[i] == 0 || st.owner[i] != me.Token {
				return nil, nil, fmt.Errorf("space %q section %d: %w", space, i, keyseq.ErrNotOwner)
			}
			m, err := raised(space, st, i, step)
			if err != nil {
				return nil, nil, err
			}
			cmps = append(cmps, s.cmps(space, st, i)...)
			ops = append(ops, clientv3.OpPut(s.maxKey(space, i), strconv.FormatInt(m, 10)))
			out[k] = frond.Range{Start: m - step, End: m, Stride: 1}
		}
		return cmps, ops, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Renew implements keyseq.LeaseStore: one keep-alive of me's lease (every space's
// sections and memberships at once), then the sections it holds; a lease
// that expired holds none, and a new one is granted for the membership.
func (s *EtcdSections) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	id, err := s.lease(c, me, ttl)
	if err != nil {
		return nil, s.fail("renew the lease", err)
	}
	if _, err := s.c.KeepAliveOnce(c, id); err != nil {
		if !strings.Contains(err.Error(), "requested lease not found") {
			return nil, s.fail("renew the lease", err)
		}
		// Expired: its keys are gone. A new lease for the membership.
		s.forget(me, id)
		if id, err = s.lease(c, me, ttl); err != nil {
			return nil, s.fail("renew the lease", err)
		}
	}
	if _, err := s.c.Put(c, s.memberKey(space, me.Token), me.Addr, clientv3.WithLease(id)); err != nil {
		return nil, s.fail("renew the membership", err)
	}
	r, err := s.c.Get(c, s.space(space)+"o/", clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail("read the owners", err)
	}
	var held []int
	for _, kv := range r.Kvs {
		tok, _, _ := strings.Cut(string(kv.Value), " ")
		i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), s.space(space)+"o/"))
		if err == nil && tok == me.Token && clientv3.LeaseID(kv.Lease) == id {
			held = append(held, i)
		}
	}
	slices.Sort(held)
	return held, nil
}

// Release implements keyseq.LeaseStore.
func (s *EtcdSections) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if give != nil && len(give) == 0 {
		return nil
	}
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	sections := keyseq.GivenSections(give)
	if give == nil {
		r, err := s.c.Get(c, s.space(space)+"o/", clientv3.WithPrefix())
		if err != nil {
			return s.fail("give back sections", err)
		}
		for _, kv := range r.Kvs {
			if i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), s.space(space)+"o/")); err == nil {
				sections = append(sections, i)
			}
		}
		if _, err := s.c.Delete(c, s.memberKey(space, me.Token)); err != nil {
			return s.fail("end the membership", err)
		}
	}
	for k, i := range sections {
		// Only if still me's (the value names the token), and at the
		// maximum given: the lease this give-back ends, not a later take.
		key := s.ownerKey(space, i)
		r, err := s.c.Get(c, key)
		if err != nil {
			return s.fail("give back sections", err)
		}
		if len(r.Kvs) == 0 {
			continue
		}
		if tok, _, _ := strings.Cut(string(r.Kvs[0].Value), " "); tok != me.Token {
			continue
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", r.Kvs[0].ModRevision)}
		if give != nil {
			cmps = append(cmps, clientv3.Compare(clientv3.Value(s.maxKey(space, i)), "=", strconv.FormatInt(give[k].Max, 10)))
		}
		if _, err := s.c.Txn(c).If(cmps...).Then(clientv3.OpDelete(key)).Commit(); err != nil {
			return s.fail("give back sections", err)
		}
	}
	return nil
}

// etcdBatch is how many sections one transaction reads or changes: two
// keys each and the store's place, under etcd's default bound of 128
// operations in a transaction (--max-txn-ops).
const etcdBatch = 60

// MaxSections implements keyseq.SectionBatcher: a node takes at most
// etcdBatch sections in one call (issue 69: a take of 64 or more failed,
// "too many operations in txn request", every round).
func (s *EtcdSections) MaxSections() int { return etcdBatch }

// Rearm implements keyseq.SpaceStore: transactions of etcdBatch sections,
// each comparing what it read.
func (s *EtcdSections) Rearm(ctx context.Context, sp keyseq.Space, above int64) error {
	sp = sp.WithDefaults()
	for from := 0; from < sp.Sections; from += etcdBatch {
		var chunk []int
		for i := from; i < min(from+etcdBatch, sp.Sections); i++ {
			chunk = append(chunk, i)
		}
		err := s.change(ctx, "re-arm the space", sp.Name, chunk, func(st state) ([]clientv3.Cmp, []clientv3.Op, error) {
			var cmps []clientv3.Cmp
			var ops []clientv3.Op
			for _, i := range chunk {
				if st.max[i] < above {
					cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.maxKey(sp.Name, i)), "=", st.maxRev[i]))
					ops = append(ops, clientv3.OpPut(s.maxKey(sp.Name, i), strconv.FormatInt(above, 10)))
				}
			}
			return cmps, ops, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Read implements keyseq.LeaseStore.
func (s *EtcdSections) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	r, err := s.c.Txn(c).Then(clientv3.OpGet(s.space(space)+"o/", clientv3.WithPrefix()), clientv3.OpGet(s.space(space)+"n/", clientv3.WithPrefix()),
		clientv3.OpGet(s.space(space)+"m/", clientv3.WithPrefix()), clientv3.OpGet(s.placeKey())).Commit()
	if err != nil {
		return keyseq.Table{}, s.fail("read the owners", err)
	}
	t := keyseq.Table{Owners: make([]keyseq.Owner, sections), Maxima: make([]int64, sections)}
	if kvs := r.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 {
		t.Fence = string(kvs[0].Value)
	}
	for _, kv := range r.Responses[2].GetResponseRange().Kvs {
		i, err1 := strconv.Atoi(strings.TrimPrefix(string(kv.Key), s.space(space)+"m/"))
		m, err2 := strconv.ParseInt(string(kv.Value), 10, 64)
		if err1 == nil && err2 == nil && i >= 0 && i < sections {
			t.Maxima[i] = m
		}
	}
	for _, kv := range r.Responses[0].GetResponseRange().Kvs {
		i, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), s.space(space)+"o/"))
		if err != nil || i < 0 || i >= sections {
			continue
		}
		tok, addr, _ := strings.Cut(string(kv.Value), " ")
		t.Owners[i] = keyseq.Owner{Token: tok, Addr: addr}
	}
	for _, kv := range r.Responses[1].GetResponseRange().Kvs {
		t.Members = append(t.Members, keyseq.Owner{Token: strings.TrimPrefix(string(kv.Key), s.space(space)+"n/"), Addr: string(kv.Value)})
	}
	slices.SortFunc(t.Members, keyseq.CompareOwner)
	return t, nil
}

func (s *EtcdSections) spaceKey(name string) string { return s.prefix + "seq-spaces/" + name }

// CreateSpace implements keyseq.SpaceStore.
func (s *EtcdSections) CreateSpace(ctx context.Context, sp keyseq.Space) error {
	sp = sp.WithDefaults()
	if err := sp.Validate(); err != nil {
		return err
	}
	js, _ := json.Marshal(spaceDef{Step: sp.Step, Sections: sp.Sections, Slots: sp.Slots})
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	r, err := s.c.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(s.spaceKey(sp.Name)), "=", 0)).Then(clientv3.OpPut(s.spaceKey(sp.Name), string(js))).Commit()
	if err != nil {
		return s.fail("create a space", err)
	}
	if !r.Succeeded {
		return fmt.Errorf("keyed sequence space %q: %w", sp.Name, frond.ErrTagExists)
	}
	return nil
}

// PeerKey implements keyseq.SpaceStore: put if absent, then read, in one
// transaction.
func (s *EtcdSections) PeerKey(ctx context.Context) ([]byte, error) {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	key := s.prefix + "seq-peer-key"
	if _, err := s.c.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, hex.EncodeToString(keyseq.NewPeerKey()))).Commit(); err != nil {
		return nil, s.fail("read the peer key", err)
	}
	g, err := s.c.Get(c, key)
	if err != nil {
		return nil, s.fail("read the peer key", err)
	}
	if len(g.Kvs) == 0 {
		return nil, fmt.Errorf("%w: the peer key %s vanished", frond.ErrStoreUnavailable, key)
	}
	return keyseq.DecodePeerKey(string(g.Kvs[0].Value))
}

// LookupSpace implements keyseq.SpaceStore.
func (s *EtcdSections) LookupSpace(ctx context.Context, name string) (keyseq.Space, error) {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	r, err := s.c.Get(c, s.spaceKey(name))
	if err != nil {
		return keyseq.Space{}, s.fail("read a space", err)
	}
	if len(r.Kvs) == 0 {
		return keyseq.Space{}, keyseq.SpaceNotFound(name)
	}
	return decodeSpace(name, string(r.Kvs[0].Value))
}

// ListSpaces implements keyseq.SpaceStore.
func (s *EtcdSections) ListSpaces(ctx context.Context) ([]keyseq.Space, error) {
	c, cancel := deadline.Within(ctx, s.timeout)
	defer cancel()
	r, err := s.c.Get(c, s.prefix+"seq-spaces/", clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail("read the spaces", err)
	}
	out := make([]keyseq.Space, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		sp, err := decodeSpace(strings.TrimPrefix(string(kv.Key), s.prefix+"seq-spaces/"), string(kv.Value))
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	keyseq.SortSpaces(out)
	return out, nil
}
