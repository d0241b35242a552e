// Package redisregistry is the snowflake worker registry on Redis, seed 001's
// design made safe: one atomic Lua script binds a worker ID to this node's
// datacenter and address, and a live key with a TTL, renewed while the node
// runs, marks the ID as held.
//
// # Keys
//
// Under the prefix p (frond_prefix, default frond:worker:) and datacenter dc
// (frond_dc, default 0):
//
//	{p}{dc}:addr:{host:port}  the worker ID bound to an identity (no TTL)
//	{p}{dc}:counter           how many IDs were ever handed out: the next new ID (no TTL)
//	{p}{dc}:owner:{id}        the identity the ID is bound to (no TTL)
//	{p}{dc}:last:{id}         the latest time saved for the ID, in Unix nanoseconds (no TTL)
//	{p}{dc}:live:{id}         a random token of the holder, with PX = LeaseTTL, renewed
//
// # Modes
//
// frond_mode=fixed (the default, seed 001's script) binds an ID to an
// address for good: the script GETs the addr key and uses its ID; else, if
// the counter is below the layout's maximum, INCRs it and binds the new ID
// (the counter is checked before the INCR, so it never wraps around as seed
// 001's 5-bit ID does at 32); else Acquire fails with frond.ErrNoWorkerID.
// IDs are never recycled: a fleet whose addresses change runs out.
//
// frond_mode=lease is for environments where addresses change (Kubernetes):
// the same, but once the counter is exhausted the script recycles the ID with
// no live key whose last time is the oldest, provided that last time plus
// registry.Options.RecycleAfter is before the acquirer's clock (Options.Now,
// passed to the script). The script moves the owner and addr keys to the new
// holder in the same step; the old holder, if it comes back, is given
// another ID.
//
// # Guarantees
//
//   - The live key is the lock: the script takes an ID only with SET NX, so
//     two live nodes never hold one ID. If the ID bound to this node's
//     identity has a live key with another token (an earlier run that
//     crashed, or a second process with the same host:port), Acquire fails
//     with an error wrapping frond.ErrStoreUnavailable, and the service
//     retries until the key expires (within LeaseTTL).
//   - A goroutine renews the live key every LeaseTTL/3, comparing the token
//     first. When the token is gone or another's, or when no renewal
//     succeeded for LeaseTTL (measured from when the last successful one was
//     sent, on the machine's monotonic clock), Worker.Lost is closed and
//     Save fails with frond.ErrWorkerLost; Acquire may then be called again.
//   - Save keeps the latest time (compared exactly, as decimal strings) and
//     only while the live key holds this node's token; Release records the
//     time exactly and deletes the live key; Close deletes the live key if it
//     is still ours.
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
	"errors"
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
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
	_ frond.Warner         = (*Registry)(nil)
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

// Registry is a Redis worker registry.
type Registry struct {
	c             *redis.Client
	o             registry.Options
	base          string // {prefix}{dc}:
	mode          string
	timeout       time.Duration
	where         string
	allowVolatile bool

	wmu      sync.Mutex
	warnings []string

	mu      sync.Mutex // held across a call to Redis by Acquire, Save, Release and Close
	checked bool       // the persistence check passed
	hold    *hold      // nil: no ID held
	closed  bool
}

// hold is one holding of an ID under one token.
type hold struct {
	*registry.Hold
	token string
}

