// Package registry holds what the worker registries share: the options
// every registry takes and the node's identity. Each registry is a package
// below this one (file, static, etcdregistry, zkregistry, redisregistry,
// sqlregistry, and cache, which wraps the network ones); they implement
// frond.WorkerRegistry and keep its rules, which registrytest checks against
// real servers.
//
// # Recycling and the local record
//
// A worker ID whose holder is gone (its lease expired, or, for registries
// without leases, its last recorded time is old) is given to another node
// only when that node's clock is past the ID's last recorded time plus
// RecycleAfter. The same bound lets a node run from its local record while
// the registry is unreachable (package cache): it may issue only up to its
// last confirmed time plus RecycleAfter, before which nobody else can be
// given its ID. RecycleAfter is therefore both the delay before a dead
// node's ID returns to the pool and the longest a node issues snowflake IDs
// while its registry is down.
package registry

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"
)

// Defaults of Options.
const (
	DefaultRecycleAfter = 10 * time.Minute
	DefaultLeaseTTL     = 10 * time.Second
	DefaultPort         = 8080
)

// Options configure a registry. The zero value of each field means its
// default.
type Options struct {
	// Host and Port name this node ("host:port"): registries that assign by
	// identity (ZooKeeper, Redis, SQL with reuse) give a restarting node the
	// ID it had. Host defaults to the first non-loopback IPv4 address, Port
	// to 8080.
	Host string
	Port int
	// Now is the clock used for recorded times and recycling decisions; nil
	// means time.Now. The service's test clock offset reaches registries
	// through it.
	Now func() time.Time
	// RecycleAfter: see the package documentation. Zero means 10 minutes.
	RecycleAfter time.Duration
	// LeaseTTL is how long a lease (etcd), session (ZooKeeper) or liveness
	// key (Redis, SQL) outlives a node that stopped renewing it. Zero means
	// 10 s.
	LeaseTTL time.Duration
	// Logger receives registry events; nil discards them.
	Logger *slog.Logger
	// Datacenter is the node's datacenter (worker.Settings.Datacenter):
	// every registry keeps the worker IDs of each datacenter apart (etcd's
	// prefix, ZooKeeper's root, Redis's frond_dc, the SQL table get its
	// number; 0 keeps the names of a registry without datacenters), so
	// nodes of two datacenters sharing one registry may hold the same
	// worker ID, and their IDs still differ by the datacenter bits.
	Datacenter int64
	// Layout is the snowflake layout this node issues with
	// (snowflake.Layout.Fingerprint); "" checks nothing. A registry that
	// keeps records (etcd, ZooKeeper, Redis, SQL: registry.LayoutRecorder)
	// records the layout of the first node that acquires a worker ID, for
	// every datacenter, and refuses a node whose layout differs: two
	// layouts' node fields would meet.
	Layout string
}

// DatacenterSuffix is what a registry adds to its names for the node's
// datacenter: "" for datacenter 0, else sep and the number.
func (o Options) DatacenterSuffix(sep string) string {
	if o.Datacenter == 0 {
		return ""
	}
	return sep + strconv.FormatInt(o.Datacenter, 10)
}

// WithDefaults returns o with its zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.Host == "" {
		o.Host = DefaultHost()
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RecycleAfter <= 0 {
		o.RecycleAfter = DefaultRecycleAfter
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Identity is "host:port".
func (o Options) Identity() string { return net.JoinHostPort(o.Host, strconv.Itoa(o.Port)) }

// Validate checks the fields a user sets.
func (o Options) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("worker port %d: must be 0 to 65535", o.Port)
	}
	if o.Datacenter < 0 {
		return fmt.Errorf("datacenter %d: must not be negative", o.Datacenter)
	}
	if o.RecycleAfter < 0 || o.LeaseTTL < 0 {
		return fmt.Errorf("recycle_after %v and lease_ttl %v must not be negative", o.RecycleAfter, o.LeaseTTL)
	}
	return nil
}

// DefaultHost returns the first non-loopback IPv4 address of the machine,
// or its host name, or "127.0.0.1".
func DefaultHost() string {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
