// Package client is frond's Go client. It speaks gRPC to one or more frond
// servers and hands out segment IDs from ranges it leases, in process, at
// the speed of an atomic add: a lease is one round trip for thousands of
// IDs, and the next one is fetched in the background before the current one
// runs out (frond's segment engine, with the servers as its store).
//
//	c, err := client.New(client.Options{Servers: []string{"id-1:9090", "id-2:9090"}})
//	...
//	id, err := c.Next(ctx, "order")
//
// Snowflake IDs, UUIDs and serial numbers come from a server per call
// (batched with n). Every call has a deadline per attempt, fails over to
// the next server when one is down or refuses, and retries with backoff
// and jitter; a server that answered "unavailable" rests until its backoff
// (or the retry time it gave) has passed, so it is not hammered. See
// docs/client.md.
package client

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (serviceConfig below)
	"google.golang.org/grpc/metadata"

	"github.com/frond-id/frond"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/segment"
)

// Defaults of Options.
const (
	DefaultTimeout     = 2 * time.Second
	DefaultBackoffMin  = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	DefaultMinLease    = 1000
	DefaultMaxLease    = 1_000_000 // the server's largest ranges request
	DefaultLeaseTarget = 10 * time.Second
	DefaultSeqWait     = 10 * time.Second
)

// Options configure a Client. The zero value of each field means its
// default.
type Options struct {
	// Servers are the gRPC addresses (host:port) of frond servers sharing
	// one store. Calls go to the first that answers and stay there while it
	// does; the others are the fail-over.
	Servers []string
	// TLS, when set, connects over TLS with it (the servers' tls: keys;
	// RootCAs to trust them, Certificates when they ask for one).
	TLS *tls.Config
	// DialOptions are added to every connection; without TLS or any, the
	// connections are plaintext.
	DialOptions []grpc.DialOption
	// Timeout bounds one attempt on one server (DefaultTimeout).
	Timeout time.Duration
	// Attempts bounds the attempts of one call across all servers; zero
	// means three per server.
	Attempts int
	// BackoffMin and BackoffMax bound how long a server that failed rests
	// before it is tried again: the rest doubles with each failure in a
	// row, with jitter, and is at least the retry time the server gave. A
	// server that answered with a retry time (it is up: 503
	// store_unavailable while a keyed sequence's section is between owners)
	// rests for that time only.
	BackoffMin, BackoffMax time.Duration
	// SeqWait is how long Seq keeps asking while the key's section is
	// between owners (its owner killed: another server takes it once its
	// lease runs out, 3 to 4 s with the servers' default lease), past its
	// Attempts, before it returns the error (DefaultSeqWait).
	SeqWait time.Duration
	// MinLease and MaxLease bound the IDs of one lease of a tag; LeaseTarget
	// is how long a lease should last: one used up in less than half of it
	// doubles the next lease, one lasting more than twice it halves it, and
	// a lease that came too late (callers waited) doubles it as well.
	MinLease, MaxLease int64
	LeaseTarget        time.Duration
	// Unordered accepts leases below IDs already handed out. By default a
	// client's IDs of a tag increase strictly: after a fail-over, ranges
	// the next server had buffered below them are skipped (a gap, never a
	// duplicate). Set it when the servers combine several stores by residue
	// class, whose ranges interleave.
	Unordered bool
	// Token is the tag token sent with every call (metadata x-frond-token),
	// for servers configured with tokens (docs/tinyid.md).
	Token string
	// Logger receives fail-overs and lease errors; nil discards them.
	Logger *slog.Logger
}

// serviceConfig turns on client-side health checking; it needs a balancer
// that supports it (round_robin, over the one address of a connection).
const serviceConfig = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": ""}}`

// Client hands out IDs from frond servers. It is safe for concurrent use.
type Client struct {
	o       Options
	servers []*server
	pref    atomic.Int32 // the server that answered last
	engine  *segment.Engine
	lease   *leaser
	stats   counters
	closed  atomic.Bool
	// The tags met that cannot be leased (sequence tags, tags with a
	// configured form: the server refused to lease them): their IDs are
	// asked for call by call. unleasedSeen gates the lookup, so a client
	// that never met one pays one atomic load.
	unleasedSeen atomic.Bool
	unleasedTags sync.Map // tag -> viaRanges or viaForm
	routes       sync.Map // keyed sequence space -> *seqRoute
	shardState            // leases of counters (NextShard), from the first
}