// Open parses rawURL and makes a client. It does not contact the server:
// Acquire does.
func Open(rawURL string, o registry.Options) (*Registry, error) {
	u, err := redisutil.Parse(rawURL, "frond_prefix", "frond_dc", "frond_mode")
	if err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	prefix, dc, mode := DefaultPrefix, int64(0), DefaultMode
	if v, ok := u.Params["frond_prefix"]; ok {
		prefix = v
	}
	if v := u.Params["frond_dc"]; v != "" {
		if dc, err = strconv.ParseInt(v, 10, 64); err != nil || dc < 0 {
			return nil, fmt.Errorf("%w: frond_dc=%q: a datacenter number, 0 or more", frond.ErrInvalidArgument, v)
		}
	}
	if v := u.Params["frond_mode"]; v != "" {
		if v != ModeFixed && v != ModeLease {
			return nil, fmt.Errorf("%w: frond_mode=%q: fixed or lease", frond.ErrInvalidArgument, v)
		}
		mode = v
	}
	return &Registry{
		c:             redis.NewClient(u.Options),
		o:             o.WithDefaults(),
		base:          prefix + strconv.FormatInt(dc, 10) + ":",
		mode:          mode,
		timeout:       u.Timeout,
		where:         u.Where,
		allowVolatile: u.AllowVolatile,
	}, nil
}

func (r *Registry) addrKey() string         { return r.base + "addr:" + r.o.Identity() }
func (r *Registry) counterKey() string      { return r.base + "counter" }
func (r *Registry) liveKey(id int64) string { return r.base + "live:" + strconv.FormatInt(id, 10) }
func (r *Registry) lastKey(id int64) string { return r.base + "last:" + strconv.FormatInt(id, 10) }

func (r *Registry) fail(op string, err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("worker registry: %s on %s: %w", op, r.where, frond.ErrClosed)
	}
	return fmt.Errorf("worker registry: %s on %s: %w: %w", op, r.where, frond.ErrStoreUnavailable, err)
}

func (r *Registry) ttlMillis() int64 { return max(r.o.LeaseTTL.Milliseconds(), 1) }

// check runs the persistence check once it can: an unreachable server
// wraps frond.ErrStoreUnavailable, a volatile one not accepted in the URL
// frond.ErrInvalidArgument.
func (r *Registry) check(ctx context.Context) error {
	if r.checked {
		return nil
	}
	why, err := redisutil.Volatile(ctx, r.c)
	if err != nil {
		return r.fail("check persistence", err)
	}
	warning, err := registryRisk.Accept(r.where, why, r.allowVolatile)
	if err != nil {
		return fmt.Errorf("worker registry: %w", err)
	}
	if warning != "" {
		r.wmu.Lock()
		r.warnings = []string{warning}
		r.wmu.Unlock()
		r.o.Logger.Warn("worker registry: redis may lose its keys; risk accepted with frond_allow_volatile=true", "redis", r.where, "why", why)
	}
	r.checked = true
	return nil
}

// Warnings implements frond.Warner: the risk accepted with
// frond_allow_volatile=true, known after the first Acquire that reached the
// server.
func (r *Registry) Warnings() []string {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return slices.Clone(r.warnings)
}

// Statuses of acquireScript.
const (
	acquired  = 1 // {1, id, last or "", 1 if recycled from another address}
	heldByOld = 2 // {2, id, pttl}: the ID of this identity has another token
	exhausted = 3 // {3, oldest last or ""}: nothing free; in lease mode the oldest last time of an ID with no live key
	outOfLay  = 4 // {4, id}: the ID bound to this identity is beyond maxNode
)

