package cosidregistry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/frond-id/frond/registry"
	"github.com/redis/go-redis/v9"
)

// CosId's Redis machine layout (cosid-spring-redis 3.2.1,
// SpringRedisMachineIdDistributor and its scripts machine_id_distribute.lua,
// machine_id_guard.lua, machine_id_revert[_stable].lua), in the hash slot
// {namespace}:
//
//	cosid:{ns}:itc_idx   HASH instance → "machineId|lastStamp"
//	cosid:{ns}:adder     STRING the last machine ID handed out (-1 at first)
//	cosid:{ns}:revert    HASH machineId → lastStamp of reverted IDs
//
// and frond's lease of each of its claims, in the server's clock:
//
//	cosid:{ns}:frond:{id}   the claim's token, PX lease_ttl
//
// The mapping is the table's (cosidregistry.go): a frond claim is the
// itc_idx field "host:port#token", held while its lease key holds the
// token; a CosId instance's field is held while its stamp is within the
// safe guard; a reverted ID is free. frond takes new IDs from the adder as
// CosId does (INCR below the layout's maximum).

// redisBackend is CosId's Redis machine layout as a registry backend.
type redisBackend struct {
	common
	c       *redis.Client
	timeout time.Duration
	where   string
	allow   bool
	watch   redisutil.Watch

	mu    sync.Mutex
	ready bool
}

var (
	_ registry.Backend        = (*redisBackend)(nil)
	_ registry.LayoutRecorder = (*redisBackend)(nil)
	_ frond.Warner            = (*redisBackend)(nil)
)

// registryRisk words the refusal and the warning of a volatile server.
var registryRisk = redisutil.Risk{
	Refusal: "frond and CosId would forget which machine IDs they gave out and their last times, and could give a live holder's machine ID to another",
	Warning: "machine IDs and their last times are forgotten on a Redis restart, and two holders may then issue the same snowflake IDs",
	URL:     "registry",
}

func openRedis(rawURL string, o registry.Options) (*registry.Protocol, error) {
	u, err := redisutil.Parse(rawURL, "frond_namespace", "frond_safe_guard")
	if err != nil {
		return nil, err
	}
	c, o, err := parseCommon(u.Params, o)
	if err != nil {
		return nil, err
	}
	b := &redisBackend{common: c, c: redis.NewClient(u.Options), timeout: u.Timeout, where: u.Where, allow: u.AllowVolatile, watch: redisutil.Watch{Risk: registryRisk}}
	return registry.NewProtocol(b, o), nil
}

func (b *redisBackend) key(name string) string { return "cosid:{" + b.ns + "}:" + name }

func (b *redisBackend) leaseKey(id int64) string { return b.key("frond:" + strconv.FormatInt(id, 10)) }

func (b *redisBackend) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return redisutil.Bound(ctx, b.timeout)
}

func (b *redisBackend) fail(op string, err error) error { return redisutil.Fail(op, b.Where(), err) }

// Where implements registry.Backend.
func (b *redisBackend) Where() string { return "cosid+" + b.where + " namespace " + b.ns }

// Prepare implements registry.Backend: the server's persistence, checked
// once.
func (b *redisBackend) Prepare(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		return nil
	}
	c, cancel := b.bound(ctx)
	defer cancel()
	if err := b.watch.Start(c, b.c, b.where, b.allow); err != nil {
		if errors.Is(err, frond.ErrInvalidArgument) {
			return fmt.Errorf("worker registry: %w", err)
		}
		return b.fail("check persistence", err)
	}
	b.ready = true
	return nil
}

// Warnings implements frond.Warner: a Redis that may lose the keys.
func (b *redisBackend) Warnings() []string { return b.watch.Warnings() }

// redisRev is an entry as read: the itc_idx field and value, or (field "")
// the revert hash's stamp.
type redisRev struct{ field, value string }

// parseState reads CosId's "machineId|lastStamp".
func parseState(v string) (id, stamp int64, ok bool) {
	a, z, found := strings.Cut(v, "|")
	id, err1 := strconv.ParseInt(a, 10, 64)
	stamp, err2 := strconv.ParseInt(z, 10, 64)
	return id, stamp, found && err1 == nil && err2 == nil
}