// server is one frond server and its health as this client sees it.
type server struct {
	addr string
	conn *grpc.ClientConn
	ids  frondv1.IDServiceClient

	mu        sync.Mutex
	downUntil time.Time
	fails     int // failures in a row
}

// counters are the client's own statistics (Stats).
type counters struct {
	calls, failovers, retries, waits atomic.Uint64
}

// New connects to the servers (lazily: no call is made until the first ID
// is asked for) and returns the client.
func New(o Options) (*Client, error) {
	if len(o.Servers) == 0 {
		return nil, fmt.Errorf("%w: no servers", frond.ErrInvalidArgument)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Attempts <= 0 {
		o.Attempts = 3 * len(o.Servers)
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = DefaultBackoffMin
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = DefaultBackoffMax
	}
	if o.MinLease <= 0 {
		o.MinLease = DefaultMinLease
	}
	if o.MaxLease <= 0 {
		o.MaxLease = DefaultMaxLease
	}
	if o.MinLease > o.MaxLease {
		return nil, fmt.Errorf("%w: MinLease %d above MaxLease %d", frond.ErrInvalidArgument, o.MinLease, o.MaxLease)
	}
	if o.LeaseTarget <= 0 {
		o.LeaseTarget = DefaultLeaseTarget
	}
	if o.SeqWait <= 0 {
		o.SeqWait = DefaultSeqWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{o: o}
	// Each connection watches the server's grpc.health.v1 (service ""):
	// while the server says NOT_SERVING (no kind of ID can be served, or it
	// is shutting down) calls to it fail at once and go to the next server.
	dial := []grpc.DialOption{grpc.WithDefaultServiceConfig(serviceConfig)}
	switch {
	case o.TLS != nil:
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(o.TLS)))
	case len(o.DialOptions) == 0:
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	dial = append(dial, o.DialOptions...)
	for _, addr := range o.Servers {
		conn, err := grpc.NewClient(addr, dial...)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("%w: server %q: %v", frond.ErrInvalidArgument, addr, err)
		}
		c.servers = append(c.servers, &server{addr: addr, conn: conn, ids: frondv1.NewIDServiceClient(conn)})
	}
	c.lease = c.newLeaser(false)
	eng, err := c.newEngine(c.lease)
	if err != nil {
		c.closeConns()
		return nil, err
	}
	c.engine = eng
	return c, nil
}

// newLeaser is a leaser of plain IDs, or of counters (NextShard).
func (c *Client) newLeaser(counters bool) *leaser {
	return &leaser{c: c, counters: counters, pending: map[string][]frond.Range{}, last: map[string]int64{}}
}

// newEngine is a segment engine whose store is l.
func (c *Client) newEngine(l *leaser) (*segment.Engine, error) {
	o := c.o
	return segment.New(l, segment.Settings{
		FastSegment: o.LeaseTarget / 2, SlowSegment: 2 * o.LeaseTarget, MaxStep: o.MaxLease,
		// A lease waits for at most every server's attempts.
		LoadTimeout: time.Duration(o.Attempts) * o.Timeout, Logger: o.Logger,
	})
}

// Close ends the leases (their unused IDs are skipped, never reissued) and
// the connections.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := c.engine.Close()
	c.countersOnce.Do(func() { c.countersErr = frond.ErrClosed }) // none starts after Close
	if c.counters != nil {
		err = errors.Join(err, c.counters.Close())
	}
	return errors.Join(err, c.closeConns())
}

func (c *Client) closeConns() error {
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.conn.Close())
	}
	return errors.Join(errs...)
}

// call runs fn on a server: the one that answered last if it is up, else
// the next one up; after a failure that another server (or a later try)
// may not have, the server rests (see Options.BackoffMin) and the next one
// is tried. When every server rests, the call waits for the first to be
// due, within ctx. Errors are frond's (see Error).
func (c *Client) call(ctx context.Context, fn func(ctx context.Context, ids frondv1.IDServiceClient) error) error {
	_, err := c.callAt(ctx, -1, 0, fn)
	return err
}

