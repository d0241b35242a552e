// Package service is what every front end (HTTP, gRPC, RESP) calls: it
// checks a request once, whatever the protocol, and routes it to the
// segment engine, the sequence tags, a worker.Issuer (snowflake IDs) or
// the other kinds. It knows no transport and no driver.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
)

// Limits of the batch calls.
const (
	MaxBatch       = 10_000    // IDs returned one by one
	MaxRangesBatch = 1_000_000 // segment IDs returned as ranges
)

// Config configures a Service. The zero value means the defaults.
type Config struct {
	// Snowflake configures the worker ID and snowflake IDs; its Now, when
	// nil, is Now.
	Snowflake worker.Settings
	// Segment configures the segment engine.
	Segment segment.Settings
	// Now is the clock of serials, idempotency and snowflake IDs (unless
	// Snowflake.Now is set). Nil means snowflake.NewSystemClock.
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
	// Prefixes are prefixes of segment tags' text IDs ("ord" gives
	// "ord_2XgH4..." in base62), by TypeID's rule (CheckPrefix). A request
	// may name its own.
	Prefixes map[string]string
	// Tokens, when any is configured, are TinyID's access tokens: each
	// token (the key) allows segment IDs of the tags it lists, and every
	// request for segment IDs, over every protocol, must carry a token that
	// allows its tag (Request.Token). Tag administration keeps the admin
	// token.
	Tokens map[string][]string
	// AdminToken, when set, allows every tag as a tag token would (issue
	// 59): the admin's own token on an ID route is no wrong guess.
	AdminToken string
	// Idempotency configures the memory of idempotent requests
	// (Request.IdempotencyKey).
	Idempotency Idempotency
	// Spaces serves the keyed sequence spaces (KindSeq); nil: none. The
	// Service closes it.
	Spaces *keyseq.Spaces
	// AnswerBudget bounds the bytes of answers built and not yet read by
	// their clients, every protocol and client together (budget): 0 means
	// DefaultAnswerBudget, a negative value no bound.
	AnswerBudget int64
}

// Service issues IDs of every kind and administers tags.
type Service struct {
	cfg    Config
	store  frond.SegmentStore
	log    *slog.Logger
	seg    *segment.Engine            // segment tags
	seq    sequencer                  // sequence tags' group commit
	modes  modeCache                  // each tag's mode: segment or sequence
	w      *worker.Issuer             // the worker ID and snowflake IDs
	kinds  kindSet                    // serials and opaque forms
	tokens map[string]map[string]bool // Config.Tokens: token, then tag
	idem   *idempotency
	budget budget // answers built and not yet read (Config.AnswerBudget)
	bg     background
	leases LeaseLimit // SetLeaseLimit; nil: none
}

// background is the Service's own work: the mode cache's ageing, mode
// refreshes and sequence calls that outlive their request.
type background struct {
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once // Close
}

