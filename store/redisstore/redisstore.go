// Package redisstore is the frond.SegmentStore on Redis. Each tag is two
// keys: {prefix}max:{tag}, a counter raised by INCRBY once per segment, and
// {prefix}tag:{tag}, a hash with step, description, update_time and, for a
// sequence tag, mode; the set
// {prefix}tags lists the tags. Every change that touches more than one key
// runs as one Lua script, so it is atomic.
//
// A Redis without AOF forgets its counters on a crash or restart (all of
// them with nothing on disk; those since the last snapshot with RDB only)
// and would hand out the same IDs again; so does an AOF not synced on every
// write (appendfsync everysec or no) when the host crashes: acknowledged
// INCRBYs not yet on disk are lost. Open refuses
// such a server (anything but appendonly yes with appendfsync always) unless the URL says frond_allow_volatile=true, and the store
// then reports the risk in Warnings (shown by /readyz).
//
// Replication is asynchronous: a replica promoted after a fail-over may lack
// the last INCRBYs, and the ranges they took would be handed out again.
// With frond_wait=N each allocation is followed, on the same connection, by
// WAIT N: its range is handed out only once N replicas acknowledged it (an
// allocation that N replicas did not acknowledge within frond_wait_timeout
// is skipped, never handed out). docs/stores.md says how to fail over
// safely; a node that finds a promoted replica behind refuses it
// (segment.Guard).
//
// URL: redis://[user:pass@]host:6379/0[?frond_prefix=frond:&frond_timeout=5s&frond_allow_volatile=true&frond_wait=1&frond_wait_timeout=1s]
// plus go-redis's own parameters (pool_size, ...).
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/redis/go-redis/v9"
)

var (
	_ frond.PlacedStore  = (*Store)(nil)
	_ frond.SegmentStore = (*Store)(nil)
	_ frond.Pinger       = (*Store)(nil)
	_ frond.Warner       = (*Store)(nil)
)

// Store is a Redis segment store.
type Store struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration
	where   string
	// wait is frond_wait: the replicas that must acknowledge an
	// allocation (WAIT) before its range is handed out; 0: none.
	wait        int
	waitTimeout time.Duration

	// The server's persistence, read at Open and again by Ping.
	watch redisutil.Watch
}

// storeRisk words the refusal and the warning of a volatile server.
var storeRisk = redisutil.Risk{
	Refusal: "frond would hand out the same IDs again",
	Warning: "IDs will be issued again after a Redis crash or restart",
	URL:     "store",
}

// Check parses rawURL as Open does, without contacting the server.
func Check(rawURL string) error {
	u, err := redisutil.Parse(rawURL, storeParams...)
	if err != nil {
		return err
	}
	_, _, err = waitOf(u)
	return err
}

// storeParams are the store's own frond_* parameters.
var storeParams = []string{"frond_prefix", "frond_wait", "frond_wait_timeout"}

// waitOf reads frond_wait (0 to 16 replicas) and frond_wait_timeout
// (default 1 s, at most 60 s, and below frond_timeout: WAIT blocks the
// connection's read for as long).
func waitOf(u redisutil.URL) (int, time.Duration, error) {
	n, timeout := 0, time.Second
	if v, ok := u.Params["frond_wait"]; ok {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 || n > 16 {
			return 0, 0, fmt.Errorf("%w: frond_wait=%q: the replicas each allocation waits for, 0 to 16", frond.ErrInvalidArgument, v)
		}
	}
	if v, ok := u.Params["frond_wait_timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond || d > time.Minute {
			return 0, 0, fmt.Errorf("%w: frond_wait_timeout=%q: a duration from 1ms to 1m", frond.ErrInvalidArgument, v)
		}
		timeout = d
	}
	if n > 0 && timeout >= u.Timeout {
		return 0, 0, fmt.Errorf("%w: frond_wait_timeout=%v must be below frond_timeout (%v): WAIT holds the connection's read for as long", frond.ErrInvalidArgument, timeout, u.Timeout)
	}
	return n, timeout, nil
}

