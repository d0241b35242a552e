package cosidstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/redis/go-redis/v9"
)

// redisStore is the store on CosId's Redis keys. Each tag is CosId's
// counter, cosid:{<ns>.<tag>}.adder (a decimal string raised by INCRBY),
// and frond's hash beside it in the same hash slot,
// cosid:{<ns>.<tag>}.frond (step, description, update_time).
type redisStore struct {
	c       *redis.Client
	o       settings
	timeout time.Duration
	where   string
	watch   redisutil.Watch
}

var (
	_ frond.SegmentStore = (*redisStore)(nil)
	_ frond.Pinger       = (*redisStore)(nil)
	_ frond.Warner       = (*redisStore)(nil)
)

// redisRisk words the refusal and the warning of a server that may lose
// CosId's counters (redisutil.Risk).
var redisRisk = redisutil.Risk{
	Refusal: "frond and CosId would hand out the same IDs again",
	Warning: "IDs will be issued again after a Redis crash or restart",
	URL:     "store",
}

func checkRedis(server string) error {
	_, err := redisutil.Parse(server)
	return err
}

func openRedis(ctx context.Context, server string, o settings) (*redisStore, error) {
	u, err := redisutil.Parse(server)
	if err != nil {
		return nil, err
	}
	s := &redisStore{o: o, timeout: u.Timeout, where: "cosid+" + u.Where, watch: redisutil.Watch{Risk: redisRisk}}
	if s.c, err = redisutil.Connect(ctx, u, &s.watch, s.where); err != nil {
		return nil, err
	}
	return s, nil
}

// adderKey is CosId's counter of tag
// (SpringRedisIdSegmentDistributor: "cosid:" + hashTag(namespacedName) + ".adder").
func (s *redisStore) adderKey(tag string) string { return "cosid:{" + tag + "}.adder" }

// metaKey is frond's record of tag, in the counter's hash slot.
func (s *redisStore) metaKey(tag string) string { return "cosid:{" + tag + "}.frond" }

func (s *redisStore) fail(op string, err error) error { return redisutil.Fail(op, s.where, err) }

// The counter holds the last ID handed out (CosId's segment is
// (max-step, max]); every value travels as a decimal string (Lua's numbers
// are exact only to 2^53).
//
// KEYS: adder, meta. ARGV: step (<= 0: the tag's), the default step, now
// (unix seconds). Returns {1, last, step}; {0}: no counter; {2}: the raise
// would pass highest; {3, last}: a negative counter; {4}: frond's record
// without the counter (CosId's key deleted or evicted).
var allocateScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  if redis.call('EXISTS', KEYS[2]) == 1 then return {4} end
  return {0}
end
if string.sub(v, 1, 1) == '-' then return {3, v} end
local tagStep = redis.call('HGET', KEYS[2], 'step') or ARGV[2]
local step = ARGV[1]
if tonumber(step) <= 0 then step = tagStep end
local ok = pcall(redis.call, 'INCRBY', KEYS[1], step)
if not ok then return {2} end
local last = redis.call('GET', KEYS[1])
if last == '9223372036854775807' then -- max_id, last+1, would not be an int64
  redis.call('DECRBY', KEYS[1], step)
  return {2}