// New starts the engines: the segment engine on store, and a worker.Issuer
// on reg, which it owns from then on (Close closes both). Only errors that
// retrying cannot fix are returned (see worker.New); on an error, store and
// reg are the caller's to close.
func New(ctx context.Context, cfg Config, store frond.SegmentStore, reg frond.WorkerRegistry, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = snowflake.NewSystemClock(0, 0).Now
	}
	if cfg.Snowflake.Now == nil {
		cfg.Snowflake.Now = cfg.Now
	}
	cfg.Snowflake = cfg.Snowflake.WithDefaults()
	if cfg.Segment.Logger == nil {
		cfg.Segment.Logger = log
	}
	s := &Service{cfg: cfg, store: store, log: log}
	s.budget.limit = cfg.AnswerBudget
	if s.budget.limit == 0 {
		s.budget.limit = DefaultAnswerBudget
	}
	s.seq.s = s
	s.idem = newIdempotency(cfg.Idempotency, cfg.Now)
	s.bg.ctx, s.bg.cancel = context.WithCancel(context.Background())
	s.tokens = map[string]map[string]bool{}
	for token, tags := range cfg.Tokens {
		s.tokens[token] = map[string]bool{}
		for _, tag := range tags {
			s.tokens[token][tag] = true
		}
	}
	if err := s.initKinds(); err != nil {
		s.bg.cancel()
		return nil, err
	}
	// A tag this node knows to be a sequence tag gets no segment buffer,
	// even from a request that read its mode just before it was learnt.
	segCfg := cfg.Segment
	segCfg.Admit = func(tag string) error {
		if v, ok := s.modes.m.Load(tag); ok && v.(*modeEntry).mode == frond.ModeSequence {
			return fmt.Errorf("%w: tag %s is a sequence tag", frond.ErrNotLeasable, Quote(tag))
		}
		return nil
	}
	var err error
	if s.seg, err = segment.New(store, segCfg); err != nil {
		s.bg.cancel()
		return nil, err
	}
	if idle := s.seg.Settings().IdleAfter; idle > 0 {
		s.modes.idleEpochs = max(2, int64((idle+modeTTL-1)/modeTTL))
	}
	if err := s.checkMappings(ctx); err != nil {
		s.seg.Close()
		s.bg.cancel()
		return nil, err
	}
	if s.w, err = worker.New(ctx, reg, cfg.Snowflake, log); err != nil {
		s.seg.Close() // nothing buffered yet: the store is not called
		s.bg.cancel()
		return nil, err
	}
	s.bg.wg.Add(1)
	go s.ageModes()
	return s, nil
}

// Close stops the engines, gives the unused tails of the last segments
// back, records the exact last snowflake time and closes the registry and
// the store, within ctx (see worker.Issuer.Close).
func (s *Service) Close(ctx context.Context) error {
	var errs []error
	s.bg.once.Do(func() {
		s.bg.cancel()
		stopped := make(chan struct{})
		go func() {
			s.bg.wg.Wait()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("the background work did not stop in time: %w", ctx.Err()))
		}
		// Keyed sequences stop answering and give their sections back, so
		// that other nodes take them at once.
		if s.cfg.Spaces != nil {
			errs = append(errs, s.cfg.Spaces.Close(ctx))
		}
		// The worker first, as before the Issuer had a package: its
		// supervisor stops while ctx still has time, and the exact last
		// time is recorded.
		errs = append(errs, s.w.Close(ctx))
		// The unused tails of the last segments go back to the store
		// (Leaf #15) where no other node has allocated since.
		ret, err := s.seg.CloseReturning(ctx)
		if err != nil {
			s.log.Warn("unused segment IDs not given back; they are skipped", "err", err.Error())
		}
		if ret.Tags > 0 {
			s.log.Info("unused segment IDs given back to the store", "tags", ret.Tags, "ids", ret.IDs)
		}
		errs = append(errs, s.store.Close())
	})
	return errors.Join(errs...)
}

// Layout returns the snowflake layout.
func (s *Service) Layout() snowflake.Layout { return s.cfg.Snowflake.Layout }

// Decoded is an ID split by a layout.
type Decoded struct {
	ID     int64     `json:"id"`
	Layout string    `json:"layout"`
	Time   time.Time `json:"time"`
	Tick   int64     `json:"tick"`
	Node   int64     `json:"node"`
	Seq    int64     `json:"sequence"`
	// Datacenter and Worker split Node, with a layout that has datacenter
	// bits.
	Datacenter *int64 `json:"datacenter,omitempty"`
	Worker     *int64 `json:"worker,omitempty"`
	// Shard is the shard field, with a layout that has shard bits.
	Shard *int64 `json:"shard,omitempty"`
}

