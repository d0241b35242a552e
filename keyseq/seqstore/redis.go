package seqstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/frond-id/frond/keyseq"
)

// RedisSections is a keyseq.SpaceStore on Redis: per space, hashes of the
// sections' maxima, owners, owners' addresses and lease ends (field: the
// section), and of the members; one hash of the spaces. Every call is one
// Lua script, so one atomic step, and leases are counted on the Redis
// server's clock (TIME), as the Redis worker registry counts its. The
// server must keep its data across a restart (AOF, appendfsync always),
// or a section's maximum could go back and values be given twice: refused
// otherwise, unless frond_allow_volatile=true.
//
// Keys (prefix frond_prefix, default "frond:"): {prefix}seq:{space}:max,
// :owner, :addr, :until (µs of the server's clock), :member ("until
// addr" by token); {prefix}seq:spaces (a JSON definition by name).
type RedisSections struct {
	c       *redis.Client
	prefix  string
	timeout time.Duration
	where   string
	watch   redisutil.Watch
}

var (
	_ keyseq.SpaceStore = (*RedisSections)(nil)
	_ frond.Pinger      = (*RedisSections)(nil)
	_ frond.Warner      = (*RedisSections)(nil)
	_ frond.PlaceKeeper = (*RedisSections)(nil)
)

var seqRisk = redisutil.Risk{
	Refusal: "keyed sequences would hand out the same values again",
	Warning: "keyed sequence values will be given again after a Redis crash or restart",
	URL:     "sequences.store",
}

// OpenRedis opens the keyed sequence spaces on the Redis server of rawURL
// (redis:// or rediss://, with frond_prefix, frond_timeout,
// frond_allow_volatile).
func OpenRedis(ctx context.Context, rawURL string) (*RedisSections, error) {
	u, err := redisutil.Parse(rawURL, "frond_prefix")
	if err != nil {
		return nil, err
	}
	s := &RedisSections{prefix: "frond:", timeout: u.Timeout, where: u.Where, watch: redisutil.Watch{Risk: seqRisk}}
	if v, ok := u.Params["frond_prefix"]; ok {
		s.prefix = v
	}
	if s.c, err = redisutil.Connect(ctx, u, &s.watch, s.where); err != nil {
		return nil, err
	}
	return s, nil
}

// Warnings implements frond.Warner: the server's persistence as last read
// (at open, and again by Ping now and then).
func (s *RedisSections) Warnings() []string { return s.watch.Warnings() }

// Ping implements frond.Pinger, and reads the server's persistence again
// now and then (redisutil.Watch), as the segment and CosId Redis stores
// do: a later CONFIG SET appendonly no is said by /readyz (issue 58).
func (s *RedisSections) Ping(ctx context.Context) error {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	if err := s.c.Ping(c).Err(); err != nil {
		return redisutil.Fail("ping", s.where, err)
	}
	s.watch.Recheck(c, s.c)
	return nil
}

// Close releases the connections.
func (s *RedisSections) Close() error { return s.c.Close() }

func (s *RedisSections) keys(space string) []string {
	p := s.prefix + "seq:" + space + ":"
	return []string{p + "max", p + "owner", p + "addr", p + "until", p + "member", s.placeKey()}
}

// placeKey is the store's place, the segment store's on the same server
// and prefix ({prefix}place: redisstore): its lost-data fence
// (frond.Place.Lost) is refused by every take and raise, in their script.
func (s *RedisSections) placeKey() string { return s.prefix + "place" }

// Place implements frond.PlaceKeeper.
func (s *RedisSections) Place(ctx context.Context) (frond.Place, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	return redisutil.GetPlace(c, s.c, s.placeKey(), s.where)
}

// SwapPlace implements frond.PlaceKeeper.
func (s *RedisSections) SwapPlace(ctx context.Context, old, p frond.Place) error {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	return redisutil.SwapPlace(c, s.c, s.placeKey(), s.where, old, p)
}

func (s *RedisSections) run(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) ([]any, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	v, err := script.Run(c, s.c, keys, args...).Slice()
	if err != nil {
		return nil, redisutil.Fail(op, s.where, err)
	}
	return v, nil
}

// The scripts' common part: now in µs of the server's clock; raise(i)
// raises section i by ARGV step and answers its new maximum as a string
// (exact: Lua's numbers are doubles), or nil past 2^63-1.
const redisPrelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function int(x) return string.format('%.0f', x) end -- exact, never 1.7e+15
local function raise(i, step)
  if redis.call('HEXISTS', KEYS[1], i) == 0 then redis.call('HSET', KEYS[1], i, 1) end
  local ok = pcall(redis.call, 'HINCRBY', KEYS[1], i, step)
  if not ok then return nil end
  return redis.call('HGET', KEYS[1], i)
