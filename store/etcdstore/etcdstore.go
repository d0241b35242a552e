// Package etcdstore is the frond.SegmentStore on etcd (v3 API). Each tag is
// one key, {prefix}tags/{name}, holding JSON {max_id, step, description,
// update_time}. Every change is a transaction that compares the key's
// ModRevision with the one read: two frond nodes never both apply a change
// based on the same value; the loser reads again and retries.
//
// URL: etcd://host:2379[,host2:2379...][?frond_prefix=/frond/&frond_timeout=5s&frond_retries=100]
package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/frond-id/frond/internal/etcdconn"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	_ frond.PlacedStore  = (*Store)(nil)
	_ frond.SegmentStore = (*Store)(nil)
	_ frond.Pinger       = (*Store)(nil)
)

// Store is an etcd segment store.
type Store struct {
	c         *clientv3.Client
	prefix    string
	timeout   time.Duration
	retries   int
	endpoints []string
	url       etcdconn.URL // its user and secrets (every error is masked with them)
}

type value struct {
	MaxID       int64     `json:"max_id"`
	Step        int64     `json:"step"`
	Description string    `json:"description,omitempty"`
	UpdateTime  time.Time `json:"update_time"`
	Mode        string    `json:"mode,omitempty"`    // frond.Tag.Mode: empty for segment tags
	Mapping     string    `json:"mapping,omitempty"` // frond.Tag.Mapping: empty for plain numbers
}

// Open connects to the etcd cluster of rawURL.
// Check parses rawURL as Open does, without contacting anything.
func Check(rawURL string) error {
	_, err := parse(rawURL)
	return err
}

// Open parses rawURL and makes a client.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	s, err := parse(rawURL)
	if err != nil {
		return nil, err
	}
	c, err := etcdconn.Client(ctx, s.url, s.timeout)
	if err != nil {
		return nil, err
	}
	s.c = c
	return s, nil
}

func parse(rawURL string) (*Store, error) {
	u, p, err := etcdconn.ParseStore(rawURL)
	if err != nil {
		return nil, err
	}
	return &Store{prefix: p.Prefix, timeout: p.Timeout, retries: p.Retries, endpoints: u.Endpoints, url: u}, nil
}

func (s *Store) key(tag string) string { return s.prefix + "tags/" + tag }

// deletedKey counts the deletions of tag in its version: each delete puts
// it (frond.DeletionCounter).
func (s *Store) deletedKey(tag string) string { return s.prefix + "deleted/" + tag }

// RaiseDeletions implements frond.DeletionCounter: puts of the count key
// until its version is n (deletions are an operator's rare act: a few
// puts), each a compare-and-set on the version read.
func (s *Store) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	key := s.deletedKey(tag)
	for {
		r, err := s.c.Get(c, key)
		if err != nil {
			return s.fail(fmt.Sprintf("raise the deletions of %q", tag), err)
		}
		v := int64(0)
		if len(r.Kvs) > 0 {
			v = r.Kvs[0].Version
		}
		if v >= n {
			return nil
		}
		if _, err := s.c.Txn(c).If(clientv3.Compare(clientv3.Version(key), "=", v)).Then(clientv3.OpPut(key, "")).Commit(); err != nil {
			return s.fail(fmt.Sprintf("raise the deletions of %q", tag), err)
		}
	}
}

// Deletions implements frond.DeletionCounter: the version of the count
// key.
func (s *Store) Deletions(ctx context.Context, tag string) (int64, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	r, err := s.c.Get(c, s.deletedKey(tag))
	if err != nil {
		return 0, s.fail(fmt.Sprintf("read the deletions of %q", tag), err)
	}
	if len(r.Kvs) == 0 {
		return 0, nil
	}
	return r.Kvs[0].Version, nil
}

func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Within(ctx, s.timeout)
}

func (s *Store) fail(op string, err error) error {
	if errors.Is(err, context.Canceled) && s.c.Ctx().Err() != nil {
		return fmt.Errorf("%s on etcd: %w", op, frond.ErrClosed)
	}
	return fmt.Errorf("%s on etcd %v: %w: %w", op, s.endpoints, frond.ErrStoreUnavailable, s.url.Mask(err))
}

