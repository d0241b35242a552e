// Package service ties the engines to a store and a worker registry: it is
// what every front end (HTTP, and later gRPC and RESP) calls. It knows no
// transport and no driver.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
)

// Limits of the batch calls.
const (
	MaxBatch       = 10_000    // IDs returned one by one
	MaxRangesBatch = 1_000_000 // segment IDs returned as ranges
)

// DefaultPersistEvery is Config.PersistEvery's default: the reservation
// then runs 800 ms ahead, so a restart after kill -9 issues snowflake IDs
// again within a second, at 2.5 registry writes a second per node.
const DefaultPersistEvery = 400 * time.Millisecond

// Config configures a Service. The zero value means the defaults.
type Config struct {
	// Layout is the snowflake layout; the zero value means twitter.
	Layout snowflake.Layout
	// MaxBackward, MaxLead and RandomStart are the snowflake clock policy
	// (see snowflake.Settings).
	MaxBackward time.Duration
	MaxLead     time.Duration
	RandomStart int64
	// PersistEvery is how often the worker registry records the time this
	// node may issue up to. Zero means DefaultPersistEvery. The reservation
	// runs 2 x PersistEvery (plus MaxLead) ahead of the clock: a restart
	// after kill -9 waits at most that long for its clock to pass it.
	PersistEvery time.Duration
	// StartupWait: when the clock is behind the last time recorded for the
	// worker ID by at most this much, New (and a re-acquisition) waits for
	// the clock to pass it; by more, the node serves segment IDs and refuses
	// snowflake IDs, saying by how much, until the clock passes it. Zero
	// means 2 x PersistEvery + MaxLead + 1 s (covers a restart after a
	// crash); negative never waits.
	StartupWait time.Duration
	// MaxPeerSkew: with a registry that sees its live peers (frond.PeerClock),
	// a node whose clock is further than this from the peers' average when
	// it acquires a worker ID does not issue snowflake IDs until it is within
	// it (Leaf's design). Zero means 5 s; negative turns the check off.
	MaxPeerSkew time.Duration
	// ExpiryWarning: when the layout's time field runs out within this
	// long, the node warns at start and /readyz says so (a failed "layout"
	// check). Zero means DefaultExpiryWarning; negative never warns. A
	// layout that runs out within MinLayoutLife is refused.
	ExpiryWarning time.Duration
	// RetryEvery is how often a node without a usable worker ID (registry
	// unreachable, lease lost, clock far from its peers) tries again. Zero
	// means 1 s.
	RetryEvery time.Duration
	// Sleep waits while the clock catches up at start-up; nil means a timer
	// that Close (or New's context) interrupts. Tests inject one that moves
	// their clock.
	Sleep func(time.Duration)
	// Segment configures the segment engine.
	Segment segment.Settings
	// Now is the clock of the snowflake generator and of the reservations.
	// Nil means snowflake.NewSystemClock.
	Now func() int64
	// Serials are the business serial numbers, by name.
	Serials map[string]SerialConfig
	// ObfuscationKey (16 bytes or more) enables the opaque forms: the key
	// that gives opaque IDs.
	ObfuscationKey []byte
	// ObfuscationScheme is the key's construction: idfmt.SchemeFF1 (empty
	// means it) or idfmt.SchemeSplitmix (keys made before FF1).
	ObfuscationScheme string
	// ObfuscationVersion numbers the key; 0 means 1. Reveal takes it.
	ObfuscationVersion int
	// ObfuscationPrevious are earlier keys: they give no IDs, and Reveal
	// maps opaque IDs they gave back when asked with their version.
	ObfuscationPrevious []ObfuscationKey
	// ObfuscationWidth is the width in bits of opaque segment IDs (default
	// 63; 53 keeps them safe in JavaScript). Snowflake IDs use the layout's.
	ObfuscationWidth uint
	// Forms are default forms of segment tags in the JSON API (and, when
	// numeric, on Leaf's API).
	Forms map[string]string
	// Tokens, when any is configured, are TinyID's access tokens: each
	// token (the key) allows segment IDs of the tags it lists, and every
	// request for segment IDs, over every protocol, must carry a token that
	// allows its tag (Request.Token). Tag administration keeps the admin
	// token.
	Tokens map[string][]string
	// Idempotency configures the memory of idempotent requests
	// (Request.IdempotencyKey).
	Idempotency Idempotency
}