// slots reads every machine ID of the namespace within 0..maxNode.
func (b *redisBackend) slots(ctx context.Context, op string, maxNode int64) ([]registry.Slot, error) {
	c, cancel := b.bound(ctx)
	defer cancel()
	pipe := b.c.Pipeline()
	itc := pipe.HGetAll(c, b.key("itc_idx"))
	rev := pipe.HGetAll(c, b.key("revert"))
	if _, err := pipe.Exec(c); err != nil {
		return nil, b.fail(op, err)
	}
	type entry struct {
		field, value string
		id, stamp    int64
		lease        *redis.StringCmd
	}
	var held []entry
	pipe = b.c.Pipeline()
	for f, v := range itc.Val() {
		if id, stamp, ok := parseState(v); ok && id >= 0 && id <= maxNode {
			held = append(held, entry{field: f, value: v, id: id, stamp: stamp, lease: pipe.Get(c, b.leaseKey(id))})
		}
	}
	if len(held) > 0 {
		if _, err := pipe.Exec(c); err != nil && !errors.Is(err, redis.Nil) {
			return nil, b.fail(op, err)
		}
	}
	now := b.nowMs()
	var out []registry.Slot
	for _, e := range held {
		// A frond claim's lease key is gone once the lease ended (run out,
		// or ended at a stop): the claim's own token, not leased.
		token, _ := e.lease.Result()
		leased := token != ""
		if _, claim, frondRow := strings.Cut(e.field, "#"); frondRow && !leased {
			token = claim
		}
		s := b.slot(e.id, e.field, e.stamp, now, token, leased)
		s.Rev = redisRev{e.field, e.value}
		out = append(out, s)
	}
	for f, v := range rev.Val() {
		id, err1 := strconv.ParseInt(f, 10, 64)
		stamp, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || id < 0 || id > maxNode {
			continue
		}
		s := b.slot(id, "", stamp, now, "", false)
		s.Rev = redisRev{"", v}
		out = append(out, s)
	}
	return out, nil
}

// Own implements registry.Backend: this node's claims.
func (b *redisBackend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	all, err := b.slots(ctx, "find this node's machine ID", maxNode)
	var out []registry.Slot
	for _, s := range all {
		if s.Claim != "" && s.Owner == b.o.Identity() {
			out = append(out, s)
		}
	}
	return out, err
}

// Idle implements registry.Backend: reverted IDs, CosId instances' not
// guarded within the safe guard, frond claims whose lease ran out.
func (b *redisBackend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	all, err := b.slots(ctx, "find a machine ID to recycle", maxNode)
	var out []registry.Slot
	for _, s := range all {
		if !s.Held() {
			out = append(out, s)
		}
	}
	return out, err
}

// KEYS: itc_idx, adder. ARGV: maxNode, instance, now (ms), the lease key
// prefix, token, ttl (ms). CosId's DistributeByAdder: the adder (-1 at
// first) INCRed below the maximum; -1 when it is reached.
var newScript = redis.NewScript(`
local last = tonumber(redis.call('get', KEYS[2]) or '-1')
if last >= tonumber(ARGV[1]) then return -1 end
if last == -1 then redis.call('set', KEYS[2], -1) end
local id = redis.call('incr', KEYS[2])
redis.call('hset', KEYS[1], ARGV[2], tostring(id) .. '|' .. ARGV[3])
redis.call('set', ARGV[4] .. tostring(id), ARGV[5], 'PX', ARGV[6])
return id
`)

// New implements registry.Backend.
func (b *redisBackend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	c, cancel := b.bound(ctx)
	defer cancel()
	id, err := newScript.Run(c, b.c, []string{b.key("itc_idx"), b.key("adder")}, maxNode, b.instance(h.Token), b.nowMs(), b.key("frond:"), h.Token, b.ttlMs()).Int64()
	if err != nil {
		return 0, false, b.fail("claim a new machine ID", err)
	}
	if id < 0 {
		return 0, false, nil
	}
	h.ID = id
	return 0, true, nil
}

func (b *redisBackend) ttlMs() int64 { return max(b.o.LeaseTTL.Milliseconds(), 1) }

