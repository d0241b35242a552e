// Package redisregistry is the snowflake worker registry on Redis, seed 001's
// design made safe: atomic Lua scripts bind a worker ID to this node's
// datacenter and address, and a live key with a TTL, renewed while the node
// runs, marks the ID as held. It is a registry.Backend: which ID, from which
// time and when it is lost is registry.Protocol's; this package maps it
// onto Redis.
//
// # Keys
//
// Under the prefix p (frond_prefix, default frond:worker:) and datacenter dc
// (the node's, snowflake.datacenter; frond_dc, when given, must be the
// same: a datacenter number is accepted only with the layout's datacenter
// bits, which keep two datacenters' IDs apart):
//
//	{p}{dc}:addr:{host:port}  the worker ID bound to an identity (no TTL)
//	{p}{dc}:counter           how many IDs were ever handed out: the next new ID (no TTL)
//	{p}{dc}:owner:{id}        the identity the ID is bound to (no TTL)
//	{p}{dc}:last:{id}         the latest time saved for the ID, in Unix nanoseconds (no TTL)
//	{p}{dc}:live:{id}         a random token of the holder, with PX = LeaseTTL, renewed
//	{p}{dc}:claim:{id}        the token of the ID's last claim (no TTL)
//
// # Modes
//
// frond_mode=fixed (the default, seed 001's script) binds an ID to an
// address for good: a new ID comes from INCR of the counter, checked against
// the layout's maximum first (so it never wraps around as seed 001's 5-bit
// ID does at 32), and is bound to the address; a node whose ID is bound
// waits for it (it is never recycled, and a fleet whose addresses change
// runs out).
//
// frond_mode=lease is for environments where addresses change (Kubernetes):
// once the counter is exhausted, the ID with no live key whose last time is
// the oldest is recycled (registry.Protocol's rule), and the claim moves its
// owner and addr keys to the new holder; the old holder, if it comes back,
// is given another ID.
//
// # Guarantees
//
//   - The live key is the lock: a claim is one script that compares the
//     ID's owner, last time and last claim with what was read and requires
//     the live key to be absent (or, to continue this process's own claim,
//     to hold its token), so two live nodes never hold one ID.
//   - The holder renews the live key every LeaseTTL/3, comparing the token
//     first; saves keep the latest time (compared exactly, as decimal
//     strings) only while the live key holds this node's token; a release
//     records the time exactly and deletes the live key.
//
// A Redis that keeps nothing on disk forgets the bindings, the counter and
// the last times on restart, and would give a live node's ID to another node
// and let timestamps repeat. The first Acquire refuses such a server (an
// error wrapping frond.ErrInvalidArgument) unless the URL says
// frond_allow_volatile=true; the risk is then reported by Warnings.
//
// # Caveats
//
// Open does not contact the server: the persistence check and every error
// of an unreachable server (frond.ErrStoreUnavailable) come with Acquire.
// The scripts build the keys of other IDs themselves, so the registry needs
// one Redis (with replicas if wanted), not Redis Cluster. Replication is
// asynchronous: a failover to a replica that missed the last writes can lose
// a binding or a saved time, as a restart without persistence would
// (docs/registries.md says how to fail over safely). An AOF counts as
// persistence only with appendfsync always: with everysec or no, a crash of
// the host loses acknowledged writes too. A
// volatile-* maxmemory-policy may evict live keys: the holder then loses its
// ID (safely) and acquires it again.
//
// URL: redis://[user:pass@]host:6379/0[?frond_prefix=frond:worker:&frond_dc=0&frond_mode=fixed|lease&frond_timeout=5s&frond_allow_volatile=true]
// (also rediss://), plus go-redis's own parameters (pool_size, ...).
package redisregistry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/frond-id/frond/registry"
	"github.com/redis/go-redis/v9"
)

var (
	_ registry.Backend = (*Backend)(nil)
	_ frond.Warner     = (*Backend)(nil)
)

// Modes of frond_mode.
const (
	ModeFixed = "fixed"
	ModeLease = "lease"
)

// Defaults of the URL parameters.
const (
	DefaultPrefix = "frond:worker:"
	DefaultMode   = ModeFixed
)

// registryRisk words the refusal and the warning of a volatile server.
var registryRisk = redisutil.Risk{
	Refusal: "frond would forget which worker IDs it gave out and their last times, and could give a live node's worker ID to another node",
	Warning: "worker IDs and their last times are forgotten on a Redis restart, and two nodes may then issue the same snowflake IDs",
	URL:     "registry",
}