// Service issues IDs of every kind and administers tags.
type Service struct {
	cfg   Config
	store frond.SegmentStore
	reg   frond.WorkerRegistry
	seg   *segment.Engine
	seq   sequencer // sequence tags' group commit
	idem  *idempotency
	modes sync.Map // tag -> *modeEntry
	// modeFail is when a read of an unknown tag's mode last failed on an
	// outage (Unix ns; 0: never).
	modeFail  atomic.Int64
	modeEpoch atomic.Int64 // raised every modeTTL: cached modes older are read again
	log       *slog.Logger
	now       func() int64

	serials  map[string]*serial
	tokens   map[string]map[string]bool // Config.Tokens: token, then tag
	peerSkew atomic.Pointer[peerSkew]   // the last clock check against the live peers
	perms    map[int]perms              // by key version; empty without an obfuscation key
	permCur  perms                      // the current key's (zero without one)

	snow       atomic.Pointer[snowState] // what snowflake calls use; never nil after New
	prevLast   time.Time                 // latest time a sealed generator of this run used (supervisor only)
	workerID   atomic.Int64              // the last worker ID held (serial {node:W}), -1 before the first
	snowIssued atomic.Uint64
	saveErr    atomic.Pointer[error] // last failed reservation, nil when fine
	pubMu      sync.Mutex            // orders publish against closeSnowflake
	closing    bool                  // under pubMu: no state replaces the closed one
	runCtx     context.Context       // the supervisor's calls; cancelled by Close
	cancelRun  context.CancelFunc
	stop       chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once
}

// New acquires a worker ID, reserves time in the registry and starts the
// engines. It returns a *ClockBehindError when the clock is too far behind
// the registry's last time.
func New(ctx context.Context, cfg Config, store frond.SegmentStore, reg frond.WorkerRegistry, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PersistEvery == 0 {
		cfg.PersistEvery = DefaultPersistEvery
	}
	if cfg.RetryEvery == 0 {
		cfg.RetryEvery = time.Second
	}
	if cfg.MaxPeerSkew == 0 {
		cfg.MaxPeerSkew = 5 * time.Second
	}
	if cfg.StartupWait == 0 {
		cfg.StartupWait = 2*cfg.PersistEvery + cfg.MaxLead + time.Second
	}
	if cfg.Layout.Unit == 0 && cfg.Layout.TimeBits == 0 {
		cfg.Layout, _ = snowflake.Preset(snowflake.Twitter)
	}
	if cfg.Now == nil {
		cfg.Now = snowflake.NewSystemClock(0, 0).Now
	}
	if cfg.Segment.Logger == nil {
		cfg.Segment.Logger = log
	}
	s := &Service{cfg: cfg, store: store, reg: reg, log: log, now: cfg.Now, stop: make(chan struct{})}
	s.seq.s = s
	s.idem = newIdempotency(cfg.Idempotency, cfg.Now)
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
	s.tokens = map[string]map[string]bool{}
	for token, tags := range cfg.Tokens {
		s.tokens[token] = map[string]bool{}
		for _, tag := range tags {
			s.tokens[token][tag] = true
		}
	}
	if err := s.initKinds(); err != nil {
		s.cancelRun()
		return nil, err
	}
	if c := s.layoutCheck(); !c.OK {
		log.Warn("SNOWFLAKE LAYOUT RUNS OUT SOON: " + c.Detail)
	}

	if err := s.startSnowflake(ctx); err != nil {
		s.cancelRun()
		return nil, err
	}
	var err error
	// A tag this node knows to be a sequence tag gets no segment buffer,
	// even from a request that read its mode just before it was learnt.
	segCfg := cfg.Segment
	segCfg.Admit = func(tag string) error {
		if v, ok := s.modes.Load(tag); ok && v.(*modeEntry).mode == frond.ModeSequence {
			return fmt.Errorf("%w: tag %s is a sequence tag", frond.ErrNotLeasable, Quote(tag))
		}
		return nil
	}
	s.seg, err = segment.New(store, segCfg)
	if err != nil {
		s.cancelRun()
		return nil, err
	}
	s.wg.Add(2)
	go s.supervise()
	go s.ageModes()
	return s, nil
}

// Close stops the engines, records the exact last snowflake time and
// closes the registry and the store, within ctx: the supervisor's registry
// calls and clock waits are cancelled, and if it has not stopped when ctx
// ends, Close goes on without it (it can no longer publish a generator).
func (s *Service) Close(ctx context.Context) error {
	var errs []error
	s.closeOnce.Do(func() {
		close(s.stop)
		s.cancelRun()
		stopped := make(chan struct{})
		go func() {
			s.wg.Wait()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("the worker supervisor did not stop in time: %w", ctx.Err()))
		}
		// The unused tails of the last segments go back to the store
		// (Leaf #15) where no other node has allocated since.
		ret, err := s.seg.CloseReturning(ctx)
		if err != nil {
			s.log.Warn("unused segment IDs not given back; they are skipped", "err", err.Error())
		}
		if ret.Tags > 0 {
			s.log.Info("unused segment IDs given back to the store", "tags", ret.Tags, "ids", ret.IDs)
		}
		errs = append(errs, s.closeSnowflake(ctx), s.reg.Close(), s.store.Close())
	})
	return errors.Join(errs...)
}

