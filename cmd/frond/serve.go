package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/api"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/gctune"
	"github.com/frond-id/frond/internal/redisutil"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/spf13/cobra"
)

func newServeCmd(e env) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the ID server",
		Long: `Run the ID server. With no configuration it keeps segments in an SQLite file
in the data directory (./data/frond.db), takes snowflake worker ID 0 from a
file registry in the same directory, and serves HTTP on :8080. Other worker
registries (static, etcd, ZooKeeper, Redis, SQL) are chosen with --registry:
see docs/registries.md.

Every flag is also an environment variable (FROND_DATA_DIR, FROND_HTTP_ADDR,
...) and a key of the YAML file; flags win over the environment, which wins
over the file. See docs/configuration.md.`,
		Example: `  frond serve
  frond serve --data-dir /var/lib/frond --http-addr 127.0.0.1:8080
  frond serve --config /etc/frond/frond.yaml --admin-token-file /etc/frond/token`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, _, err := loadConfig(c, e)
			if err != nil {
				return err
			}
			return serve(c.Context(), cfg, e)
		},
	}
	config.AddFlags(c.Flags())
	return c
}

// newLogger is serve's logger: the configured level and format, no
// remembered secret shown (secret.Handler), go-redis's own lines included.
func newLogger(cfg *config.Config, e env) *slog.Logger {
	level, _ := cfg.LogLevel()
	opts := &slog.HandlerOptions{Level: level}
	h := slog.Handler(slog.NewTextHandler(e.stderr, opts))
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(e.stderr, opts)
	}
	log := slog.New(secret.Handler(h))
	redisutil.SetLogger(log)
	return log
}