// Backend is the Redis backend of the worker registry.
type Backend struct {
	c             *redis.Client
	o             registry.Options
	base          string // {prefix}{dc}:
	layoutKey     string // {prefix}layout, of every datacenter (registry.LayoutRecorder)
	mode          string
	timeout       time.Duration
	where         string
	allowVolatile bool

	mu       sync.Mutex
	checked  bool // the persistence check passed
	warnings []string
}

// Check parses rawURL as Open does, without contacting the server, for a
// node of datacenter 0 (registry.CheckIn checks it for another).
func Check(rawURL string) error { return registry.CheckByOpen(rawURL, Open) }

// Open parses rawURL and makes a client. It does not contact the server:
// Acquire does.
func Open(rawURL string, o registry.Options) (*registry.Protocol, error) {
	u, err := redisutil.Parse(rawURL, "frond_prefix", "frond_dc", "frond_mode")
	if err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	prefix, dc, mode := DefaultPrefix, o.Datacenter, DefaultMode
	if v, ok := u.Params["frond_prefix"]; ok {
		prefix = v
	}
	if v := u.Params["frond_dc"]; v != "" {
		if dc, err = strconv.ParseInt(v, 10, 64); err != nil || dc < 0 {
			return nil, fmt.Errorf("%w: frond_dc=%q: a datacenter number, 0 or more", frond.ErrInvalidArgument, v)
		}
		if dc != o.Datacenter && o.Datacenter != 0 {
			return nil, fmt.Errorf("%w: frond_dc=%d, but this node's datacenter (snowflake.datacenter) is %d: they are one setting; drop frond_dc",
				frond.ErrInvalidArgument, dc, o.Datacenter)
		}
		if dc != o.Datacenter {
			return nil, fmt.Errorf("%w: frond_dc=%d: the datacenter of the worker IDs is the snowflake layout's datacenter field. "+
				"Set snowflake.datacenter_bits (for example 5 of twitter's 10 node bits) and snowflake.datacenter: %[2]d, and drop frond_dc. "+
				"A datacenter number in the key names alone would let each datacenter hand out worker IDs 0, 1, ... of its own, "+
				"and two datacenters would issue the same snowflake IDs (docs/deploy.md#several-datacenters)", frond.ErrInvalidArgument, dc)
		}
	}
	if v := u.Params["frond_mode"]; v != "" {
		if v != ModeFixed && v != ModeLease {
			return nil, fmt.Errorf("%w: frond_mode=%q: fixed or lease", frond.ErrInvalidArgument, v)
		}
		mode = v
	}
	b := &Backend{
		c:             redis.NewClient(u.Options),
		o:             o.WithDefaults(),
		base:          prefix + strconv.FormatInt(dc, 10) + ":",
		layoutKey:     prefix + "layout",
		mode:          mode,
		timeout:       u.Timeout,
		where:         u.Where,
		allowVolatile: u.AllowVolatile,
	}
	return registry.NewProtocol(b, b.o), nil
}

func (b *Backend) addrKey() string         { return b.base + "addr:" + b.o.Identity() }
func (b *Backend) counterKey() string      { return b.base + "counter" }
func (b *Backend) liveKey(id int64) string { return b.base + "live:" + strconv.FormatInt(id, 10) }
func (b *Backend) lastKey(id int64) string { return b.base + "last:" + strconv.FormatInt(id, 10) }

var _ registry.LayoutRecorder = (*Backend)(nil)

// RecordLayout implements registry.LayoutRecorder: SET NX, then GET, in
// one transaction.
func (b *Backend) RecordLayout(ctx context.Context, layout string) (string, error) {
	ctx, cancel := redisutil.Bound(ctx, b.timeout)
	defer cancel()
	got, err := redisutil.SetNXGet(ctx, b.c, b.layoutKey, layout)
	if err != nil {
		return "", b.fail("record the snowflake layout", err)
	}
	return got, nil
}

func (b *Backend) fail(op string, err error) error {
	return fmt.Errorf("worker registry: %w", redisutil.Fail(op, b.where, err))
}

func (b *Backend) ttlMillis() int64 { return max(b.o.LeaseTTL.Milliseconds(), 1) }

// Policy implements registry.Backend.
func (b *Backend) Policy() registry.Policy {
	return registry.Policy{OwnFirst: true, Recycle: b.mode == ModeLease}
}

// Where implements registry.Backend.
func (b *Backend) Where() string { return b.where + " (" + b.base + ")" }