// Open connects to the Redis of rawURL and checks that it persists data. A
// server that does not answer is an error wrapping frond.ErrStoreUnavailable;
// one that may lose frond's keys, frond.ErrInvalidArgument.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := redisutil.Parse(rawURL, storeParams...)
	if err != nil {
		return nil, err
	}
	s := &Store{prefix: "frond:", timeout: u.Timeout, where: u.Where, watch: redisutil.Watch{Risk: storeRisk}}
	if s.wait, s.waitTimeout, err = waitOf(u); err != nil {
		return nil, err
	}
	if v, ok := u.Params["frond_prefix"]; ok {
		s.prefix = v
	}
	if s.c, err = redisutil.Connect(ctx, u, &s.watch, s.where); err != nil {
		return nil, err
	}
	return s, nil
}

// Warnings implements frond.Warner: the server's persistence as last read
// (at Open, then by Ping).
func (s *Store) Warnings() []string { return s.watch.Warnings() }

func (s *Store) maxKey(tag string) string  { return s.prefix + "max:" + tag }
func (s *Store) metaKey(tag string) string { return s.prefix + "tag:" + tag }
func (s *Store) indexKey() string          { return s.prefix + "tags" }

// deletedKey counts the deletions of tag (frond.DeletionCounter).
func (s *Store) deletedKey(tag string) string { return s.prefix + "deleted:" + tag }

// KEYS: the count. ARGV: n. The count is n where it was below.
var raiseScript = redis.NewScript(`
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`)

// RaiseDeletions implements frond.DeletionCounter, in one script.
func (s *Store) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	if err := raiseScript.Run(c, s.c, []string{s.deletedKey(tag)}, n).Err(); err != nil {
		return s.fail(fmt.Sprintf("raise the deletions of %q", tag), err)
	}
	return nil
}

// Deletions implements frond.DeletionCounter.
func (s *Store) Deletions(ctx context.Context, tag string) (int64, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.c.Get(c, s.deletedKey(tag)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.fail(fmt.Sprintf("read the deletions of %q", tag), err)
	}
	return n, nil
}

func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return redisutil.Bound(ctx, s.timeout)
}

func (s *Store) fail(op string, err error) error { return redisutil.Fail(op, s.where, err) }

// KEYS: max, meta, place. ARGV: step (<= 0: the tag's), now (unix ms),
// the place asked at (frond.Place.String), "sequence" for a sequence tag's
// IDs or "" for a segment. Returns {status, max_id, step, mapping}: status 1 ok, 0
// not found, 2 overflow, 3 the counter key is missing while the tag exists;
// {4, place}: the store is at another place; 5 not a sequence tag; 6 a
// sequence tag asked for a segment.
var allocateScript = redis.NewScript(`
local place = redis.call('GET', KEYS[3]) or ''
if place ~= ARGV[3] and not (ARGV[3] == '' and string.match(place, '^0/1@%d+#?[a-z2-7]*$')) then return {4, place} end -- a set's only store serves a node alone
if redis.call('EXISTS', KEYS[2]) == 0 then return {0} end
local mode = redis.call('HGET', KEYS[2], 'mode')
if ARGV[4] == 'sequence' and mode ~= 'sequence' then return {5} end
if ARGV[4] ~= 'sequence' and mode == 'sequence' then return {6} end
if redis.call('EXISTS', KEYS[1]) == 0 then return {3} end -- counter lost (evicted?): INCRBY would restart at 0
local step = ARGV[1]
if tonumber(step) <= 0 then step = redis.call('HGET', KEYS[2], 'step') end
local ok = pcall(redis.call, 'INCRBY', KEYS[1], step)
if not ok then return {2} end
redis.call('HSET', KEYS[2], 'update_time', ARGV[2])
return {1, redis.call('GET', KEYS[1]), redis.call('HGET', KEYS[2], 'step'), redis.call('HGET', KEYS[2], 'mapping') or ''}
`)

// Allocate implements frond.SegmentStore: AllocateAt a store alone.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return s.AllocateAt(ctx, frond.Place{}, tag, step)
}

// AllocateAt implements frond.PlacedStore, in one script. It refuses a
// sequence tag (frond.ErrNotLeasable).
func (s *Store) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	return s.allocate(ctx, at, tag, step, false)
}

// AllocateIDs implements frond.SequenceStore: AllocateIDsAt a store alone.
func (s *Store) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return s.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