// Layout returns the snowflake layout.
func (s *Service) Layout() snowflake.Layout { return s.cfg.Layout }

// SegmentID returns the next segment ID of tag.
func (s *Service) SegmentID(ctx context.Context, tag string) (int64, error) {
	return s.seg.Next(ctx, tag)
}

// SegmentIDs returns n segment IDs of tag as ranges; n is at most MaxRangesBatch.
func (s *Service) SegmentIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	if n < 1 || n > MaxRangesBatch {
		return nil, fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, n, MaxRangesBatch)
	}
	return s.seg.NextN(ctx, tag, n)
}

// SnowflakeIssued counts snowflake IDs issued since start.
func (s *Service) SnowflakeIssued() uint64 { return s.snowIssued.Load() }

// Decoded is an ID split by a layout.
type Decoded struct {
	ID     int64     `json:"id"`
	Layout string    `json:"layout"`
	Time   time.Time `json:"time"`
	Tick   int64     `json:"tick"`
	Node   int64     `json:"node"`
	Seq    int64     `json:"sequence"`
}

// LayoutByName returns the configured layout for "" or its own name, or a preset.
func (s *Service) LayoutByName(name string) (snowflake.Layout, error) {
	if name == "" || name == s.cfg.Layout.Name {
		return s.cfg.Layout, nil
	}
	return snowflake.Preset(name)
}

// Decode splits id by the layout of that name ("" means the configured one).
func (s *Service) Decode(id int64, layout string) (Decoded, error) {
	l, err := s.LayoutByName(layout)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	return DecodeWith(l, id)
}

// DecodeWith splits id by l.
func DecodeWith(l snowflake.Layout, id int64) (Decoded, error) {
	p, err := l.Decompose(id)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	name := l.Name
	if name == "" {
		name = "custom"
	}
	return Decoded{ID: id, Layout: name, Time: p.Time, Tick: p.Tick, Node: p.Node, Seq: p.Seq}, nil
}

// Tags lists the tags of the store.
func (s *Service) Tags(ctx context.Context) ([]frond.Tag, error) { return s.store.Tags(ctx) }

// Tag reads one tag.
func (s *Service) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if err := frond.ValidateTagName(name); err != nil {
		return frond.Tag{}, err
	}
	return s.store.Tag(ctx, name)
}

// CreateTag creates a tag.
func (s *Service) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	t.Mode = frond.StoredMode(t.Mode)
	out, err := s.store.CreateTag(ctx, t)
	if err == nil {
		s.setMode(out.Name, out.Mode)
		s.log.Info("tag created", "tag", t.Name, "max_id", t.MaxID, "step", t.Step, "mode", out.ModeName())
	}
	return out, err
}

// UpdateTag changes a tag's step or description or raises its max_id.
func (s *Service) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := frond.ValidateTagName(name); err != nil {
		return frond.Tag{}, err
	}
	if u.Step == nil && u.Description == nil && u.MaxID == nil {
		return frond.Tag{}, fmt.Errorf("%w: nothing to change: give step, description or max_id", frond.ErrInvalidArgument)
	}
	out, err := s.store.UpdateTag(ctx, name, u)
	if err == nil {
		s.log.Info("tag updated", "tag", name, "max_id", out.MaxID, "step", out.Step)
	}
	return out, err
}

// DeleteTag deletes a tag and drops its buffered IDs on this node.
func (s *Service) DeleteTag(ctx context.Context, name string) error {
	if err := frond.ValidateTagName(name); err != nil {
		return err
	}
	err := s.store.DeleteTag(ctx, name)
	if err == nil {
		s.seg.Forget(name)
		s.modes.Delete(name)
		s.seq.stats.Delete(name)
		if s.cfg.Segment.OnEvict != nil {
			s.cfg.Segment.OnEvict(name) // the tag's metric series go with it
		}
		s.log.Info("tag deleted", "tag", name)
	}
	return err
}

// SegmentStats returns the buffers' statistics.
func (s *Service) SegmentStats() []segment.Stats { return s.seg.Stats() }