end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], 'update_time', ARGV[3]) end
return {1, last, tagStep}
`)

// Allocate implements frond.SegmentStore: CosId's INCRBY of the counter by
// the step, in a script that first refuses a missing counter (INCRBY
// alone would make it at 0, below every ID handed out).
func (s *redisStore) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	if err := checkName(tag); err != nil {
		return frond.Allocation{}, err
	}
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	res, err := allocateScript.Run(c, s.c, []string{s.adderKey(tag), s.metaKey(tag)}, step, s.o.step, time.Now().Unix()).Slice()
	if err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	switch res[0].(int64) {
	case 0:
		return frond.Allocation{}, missing(tag)
	case 2:
		return frond.Allocation{}, fmt.Errorf("allocate %q: step %d: %w", tag, step, frond.ErrTagExhausted)
	case 3:
		return frond.Allocation{}, fmt.Errorf("%w: allocate %q: CosId's counter %s is negative (%v): frond hands out no negative IDs", frond.ErrStoreUnavailable, tag, s.adderKey(tag), res[1])
	case 4:
		return frond.Allocation{}, fmt.Errorf("%w: allocate %q: CosId's counter %s is missing although frond's record %s exists (deleted or evicted?): "+
			"restore it (SET) at or above every ID handed out before; delete the tag to make it again", frond.ErrStoreUnavailable, tag, s.adderKey(tag), s.metaKey(tag))
	}
	last, err1 := strconv.ParseInt(res[1].(string), 10, 64)
	tagStep, err2 := strconv.ParseInt(res[2].(string), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	used := step
	if used <= 0 {
		used = tagStep
	}
	return frond.Allocation{Range: segment(last, used), Step: tagStep}, nil
}

// read reads tag's counter and record in one round trip; found is false
// when the counter is missing.
func (s *redisStore) read(ctx context.Context, tag string) (t frond.Tag, found bool, err error) {
	pipe := s.c.Pipeline()
	get := pipe.Get(ctx, s.adderKey(tag))
	meta := pipe.HMGet(ctx, s.metaKey(tag), "step", "description", "update_time")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return t, false, err
	}
	v, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	last, err := strconv.ParseInt(v, 10, 64)
	if err != nil || last < 0 {
		return t, false, fmt.Errorf("CosId's counter %s holds %q, not a count", s.adderKey(tag), v)
	}
	t = frond.Tag{Name: tag, MaxID: maxIDOf(min(last, highest)), Step: s.o.step}
	vals := meta.Val()
	if st, ok := vals[0].(string); ok {
		if n, err := strconv.ParseInt(st, 10, 64); err == nil && n >= 1 {
			t.Step = n
		}
	}
	if d, ok := vals[1].(string); ok {
		t.Description = d
	}
	if u, ok := vals[2].(string); ok {
		if n, err := strconv.ParseInt(u, 10, 64); err == nil && n > 0 {
			t.UpdatedAt = time.Unix(n, 0).UTC()
		}
	}
	return t, true, nil
}

// Tag implements frond.SegmentStore.
func (s *redisStore) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if err := checkName(name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	t, found, err := s.read(c, name)
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	if !found {
		return frond.Tag{}, missing(name)
	}
	return t, nil
}

// Tags implements frond.SegmentStore: CosId's counters, found by SCAN
// (CosId keeps no index of them).
func (s *redisStore) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	prefix, suffix := "cosid:{", "}.adder"
	var names []string
	iter := s.c.Scan(c, 0, prefix+"*"+suffix, 1000).Iterator()
	for iter.Next(c) {
		k := iter.Val()
		tag := strings.TrimSuffix(strings.TrimPrefix(k, prefix), suffix)
		if frond.ValidateTagName(tag) == nil && k == s.adderKey(tag) {
			names = append(names, tag)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, s.fail("list tags", err)
	}
	slices.Sort(names)
	names = slices.Compact(names) // SCAN may return a key twice
	out := make([]frond.Tag, 0, len(names))
	for _, name := range names {
		t, found, err := s.read(c, name)
		if err != nil {
			return nil, s.fail("list tags", err)
		}
		if found {
			out = append(out, t)
		}
	}
	return out, nil
}

// KEYS: adder, meta. ARGV: offset, step, description, now. CosId's
// initialisation (SETNX of the offset) and frond's record; 0 when the
// counter exists (left as it is).
var createScript = redis.NewScript(`
if redis.call('SETNX', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'step', ARGV[2], 'description', ARGV[3], 'update_time', ARGV[4])
return 1
`)

// CreateTag implements frond.SegmentStore: CosId's SETNX of the counter at
// the offset (max_id - 1) and frond's record, in one script. A counter that
// exists (CosId made it, or frond) is frond.ErrTagExists and stays as it is.
func (s *redisStore) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if err := plainOnly(t); err != nil {
		return frond.Tag{}, err
	}
	if err := checkName(t.Name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	n, err := createScript.Run(c, s.c, []string{s.adderKey(t.Name), s.metaKey(t.Name)}, lastOf(t.MaxID), t.Step, t.Description, time.Now().Unix()).Int()
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("create tag %q", t.Name), err)
	}
	if n == 0 {
		return frond.Tag{}, fmt.Errorf("create %q: %w (CosId's counter %s)", t.Name, frond.ErrTagExists, s.adderKey(t.Name))
	}
	return s.Tag(ctx, t.Name)
}

// KEYS: adder, meta. ARGV: the new counter ("" for none), step,
// description, now. The counter is only ever raised: set to the new value
// unless it is there already (CosId raised it meanwhile). 0 when the
// counter is missing.
var updateScript = redis.NewScript(redisutil.LuaGE + `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if ARGV[1] ~= '' and not ge(v, ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[2], 'step', ARGV[2], 'description', ARGV[3], 'update_time', ARGV[4])
return 1
`)

// UpdateTag implements frond.SegmentStore: the tag read, the update
// applied, and written by a script that never lowers the counter.
func (s *redisStore) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := checkUpdate(name, u); err != nil {
		return frond.Tag{}, err
	}
	if err := checkName(name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	cur, found, err := s.read(c, name)
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	if !found {
		return frond.Tag{}, missing(name)
	}
	next, err := u.Apply(cur)
	if err != nil {
		return frond.Tag{}, err
	}
	raise := ""
	if next.MaxID != cur.MaxID {
		raise = strconv.FormatInt(lastOf(next.MaxID), 10)
	}
	n, err := updateScript.Run(c, s.c, []string{s.adderKey(name), s.metaKey(name)}, raise, next.Step, next.Description, time.Now().Unix()).Int()
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	if n == 0 {
		return frond.Tag{}, missing(name)
	}
	return s.Tag(ctx, name)
}

// DeleteTag implements frond.SegmentStore: CosId's counter and frond's
// record. CosId's applications then start the name again at their offset
// (SETNX): deleting a name in use is an operator's decision.
func (s *redisStore) DeleteTag(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	pipe := s.c.TxPipeline()
	del := pipe.Del(c, s.adderKey(name))
	pipe.Del(c, s.metaKey(name))
	if _, err := pipe.Exec(c); err != nil {
		return s.fail(fmt.Sprintf("delete tag %q", name), err)
	}
	if del.Val() == 0 {
		return missing(name)
	}
	return nil
}

// Ping implements frond.Pinger, and reads the server's persistence again
// now and then (redisutil.Watch).
func (s *redisStore) Ping(ctx context.Context) error {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	if err := s.c.Ping(c).Err(); err != nil {
		return s.fail("ping", err)
	}
	s.watch.Recheck(c, s.c)
	return nil
}

// Warnings implements frond.Warner: the server's persistence as last read.
func (s *redisStore) Warnings() []string { return s.watch.Warnings() }

// Close implements frond.SegmentStore.
func (s *redisStore) Close() error { return s.c.Close() }

// String names the server without secrets.
func (s *redisStore) String() string { return s.where }
