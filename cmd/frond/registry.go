package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
	"github.com/frond-id/frond/registry/etcdregistry"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/registry/redisregistry"
	"github.com/frond-id/frond/registry/sqlregistry"
	"github.com/frond-id/frond/registry/static"
	"github.com/frond-id/frond/registry/zkregistry"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/etcdstore"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/store/sqlstore"
)

// clockOffsetEnv shifts the process clock: a test seam for end-to-end tests
// of the clock policy (libfaketime does not reach Go programs, which read
// the clock through the vDSO). The value is a Go duration ("-5m"), or
// "@FILE": a file holding one, re-read every 50 ms so a test can step the
// clock of a running server.
const clockOffsetEnv = "FROND_TEST_CLOCK_OFFSET"

// testClock returns the process clock, shifted when clockOffsetEnv is set,
// and a function that stops following the offset file.
func testClock(ctx context.Context, log *slog.Logger) (*snowflake.SystemClock, func(), error) {
	raw := os.Getenv(clockOffsetEnv)
	clock := snowflake.NewSystemClock(0, 0)
	if raw == "" {
		return clock, func() {}, nil
	}
	path, follow := strings.CutPrefix(raw, "@")
	read := func() (time.Duration, error) {
		v := raw
		if follow {
			b, err := os.ReadFile(path)
			if err != nil {
				return 0, err
			}
			v = strings.TrimSpace(string(b))
		}
		return time.ParseDuration(v)
	}
	off, err := read()
	if err != nil {
		return nil, nil, usagef("%s=%q: %v", clockOffsetEnv, raw, err)
	}
	clock.SetOffset(off)
	log.Warn("TEST CLOCK OFFSET: "+clockOffsetEnv+" shifts this process's clock; never set it in production", "offset", off.String(), "follow_file", follow)
	if !follow {
		return clock, func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if d, err := read(); err == nil && d != off {
					off = d
					clock.SetOffset(d)
					log.Warn("TEST CLOCK OFFSET changed", "offset", d.String())
				}
			}
		}
	}()
	return clock, cancel, nil
}

// checkBackends parses every store and registry URL of cfg as opening them
// would, without contacting anything: a bad URL parameter is a usage error
// (exit 2) before any store, registry or port is touched.
func checkBackends(cfg *config.Config) error {
	for _, raw := range strings.Fields(cfg.Store) {
		scheme, _, _ := strings.Cut(raw, "://")
		var err error
		switch scheme {
		case "mysql", "postgres", "postgresql", "sqlite":
			err = sqlstore.Check(raw)
		case "redis", "rediss":
			err = redisstore.Check(raw)
		case "etcd":
			err = etcdstore.Check(raw)
		}
		if err != nil {
			return badKey("store", raw, err)
		}
	}
	raw := cfg.Registry
	scheme, _, _ := strings.Cut(raw, "://")
	var err error
	switch scheme {
	case "etcd":
		err = etcdregistry.Check(raw)
	case "zk":
		err = zkregistry.Check(raw)
	case "redis", "rediss":
		err = redisregistry.Check(raw)
	case "mysql", "postgres", "postgresql", "sqlite":
		err = sqlregistry.Check(raw)
	}
	if err != nil {
		return badKey("registry", raw, err)
	}
	return nil
}

// badKey is the usage error of key's value raw, a URL: its secrets are
// masked in the message, which the parsers' errors may quote whole.
func badKey(key, raw string, err error) error {
	err = secret.ScrubError(fmt.Errorf("%s: %w", storeName(raw), err), secret.Passwords(raw)...)
	return usageError{fmt.Errorf("%w: %w", config.ErrInvalid, &config.KeyError{Keys: []string{key}, Err: err})}
}

// openRegistry opens the worker registry cfg names. Network registries are
// wrapped with the local record (registry/cache) in the data directory.
func openRegistry(ctx context.Context, cfg *config.Config, httpPort int, now func() time.Time, log *slog.Logger) (frond.WorkerRegistry, error) {
	raw := cfg.Registry
	host, _ := os.Hostname()
	fo := file.Options{Owner: file.Owner{Host: host, Instance: cfg.Worker.Instance}, TakeOver: cfg.Worker.TakeOver, Logger: log}
	switch {
	case raw == "" || raw == "file":
		return file.OpenWith(cfg.DataDir, cfg.Node, fo)
	case strings.HasPrefix(raw, "static:"):
		n, err := static.Node(raw, host)
		if err != nil {
			return nil, usageError{err}
		}
		log.Info("worker ID from configuration", "registry", raw, "worker", n, "host", host)
		return file.OpenWith(cfg.DataDir, n, fo)
	}
	o := registry.Options{
		Host: cfg.Worker.Host, Port: cfg.Worker.Port, Now: now,
		RecycleAfter: cfg.Worker.RecycleAfter, LeaseTTL: cfg.Worker.LeaseTTL, Logger: log,
	}
	if o.Port == 0 {
		o.Port = httpPort
	}
	o = o.WithDefaults()
	scheme, _, _ := strings.Cut(raw, "://")
	var inner frond.WorkerRegistry
	var err error
	switch scheme {
	case "etcd":
		inner, err = etcdregistry.Open(ctx, raw, o)
	case "zk":
		inner, err = zkregistry.Open(raw, o)
	case "redis", "rediss":
		inner, err = redisregistry.Open(raw, o)
	case "mysql", "postgres", "postgresql", "sqlite":
		inner, err = sqlregistry.Open(raw, o)
	default:
		return nil, usagef("registry %q: scheme %q is not supported", storeName(raw), scheme)
	}
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		inner.Close()
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	key := storeName(raw) + " as " + o.Identity()
	r, err := cache.New(inner, filepath.Join(cfg.DataDir, cache.File), key, o)
	if err != nil {
		inner.Close()
		return nil, err
	}
	log.Info("worker registry", "registry", storeName(raw), "identity", o.Identity(), "recycle_after", o.RecycleAfter, "lease_ttl", o.LeaseTTL)
	return r, nil
}

// listenPort is the port of a listener's address (0 if not TCP).
func listenPort(a net.Addr) int {
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