end
local function fenced()
  local p = redis.call('GET', KEYS[6]) or ''
  if string.find(p, '|lost:', 1, true) then return p end
  return nil
end
local function live(i, token)
  return redis.call('HGET', KEYS[2], i) == token and tonumber(redis.call('HGET', KEYS[4], i) or '0') > now
end
`

// ARGV: token, addr, ttl µs, step, sections... Answers {section, max, ...}
// for the sections taken; {-1} when one would pass 2^63-1 (none taken);
// {-2, place} when the store is fenced for lost data.
var takeScript = redis.NewScript(redisPrelude + `
local f = fenced()
if f then return {-2, f} end
local out = {}
for k = 5, #ARGV do
  local i = ARGV[k]
  local owner = redis.call('HGET', KEYS[2], i) or ''
  local untilv = tonumber(redis.call('HGET', KEYS[4], i) or '0')
  if owner == '' or untilv <= now or owner == ARGV[1] then
    local m = raise(i, ARGV[4])
    if not m then return {-1} end
    redis.call('HSET', KEYS[2], i, ARGV[1])
    redis.call('HSET', KEYS[3], i, ARGV[2])
    redis.call('HSET', KEYS[4], i, int(now + tonumber(ARGV[3])))
    table.insert(out, i)
    table.insert(out, m)
  end
end
return out
`)

// ARGV: token, step, sections... Answers {1, max...}, {0, section} when
// one is not the token's under a live lease, {-1} past 2^63-1, {-2,
// place} when the store is fenced for lost data.
var raiseOwnedScript = redis.NewScript(redisPrelude + `
local f = fenced()
if f then return {-2, f} end
for k = 3, #ARGV do
  if not live(ARGV[k], ARGV[1]) then return {0, ARGV[k]} end
end
local out = {1}
for k = 3, #ARGV do
  local m = raise(ARGV[k], ARGV[2])
  if not m then return {-1} end
  table.insert(out, m)
end
return out
`)

// ARGV: token, addr, ttl µs. Answers the sections renewed.
var renewScript = redis.NewScript(redisPrelude + `
local out = {}
local owners = redis.call('HGETALL', KEYS[2])
for k = 1, #owners, 2 do
  if owners[k+1] == ARGV[1] and live(owners[k], ARGV[1]) then
    redis.call('HSET', KEYS[4], owners[k], int(now + tonumber(ARGV[3])))
    table.insert(out, owners[k])
  end
end
local members = redis.call('HGETALL', KEYS[5])
for k = 1, #members, 2 do
  local untilv = tonumber(string.match(members[k+1], '^(%d+) ') or '0')
  if untilv <= now then redis.call('HDEL', KEYS[5], members[k]) end
end
redis.call('HSET', KEYS[5], ARGV[1], int(now + tonumber(ARGV[3])) .. ' ' .. ARGV[2])
return out
`)

// ARGV: token, "all" or "some", then with "some" section, maximum pairs.
// Ends the token's leases, each only at the maximum given (the lease it
// ends: a give-back that arrives after a later take ends nothing); with
// "all" every one of the token's and its membership.
var releaseScript = redis.NewScript(`
local function drop(i, max)
  if redis.call('HGET', KEYS[2], i) == ARGV[1] and (max == nil or redis.call('HGET', KEYS[1], i) == max) then
    redis.call('HDEL', KEYS[2], i)
    redis.call('HDEL', KEYS[3], i)
    redis.call('HDEL', KEYS[4], i)
  end
end
if ARGV[2] == 'all' then
  local owners = redis.call('HGETALL', KEYS[2])
  for k = 1, #owners, 2 do drop(owners[k], nil) end
  redis.call('HDEL', KEYS[5], ARGV[1])
else
  for k = 3, #ARGV, 2 do drop(ARGV[k], ARGV[k+1]) end
end
return {1}
`)

// ARGV: above (a decimal string), first section, last section. Raises
// every maximum of the sections below above to it.
var rearmScript = redis.NewScript(redisutil.LuaGE + `
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do
  local m = redis.call('HGET', KEYS[1], i) or '1'
  if not ge(m, ARGV[1]) then redis.call('HSET', KEYS[1], i, ARGV[1]) end