// AllocateIDsAt implements frond.PlacedStore: n IDs of a sequence tag by
// INCRBY, in the script of AllocateAt.
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
	if err := frond.CheckPlace(at.String(), at); err != nil {
		return frond.Allocation{}, err
	}
	mode := ""
	if sequence {
		mode = frond.ModeSequence
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.runAllocate(c, []string{s.maxKey(tag), s.metaKey(tag), s.placeKey()}, step, time.Now().UnixMilli(), at.String(), mode)
	if err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	switch res[0].(int64) {
	case 0:
		return frond.Allocation{}, fmt.Errorf("tag %q: %w", tag, frond.ErrTagNotFound)
	case 2:
		return frond.Allocation{}, fmt.Errorf("allocate %q: step %d: %w", tag, step, frond.ErrTagExhausted)
	case 3:
		return frond.Allocation{}, fmt.Errorf("%w: allocate %q: the counter key %s is missing although the tag exists (evicted or deleted?): "+
			"restore it (SET) above every ID issued before frond can hand out IDs of this tag again", frond.ErrStoreUnavailable, tag, s.maxKey(tag))
	case 4:
		got, _ := res[1].(string)
		return frond.Allocation{}, fmt.Errorf("allocate %q on %s: %w", tag, s.where, frond.CheckPlace(got, at))
	case 5:
		return frond.Allocation{}, fmt.Errorf("allocate %q: %w", tag, frond.ErrNotSequence)
	case 6:
		return frond.Allocation{}, fmt.Errorf("allocate %q: %w: it is a sequence tag, whose IDs are taken one store call at a time", tag, frond.ErrNotLeasable)
	}
	maxID, err1 := strconv.ParseInt(res[1].(string), 10, 64)
	tagStep, err2 := strconv.ParseInt(res[2].(string), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	used := step
	if used <= 0 {
		used = tagStep
	}
	mapping, _ := res[3].(string)
	return frond.Allocation{Range: frond.Range{Start: maxID - used, End: maxID, Stride: 1}, Step: tagStep, Mapping: mapping}, nil
}

// runAllocate runs allocateScript, followed on the same connection by WAIT
// when the store waits for replicas (frond_wait): an allocation that fewer
// replicas acknowledged is an error (its range is skipped, as after any
// answer in doubt), so a replica promoted after a fail-over holds every
// range handed out.
func (s *Store) runAllocate(ctx context.Context, keys []string, args ...any) ([]any, error) {
	if s.wait == 0 {
		return allocateScript.Run(ctx, s.c, keys, args...).Slice()
	}
	var run *redis.Cmd
	var wait *redis.Cmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		run = allocateScript.Eval(ctx, p, keys, args...)
		wait = p.Do(ctx, "WAIT", s.wait, s.waitTimeout.Milliseconds())
		return nil
	})
	res, rerr := run.Slice()
	if rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, err
	}
	if got, _ := wait.Int64(); res[0].(int64) == 1 && got < int64(s.wait) {
		return nil, fmt.Errorf("%w: %d of the %d replicas frond_wait asks for acknowledged the allocation within %v: its range is skipped", frond.ErrStoreUnavailable, got, s.wait, s.waitTimeout)
	}
	return res, nil
}

// KEYS: max, meta, place. ARGV: from, to, now, mapping. Returns 1 if
// max_id was to and the mapping mapping (and the store stands alone) and
// max_id is from now, else 0.
var returnTailScript = redis.NewScript(`
if (redis.call('GET', KEYS[3]) or '') ~= '' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if redis.call('HGET', KEYS[2], 'mode') == 'sequence' then return 0 end
if (redis.call('HGET', KEYS[2], 'mapping') or '') ~= ARGV[4] then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'update_time', ARGV[3])
return 1
`)

// ReturnTail implements frond.TailReturner, in one script.
func (s *Store) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	if from >= to {
		return false, nil
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	n, err := returnTailScript.Run(c, s.c, []string{s.maxKey(tag), s.metaKey(tag), s.placeKey()}, from, to, time.Now().UnixMilli(), frond.StoredMapping(mapping)).Int()
	if err != nil {
		return false, s.fail(fmt.Sprintf("return the unused IDs of %q", tag), err)
	}
	return n == 1, nil
}