// Prepare implements registry.Backend: the persistence check, once it
// passed. An unreachable server wraps frond.ErrStoreUnavailable, a volatile
// one not accepted in the URL frond.ErrInvalidArgument.
func (b *Backend) Prepare(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.checked {
		return nil
	}
	ctx, cancel := redisutil.Bound(ctx, b.timeout)
	defer cancel()
	why, err := redisutil.Volatile(ctx, b.c)
	if err != nil {
		return b.fail("check persistence", err)
	}
	warning, err := registryRisk.Accept(b.where, why, b.allowVolatile)
	if err != nil {
		return fmt.Errorf("worker registry: %w", err)
	}
	if warning != "" {
		b.warnings = []string{warning}
		b.o.Logger.Warn("worker registry: redis may lose its keys; risk accepted with frond_allow_volatile=true", "redis", b.where, "why", why)
	}
	b.checked = true
	return nil
}

// Warnings implements frond.Warner: the risk accepted with
// frond_allow_volatile=true, known after the first Acquire that reached the
// server.
func (b *Backend) Warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.warnings)
}

// run runs a script within the timeout.
func (b *Backend) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := redisutil.Bound(ctx, b.timeout)
	defer cancel()
	res, err := s.Run(ctx, b.c, keys, args...).Slice()
	if err != nil {
		return nil, b.fail(op, err)
	}
	return res, nil
}

// slotFields: a script returns each slot as id, owner, last, live token,
// last claim (an empty string for none).
const slotFields = 5

// luaSlot pushes slot id's fields onto out.
const luaSlot = `
local function slot(base, out, id)
  for _, k in ipairs({'owner:', 'last:', 'live:', 'claim:'}) do
    table.insert(out, redis.call('GET', base .. k .. id) or '')
  end
end
`

// rev is what a claim compares: owner, last and last claim as read.
type rev struct{ owner, last, claim string }

func (b *Backend) slots(res []any) ([]registry.Slot, error) {
	var out []registry.Slot
	for i := 0; i+slotFields <= len(res); i += slotFields {
		id, _ := res[i].(int64)
		owner, _ := res[i+1].(string)
		lastS, _ := res[i+2].(string)
		live, _ := res[i+3].(string)
		claim, _ := res[i+4].(string)
		var last int64
		if lastS != "" {
			var err error
			if last, err = strconv.ParseInt(lastS, 10, 64); err != nil {
				return nil, fmt.Errorf("worker registry: %s holds %q, not a time in nanoseconds: %w", b.lastKey(id), lastS, err)
			}
		}
		out = append(out, registry.Slot{ID: id, Owner: owner, Last: last, Holder: live, Claim: claim, Rev: rev{owner, lastS, claim}})
	}
	return out, nil
}

// ARGV: base, identity, maxNode. The slot bound to the identity, if any.
var ownScript = redis.NewScript(luaSlot + `
local base, me, maxNode = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {}
local bound = redis.call('GET', base .. 'addr:' .. me)
if bound and tonumber(bound) <= maxNode and redis.call('GET', base .. 'owner:' .. bound) == me then
  table.insert(out, tonumber(bound))
  slot(base, out, bound)
end
return out
`)

// Own implements registry.Backend: the ID the addr key binds.
func (b *Backend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	res, err := b.run(ctx, "read this node's worker ID", ownScript, nil, b.base, b.o.Identity(), maxNode)
	if err != nil {
		return nil, err
	}
	return b.slots(res)
}

// ARGV: base, maxNode. The slots below the counter with no live key.
var idleScript = redis.NewScript(luaSlot + `
local base, maxNode = ARGV[1], tonumber(ARGV[2])
local n = tonumber(redis.call('GET', base .. 'counter') or '0')
local out = {}
for id = 0, math.min(n - 1, maxNode) do
  if redis.call('EXISTS', base .. 'live:' .. id) == 0 then
    table.insert(out, id)
    slot(base, out, id)
  end
end
return out
`)

// Idle implements registry.Backend.
func (b *Backend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	res, err := b.run(ctx, "read the worker IDs", idleScript, nil, b.base, maxNode)
	if err != nil {
		return nil, err
	}
	return b.slots(res)
}

// luaBind makes token the claim of id for identity me: the live key, the
// last claim, the owner and addr keys (the old owner's addr key goes).
const luaBind = `
local function bind(base, id, me, token, ttl)
  redis.call('SET', base .. 'live:' .. id, token, 'PX', ttl)
  redis.call('SET', base .. 'claim:' .. id, token)
  local owner = redis.call('GET', base .. 'owner:' .. id)
  if owner and owner ~= me and tonumber(redis.call('GET', base .. 'addr:' .. owner)) == tonumber(id) then
    redis.call('DEL', base .. 'addr:' .. owner)
  end
  redis.call('SET', base .. 'owner:' .. id, me)
  redis.call('SET', base .. 'addr:' .. me, id)
end
`