// get reads a tag's value and its ModRevision (0: absent).
func (s *Store) get(ctx context.Context, tag string) (value, int64, error) {
	r, err := s.c.Get(ctx, s.key(tag))
	if err != nil {
		return value{}, 0, err
	}
	if len(r.Kvs) == 0 {
		return value{}, 0, nil
	}
	var v value
	if err := json.Unmarshal(r.Kvs[0].Value, &v); err != nil {
		return value{}, 0, fmt.Errorf("tag %q holds %q, not frond's JSON: %w", tag, r.Kvs[0].Value, err)
	}
	return v, r.Kvs[0].ModRevision, nil
}

// placeKey holds the store's place (frond.Place.String), absent for a
// store alone.
func (s *Store) placeKey() string { return s.prefix + "place" }

// getAt reads a tag's value and its ModRevision (0: absent), and the
// store's place and its ModRevision, at one revision.
func (s *Store) getAt(ctx context.Context, tag string) (v value, rev int64, place string, placeRev int64, err error) {
	r, err := s.c.Txn(ctx).Then(clientv3.OpGet(s.key(tag)), clientv3.OpGet(s.placeKey())).Commit()
	if err != nil {
		return value{}, 0, "", 0, err
	}
	if kvs := r.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		place, placeRev = string(kvs[0].Value), kvs[0].ModRevision
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return value{}, 0, place, placeRev, nil
	}
	if err := json.Unmarshal(kvs[0].Value, &v); err != nil {
		return value{}, 0, "", 0, fmt.Errorf("tag %q holds %q, not frond's JSON: %w", tag, kvs[0].Value, err)
	}
	return v, kvs[0].ModRevision, place, placeRev, nil
}

// cas reads the tag, lets change compute the new value, and writes it if
// nobody wrote in between; it retries on contention.
func (s *Store) cas(ctx context.Context, tag string, change func(v value) (value, error)) (value, value, error) {
	return s.casAt(ctx, nil, tag, change)
}

// placeCheck is the check casAt makes of the place: frond.CheckPlace for
// an allocation, frond.CheckTagPlace for tag administration.
type placeCheck func(got string, at frond.Place) error

// casAt is cas, done only if the store is at *at (when at is not nil):
// the place is read with the tag, at one revision, and the write is
// conditional on neither having changed since, so a SwapPlace is before
// it or after it.
func (s *Store) casAt(ctx context.Context, at *frond.Place, tag string, change func(v value) (value, error)) (value, value, error) {
	return s.casChecked(ctx, at, frond.CheckPlace, tag, change)
}

// casChecked is casAt with check as the place's check.
func (s *Store) casChecked(ctx context.Context, at *frond.Place, check placeCheck, tag string, change func(v value) (value, error)) (value, value, error) {
	for attempt := 0; ; attempt++ {
		old, rev, place, placeRev, err := s.getAt(ctx, tag)
		if err != nil {
			return value{}, value{}, err
		}
		if at != nil {
			if err := check(place, *at); err != nil {
				return value{}, value{}, fmt.Errorf("tag %q on etcd %v: %w", tag, s.endpoints, err)
			}
		}
		if rev == 0 {
			return value{}, value{}, fmt.Errorf("tag %q: %w", tag, frond.ErrTagNotFound)
		}
		next, err := change(old)
		if err != nil {
			return value{}, value{}, err
		}
		next.UpdateTime = time.Now().UTC().Truncate(time.Millisecond)
		b, _ := json.Marshal(next)
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.key(tag)), "=", rev)}
		if at != nil {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.placeKey()), "=", placeRev))
		}
		r, err := s.c.Txn(ctx).If(cmps...).
			Then(clientv3.OpPut(s.key(tag), string(b))).Commit()
		if err != nil {
			return value{}, value{}, err
		}
		if r.Succeeded {
			return old, next, nil
		}
		if attempt >= s.retries {
			return value{}, value{}, fmt.Errorf("%w: tag %q: %d concurrent changes in a row; retry", frond.ErrStoreUnavailable, tag, attempt+1)
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6))))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return value{}, value{}, ctx.Err()
		}
	}
}