// callAt is call, its first attempt on server want when want is one that
// is up (a keyed sequence section's owner; -1: none), more attempts past
// Options.Attempts until patience has passed (a keyed sequence's SeqWait;
// 0: none), and it reports the server that answered. Once every attempt
// failed, the error is the last one a server answered, when one did,
// rather than a dead server's refused connection.
func (c *Client) callAt(ctx context.Context, want int, patience time.Duration, fn func(ctx context.Context, ids frondv1.IDServiceClient) error) (int, error) {
	if c.closed.Load() {
		return -1, fmt.Errorf("client: %w", frond.ErrClosed)
	}
	c.stats.calls.Add(1)
	if c.o.Token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-frond-token", c.o.Token)
	}
	// One idempotency key for all attempts of this call: a retry that
	// reaches the server that took IDs for an attempt whose answer was lost
	// (a timeout) gets those IDs, instead of a gap (docs/api.md).
	ctx = metadata.AppendToOutgoingContext(ctx, "idempotency-key", idempotencyKey())
	var last, answered *Error
	var deadline time.Time
	if patience > 0 {
		deadline = time.Now().Add(patience)
	}
	for attempt := 0; attempt < c.o.Attempts || time.Now().Before(deadline); attempt++ {
		i, wait := c.pick()
		pinned := attempt == 0 && want >= 0 && want < len(c.servers) && c.servers[want].rest(time.Now()) <= 0
		if pinned {
			i, wait = want, 0
		}
		if attempt >= c.o.Attempts && time.Now().Add(wait).After(deadline) {
			break // past the attempts, a rest that ends past the patience
		}
		if wait > 0 {
			c.stats.waits.Add(1)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return -1, c.giveUp(ctx, lastOf(last, answered))
			}
		}
		s := c.servers[i]
		actx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		err := fn(actx, s.ids)
		cancel()
		if err == nil {
			s.up()
			if !pinned && c.pref.Swap(int32(i)) != int32(i) && attempt > 0 {
				c.o.Logger.Info("frond client: failed over", "server", s.addr)
			}
			return i, nil
		}
		e := fromStatus(err)
		if ctx.Err() != nil {
			return -1, c.giveUp(ctx, e)
		}
		if !e.retryable() {
			s.up() // it answered
			return i, e
		}
		last = e
		if e.fromServer {
			answered = e
		}
		s.down(c.o, e)
		c.stats.retries.Add(1)
		if len(c.servers) > 1 {
			c.stats.failovers.Add(1)
		}
		c.o.Logger.Warn("frond client: server failed; trying the next", "server", s.addr, "err", e)
	}
	return -1, lastOf(last, answered)
}

// lastOf is the error of a call whose attempts failed: the last a server
// answered, when one did (a 503 store_unavailable of a live server reads
// as that, not as the dead one's refused connection), else the last.
func lastOf(last, answered *Error) error {
	switch {
	case answered != nil:
		return answered
	case last != nil:
		return last
	}
	return nil
}

// idempotencyKey is a fresh key: 128 random bits.
func idempotencyKey() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return "frond-client-" + hex.EncodeToString(b[:])
}

// giveUp is the error of a call whose ctx ended.
func (c *Client) giveUp(ctx context.Context, last error) error {
	if last == nil {
		last = errors.New("no server answered")
	}
	return fmt.Errorf("%w: %w (last error: %v)", frond.ErrStoreUnavailable, ctx.Err(), last)
}

// pick returns the server to try: the preferred one if it is up, else the
// next one up in order, else the one due first and how long until it is.
func (c *Client) pick() (int, time.Duration) {
	now := time.Now()
	n := len(c.servers)
	first := int(c.pref.Load())
	best, soonest := first, time.Duration(1<<62)
	for k := range n {
		i := (first + k) % n
		wait := c.servers[i].rest(now)
		if wait <= 0 {
			return i, 0
		}
		if wait < soonest {
			best, soonest = i, wait
		}
	}
	return best, soonest
}

func (s *server) rest(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downUntil.Sub(now)
}

func (s *server) up() {
	s.mu.Lock()
	s.fails, s.downUntil = 0, time.Time{}
	s.mu.Unlock()
}

// down rests the server: for the retry time it gave when it answered
// with one (it is up and said when to come back: no longer), else
// BackoffMin doubled per failure in a row up to BackoffMax, with jitter of
// up to half, and at least the retry time the error carries.
func (s *server) down(o Options, e *Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.fromServer && e.RetryAfter > 0 {
		// It is up: no failure in a row of a server that does not answer
		// (a timeout after a run of such answers rested it for seconds).
		s.fails = 0
		s.downUntil = time.Now().Add(e.RetryAfter)
		return
	}
	s.fails++
	d := o.BackoffMin << min(s.fails-1, 20)
	d = min(d, o.BackoffMax)
	d = d/2 + rand.N(d/2+1)
	s.downUntil = time.Now().Add(max(d, e.RetryAfter))
}