// KEYS: addr, counter. ARGV: base, identity, token, ttl ms, maxNode,
// recycle ("1" in lease mode), threshold (now - RecycleAfter, ns),
// RecycleAfter (ns).
// IDs go to Redis as integers, times as decimal strings (redisutil.LuaGE).
var acquireScript = redis.NewScript(redisutil.LuaGE + `
local base, me, token, ttl, maxNode = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local function take(id, recycled)
  local live = base .. 'live:' .. id
  if not redis.call('SET', live, token, 'NX', 'PX', ttl) then
    return {2, id, redis.call('PTTL', live)}
  end
  redis.call('SET', KEYS[1], id)
  redis.call('SET', base .. 'owner:' .. id, me)
  local last = base .. 'last:' .. id
  if recycled and redis.call('EXISTS', last) == 1 then
    -- the new holder starts past last + RecycleAfter: recorded now (INCRBY
    -- is exact on 64 bits), so nobody starts from the old time again
    redis.call('INCRBY', last, ARGV[8])
  end
  return {1, id, redis.call('GET', last) or '', recycled and 1 or 0}
end
local bound = redis.call('GET', KEYS[1])
if bound then
  local id = tonumber(bound)
  if redis.call('GET', base .. 'owner:' .. id) == me then
    if id > maxNode then return {4, id} end
    return take(id)
  end
  redis.call('DEL', KEYS[1]) -- stale: the ID went to another node
end
local n = tonumber(redis.call('GET', KEYS[2]) or '0')
while n <= maxNode do -- checked before INCR: never wraps
  redis.call('INCR', KEYS[2])
  -- a live key ahead of the counter (a counter reset by hand) is held: skip it
  if redis.call('EXISTS', base .. 'live:' .. n) == 0 then return take(n) end
  n = n + 1
end
if ARGV[6] ~= '1' then return {3, ''} end
local best, bestLast = nil, nil
for id = 0, math.min(n - 1, maxNode) do
  if redis.call('EXISTS', base .. 'live:' .. id) == 0 then
    local last = redis.call('GET', base .. 'last:' .. id) or '0'
    if not bestLast or not ge(last, bestLast) then best, bestLast = id, last end
  end
end
if not best then return {3, ''} end
if ge(bestLast, ARGV[7]) then return {3, bestLast} end -- last + RecycleAfter >= now
local owner = redis.call('GET', base .. 'owner:' .. best)
if owner then
  local old = base .. 'addr:' .. owner
  if tonumber(redis.call('GET', old)) == best then redis.call('DEL', old) end
end
return take(best, true)
`)

// Acquire implements frond.WorkerRegistry.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return frond.Worker{}, fmt.Errorf("worker registry: %w", frond.ErrClosed)
	}
	if h := r.hold; h != nil && !h.IsLost() {
		return h.Worker(), nil
	}
	r.dropLocked(true)
	if maxNode < 0 {
		return frond.Worker{}, fmt.Errorf("%w: layout with no worker IDs (max %d)", frond.ErrNoWorkerID, maxNode)
	}
	ctx, cancel := redisutil.Bound(ctx, r.timeout)
	defer cancel()
	if err := r.check(ctx); err != nil {
		return frond.Worker{}, err
	}
	token := registry.NewToken()
	threshold := max(r.o.Now().UnixNano()-r.o.RecycleAfter.Nanoseconds(), 0)
	recycle := "0"
	if r.mode == ModeLease {
		recycle = "1"
	}
	sent := time.Now()
	res, err := acquireScript.Run(ctx, r.c, []string{r.addrKey(), r.counterKey()},
		r.base, r.o.Identity(), token, r.ttlMillis(), maxNode, recycle, strconv.FormatInt(threshold, 10), r.o.RecycleAfter.Nanoseconds()).Slice()
	if err != nil {
		return frond.Worker{}, r.fail("acquire worker ID", err)
	}
	status, _ := res[0].(int64)
	switch status {
	case acquired:
		id := res[1].(int64)
		var last int64
		if s, _ := res[2].(string); s != "" {
			if last, err = strconv.ParseInt(s, 10, 64); err != nil {
				return frond.Worker{}, fmt.Errorf("worker registry: %s holds %q, not a time in nanoseconds: %w", r.lastKey(id), s, err)
			}
		}
		// Recycled, last is the old holder's last + RecycleAfter (the
		// script recorded it): the earliest the old holder's local record
		// stops vouching, already behind this node's clock.
		h := &hold{Hold: registry.NewHold(id, last), token: token}
		live := r.liveKey(id)
		h.Renew(sent, r.o.LeaseTTL, r.timeout, r.o.Logger, func(ctx context.Context) (bool, error) {
			n, err := renewScript.Run(ctx, r.c, []string{live}, token, r.ttlMillis()).Int()
			return n == 1, err
		})
		r.hold = h
		r.o.Logger.Info("worker ID held in redis", "worker", id, "owner", r.o.Identity(), "mode", r.mode, "redis", r.where)
		return h.Worker(), nil
	case heldByOld:
		id, pttl := res[1].(int64), time.Duration(res[2].(int64))*time.Millisecond
		if pttl <= 0 {
			pttl = r.o.LeaseTTL
		}
		return frond.Worker{}, registry.HeldElsewhere(fmt.Sprintf("worker ID %d of %s (its live key %s expires within %v)", id, r.o.Identity(), r.liveKey(id), pttl))
	case outOfLay:
		return frond.Worker{}, fmt.Errorf("worker registry: %w: %s is bound to worker ID %d, outside 0..%d of the layout (another layout shares frond_prefix and frond_dc?)",
			frond.ErrNoWorkerID, r.o.Identity(), res[1].(int64), maxNode)
	case exhausted:
		msg := fmt.Sprintf("all %d worker IDs (0..%d) of %s", maxNode+1, maxNode, r.base)
		if r.mode == ModeFixed {
			msg += " are bound to addresses, and frond_mode=fixed never recycles them (use frond_mode=lease where addresses change)"
		} else {
			if s, _ := res[1].(string); s != "" {
				ns, _ := strconv.ParseInt(s, 10, 64)
				return frond.Worker{}, registry.RecycleLater(msg, time.Unix(0, ns).Add(r.o.RecycleAfter), r.o.RecycleAfter)
			}
			msg += " are held"
		}
		return frond.Worker{}, fmt.Errorf("worker registry: %w: %s", frond.ErrNoWorkerID, msg)
	}
	return frond.Worker{}, fmt.Errorf("worker registry: %w: unexpected answer %v from the acquire script", frond.ErrStoreUnavailable, res)
}