// KEYS: itc_idx, revert, the lease. ARGV: the field read ("" for the
// revert hash), the value read, the machine ID, the new field and value,
// the token, ttl (ms), the claim this process takes over ("" for none).
// The entry must be as read, and no frond lease but the one taken over may
// hold it.
var claimScript = redis.NewScript(`
if ARGV[1] == '' then
  if redis.call('hget', KEYS[2], ARGV[3]) ~= ARGV[2] then return 0 end
  redis.call('hdel', KEYS[2], ARGV[3])
else
  if redis.call('hget', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
  local cur = redis.call('get', KEYS[3])
  if cur and cur ~= ARGV[8] then return 0 end
  redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call('hset', KEYS[1], ARGV[4], ARGV[5])
redis.call('set', KEYS[3], ARGV[6], 'PX', ARGV[7])
return 1
`)

// Claim implements registry.Backend, in one script.
func (b *redisBackend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	c, cancel := b.bound(ctx)
	defer cancel()
	r, _ := s.Rev.(redisRev)
	takeover := ""
	if s.Held() {
		takeover = s.Claim
	}
	value := strconv.FormatInt(s.ID, 10) + "|" + strconv.FormatInt(max(b.nowMs(), afterMs(floor)), 10)
	n, err := claimScript.Run(c, b.c, []string{b.key("itc_idx"), b.key("revert"), b.leaseKey(s.ID)},
		r.field, r.value, s.ID, b.instance(h.Token), value, h.Token, b.ttlMs(), takeover).Int()
	if err != nil {
		return b.fail("claim machine ID "+strconv.FormatInt(s.ID, 10), err)
	}
	if n != 1 {
		return registry.ErrRace
	}
	return nil
}

// KEYS: itc_idx, the lease. ARGV: the field, the token, ttl (ms), the
// stamp, mode: "guard" (the lease renewed, the stamp raised to now),
// "save" (the stamp raised, the lease running) or "exact" (the stamp
// replaced, the lease ended). 0 when the claim no longer holds the ID.
var writeScript = redis.NewScript(`
local lease = redis.call('get', KEYS[2])
if ARGV[5] ~= 'exact' and lease ~= ARGV[2] then return 0 end
local v = redis.call('hget', KEYS[1], ARGV[1])
if not v then return 0 end
local i = string.find(v, '|', 1, true)
local stamp = tonumber(string.sub(v, i + 1))
local want = tonumber(ARGV[4])
if ARGV[5] == 'exact' or want > stamp then stamp = want end
redis.call('hset', KEYS[1], ARGV[1], string.sub(v, 1, i - 1) .. '|' .. tostring(stamp))
if ARGV[5] == 'guard' then redis.call('pexpire', KEYS[2], ARGV[3]) end
if ARGV[5] == 'exact' and lease == ARGV[2] then redis.call('del', KEYS[2]) end
return 1
`)

func (b *redisBackend) write(ctx context.Context, h *registry.Hold, stamp int64, mode string) (bool, error) {
	n, err := writeScript.Run(ctx, b.c, []string{b.key("itc_idx"), b.leaseKey(h.ID)}, b.instance(h.Token), h.Token, b.ttlMs(), stamp, mode).Int()
	return n == 1, err
}

// Keep implements registry.Backend: every lease_ttl/3 the lease renewed
// (in the server's clock) and CosId's guard stamp raised to now.
func (b *redisBackend) Keep(h *registry.Hold) {
	h.Renew(h.Sent, b.o.LeaseTTL, b.timeout, b.o.Logger, func(ctx context.Context) (bool, error) {
		return b.write(ctx, h, b.nowMs(), "guard")
	})
}

// Write implements registry.Backend: a save raises the stamp while the
// lease runs; the exact time at a clean stop replaces it and ends the
// lease, the field kept (a stable instance's revert).
func (b *redisBackend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	c, cancel := b.bound(ctx)
	defer cancel()
	mode := "save"
	if exact {
		mode = "exact"
	}
	ok, err := b.write(c, h, afterMs(ns), mode)
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	return ok, nil
}

// KEYS: the lease. ARGV: the token.
var endScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end
return 1
`)

// End implements registry.Backend: the lease ended if it is still this
// claim's; CosId's entry stays, live to CosId until the safe guard has
// passed its stamp.
func (b *redisBackend) End(h *registry.Hold) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	endScript.Run(ctx, b.c, []string{b.leaseKey(h.ID)}, h.Token)
}

// Close implements registry.Backend.
func (b *redisBackend) Close() error { return b.c.Close() }