// Seed 001's script, made safe. ARGV: base, identity, token, ttl ms,
// maxNode. Returns {id, last or an empty string}, or {} when the counter has passed the
// layout.
var newScript = redis.NewScript(luaBind + `
local base, me, token, ttl, maxNode = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local n = tonumber(redis.call('GET', base .. 'counter') or '0')
while n <= maxNode do -- checked before INCR: never wraps
  redis.call('INCR', base .. 'counter')
  -- a live key ahead of the counter (a counter reset by hand) is held: skip it
  if redis.call('EXISTS', base .. 'live:' .. n) == 0 then
    bind(base, n, me, token, ttl)
    return {n, redis.call('GET', base .. 'last:' .. n) or ''}
  end
  n = n + 1
end
return {}
`)

// New implements registry.Backend: the next ID of the counter.
func (b *Backend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	res, err := b.run(ctx, "acquire a new worker ID", newScript, nil, b.base, b.o.Identity(), h.Token, b.ttlMillis(), maxNode)
	if err != nil || len(res) < 2 {
		return 0, false, err
	}
	h.ID = res[0].(int64)
	var last int64
	if s, _ := res[1].(string); s != "" {
		if last, err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, false, fmt.Errorf("worker registry: %s holds %q, not a time in nanoseconds: %w", b.lastKey(h.ID), s, err)
		}
	}
	return last, true, nil
}

// ARGV: base, identity, token, ttl ms, id, owner, last, claim (as read),
// holder (” : no live key), floor (” : none). Returns 1, or 0 when the
// ID changed.
var claimScript = redis.NewScript(luaBind + `
local base, me, token, ttl, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
for i, k in ipairs({'owner:', 'last:', 'claim:', 'live:'}) do
  if (redis.call('GET', base .. k .. id) or '') ~= ARGV[5 + i] then return 0 end
end
bind(base, id, me, token, ttl)
if ARGV[10] ~= '' then redis.call('SET', base .. 'last:' .. id, ARGV[10]) end
return 1
`)

// Claim implements registry.Backend.
func (b *Backend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	r := s.Rev.(rev)
	fl := ""
	if floor != 0 {
		fl = strconv.FormatInt(floor, 10)
	}
	ctx, cancel := redisutil.Bound(ctx, b.timeout)
	defer cancel()
	n, err := claimScript.Run(ctx, b.c, nil, b.base, b.o.Identity(), h.Token, b.ttlMillis(), s.ID, r.owner, r.last, r.claim, s.Holder, fl).Int()
	if err != nil {
		return b.fail("claim worker ID "+strconv.FormatInt(s.ID, 10), err)
	}
	if n != 1 {
		return registry.ErrRace
	}
	return nil
}

// KEYS: live. ARGV: token, ttl ms. Returns 1 renewed, 0 not ours.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// Keep implements registry.Backend: the live key is renewed every TTL/3.
func (b *Backend) Keep(h *registry.Hold) {
	live := b.liveKey(h.ID)
	h.Renew(h.Sent, b.o.LeaseTTL, b.timeout, b.o.Logger, func(ctx context.Context) (bool, error) {
		n, err := renewScript.Run(ctx, b.c, []string{live}, h.Token, b.ttlMillis()).Int()
		return n == 1, err
	})
}

// KEYS: live, last. ARGV: token, ns, exact ("1": also deletes the live key).
// Returns 1, or 0 when the live key is not ours.
var writeScript = redis.NewScript(redisutil.LuaGE + `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '1' then
  redis.call('SET', KEYS[2], ARGV[2])
  redis.call('DEL', KEYS[1])
  return 1
end
local last = redis.call('GET', KEYS[2])
if not last or not ge(last, ARGV[2]) then redis.call('SET', KEYS[2], ARGV[2]) end
return 1
`)

// Write implements registry.Backend.
func (b *Backend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	flag := "0"
	if exact {
		flag = "1"
	}
	ctx, cancel := redisutil.Bound(ctx, b.timeout)
	defer cancel()
	n, err := writeScript.Run(ctx, b.c, []string{b.liveKey(h.ID), b.lastKey(h.ID)}, h.Token, strconv.FormatInt(ns, 10), flag).Int()
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	return n == 1, nil
}

// KEYS: live. ARGV: token. Deletes the live key if it is ours.
var dropScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// End implements registry.Backend: it deletes the live key if it is ours.
func (b *Backend) End(h *registry.Hold) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	dropScript.Run(ctx, b.c, []string{b.liveKey(h.ID)}, h.Token)
}

// Close implements registry.Backend.
func (b *Backend) Close() error { return b.c.Close() }