// placeKey holds the store's place (frond.Place.String), absent for a
// store alone.
func (s *Store) placeKey() string { return s.prefix + "place" }

// Place implements frond.PlacedStore.
func (s *Store) Place(ctx context.Context) (frond.Place, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	return redisutil.GetPlace(c, s.c, s.placeKey(), s.where)
}

// identityKey holds the store's identity (frond.PlacedStore.Identity).
func (s *Store) identityKey() string { return s.prefix + "identity" }

// Identity implements frond.PlacedStore: SET NX, then GET, in one
// round trip (a concurrent first call's identity is kept).
func (s *Store) Identity(ctx context.Context) (string, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	id, err := redisutil.SetNXGet(c, s.c, s.identityKey(), frond.NewIdentity())
	if err != nil {
		return "", s.fail("read the store's identity", err)
	}
	if !frond.ValidIdentity(id) {
		return "", fmt.Errorf("%w: the identity recorded in %s (%s) reads %q", frond.ErrInvalidArgument, s.where, s.identityKey(), id)
	}
	return id, nil
}

// SwapPlace implements frond.PlacedStore, in one script
// (redisutil.SwapPlace): Redis runs one script at a time, so allocations
// are before it or after it.
func (s *Store) SwapPlace(ctx context.Context, old, p frond.Place) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	return redisutil.SwapPlace(c, s.c, s.placeKey(), s.where, old, p)
}

// read fetches tags by name in one round trip; missing ones are skipped.
func (s *Store) read(ctx context.Context, names []string) ([]frond.Tag, error) {
	pipe := s.c.Pipeline()
	maxes := make([]*redis.StringCmd, len(names))
	metas := make([]*redis.SliceCmd, len(names))
	for i, n := range names {
		maxes[i] = pipe.Get(ctx, s.maxKey(n))
		metas[i] = pipe.HMGet(ctx, s.metaKey(n), "step", "description", "update_time", "mode", "mapping")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var out []frond.Tag
	for i, n := range names {
		m, err := metas[i].Result()
		if err != nil || m[0] == nil {
			continue
		}
		t := frond.Tag{Name: n}
		t.MaxID, _ = maxes[i].Int64()
		t.Step, _ = strconv.ParseInt(m[0].(string), 10, 64)
		if d, ok := m[1].(string); ok {
			t.Description = d
		}
		if ms, ok := m[2].(string); ok {
			v, _ := strconv.ParseInt(ms, 10, 64)
			t.UpdatedAt = time.UnixMilli(v).UTC()
		}
		if mode, ok := m[3].(string); ok {
			t.Mode = mode
		}
		if mapping, ok := m[4].(string); ok {
			t.Mapping = mapping
		}
		out = append(out, t)
	}
	return out, nil
}

// Tag implements frond.SegmentStore.
func (s *Store) Tag(ctx context.Context, name string) (frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	tags, err := s.read(c, []string{name})
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	if len(tags) == 0 {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, frond.ErrTagNotFound)
	}
	return tags[0], nil
}

// TagsAfter implements frond.TagPager. The index of names is a set: its
// names are read whole (names only), the tags of the page alone.
func (s *Store) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	names, err := s.c.SMembers(c, s.indexKey()).Result()
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	slices.Sort(names)
	i, found := slices.BinarySearch(names, after)
	if found {
		i++
	}
	var out []frond.Tag
	for len(out) < limit && i < len(names) {
		// Tags deleted since the names were read are skipped: read on.
		next := names[i:min(len(names), i+limit-len(out))]
		i += len(next)
		tags, err := s.read(c, next)
		if err != nil {
			return nil, s.fail("list tags", err)
		}
		out = append(out, tags...)
	}
	return out, nil
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	names, err := s.c.SMembers(c, s.indexKey()).Result()
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	slices.Sort(names)
	tags, err := s.read(c, names)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	return tags, nil
}