// KEYS: live. ARGV: token, ttl ms. Returns 1 renewed, 0 not ours.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// KEYS: live, last. ARGV: token, ns, exact ("1": Release, which also
// deletes the live key). Returns 1, or 0 when the live key is not ours.
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

// Save implements frond.WorkerRegistry: the latest of the times saved, while
// the live key holds this node's token.
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, false)
}

// Release implements frond.Releaser: it records last exactly, even below a
// time saved earlier, and deletes the live key.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, true)
}

func (r *Registry) write(ctx context.Context, last time.Time, exact bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hold
	if h == nil || h.IsLost() {
		return fmt.Errorf("worker registry: %w: no worker ID is held in redis", frond.ErrWorkerLost)
	}
	ns := max(last.UnixNano(), 0)
	flag := "0"
	if exact {
		flag = "1"
	}
	ctx, cancel := redisutil.Bound(ctx, r.timeout)
	defer cancel()
	n, err := writeScript.Run(ctx, r.c, []string{r.liveKey(h.ID), r.lastKey(h.ID)}, h.token, strconv.FormatInt(ns, 10), flag).Int()
	if err != nil {
		return r.fail("save the last time", err)
	}
	if n == 0 {
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: the live key of worker ID %d expired or holds another token", frond.ErrWorkerLost, h.ID)
	}
	if exact {
		h.Saved = ns
		r.dropLocked(false)
	} else {
		h.Saved = max(h.Saved, ns)
	}
	return nil
}

// KEYS: live. ARGV: token. Deletes the live key if it is ours.
var dropScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// dropLocked forgets the hold: it stops the renewal, closes Lost and, with
// del, deletes the live key if it is still ours (best effort).
func (r *Registry) dropLocked(del bool) {
	h := r.hold
	if h == nil {
		return
	}
	r.hold = nil
	h.Stop()
	if del {
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		dropScript.Run(ctx, r.c, []string{r.liveKey(h.ID)}, h.token)
	}
}

// Close implements frond.WorkerRegistry: it stops the renewal, deletes the
// live key if it is still ours (the ID can then be taken again: by this
// identity at once, by another node in lease mode once RecycleAfter has
// passed its last time) and closes the client. It is idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.dropLocked(true)
	r.closed = true
	return r.c.Close()
}