// isAnswer tells frond's own errors from etcd's.
func isAnswer(err error) bool {
	return errors.Is(err, frond.ErrTagNotFound) || errors.Is(err, frond.ErrTagExhausted) ||
		errors.Is(err, frond.ErrWouldReissue) || errors.Is(err, frond.ErrInvalidArgument) || errors.Is(err, frond.ErrStoreUnavailable) ||
		errors.Is(err, frond.ErrNotLeasable) || errors.Is(err, frond.ErrNotSequence)
}

// Allocate implements frond.SegmentStore: AllocateAt a store alone.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return s.AllocateAt(ctx, frond.Place{}, tag, step)
}

// AllocateAt implements frond.PlacedStore: one transaction, conditional on
// the tag and the store's place as read. It refuses a sequence tag
// (frond.ErrNotLeasable).
func (s *Store) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	return s.allocate(ctx, at, tag, step, false)
}

// AllocateIDs implements frond.SequenceStore: AllocateIDsAt a store alone.
func (s *Store) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return s.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

// AllocateIDsAt implements frond.PlacedStore: n IDs of a sequence tag, in
// AllocateAt's transaction.
func (s *Store) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d IDs: at least 1", frond.ErrInvalidArgument, n)
	}
	a, err := s.allocate(ctx, at, tag, n, true)
	if err != nil {
		return nil, err
	}
	return []frond.Range{a.Range}, nil
}

func (s *Store) allocate(ctx context.Context, at frond.Place, tag string, step int64, sequence bool) (frond.Allocation, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	old, next, err := s.casAt(c, &at, tag, func(v value) (value, error) {
		switch {
		case sequence && v.Mode != frond.ModeSequence:
			return v, fmt.Errorf("allocate %q: %w", tag, frond.ErrNotSequence)
		case !sequence && v.Mode == frond.ModeSequence:
			return v, fmt.Errorf("allocate %q: %w: it is a sequence tag, whose IDs are taken one store call at a time", tag, frond.ErrNotLeasable)
		}
		used := step
		if used <= 0 {
			used = v.Step
		}
		if v.MaxID > math.MaxInt64-used {
			return v, fmt.Errorf("allocate %q: max_id %d + step %d: %w", tag, v.MaxID, used, frond.ErrTagExhausted)
		}
		v.MaxID += used
		return v, nil
	})
	if err != nil {
		if isAnswer(err) {
			return frond.Allocation{}, err
		}
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	return frond.Allocation{Range: frond.Range{Start: old.MaxID, End: next.MaxID, Stride: 1}, Step: next.Step, Mapping: next.Mapping}, nil
}

// Place implements frond.PlacedStore.
func (s *Store) Place(ctx context.Context) (frond.Place, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	p, _, err := etcdconn.GetPlace(c, s.c, s.placeKey())
	if err != nil && !errors.Is(err, frond.ErrWrongPlace) {
		return frond.Place{}, s.fail("read the store's place", err)
	}
	return p, err
}

// identityKey holds the store's identity (frond.PlacedStore.Identity).
func (s *Store) identityKey() string { return s.prefix + "identity" }

// Identity implements frond.PlacedStore: the key, created if it is absent
// (etcdconn.CreateOrGet).
func (s *Store) Identity(ctx context.Context) (string, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	id, err := etcdconn.CreateOrGet(c, s.c, s.identityKey(), frond.NewIdentity())
	if err != nil {
		return "", s.fail("read the store's identity", err)
	}
	if !frond.ValidIdentity(id) {
		return "", fmt.Errorf("%w: the identity recorded in etcd %v (%s) reads %q", frond.ErrInvalidArgument, s.endpoints, s.identityKey(), id)
	}
	return id, nil
}

// SwapPlace implements frond.PlacedStore: a transaction conditional on the
// place's value (or its absence, for a store alone); every allocation is
// conditional on the place's revision, so it is before the swap or after.
func (s *Store) SwapPlace(ctx context.Context, old, p frond.Place) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	ok, err := etcdconn.SwapPlace(c, s.c, s.placeKey(), old, p)
	if err != nil {
		if errors.Is(err, frond.ErrInvalidArgument) {
			return err
		}
		return s.fail("change the store's place", err)
	}
	if ok {
		return nil
	}
	now, err := s.Place(ctx)
	if err != nil {
		return err
	}
	if now == old && old == p {
		return nil
	}
	return fmt.Errorf("%w: etcd %v is %s, not %s", frond.ErrPlaceChanged, s.endpoints, now.Describe(), old.Describe())
}