// LayoutByName returns the configured layout for "" or its own name, or a preset.
func (s *Service) LayoutByName(name string) (snowflake.Layout, error) {
	if name == "" || name == s.cfg.Snowflake.Layout.Name {
		return s.cfg.Snowflake.Layout, nil
	}
	l, err := snowflake.Preset(name)
	if err == nil && l.Name == s.cfg.Snowflake.Layout.Name {
		return s.cfg.Snowflake.Layout, nil // an alias ("leaf"): the configured one, datacenter bits included
	}
	return l, err
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
	d := Decoded{ID: id, Layout: name, Time: p.Time, Tick: p.Tick, Node: p.Node, Seq: p.Seq}
	if l.DatacenterBits > 0 {
		d.Datacenter, d.Worker = &p.Datacenter, &p.Worker
	}
	if l.ShardBits > 0 {
		d.Shard = &p.Shard
	}
	return d, nil
}

// Tags lists the tags of the store.
func (s *Service) Tags(ctx context.Context) ([]frond.Tag, error) { return s.store.Tags(ctx) }

// Pages of tags: DefaultTagPage when the caller does not say, at most
// MaxTagPage.
const (
	DefaultTagPage = 1000
	MaxTagPage     = 10000
)

// TagPage is a page of the store's tags by name: at most limit (0 means
// DefaultTagPage) after the name after, and next, the after of the next
// page ("" when this is the last). One store read of limit+1 rows: a store
// of a million tags is listed a page at a time, by every protocol alike.
func (s *Service) TagPage(ctx context.Context, after string, limit int) (tags []frond.Tag, next string, err error) {
	if limit == 0 {
		limit = DefaultTagPage
	}
	if limit < 1 || limit > MaxTagPage {
		return nil, "", fmt.Errorf("%w: a page of tags holds 1 to %d tags, not %d", frond.ErrInvalidArgument, MaxTagPage, limit)
	}
	if after != "" {
		if err := frond.ValidateTagName(after); err != nil {
			return nil, "", fmt.Errorf("%w: the page's cursor is not a tag name: %v", frond.ErrInvalidArgument, err)
		}
	}
	tags, err = frond.TagsAfter(ctx, s.store, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(tags) > limit {
		tags = tags[:limit]
		next = tags[limit-1].Name
	}
	return tags, next, nil
}

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
	if err := s.createMapping(&t); err != nil {
		return frond.Tag{}, err
	}
	out, err := s.store.CreateTag(ctx, t)
	if err == nil {
		s.setTag(out)
		s.log.Info("tag created", "tag", t.Name, "max_id", t.MaxID, "step", t.Step, "mode", out.ModeName(), "mapping", out.MappingName())
	}
	return out, adminError(err)
}

// UpdateTag changes a tag's step or description or raises its max_id.
func (s *Service) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := frond.ValidateTagName(name); err != nil {
		return frond.Tag{}, err
	}
	if u.Step == nil && u.Description == nil && u.MaxID == nil && u.Mapping == nil && !u.Adopt {
		return frond.Tag{}, fmt.Errorf("%w: nothing to change: give step, description, max_id or mapping", frond.ErrInvalidArgument)
	}
	if u.Mapping != nil {
		return s.changeMapping(ctx, name, u)
	}
	out, err := s.store.UpdateTag(ctx, name, u)
	if err == nil {
		s.log.Info("tag updated", "tag", name, "max_id", out.MaxID, "step", out.Step)
	}
	return out, adminError(err)
}

// DeleteTag deletes a tag and drops its buffered IDs on this node.
func (s *Service) DeleteTag(ctx context.Context, name string) error {
	if err := frond.ValidateTagName(name); err != nil {
		return err
	}
	err := s.store.DeleteTag(ctx, name)
	if err == nil {
		s.seg.Forget(name)
		s.modes.m.Delete(name)
		s.seq.forgetSequence(name)
		s.log.Info("tag deleted", "tag", name)
	}
	return adminError(err)
}

// SegmentStats returns the buffers' statistics, by tag.
func (s *Service) SegmentStats() []segment.Stats { return s.seg.Stats() }

// SegmentOverview returns the buffers' statistics in no order and the count
// of segment IDs handed out since start (see segment.Overview).
func (s *Service) SegmentOverview() segment.Overview { return s.seg.Overview() }
