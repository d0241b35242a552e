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
	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cache"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/snowflake"
)

// clockOffsetEnv shifts the process clock: a test seam for end-to-end tests
// of the clock policy (libfaketime does not reach Go programs, which read
// the clock through the vDSO). The value is a Go duration ("-5m"), or
// "@FILE": a file holding one, re-read every 50 ms so a test can step the
// clock of a running server.
const clockOffsetEnv = "FROND_TEST_CLOCK_OFFSET"

// testClock returns the process clock, shifted by raw (clockOffsetEnv's value),
// and a function that stops following the offset file.
func testClock(ctx context.Context, raw string, log *slog.Logger) (*snowflake.SystemClock, func(), error) {
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

// openRegistry opens the worker registry cfg names. Network registries are
// wrapped with the local record (registry/cache) in the data directory.
func openRegistry(ctx context.Context, cfg *config.Config, httpPort int, now func() time.Time, log *slog.Logger) (frond.WorkerRegistry, error) {
	raw := cfg.Registry
	b, err := registryBackend(raw)
	if err != nil {
		return nil, usageError{err}
	}
	host, _ := os.Hostname()
	if b.node != nil {
		n, err := b.node(raw, cfg, host)
		if err != nil {
			return nil, usageError{err}
		}
		log.Info("worker ID from configuration", "registry", raw, "worker", n, "host", host)
		fo := file.Options{Owner: file.Owner{Host: host, Instance: cfg.Worker.Instance}, TakeOver: cfg.Worker.TakeOver, Logger: log}
		return file.OpenWith(cfg.DataDir, n, fo)
	}
	o := registry.Options{
		Host: cfg.Worker.Host, Port: cfg.Worker.Port, Now: now,
		RecycleAfter: cfg.Worker.RecycleAfter, LeaseTTL: cfg.Worker.LeaseTTL, Logger: log,
		Datacenter: cfg.Snowflake.Datacenter,
		Layout:     cfg.ServiceConfig().Snowflake.Layout.Fingerprint(), // recorded in the registry: one layout per registry
	}
	if o.Port == 0 {
		o.Port = httpPort
	}
	o = o.WithDefaults()
	inner, err := b.openRegistry(ctx, raw, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		inner.Close()
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	key := storeName(raw) + o.DatacenterSuffix(" datacenter ") + " as " + o.Identity()
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

// topologyWarnings are what a node's configuration means for a second
// node, said once at start: the defaults are right for one node only (two
// nodes started with them hand out the same IDs), and a shared store with
// the default worker ID from configuration leaves the snowflake IDs of two
// such nodes the same.
func topologyWarnings(cfg *config.Config) []string {
	reg, _ := backendOf(cfg.Registry)
	if reg == nil || reg.node == nil || reg.nodeKey != "node" {
		return nil // a worker registry, or static's list of hosts: each node its own ID
	}
	shared, file := false, false
	for _, raw := range secret.Fields(cfg.Store) {
		if b, _ := backendOf(raw); b != nil && b.remote {
			shared = true
		} else if b != nil && b.file {
			file = true // a database file named: nodes on this machine may share it
		}
	}
	if !shared && file && cfg.Node != 0 {
		// Two nodes on one machine sharing the file, each its own worker
		// ID, is a documented set-up (docs/stores.md): no SINGLE NODE
		// warning saying they repeat each other's IDs (issue 60).
		return []string{fmt.Sprintf("the segment store is the file %s: nodes on this machine may share it, each with its own worker ID (this one %d); "+
			"nodes on other machines need a shared store and a worker registry: docs/deploy.md#n-nodes-behind-a-load-balancer", storeName(cfg.Store), cfg.Node)}
	}
	if !shared {
		return []string{fmt.Sprintf("SINGLE NODE: the segment store (%s) and the worker ID (%d, from configuration) are this node's alone: "+
			"a second node started the same way hands out the same segment and snowflake IDs. Several nodes need one shared store and a worker registry: "+
			"docs/deploy.md#n-nodes-behind-a-load-balancer", storeName(cfg.Store), cfg.Node)}
	}
	if cfg.Node == 0 {
		return []string{"the store is shared, but the worker ID is 0, the default of the file registry: another node with worker ID 0 (in the same datacenter) hands out the same snowflake IDs. " +
			"Give each node its own (node: 1, 2, ...) or use a worker registry (zk, etcd, redis, mysql, postgres): docs/registries.md"}
	}
	return nil
}