// luaTagPlace is the check of tag administration at a place
// (frond.CheckTagPlace): the place in KEYS[place] is at, or begins with
// fence (frond.Place.FencePrefix, when at is a fence), or at is a store
// alone and the place the only store of a set, not fenced.
const luaTagPlace = `
local function tagPlace(key, at, fence)
  local place = redis.call('GET', key) or ''
  if fence ~= '' then return string.sub(place, 1, #fence) == fence end
  return place == at or (at == '' and string.match(place, '^0/1@%d+#?[a-z2-7]*$') ~= nil)
end
`

// KEYS: max, meta, index, place. ARGV: name, max_id, step, description, now,
// mode, mapping, the place asked at, its FencePrefix. Returns 1 created, 0 exists, -1 the
// store is at another place.
var createScript = redis.NewScript(luaTagPlace + `
if not tagPlace(KEYS[4], ARGV[8], ARGV[9]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'step', ARGV[3], 'description', ARGV[4], 'update_time', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[2], 'mode', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[2], 'mapping', ARGV[7]) end
redis.call('SADD', KEYS[3], ARGV[1])
return 1
`)

// CreateTag implements frond.SegmentStore: CreateTagAt a store alone.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return s.CreateTagAt(ctx, frond.Place{}, t)
}

// misplaced is the refusal of tag administration at at by a script that
// found the store at another place: the place as read now.
func (s *Store) misplaced(ctx context.Context, what string, at frond.Place) error {
	got, err := s.Place(ctx)
	if err != nil {
		return err
	}
	if err := frond.CheckTagPlace(got.String(), at); err != nil {
		return fmt.Errorf("%s on %s: %w", what, s.where, err)
	}
	return fmt.Errorf("%w: %s on %s: the store's place changed during the call; retry", frond.ErrWrongPlace, what, s.where)
}

// CreateTagAt implements frond.PlacedStore, in one script.
func (s *Store) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	t.Mode = frond.StoredMode(t.Mode)
	t.Mapping = frond.StoredMapping(t.Mapping)
	n, err := createScript.Run(c, s.c, []string{s.maxKey(t.Name), s.metaKey(t.Name), s.indexKey(), s.placeKey()},
		t.Name, t.MaxID, t.Step, t.Description, now.UnixMilli(), t.Mode, t.Mapping, at.String(), at.FencePrefix()).Int()
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("create tag %q", t.Name), err)
	}
	if n == -1 {
		return frond.Tag{}, s.misplaced(ctx, fmt.Sprintf("create %q", t.Name), at)
	}
	if n == 0 {
		return frond.Tag{}, fmt.Errorf("create %q: %w", t.Name, frond.ErrTagExists)
	}
	t.UpdatedAt = now
	return t, nil
}

// KEYS: max, meta, place. ARGV: step or "", description or "\0none", max_id
// or "", now, then for a change of mapping: the new mapping ("\0keep":
// none), and the max_id and mapping it was computed from, which must be
// those stored; then the place asked at and its FencePrefix. Returns 1 ok, 0 not found, 2
// max_id would go down, 3 counter missing, 4 the max_id or mapping moved
// since they were read, -1 the store is at another place.
// 64-bit values travel as strings (redisutil.LuaGE); INCRBY does the arithmetic.
var updateScript = redis.NewScript(redisutil.LuaGE + luaTagPlace + `
if not tagPlace(KEYS[3], ARGV[8], ARGV[9]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
if ARGV[5] ~= '\0keep' then
  if (redis.call('GET', KEYS[1]) or '') ~= ARGV[6] or (redis.call('HGET', KEYS[2], 'mapping') or '') ~= ARGV[7] then return 4 end
  if ARGV[5] == '' then redis.call('HDEL', KEYS[2], 'mapping') else redis.call('HSET', KEYS[2], 'mapping', ARGV[5]) end
end
if ARGV[3] ~= '' then
  local cur = redis.call('GET', KEYS[1])
  if not cur then return 3 end
  if ARGV[5] == '\0keep' and not ge(ARGV[3], cur) then return 2 end -- a change of mapping was checked as read (TagUpdate.Apply), compared above
  redis.call('SET', KEYS[1], ARGV[3])
end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[2], 'step', ARGV[1]) end
if ARGV[2] ~= '\0none' then redis.call('HSET', KEYS[2], 'description', ARGV[2]) end
redis.call('HSET', KEYS[2], 'update_time', ARGV[4])
return 1
`)