// commandLogger is the logger of a command that opens stores (audit,
// stores): errors only, to stderr, as serve's hides secrets.
func commandLogger(e env) *slog.Logger {
	log := slog.New(secret.Handler(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	redisutil.SetLogger(log)
	return log
}

// storeStartTimeout bounds the first attempt to open a store over the
// network; a store that cannot be reached by then is opened in the
// background (lazystore) while the node serves without it.
const storeStartTimeout = 3 * time.Second

// openStores opens the store of each URL in raw (separated by spaces): one
// URL is that store; several are combined by residue class (segment.Multi),
// store i handing out only IDs congruent to i modulo their number. The
// stores are opened at once; a store over the network that cannot be reached
// does not stop the start (see openStore).
func openStores(ctx context.Context, raw, dataDir string, log *slog.Logger) (frond.SegmentStore, error) {
	urls := secret.Fields(raw)
	if len(urls) == 1 {
		return openGuarded(ctx, urls[0], dataDir, log)
	}
	stores := make([]frond.SegmentStore, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { stores[i], errs[i] = openGuarded(ctx, u, dataDir, log) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, s := range stores {
				if s != nil {
					s.Close()
				}
			}
			return nil, fmt.Errorf("store %d of %d: %w", i, len(urls), err)
		}
	}
	for i, u := range urls {
		log.Info("multi-store member", "index", i, "residue", fmt.Sprintf("%d mod %d", i, len(urls)), "store", storeName(u))
	}
	return segment.NewMulti(stores...)
}

// openGuarded opens the store at raw for serve (openStore), checked
// against the floors this node keeps of it in dataDir (segment.Guard,
// issue 67): a store that answers below a range it gave this node before
// lost acknowledged writes, and is refused and fenced. The memory store
// (trials) is not checked: it starts empty with every process.
func openGuarded(ctx context.Context, raw, dataDir string, log *slog.Logger) (frond.SegmentStore, error) {
	s, err := openStore(ctx, raw, log)
	if err != nil {
		return nil, err
	}
	if b, _ := backendOf(raw); b != nil && b.volatile {
		return s, nil
	}
	name := storeName(raw)
	f, err := segment.OpenFloors(segment.FloorsFile(dataDir, name), name)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("the floors of %s in the data directory: %w", name, err)
	}
	return segment.NewGuard(s, f, segment.GuardOptions{Logger: log}), nil
}

// checkAlone refuses to start on a single store that is part of a set of
// stores (its place, frond stores): alone, this node would ask for every
// residue, and the store refuses that on every allocation anyway; saying so
// at the start is clearer. A store not reachable now is checked by the
// store itself whenever it is used.
func checkAlone(ctx context.Context, store frond.SegmentStore, raw string) error {
	if _, multi := store.(*segment.Multi); multi {
		return nil
	}
	c, cancel := context.WithTimeout(ctx, storeStartTimeout)
	defer cancel()
	p, err := frond.PlaceOf(c, store)
	if err != nil || p.Fenced() || p.Alone() || p.Of == 1 || p.Moving() {
		return nil // not readable now, alone or the set's only store, or a change under way: the store decides at each allocation
	}
	return fmt.Errorf("store %s is %s, but this node lists it alone: it would get no ID from it. "+
		"List the stores of the set (store: \"url1 url2 ...\", in any order); to make it stand alone, change the set: frond stores set (docs/stores.md)",
		storeName(raw), p.Describe())
}

// warnUnplaced says at start, in one line with the command to run, that
// the stores this node lists were never made a set (issue 44, item 5): the
// node serves snowflake IDs, and refuses segment IDs and tag creation with
// the same words (/readyz and the dashboard show them too).
func warnUnplaced(ctx context.Context, store frond.SegmentStore, log *slog.Logger) {
	m, ok := store.(*segment.Multi)
	if !ok {
		return
	}
	c, cancel := context.WithTimeout(ctx, storeStartTimeout)
	defer cancel()
	if err := m.Unplaced(c); err != nil {
		log.Error("STORES NOT A SET: no segment ID and no new tag until frond stores set is run", "err", err.Error())
	}
}

func serve(ctx context.Context, cfg *config.Config, e env) error {
	start := time.Now()
	log := newLogger(cfg, e)
	// A small live heap collected every few megabytes of garbage cost the
	// request path more CPU than anything frond does (docs/deploy.md#memory).
	defer gctune.Start(0).Stop()

	clock, stopClock, err := testClock(ctx, e.get(clockOffsetEnv), log)
	if err != nil {
		return err
	}
	defer stopClock()
	// Listen first: the registry knows the node by its port.
	fes, err := listen(cfg)
	if err != nil {
		return err
	}
	ln := fes[0].ln
	store, err := openStores(ctx, cfg.Store, cfg.DataDir, log)
	if err == nil {
		err = checkAlone(ctx, store, cfg.Store)
		if err != nil {
			store.Close()
		}
	}
	if err != nil {
		closeListeners(fes)
		return err
	}
	warnUnplaced(ctx, store, log)
	reg, err := openRegistry(ctx, cfg, listenPort(ln.Addr()), func() time.Time { return time.Unix(0, clock.Now()) }, log)
	if err != nil {
		closeListeners(fes)
		store.Close()
		return err
	}
	spaces, err := openSpaces(ctx, cfg, ln.Addr(), log)
	if err != nil {
		closeListeners(fes)
		reg.Close()
		store.Close()
		return err
	}
	m := api.NewMetrics(api.MetricsOptions{MaxTags: cfg.Metrics.MaxTags, Tags: cfg.Metrics.Tags})
	sc := cfg.ServiceConfig() // validated by config.Load
	sc.Now, sc.Segment.OnLoad, sc.Spaces = clock.Now, m.OnLoad, spaces
	svc, err := service.New(ctx, sc, store, reg, log)
	if err != nil {
		closeListeners(fes)
		if spaces != nil {
			spaces.Close(ctx)
		}
		reg.Close()
		store.Close()
		if ctx.Err() != nil {
			log.Info("stopped during start-up; no snowflake ID was issued")
			return nil
		}
		return err
	}
	m.Attach(svc)

	if cfg.AdminToken == "" && !cfg.Loopback() {
		log.Warn("NO ADMIN TOKEN: tag administration (create, change, delete, reveal) is answered only to clients on this machine (loopback); set --admin-token-file to administer tags from elsewhere", "http_addr", cfg.HTTPAddr, "grpc_addr", cfg.GRPCAddr, "resp_addr", cfg.RESPAddr)
	}
	for _, msg := range topologyWarnings(cfg) {
		log.Warn(msg)
	}
	errc := make(chan error, len(fes))
	if err := serveAll(fes, svc, m, cfg, log, errc); err != nil {
		closeListeners(fes)
		svc.Close(ctx)
		return err
	}
	log.Info("frond listening", "addr", ln.Addr().String(), "store", storeName(cfg.Store), "worker", svc.Worker(),
		"layout", svc.Layout().Name, "data_dir", cfg.DataDir, "startup", time.Since(start).Round(time.Microsecond).String())
	go checkAdvertise(ctx, cfg, spaces, log)

	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight", "grace", cfg.ShutdownTimeout)
	}
	// Requests in flight get the shutdown budget less a share kept for the
	// service, so that they cannot use it all up before the worker registry
	// records the exact last snowflake time.
	deadline := time.Now().Add(cfg.ShutdownTimeout)
	hctx, hcancel := context.WithDeadline(context.Background(), deadline.Add(-min(cfg.ShutdownTimeout/4, 2*time.Second)))
	defer hcancel()
	sctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if spaces != nil {
		// Keyed sequence sections given back first, while this node still
		// answers: a node that forwards here is refused as unavailable and
		// takes the section at once (issue 58, item 5).
		if err := spaces.Leave(sctx); err != nil {
			log.Warn("shutting down: keyed sequence sections not all given back (their leases run out)", "err", err)
		}
	}
	serr := stopAll(hctx, fes)
	if serr != nil && onlyDeadline(serr) {
		// What the grace promises: requests still in flight when it runs
		// out are cut, and the shutdown goes on to record the snowflake
		// time. Not a failed shutdown.
		log.Warn("shutting down: requests still in flight when the grace ran out were cut", "grace", cfg.ShutdownTimeout)
		serr = nil
	}
	cerr := svc.Close(sctx)
	if err = errors.Join(err, serr, cerr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped", "data_dir", cfg.DataDir)
	return nil
}

// onlyDeadline reports whether err is context.DeadlineExceeded, alone or
// joined with more of itself (stopAll's errors, one per front end).
func onlyDeadline(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyDeadline(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// storeName shows the stores without secrets.
func storeName(raw string) string {
	if f := secret.Fields(raw); len(f) > 1 {
		for i := range f {
			f[i] = storeName(f[i])
		}
		return strings.Join(f, " ")
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		// (The local worker record's key is built from this form: keep it.)
		u.User = url.User(u.User.Username())
		return secret.URL(u.String())
	}
	if strings.Contains(raw, "@") || strings.Contains(raw, "?") {
		return secret.URL(raw) // a URL that does not parse: mask what looks secret
	}
	if b, scheme := backendOf(raw); b != nil && b.file {
		if p, ok := strings.CutPrefix(raw, scheme+"://"); ok {
			if abs, err := filepath.Abs(p); err == nil {
				return scheme + "://" + abs
			}
		}
	}
	return raw
}
