// Package redisutil holds what frond's Redis packages (the segment store and
// the worker registry) share: the URL and its frond_* parameters, the check
// that the server keeps its data across a restart, the policy applied to a
// server that does not, and a Lua helper.
package redisutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/redis/go-redis/v9"
)

// DefaultTimeout is the default of frond_timeout.
const DefaultTimeout = 5 * time.Second

// URL is a parsed redis:// or rediss:// URL.
type URL struct {
	// Options are go-redis's, with frond_timeout as the dial, read and write
	// timeouts and one retry.
	Options *redis.Options
	// Where names the server in messages: scheme://host/db, without the
	// credentials.
	Where string
	// Timeout is frond_timeout (default 5 s).
	Timeout time.Duration
	// AllowVolatile is frond_allow_volatile.
	AllowVolatile bool
	// Params holds the caller's own frond_* parameters that the URL gives
	// (an empty value counts as given).
	Params map[string]string
}

// Parse parses rawURL. It understands frond_timeout and
// frond_allow_volatile; own lists the caller's other frond_* parameters.
// Any other frond_* parameter is an error; the remaining parameters are
// go-redis's (pool_size, ...). Errors wrap frond.ErrInvalidArgument.
func Parse(rawURL string, own ...string) (URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" && u.Scheme != "rediss" {
		return URL{}, fmt.Errorf("%w: redis URL %q", frond.ErrInvalidArgument, rawURL)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return URL{}, fmt.Errorf("%w: redis URL query: %v", frond.ErrInvalidArgument, err)
	}
	out := URL{Where: u.Scheme + "://" + u.Host + u.Path, Timeout: DefaultTimeout, Params: map[string]string{}}
	for k := range q {
		if !strings.HasPrefix(k, "frond_") {
			continue
		}
		switch v := q.Get(k); {
		case k == "frond_timeout":
			if v != "" {
				if out.Timeout, err = time.ParseDuration(v); err != nil || out.Timeout <= 0 {
					return URL{}, fmt.Errorf("%w: frond_timeout=%q", frond.ErrInvalidArgument, v)
				}
			}
		case k == "frond_allow_volatile":
			if v != "" {
				if out.AllowVolatile, err = strconv.ParseBool(v); err != nil {
					return URL{}, fmt.Errorf("%w: frond_allow_volatile=%q", frond.ErrInvalidArgument, v)
				}
			}
		case slices.Contains(own, k):
			out.Params[k] = v
		default:
			return URL{}, fmt.Errorf("%w: redis URL parameter %s=%q: unknown parameter", frond.ErrInvalidArgument, k, v)
		}
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return URL{}, fmt.Errorf("%w: redis URL: %v", frond.ErrInvalidArgument, err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = out.Timeout, out.Timeout, out.Timeout
	opts.MaxRetries = 1
	out.Options = opts
	return out, nil
}

// Bound returns ctx limited to timeout, or ctx itself (with a cancel) when
// its deadline is sooner.
func Bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return deadline.Within(ctx, timeout)
}

// Volatile reports why the server may lose frond's keys, or "" if it keeps
// them: it keeps nothing on disk, or only RDB snapshots (a crash of Redis
// rolls counters back to the last snapshot: the same IDs again), or an AOF
// not synced on every write (appendfsync everysec or no: a crash of the host
// loses the writes not yet on disk, acknowledged INCRBYs included), or its
// maxmemory-policy may evict keys without a TTL (allkeys-*). A server that
// does not answer CONFIG GET (a managed Redis that hides it) gets a reason
// too. err is set, besides the reason, when CONFIG GET failed for want of an
// answer (the server could not be reached), so that callers can tell an
// outage from a server that hides its configuration.
func Volatile(ctx context.Context, c *redis.Client) (why string, err error) {
	// A lone command first: a pipeline's commands may still run on a
	// connection whose AUTH failed (as the default user, when it has no
	// password), hiding the refusal; and a server that does not answer
	// is an outage, told without a pipeline's retries.
	if err := c.Ping(ctx).Err(); err != nil {
		var re redis.Error
		if redis.IsAuthError(err) || !errors.As(err, &re) {
			return fmt.Sprintf("does not say whether it persists data (PING failed: %v)", err), err
		}
	}
	// Then one round trip; CONFIG GET with several names needs Redis 7.
	pipe := c.Pipeline()
	aofCmd := pipe.ConfigGet(ctx, "appendonly")
	fsyncCmd := pipe.ConfigGet(ctx, "appendfsync")
	saveCmd := pipe.ConfigGet(ctx, "save")
	policyCmd := pipe.ConfigGet(ctx, "maxmemory-policy")
	pipe.Exec(ctx) // the errors are the commands'
	aof, err1 := aofCmd.Result()
	save, err2 := saveCmd.Result()
	policy, err3 := policyCmd.Result()
	fsync, err4 := fsyncCmd.Result()
	for _, e := range []error{err1, err2, err3, err4} {
		var re redis.Error
		if e != nil && !errors.As(e, &re) { // no answer: the same error three times
			return fmt.Sprintf("does not say whether it persists data (CONFIG GET failed: %v)", e), e
		}
	}
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Sprintf("does not say whether it persists data (CONFIG GET failed: %v)", err), nil
	}
	// frond's durable keys have no TTL, so only allkeys-* policies can
	// evict them.
	if p := policy["maxmemory-policy"]; strings.HasPrefix(p, "allkeys-") {
		return fmt.Sprintf("may evict frond's counters (maxmemory-policy %s; use noeviction)", p), nil
	}
	if aof["appendonly"] != "yes" {
		if sv := strings.TrimSpace(save["save"]); sv != "" {
			return fmt.Sprintf("keeps only RDB snapshots (appendonly no, save %q): a crash of Redis loses the writes since the last snapshot", sv), nil
		}
		return "keeps nothing on disk (appendonly no, save \"\")", nil
	}
	if f := fsync["appendfsync"]; f != "always" {
		return fmt.Sprintf("syncs its AOF only with appendfsync %s: a crash of the host loses the writes not yet on disk (up to a second's with everysec, more with no)", f), nil
	}
	return "", nil
}