// errKept ends a ReturnTail's compare-and-set without a change.
var errKept = errors.New("max_id kept")

// ReturnTail implements frond.TailReturner: a compare-and-set on the tag's
// value, changed only if max_id is still to and the mapping still mapping.
func (s *Store) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	alone := frond.Place{}
	_, _, err := s.casAt(c, &alone, tag, func(v value) (value, error) {
		if v.MaxID != to || from >= to || v.Mode == frond.ModeSequence || v.Mapping != frond.StoredMapping(mapping) {
			return v, errKept
		}
		v.MaxID = from
		return v, nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errKept), errors.Is(err, frond.ErrTagNotFound), errors.Is(err, frond.ErrWrongPlace):
		return false, nil // a store in a set: nothing goes back
	}
	return false, s.fail(fmt.Sprintf("return the unused IDs of %q", tag), err)
}

func toTag(name string, v value) frond.Tag {
	return frond.Tag{Name: name, MaxID: v.MaxID, Step: v.Step, Description: v.Description, UpdatedAt: v.UpdateTime, Mode: v.Mode, Mapping: v.Mapping}
}

// Tag implements frond.SegmentStore.
func (s *Store) Tag(ctx context.Context, name string) (frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	v, rev, err := s.get(c, name)
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	if rev == 0 {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, frond.ErrTagNotFound)
	}
	return toTag(name, v), nil
}

// TagsAfter implements frond.TagPager: a range read of the keys after
// after's, by key (bytes), with a limit. A value that does not decode is
// skipped and the read goes on past it, so that a page is short only at
// the end.
func (s *Store) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	dir := s.prefix + "tags/"
	from := dir + after + "\x00" // the first key after after's
	if after == "" {
		from = dir
	}
	out := make([]frond.Tag, 0, limit)
	for len(out) < limit {
		r, err := s.c.Get(c, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir)), clientv3.WithLimit(int64(limit-len(out))),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return nil, s.fail("list tags", err)
		}
		for _, kv := range r.Kvs {
			var v value
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				continue
			}
			out = append(out, toTag(strings.TrimPrefix(string(kv.Key), dir), v))
		}
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		from = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
	return out, nil
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	r, err := s.c.Get(c, s.prefix+"tags/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	out := make([]frond.Tag, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		var v value
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			continue
		}
		out = append(out, toTag(strings.TrimPrefix(string(kv.Key), s.prefix+"tags/"), v))
	}
	return out, nil
}

// CreateTag implements frond.SegmentStore: CreateTagAt a store alone.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return s.CreateTagAt(ctx, frond.Place{}, t)
}

// tagPlace reads the store's place and checks tag administration at at
// against it (frond.CheckTagPlace): the place's ModRevision (0: absent)
// for the transaction to compare, or the refusal.
func (s *Store) tagPlace(ctx context.Context, at frond.Place, what string) (int64, error) {
	r, err := s.c.Get(ctx, s.placeKey())
	if err != nil {
		return 0, s.fail(what, err)
	}
	got, rev := "", int64(0)
	if len(r.Kvs) > 0 {
		got, rev = string(r.Kvs[0].Value), r.Kvs[0].ModRevision
	}
	if err := frond.CheckTagPlace(got, at); err != nil {
		return 0, fmt.Errorf("%s on etcd %v: %w", what, s.endpoints, err)
	}
	return rev, nil
}

