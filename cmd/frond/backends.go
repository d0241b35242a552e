package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/keyseq/seqstore"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cosidregistry"
	"github.com/frond-id/frond/registry/etcdregistry"
	"github.com/frond-id/frond/registry/redisregistry"
	"github.com/frond-id/frond/registry/sqlregistry"
	"github.com/frond-id/frond/registry/static"
	"github.com/frond-id/frond/registry/zkregistry"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/cosidstore"
	"github.com/frond-id/frond/store/etcdstore"
	"github.com/frond-id/frond/store/lazystore"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/store/sqlstore"
)

// backend is one kind of segment store or worker registry, named by the
// scheme of its URL. backends is the only place that names them: opening,
// checking and describing a store or a registry all go through it.
type backend struct {
	schemes []string
	// remote: reached over the network. serve opens such a store in the
	// background when it does not answer at start (lazystore).
	remote bool
	// file: the URL names a file on this machine; its name is made
	// absolute (it keys the local worker record).
	file bool
	// volatile: the store keeps nothing across a restart (trials only).
	volatile bool

	// checkStore parses a store URL as opening it would, contacting
	// nothing; openStore opens it. Nil openStore: not a store.
	checkStore func(raw string) error
	openStore  func(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error)

	// checkRegistry and openRegistry are those of a worker registry
	// shared over a server (frond keeps its local record, registry/cache,
	// around it).
	// checkRegistry takes the node's options: some registries' names
	// carry its datacenter (Redis's frond_dc, the SQL tables).
	checkRegistry func(raw string, o registry.Options) error
	openRegistry  func(ctx context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error)
	// openSections opens the keyed sequences' section store (spaces,
	// maxima, owners' leases: keyseq) of the URL. Nil: the scheme keeps
	// no keyed sequences.
	openSections func(ctx context.Context, raw string) (keyseq.ClosingStore, error)

	// node is the worker ID of a registry kept in the data directory
	// (registry/file), for registries that take it from configuration;
	// nodeKey is the configuration key that sets it.
	node    func(raw string, cfg *config.Config, host string) (int64, error)
	nodeKey string
}

var backends = []backend{
	{schemes: []string{"sqlite"}, file: true,
		checkStore: sqlstore.Check, openStore: openSQLStore, checkRegistry: checkByOpen(sqlregistry.Open), openRegistry: openSQLRegistry,
		openSections: sections(seqstore.OpenSQL)},
	{schemes: []string{"mysql", "postgres", "postgresql"}, remote: true,
		checkStore: sqlstore.Check, openStore: openSQLStore, checkRegistry: checkByOpen(sqlregistry.Open), openRegistry: openSQLRegistry,
		openSections: sections(seqstore.OpenSQL)},
	{schemes: []string{"redis", "rediss"}, remote: true,
		checkStore: redisstore.Check, openStore: openRedisStore, checkRegistry: checkByOpen(redisregistry.Open),
		openSections: sections(seqstore.OpenRedis),
		openRegistry: func(_ context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error) {
			return reg(redisregistry.Open(raw, o))
		}},
	{schemes: cosidregistry.Schemes, remote: true, checkStore: cosidstore.Check, openStore: openCosIdStore,
		checkRegistry: cosidregistry.Check,
		openRegistry: func(_ context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error) {
			return reg(cosidregistry.Open(raw, o))
		}},
	{schemes: []string{"etcd"}, remote: true,
		checkStore: etcdstore.Check,
		openStore: func(ctx context.Context, raw string, _ *slog.Logger) (frond.SegmentStore, error) {
			return store(etcdstore.Open(ctx, raw))
		},
		checkRegistry: func(raw string, _ registry.Options) error { return etcdregistry.Check(raw) },
		openRegistry: func(ctx context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error) {
			return reg(etcdregistry.Open(ctx, raw, o))
		},
		openSections: sections(seqstore.OpenEtcd)},
	{schemes: []string{"zk"}, remote: true, checkRegistry: func(raw string, _ registry.Options) error { return zkregistry.Check(raw) },
		openRegistry: func(_ context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error) {
			return reg(zkregistry.Open(raw, o))
		}},
	{schemes: []string{"memory"}, volatile: true, openStore: openMemoryStore,
		// Trials, as the memory store: one process, gone at exit.
		openSections: func(context.Context, string) (keyseq.ClosingStore, error) { return &keyseq.MemLeases{}, nil }},
	{schemes: []string{"file"}, nodeKey: "node", node: func(raw string, cfg *config.Config, _ string) (int64, error) {
		if raw != "" && raw != "file" {
			return 0, fmt.Errorf("%q: the registry in the data directory is \"file\"", raw)
		}
		return cfg.Node, nil
	}},
	{schemes: []string{"static"}, nodeKey: "registry", node: func(raw string, _ *config.Config, host string) (int64, error) {
		return static.Node(raw, host)
	}},
}