// Risk words what a server that loses its keys does to one package's data.
type Risk struct {
	// Refusal completes "after a Redis crash or restart ...", as in "frond would
	// hand out the same IDs again".
	Refusal string
	// Warning is the risk accepted, as in "IDs will be issued again after a
	// Redis restart".
	Warning string
	// URL names the setting that holds the URL: "store", "registry".
	URL string
}

// Accept applies frond's policy to why, a reason from Volatile: nothing when
// it is empty; a warning for Warnings when allow (frond_allow_volatile=true);
// otherwise an error wrapping frond.ErrInvalidArgument that says how to fix
// the server or accept the risk.
func (r Risk) Accept(where, why string, allow bool) (warning string, err error) {
	switch {
	case why == "":
		return "", nil
	case allow:
		return "redis " + why + ": " + r.Warning + " (accepted with frond_allow_volatile=true)", nil
	}
	return "", fmt.Errorf("%w: redis at %s %s: after a Redis crash or restart %s. Turn on AOF synced on every write (appendonly yes, appendfsync always), or accept the risk with frond_allow_volatile=true in the %s URL",
		frond.ErrInvalidArgument, where, why, r.Refusal, r.URL)
}

// Watch is a store's view of its server's persistence: read when the
// store opens, and again by Recheck (its Ping) at most every Every, since an
// operator can change it at run time (CONFIG SET appendfsync everysec).
// Warnings (shown by /readyz) says what the last read found.
type Watch struct {
	Risk  Risk
	Every time.Duration // how often Recheck reads again; zero at Start: 30 s
	// Check reads the server's persistence; nil: Volatile.
	Check func(context.Context, *redis.Client) (string, error)

	mu        sync.Mutex
	warning   string // the last check's, "" when the server persists
	checkedAt time.Time
	allow     bool // frond_allow_volatile=true
}

func (w *Watch) check(ctx context.Context, c *redis.Client) (string, error) {
	w.mu.Lock()
	f := w.Check
	w.mu.Unlock()
	if f == nil {
		f = Volatile
	}
	return f(ctx, c)
}

// Start reads the server's persistence for a store opening on it, and
// applies Risk.Accept: a server that does not answer is the error of
// Volatile; one that may lose the store's keys, Accept's refusal.
func (w *Watch) Start(ctx context.Context, c *redis.Client, where string, allow bool) error {
	why, err := w.check(ctx, c)
	if err != nil {
		return err
	}
	warning, err := w.Risk.Accept(where, why, allow)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.warning, w.checkedAt, w.allow = warning, time.Now(), allow
	if w.Every == 0 {
		w.Every = 30 * time.Second
	}
	w.mu.Unlock()
	return nil
}

// Warnings is the server's persistence as last read, for frond.Warner.
func (w *Watch) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.warning == "" {
		return nil
	}
	return []string{w.warning}
}