// CreateTagAt implements frond.PlacedStore: one transaction, conditional on
// the tag's absence and the store's place as read.
func (s *Store) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	v := value{MaxID: t.MaxID, Step: t.Step, Description: t.Description, UpdateTime: time.Now().UTC().Truncate(time.Millisecond),
		Mode: frond.StoredMode(t.Mode), Mapping: frond.StoredMapping(t.Mapping)}
	b, _ := json.Marshal(v)
	what := fmt.Sprintf("create tag %q", t.Name)
	for attempt := 0; ; attempt++ {
		rev, err := s.tagPlace(c, at, what)
		if err != nil {
			return frond.Tag{}, err
		}
		r, err := s.c.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(s.key(t.Name)), "=", 0), clientv3.Compare(clientv3.ModRevision(s.placeKey()), "=", rev)).
			Then(clientv3.OpPut(s.key(t.Name), string(b))).
			Else(clientv3.OpGet(s.key(t.Name), clientv3.WithCountOnly())).Commit()
		if err != nil {
			return frond.Tag{}, s.fail(what, err)
		}
		if r.Succeeded {
			return toTag(t.Name, v), nil
		}
		if r.Responses[0].GetResponseRange().Count > 0 {
			return frond.Tag{}, fmt.Errorf("create %q: %w", t.Name, frond.ErrTagExists)
		}
		if attempt >= s.retries { // the place changed: read it again
			return frond.Tag{}, fmt.Errorf("%w: %s: the store's place changed under each of %d attempts", frond.ErrStoreUnavailable, what, attempt+1)
		}
	}
}

// UpdateTag implements frond.SegmentStore: UpdateTagAt a store alone.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

// UpdateTagAt implements frond.PlacedStore: one transaction, conditional on
// the tag and the store's place as read.
func (s *Store) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := u.Validate(); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	_, next, err := s.casChecked(c, &at, frond.CheckTagPlace, name, func(v value) (value, error) {
		t, err := u.Apply(toTag(name, v))
		return value{MaxID: t.MaxID, Step: t.Step, Description: t.Description, Mode: v.Mode, Mapping: t.Mapping}, err
	})
	if err != nil {
		if isAnswer(err) {
			return frond.Tag{}, err
		}
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	return toTag(name, next), nil
}

// DeleteTag implements frond.SegmentStore: DeleteTagAt a store alone.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	return s.DeleteTagAt(ctx, frond.Place{}, name)
}

// DeleteTagAt implements frond.PlacedStore: one transaction, conditional on
// the store's place as read.
func (s *Store) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	what := fmt.Sprintf("delete tag %q", name)
	for attempt := 0; ; attempt++ {
		rev, err := s.tagPlace(c, at, what)
		if err != nil {
			return err
		}
		// The deletion is counted (a put raises the count key's version)
		// only when the tag exists, in the same transaction.
		count := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(s.key(name)), ">", 0)}, []clientv3.Op{clientv3.OpPut(s.deletedKey(name), "")}, nil)
		r, err := s.c.Txn(c).If(clientv3.Compare(clientv3.ModRevision(s.placeKey()), "=", rev)).
			Then(count, clientv3.OpDelete(s.key(name))).Commit()
		if err != nil {
			return s.fail(what, err)
		}
		if r.Succeeded {
			if r.Responses[1].GetResponseDeleteRange().Deleted == 0 {
				return fmt.Errorf("delete %q: %w", name, frond.ErrTagNotFound)
			}
			return nil
		}
		if attempt >= s.retries {
			return fmt.Errorf("%w: %s: the store's place changed under each of %d attempts", frond.ErrStoreUnavailable, what, attempt+1)
		}
	}
}

// Ping implements frond.Pinger.
func (s *Store) Ping(ctx context.Context) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.c.Get(c, s.prefix+"ping", clientv3.WithCountOnly()); err != nil {
		return s.fail("ping", err)
	}
	return nil
}

// Close implements frond.SegmentStore.
func (s *Store) Close() error { return s.c.Close() }