// sections makes a section store's opener an openSections.
func sections[S keyseq.ClosingStore](open func(ctx context.Context, raw string) (S, error)) func(ctx context.Context, raw string) (keyseq.ClosingStore, error) {
	return func(ctx context.Context, raw string) (keyseq.ClosingStore, error) {
		s, err := open(ctx, raw)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// isSections: the scheme keeps keyed sequences.
func isSections(b *backend) bool { return b.openSections != nil }

func openSQLStore(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error) {
	return store(sqlstore.Open(ctx, raw, sqlstore.Options{Logger: log}))
}

func openCosIdStore(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error) {
	return logRisks(cosidstore.Open(ctx, raw))(log)
}

func openSQLRegistry(_ context.Context, raw string, o registry.Options) (frond.WorkerRegistry, error) {
	return reg(sqlregistry.Open(raw, o))
}

func openRedisStore(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error) {
	return logRisks(store(redisstore.Open(ctx, raw)))(log)
}

// logRisks returns an opened store, after logging the risks it warns of
// (frond.Warner: a Redis that may lose its keys).
func logRisks(s frond.SegmentStore, err error) func(log *slog.Logger) (frond.SegmentStore, error) {
	return func(log *slog.Logger) (frond.SegmentStore, error) {
		if err != nil {
			return nil, err
		}
		if w, ok := s.(frond.Warner); ok {
			for _, warning := range w.Warnings() {
				log.Warn("STORE RISK: " + warning)
			}
		}
		return s, nil
	}
}

// store and reg return a backend's opened value as the interface, nil on
// an error (never a typed nil that a caller's nil check would miss).
func store[S frond.SegmentStore](s S, err error) (frond.SegmentStore, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

func reg[R frond.WorkerRegistry](r R, err error) (frond.WorkerRegistry, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

func openMemoryStore(_ context.Context, _ string, log *slog.Logger) (frond.SegmentStore, error) {
	log.Warn("MEMORY STORE: segment IDs are kept in memory only and are issued AGAIN after a restart; use it for trials only")
	return memstore.New(nil), nil
}

// backendOf returns the backend of a store or registry setting, by its
// scheme: the part before "://", or before ":" ("static:3"); an empty
// setting is "file". Nil if no backend has the scheme.
func backendOf(raw string) (*backend, string) {
	scheme, _, _ := strings.Cut(raw, ":")
	scheme = strings.ToLower(scheme) // as url.Parse reads it
	if raw == "" {
		scheme = "file"
	}
	for i := range backends {
		for _, s := range backends[i].schemes {
			if s == scheme {
				return &backends[i], scheme
			}
		}
	}
	return nil, scheme
}

// schemes lists the schemes of the backends for which is holds.
func schemes(is func(*backend) bool) string {
	var out []string
	for i := range backends {
		if is(&backends[i]) {
			out = append(out, backends[i].schemes...)
		}
	}
	return strings.Join(out, ", ")
}

func isStore(b *backend) bool       { return b.openStore != nil }
func isURLRegistry(b *backend) bool { return b.openRegistry != nil }

// The flags of the commands that open stores without serving: they read the
// configuration file, the data directory and the stores (frond stores), and
// the registry and layout (frond audit); the listeners' flags are serve's.
var (
	storeFlags   = []string{"config", "data-dir", "store"}
	backendFlags = append(slices.Clip(storeFlags), "registry", "node", "layout", "datacenter")
)

// storeBackend returns the backend of the store at raw.
func storeBackend(raw string) (*backend, error) {
	secret.RememberURLs(raw) // a store named by a flag (--retire) too
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the URL whole, password included.
		return nil, fmt.Errorf("store URL %q: %v", secret.URL(raw), secret.ScrubError(err, secret.Passwords(raw)...))
	}
	b, scheme := backendOf(raw)
	if b == nil || !isStore(b) || u.Scheme != scheme {
		return nil, fmt.Errorf("store URL %q: scheme %q is not supported (%s)", secret.URL(raw), u.Scheme, schemes(isStore))
	}
	return b, nil
}

// registryBackend returns the backend of the worker registry raw names.
func registryBackend(raw string) (*backend, error) {
	secret.RememberURLs(raw)
	b, _ := backendOf(raw)
	if b == nil || b.node == nil && !(isURLRegistry(b) && strings.Contains(raw, "://")) {
		return nil, fmt.Errorf("%q: want file, static:N, static:ordinal[+BASE] or a URL with scheme %s", secret.URL(raw), schemes(isURLRegistry))
	}
	return b, nil
}

// openStore opens the store at raw for serve. A store over the network
// that cannot be reached within storeStartTimeout does not stop the start:
// it is opened in the background and fails with store_unavailable until
// then (snowflake IDs and the other stores are served meanwhile). Any other
// error (a bad URL, a wrong password, a Redis without persistence) still
// stops it.
func openStore(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error) {
	b, err := storeBackend(raw)
	if err != nil {
		return nil, usageError{err}
	}
	if !b.remote {
		return b.openStore(ctx, raw, log)
	}
	s, err := lazystore.Open(ctx, func(ctx context.Context) (frond.SegmentStore, error) {
		return b.openStore(ctx, raw, log)
	}, lazystore.Options{Name: storeName(raw), Timeout: storeStartTimeout, Logger: log})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openStoreNow opens the store at raw for a command: one over the network
// must answer within storeStartTimeout.
func openStoreNow(ctx context.Context, raw string, log *slog.Logger) (frond.SegmentStore, error) {
	b, err := storeBackend(raw)
	if err != nil {
		return nil, usageError{err}
	}
	if b.remote {
		// Through lazystore, without its retries: its errors, as the
		// node's, pass through secret.Hide.
		s, err := lazystore.Open(ctx, func(ctx context.Context) (frond.SegmentStore, error) {
			return b.openStore(ctx, raw, log)
		}, lazystore.Options{Name: storeName(raw), Timeout: storeStartTimeout, Logger: log, Retry: func(error) bool { return false }})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return b.openStore(ctx, raw, log)
}

// checkBackends parses every store and registry URL of cfg as opening them
// would, without contacting anything, and checks that a worker ID taken
// from configuration fits the layout: a bad setting is a usage error (exit
// 2) before any store, registry or port is touched.
func checkBackends(cfg *config.Config) error {
	for _, raw := range secret.Fields(cfg.Store) {
		b, err := storeBackend(raw)
		if err == nil && b.checkStore != nil {
			err = b.checkStore(raw)
		}
		if err != nil {
			return badKey("store", raw, err)
		}
	}
	if _, err := sequencesStore(cfg); err != nil {
		return badKey("sequences.store", cfg.Sequences.Store, err)
	}
	raw := cfg.Registry
	b, err := registryBackend(raw)
	if err != nil {
		return badKey("registry", raw, err)
	}
	if b.checkRegistry != nil {
		o := registry.Options{Datacenter: cfg.Snowflake.Datacenter, RecycleAfter: cfg.Worker.RecycleAfter, LeaseTTL: cfg.Worker.LeaseTTL}
		if err := b.checkRegistry(raw, o); err != nil {
			return badKey("registry", raw, err)
		}
	}
	if b.node == nil {
		return nil
	}
	host, _ := os.Hostname()
	n, err := b.node(raw, cfg, host)
	if err != nil {
		return badKey("registry", raw, err)
	}
	layout, err := snowflake.Preset(cfg.Layout)
	if err == nil {
		_, err = snowflake.New(snowflake.Settings{Layout: layout, Node: n})
	}
	keys := []string{b.nodeKey, "layout"}
	if layout.DatacenterBits = cfg.Snowflake.DatacenterBits; err == nil && layout.DatacenterBits > 0 && n > layout.MaxWorker() {
		// The worker ID is within the datacenter: it has the worker bits.
		err = fmt.Errorf("%w: worker ID %d: 0 to %d, the worker bits left by %d datacenter bits", snowflake.ErrInvalidLayout, n, layout.MaxWorker(), layout.DatacenterBits)
		keys = []string{b.nodeKey, "snowflake.datacenter_bits"}
	}
	if err != nil {
		return usageError{fmt.Errorf("%w: %w", config.ErrInvalid, &config.KeyError{Keys: keys, Err: err})}
	}
	return nil
}

// checkByOpen is registry.CheckIn of open.
func checkByOpen(open func(string, registry.Options) (*registry.Protocol, error)) func(string, registry.Options) error {
	return func(raw string, o registry.Options) error { return registry.CheckIn(raw, o, open) }
}

// badKey is the usage error of key's value raw, a URL: its secrets are
// masked in the message, which the parsers' errors may quote whole.
func badKey(key, raw string, err error) error {
	err = secret.ScrubError(fmt.Errorf("%s: %w", storeName(raw), err), secret.Passwords(raw)...)
	return usageError{fmt.Errorf("%w: %w", config.ErrInvalid, &config.KeyError{Keys: []string{key}, Err: err})}
}