// Recheck reads the server's persistence again if the last read is older
// than Every. A server that stopped persisting after Start is a warning
// even without frond_allow_volatile (it was accepted at Start; the keys it
// holds are at risk from now on, which /readyz shows). A server that does
// not answer changes nothing: Ping reports the outage.
func (w *Watch) Recheck(ctx context.Context, c *redis.Client) {
	w.mu.Lock()
	due := time.Since(w.checkedAt) >= w.Every
	if due {
		w.checkedAt = time.Now()
	}
	w.mu.Unlock()
	if !due {
		return
	}
	why, err := w.check(ctx, c)
	if err != nil {
		return
	}
	warning, _ := w.Risk.Accept("", why, true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if why != "" && !w.allow {
		warning = "redis " + why + ": " + w.Risk.Warning + " (changed since frond opened the store; frond_allow_volatile only decides at start)"
	}
	w.warning = warning
}

// SetCheck replaces Check and Every (zero: every Recheck reads), and
// forgets frond_allow_volatile (tests).
func (w *Watch) SetCheck(every time.Duration, check func(context.Context, *redis.Client) (string, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Every, w.Check, w.allow = every, check, false
}

// LuaGE defines ge(a, b), a >= b for non-negative decimal strings. Lua
// numbers are doubles, exact only to 2^53: 64-bit values (max_id, times in
// nanoseconds) travel as strings and are compared by length, then in order.
const LuaGE = `
local function ge(a, b) -- a >= b for non-negative decimal strings
  if #a ~= #b then return #a > #b end
  return a >= b
end
`

// Connect makes a client of u and reads its server's persistence with w
// (Watch.Start) before anything is written: the opening of every Redis
// store. A refused persistence is Accept's error, an unanswered check an
// outage (Fail, named where); either way the client is closed.
func Connect(ctx context.Context, u URL, w *Watch, where string) (*redis.Client, error) {
	c := redis.NewClient(u.Options)
	bc, cancel := Bound(ctx, u.Timeout)
	defer cancel()
	if err := w.Start(bc, c, u.Where, u.AllowVolatile); err != nil {
		c.Close()
		if errors.Is(err, frond.ErrInvalidArgument) {
			return nil, err
		}
		return nil, Fail("check persistence", where, err)
	}
	return c, nil
}

// Fail wraps an error of operation op on the server where: frond.ErrClosed
// when the client was closed, else frond.ErrStoreUnavailable with what to
// do about refused credentials (Explain).
func Fail(op, where string, err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("%s on %s: %w", op, where, frond.ErrClosed)
	}
	return fmt.Errorf("%s on %s: %w: %w", op, where, frond.ErrStoreUnavailable, Explain(err))
}

// Explain adds what to do to a server's refusal of the credentials (ACL's
// WRONGPASS, NOAUTH without them):
// Redis's own words name neither the URL nor where the credentials go.
// Other errors come back as they are.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	if redis.IsAuthError(err) {
		return fmt.Errorf("the Redis server refused the credentials (check the user and password in the URL, redis://user:password@host:6379/0, and the user's ACL): %w", err)
	}
	return err
}

// SetNXGet sets key to value if the key does not exist and returns the
// value it holds then, in one transaction: a record that the first writer
// makes and every later one reads (a store's identity, a registry's
// layout).
func SetNXGet(ctx context.Context, c *redis.Client, key, value string) (string, error) {
	pipe := c.TxPipeline()
	pipe.SetNX(ctx, key, value, 0)
	get := pipe.Get(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", err
	}
	return get.Val(), nil
}

// SetLogger sends go-redis's own log lines (it writes them to stderr by
// default, whatever frond's log format) to log at debug level, through
// log's handler (which masks secrets: secret.Handler). They are the
// client's view of an outage frond already reports (a pool that cannot
// dial logs a line per attempt). go-redis has one logger per process.
func SetLogger(log *slog.Logger) { redis.SetLogger(redisLog{log}) }

type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	if l.log.Enabled(ctx, slog.LevelDebug) {
		l.log.DebugContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
	}
}

// The store's place (frond.Place) is one key, shared by the segment store
// and the keyed sequence store on the same server and prefix, so that a
// lost-data fence written by either refuses both (issue 68). Its absence
// is the zero Place.

// GetPlace reads the place kept at key on the server where.
func GetPlace(ctx context.Context, c *redis.Client, key, where string) (frond.Place, error) {
	got, err := c.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return frond.Place{}, Fail("read the store's place", where, err)
	}
	p, err := frond.ParsePlace(got)
	if err != nil {
		return frond.Place{}, fmt.Errorf("%w: the place recorded in %s (%s): %v", frond.ErrWrongPlace, where, key, err)
	}
	return p, nil
}

// KEYS: place. ARGV: old, new. Returns {1} when swapped, else {0, place}.
var swapPlaceScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return {0, cur} end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return {1}
`)

// SwapPlace sets the place kept at key to p if it is old now (frond.PlaceKeeper),
// in one script: Redis runs one script at a time, so every allocation
// script that reads the key is before it or after it.
func SwapPlace(ctx context.Context, c *redis.Client, key, where string, old, p frond.Place) error {
	if err := p.Validate(); err != nil {
		return err
	}
	res, err := swapPlaceScript.Run(ctx, c, []string{key}, old.String(), p.String()).Slice()
	if err != nil {
		return Fail("change the store's place", where, err)
	}
	if res[0].(int64) == 1 {
		return nil
	}
	cur, _ := res[1].(string)
	now, err := frond.ParsePlace(cur)
	if err != nil {
		return fmt.Errorf("the place recorded in %s: %w", where, err)
	}
	return fmt.Errorf("%w: %s is %s, not %s", frond.ErrPlaceChanged, where, now.Describe(), old.Describe())
}