// UpdateTag implements frond.SegmentStore: UpdateTagAt a store alone.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

// UpdateTagAt implements frond.PlacedStore, in one script (after a read
// for a change of mapping).
func (s *Store) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := u.Validate(); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	step, desc, maxID := "", "\x00none", ""
	if u.Step != nil {
		step = strconv.FormatInt(*u.Step, 10)
	}
	if u.Description != nil {
		desc = *u.Description
	}
	if u.MaxID != nil {
		maxID = strconv.FormatInt(*u.MaxID, 10)
	}
	// A change of mapping is checked against the tag as read
	// (TagUpdate.Apply: the raise it needs), and made only if the tag is
	// still as read: compare and set, read again on a race.
	mapping, wasMax, wasMapping := "\x00keep", "", ""
	var n int
	for attempt := 0; ; attempt++ {
		if u.Mapping != nil {
			cur, err := s.Tag(ctx, name)
			if err != nil {
				return frond.Tag{}, err
			}
			if _, err := u.Apply(cur); err != nil {
				return frond.Tag{}, err
			}
			mapping, wasMax, wasMapping = frond.StoredMapping(*u.Mapping), strconv.FormatInt(cur.MaxID, 10), cur.Mapping
		}
		var err error
		n, err = updateScript.Run(c, s.c, []string{s.maxKey(name), s.metaKey(name), s.placeKey()}, step, desc, maxID, time.Now().UnixMilli(), mapping, wasMax, wasMapping, at.String(), at.FencePrefix()).Int()
		if err != nil {
			return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
		}
		if n != 4 {
			break
		}
		if attempt >= 16 {
			return frond.Tag{}, fmt.Errorf("%w: update %q: the tag changed under each of %d attempts", frond.ErrStoreUnavailable, name, attempt+1)
		}
	}
	switch n {
	case -1:
		return frond.Tag{}, s.misplaced(ctx, fmt.Sprintf("update %q", name), at)
	case 3:
		return frond.Tag{}, fmt.Errorf("%w: update %q: the counter key %s is missing although the tag exists", frond.ErrStoreUnavailable, name, s.maxKey(name))
	case 0:
		return frond.Tag{}, fmt.Errorf("update %q: %w", name, frond.ErrTagNotFound)
	case 2:
		cur, err := s.Tag(ctx, name)
		if err != nil {
			return frond.Tag{}, err
		}
		_, err = u.Apply(cur)
		if err == nil {
			err = fmt.Errorf("update %q: %w", name, frond.ErrWouldReissue)
		}
		return frond.Tag{}, err
	}
	return s.Tag(ctx, name)
}

// KEYS: max, meta, index, place. ARGV: name, the place asked at, its
// FencePrefix. Returns 1
// deleted, 0 not found, -1 the store is at another place.
var deleteScript = redis.NewScript(luaTagPlace + `
if not tagPlace(KEYS[4], ARGV[2], ARGV[3]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('INCR', KEYS[5])
return 1
`)

// DeleteTag implements frond.SegmentStore: DeleteTagAt a store alone.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	return s.DeleteTagAt(ctx, frond.Place{}, name)
}

// DeleteTagAt implements frond.PlacedStore, in one script.
func (s *Store) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	n, err := deleteScript.Run(c, s.c, []string{s.maxKey(name), s.metaKey(name), s.indexKey(), s.placeKey(), s.deletedKey(name)}, name, at.String(), at.FencePrefix()).Int()
	if err != nil {
		return s.fail(fmt.Sprintf("delete tag %q", name), err)
	}
	if n == -1 {
		return s.misplaced(ctx, fmt.Sprintf("delete %q", name), at)
	}
	if n == 0 {
		return fmt.Errorf("delete %q: %w", name, frond.ErrTagNotFound)
	}
	return nil
}

// Ping implements frond.Pinger.
func (s *Store) Ping(ctx context.Context) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	if err := s.c.Ping(c).Err(); err != nil {
		return s.fail("ping", err)
	}
	s.watch.Recheck(c, s.c)
	return nil
}

// Close implements frond.SegmentStore.
func (s *Store) Close() error { return s.c.Close() }