end
return {1}
`)

// Rearm implements keyseq.SpaceStore: a script every 10,000 sections.
func (s *RedisSections) Rearm(ctx context.Context, sp keyseq.Space, above int64) error {
	sp = sp.WithDefaults()
	for from := 0; from < sp.Sections; from += 10000 {
		if _, err := s.run(ctx, "re-arm the space", rearmScript, s.keys(sp.Name), strconv.FormatInt(max(above, 1), 10), from, min(from+10000, sp.Sections)-1); err != nil {
			return err
		}
	}
	return nil
}

// Answers {now, owners (flat), addrs (flat), untils (flat), members
// (flat), maxima (flat), place}.
var readScript = redis.NewScript(redisPrelude + `
return {int(now), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[5]), redis.call('HGETALL', KEYS[1]), redis.call('GET', KEYS[6]) or ''}
`)

// fencedAnswer is the refusal of a script that answered {-2, place}.
func fencedAnswer(space string, v []any) error {
	if len(v) == 2 {
		if st, err := redisInt(v[0]); err == nil && st == -2 {
			p, _ := v[1].(string)
			if err := keyseq.Fenced(space, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func sectionArgs(args []any, sections []int) []any {
	for _, i := range sections {
		args = append(args, i)
	}
	return args
}

func redisInt(v any) (int64, error) {
	switch x := v.(type) {
	case string:
		return strconv.ParseInt(x, 10, 64)
	case int64:
		return x, nil
	}
	return 0, fmt.Errorf("%w: redis answered %v (%T) for a number", frond.ErrStoreUnavailable, v, v)
}

// Take implements keyseq.LeaseStore.
func (s *RedisSections) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	v, err := s.run(ctx, "take sections", takeScript, s.keys(space), sectionArgs([]any{me.Token, me.Addr, ttl.Microseconds(), step}, slices.Sorted(slices.Values(sections)))...)
	if err != nil {
		return nil, err
	}
	if err := fencedAnswer(space, v); err != nil {
		return nil, err
	}
	if len(v) == 1 {
		return nil, fmt.Errorf("space %q: a section's maximum would pass 2^63-1: %w", space, frond.ErrTagExhausted)
	}
	out := make([]keyseq.Taken, 0, len(v)/2)
	for k := 0; k+1 < len(v); k += 2 {
		i, err1 := redisInt(v[k])
		m, err2 := redisInt(v[k+1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, keyseq.Taken{Section: int(i), Range: frond.Range{Start: m - step, End: m, Stride: 1}})
	}
	return out, nil
}

// RaiseOwned implements keyseq.LeaseStore.
func (s *RedisSections) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	v, err := s.run(ctx, "raise sections", raiseOwnedScript, s.keys(space), sectionArgs([]any{me.Token, step}, sections)...)
	if err != nil {
		return nil, err
	}
	if err := fencedAnswer(space, v); err != nil {
		return nil, err
	}
	status, err := redisInt(v[0])
	switch {
	case err != nil:
		return nil, err
	case status == 0:
		return nil, fmt.Errorf("space %q section %v: %w", space, v[1], keyseq.ErrNotOwner)
	case status < 0:
		return nil, fmt.Errorf("space %q: a section's maximum would pass 2^63-1: %w", space, frond.ErrTagExhausted)
	case len(v) != 1+len(sections):
		return nil, fmt.Errorf("%w: space %q: %d raises answered for %d sections", frond.ErrStoreUnavailable, space, len(v)-1, len(sections))
	}
	out := make([]frond.Range, len(sections))
	for k := range sections {
		m, err := redisInt(v[1+k])
		if err != nil {
			return nil, err
		}
		out[k] = frond.Range{Start: m - step, End: m, Stride: 1}
	}
	return out, nil
}

// Renew implements keyseq.LeaseStore.
func (s *RedisSections) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	v, err := s.run(ctx, "renew leases", renewScript, s.keys(space), me.Token, me.Addr, ttl.Microseconds())
	if err != nil {
		return nil, err
	}
	held := make([]int, 0, len(v))
	for _, x := range v {
		i, err := redisInt(x)
		if err != nil {
			return nil, err
		}
		held = append(held, int(i))
	}
	slices.Sort(held)
	return held, nil
}

// Release implements keyseq.LeaseStore, in one script.
func (s *RedisSections) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if give != nil && len(give) == 0 {
		return nil
	}
	args := []any{me.Token, "some"}
	if give == nil {
		args[1] = "all"
	}
	for _, g := range give {
		args = append(args, g.Section, strconv.FormatInt(g.Max, 10))
	}
	_, err := s.run(ctx, "give back sections", releaseScript, s.keys(space), args...)
	return err
}

// Read implements keyseq.LeaseStore.
func (s *RedisSections) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	v, err := s.run(ctx, "read the owners", readScript, s.keys(space))
	if err != nil {
		return keyseq.Table{}, err
	}
	if len(v) != 7 {
		return keyseq.Table{}, fmt.Errorf("%w: redis answered %d parts of a table", frond.ErrStoreUnavailable, len(v))
	}
	now, err := redisInt(v[0])
	if err != nil {
		return keyseq.Table{}, err
	}
	hash := func(x any) map[string]string {
		out := map[string]string{}
		l, _ := x.([]any)
		for k := 0; k+1 < len(l); k += 2 {
			a, _ := l[k].(string)
			b, _ := l[k+1].(string)
			out[a] = b
		}
		return out
	}
	owners, addrs, untils, members, maxima := hash(v[1]), hash(v[2]), hash(v[3]), hash(v[4]), hash(v[5])
	t := keyseq.Table{Owners: make([]keyseq.Owner, sections), Untils: make([]int64, sections), Holders: make([]string, sections), Maxima: make([]int64, sections)}
	t.Fence, _ = v[6].(string)
	for f, m := range maxima {
		i, err1 := strconv.Atoi(f)
		v, err2 := strconv.ParseInt(m, 10, 64)
		if err1 == nil && err2 == nil && i >= 0 && i < sections {
			t.Maxima[i] = v
		}
	}
	for f, tok := range owners {
		i, err1 := strconv.Atoi(f)
		until, err2 := strconv.ParseInt(untils[f], 10, 64)
		if err1 != nil || err2 != nil || i < 0 || i >= sections {
			continue
		}
		t.Untils[i], t.Holders[i] = until, tok
		if until > now {
			t.Owners[i] = keyseq.Owner{Token: tok, Addr: addrs[f]}
		}
	}
	for tok, v := range members { // "until addr"
		u, addr, _ := strings.Cut(v, " ")
		if until, err := strconv.ParseInt(u, 10, 64); err == nil && until > now {
			t.Members = append(t.Members, keyseq.Owner{Token: tok, Addr: addr})
		}
	}
	slices.SortFunc(t.Members, keyseq.CompareOwner)
	return t, nil
}

// spaceDef is a space's definition as kept in the spaces hash.
type spaceDef struct {
	Step     int64 `json:"step"`
	Sections int   `json:"sections"`
	Slots    int   `json:"slots"`
}

func (s *RedisSections) spacesKey() string { return s.prefix + "seq:spaces" }

// PeerKey implements keyseq.SpaceStore: SET NX, then GET.
func (s *RedisSections) PeerKey(ctx context.Context) ([]byte, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	v, err := redisutil.SetNXGet(c, s.c, s.prefix+"seq:peer-key", hex.EncodeToString(keyseq.NewPeerKey()))
	if err != nil {
		return nil, redisutil.Fail("read the peer key", s.where, err)
	}
	return keyseq.DecodePeerKey(v)
}

// CreateSpace implements keyseq.SpaceStore.
func (s *RedisSections) CreateSpace(ctx context.Context, sp keyseq.Space) error {
	sp = sp.WithDefaults()
	if err := sp.Validate(); err != nil {
		return err
	}
	js, _ := json.Marshal(spaceDef{Step: sp.Step, Sections: sp.Sections, Slots: sp.Slots})
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	ok, err := s.c.HSetNX(c, s.spacesKey(), sp.Name, js).Result()
	if err != nil {
		return redisutil.Fail("create a space", s.where, err)
	}
	if !ok {
		return fmt.Errorf("keyed sequence space %q: %w", sp.Name, frond.ErrTagExists)
	}
	return nil
}

// LookupSpace implements keyseq.SpaceStore.
func (s *RedisSections) LookupSpace(ctx context.Context, name string) (keyseq.Space, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	js, err := s.c.HGet(c, s.spacesKey(), name).Result()
	if errors.Is(err, redis.Nil) {
		return keyseq.Space{}, keyseq.SpaceNotFound(name)
	}
	if err != nil {
		return keyseq.Space{}, redisutil.Fail("read a space", s.where, err)
	}
	return decodeSpace(name, js)
}

// ListSpaces implements keyseq.SpaceStore.
func (s *RedisSections) ListSpaces(ctx context.Context) ([]keyseq.Space, error) {
	c, cancel := redisutil.Bound(ctx, s.timeout)
	defer cancel()
	all, err := s.c.HGetAll(c, s.spacesKey()).Result()
	if err != nil {
		return nil, redisutil.Fail("read the spaces", s.where, err)
	}
	out := make([]keyseq.Space, 0, len(all))
	for name, js := range all {
		sp, err := decodeSpace(name, js)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	keyseq.SortSpaces(out)
	return out, nil
}

func decodeSpace(name, js string) (keyseq.Space, error) {
	var d spaceDef
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		return keyseq.Space{}, fmt.Errorf("%w: space %q: %q", frond.ErrStoreUnavailable, name, js)
	}
	return keyseq.Space{Name: name, Step: d.Step, Sections: d.Sections, Slots: d.Slots}, nil
}
