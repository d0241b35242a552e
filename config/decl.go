package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/snowflake"
	"github.com/spf13/pflag"
)

// decl declares one configuration key, once: where its value goes (a field
// of Config, whose koanf tags give the key its name), its default, its
// flag, its meaning and its check. Defaults, the flags, the key of a
// service field in an error (keyOf) and docs/configuration.md's table
// (TestDocTable) all come from the declarations.
type decl struct {
	ptr   any    // the field of Config
	def   string // the default, as written in YAML or the environment; "" none
	shown string // the default column of the documentation's table
	flag  string // the command-line flag, "" none; usage is its help
	usage string //
	env   string // the environment variable, when not FROND_ and the key's path joined by "__"
	row   string // the documentation's key column, when not the key (named entries)
	// secret: frond config prints the value masked; urls: it masks the
	// passwords of the URLs the value lists.
	secret, urls bool
	svc          string       // the service.Config field it sets, when not the same path
	doc          string       // the meaning column of the documentation's table
	check        func() error // refuses a bad value; the error does not name the key
}

// decls declares every key of c, in the order of the documentation.
func (c *Config) decls() []decl {
	return []decl{
		{ptr: &c.Config, shown: "none", flag: "config", usage: "YAML configuration file", doc: "the YAML file read, also from `FROND_CONFIG`; read before the environment and the flags, which override it"},
		{ptr: &c.DataDir, def: "./data", shown: "`./data`", flag: "data-dir", usage: "data directory: embedded store and worker state", doc: "the embedded store (`frond.db`), the worker state (`worker.json`, locked by `worker.lock`) and the floors of each segment store (`floors/`: the highest range each store gave this node, by which it finds a store that lost writes, [stores.md](stores.md#a-store-that-goes-back)); must not be empty", check: func() error { return notEmpty(c.DataDir) }},
		{ptr: &c.HTTPAddr, def: ":8080", shown: "`:8080`", flag: "http-addr", usage: "HTTP listen address HOST:PORT", doc: "HTTP listen address `HOST:PORT`; port 0 picks a free port (logged at start)", check: func() error { return hostPort(c.HTTPAddr, false) }},
		{ptr: &c.GRPCAddr, shown: "empty: off", flag: "grpc-addr", usage: "gRPC listen address HOST:PORT, off when empty (docs/grpc.md)", doc: "gRPC listen address `HOST:PORT` ([grpc.md](grpc.md)); off by default, as `resp_addr`", check: func() error { return hostPort(c.GRPCAddr, true) }},
		{ptr: &c.RESPAddr, shown: "empty: off", flag: "resp-addr", usage: "Redis protocol (RESP) listen address HOST:PORT, off when empty (docs/resp.md)", doc: "Redis protocol (RESP) listen address `HOST:PORT` ([resp.md](resp.md)); off by default, so a node alone opens one port and never collides with a local Redis", check: func() error { return hostPort(c.RESPAddr, true) }},
		{ptr: &c.Store, urls: true, shown: "`sqlite://<data_dir>/frond.db`", flag: "store", usage: "segment store URL, e.g. sqlite:///var/lib/frond/frond.db (default: sqlite in the data directory)", doc: "segment store URL: `sqlite://...`, `mysql://...`, `postgres://...`, `redis://...`, `etcd://...`, or `memory:` (trials only); several URLs separated by spaces combine stores by residue class. See [stores.md](stores.md)"},
		{ptr: &c.Registry, urls: true, def: "file", shown: "`file`", flag: "registry", usage: "worker registry: file, static:N, static:ordinal, etcd://, zk://, redis://, mysql://, postgres://, sqlite://, cosid+mysql://, cosid+postgres://, cosid+redis:// (docs/registries.md)", doc: "worker registry: `file` (worker ID from `node`, state in the data directory), `static:N`, `static:ordinal[+BASE]` (a StatefulSet pod's ordinal), `etcd://…`, `zk://…`, `redis://…`, `mysql://…`, `postgres://…`, `sqlite://…`, `cosid+mysql://…`, `cosid+postgres://…`, `cosid+redis://…` (CosId's machine IDs: [cosid.md](cosid.md)). Network registries keep a local record in `data_dir/worker-cache.json`. See [registries.md](registries.md). A static worker ID must fit the layout (with datacenter bits: the worker bits)"},
		{ptr: &c.Node, def: "0", shown: "`0`", flag: "node", usage: "snowflake worker ID for the file registry", doc: "snowflake worker ID for the file registry: 0 to the layout's largest (twitter 1023; with `snowflake.datacenter_bits`, the worker within the datacenter: 31 for 5 of 10); negative refused", check: func() error { return atLeast(c.Node, 0) }},
		{ptr: &c.Worker.Host, shown: "first non-loopback IPv4", doc: "this node's host in its identity `host:port` (registries that assign by identity)"},
		{ptr: &c.Worker.Port, def: "0", shown: "`0` = the HTTP port", doc: "this node's port in its identity, 0 to 65535", check: func() error { return within(c.Worker.Port, 0, 65535) }},
		{ptr: &c.Worker.RecycleAfter, def: "10m", shown: "`10m`", doc: "a gone node's worker ID is recycled only once the taker's clock is past the ID's last time + this; also how long a node issues from its local record while the registry is down. Must be positive and at least `lease_ttl`", check: func() error { return positive(c.Worker.RecycleAfter) }},
		{ptr: &c.Worker.LeaseTTL, def: "10s", shown: "`10s`", doc: "how long a lease, session or live key outlives a node that stopped renewing it; must be positive", check: func() error { return positive(c.Worker.LeaseTTL) }},
		{ptr: &c.Worker.Instance, shown: "", doc: "file and static registries: what tells this process apart from another with the same host name in `worker.json`, a pod's UID (set `FROND_WORKER__INSTANCE` from the downward API's `metadata.uid`, as `deploy/kubernetes/statefulset` does). A start on a record another instance wrote and did not release at a clean stop is refused ([deploy.md](deploy.md#fencing-the-worker-id))"},
		{ptr: &c.Worker.TakeOver, shown: "", doc: "file and static registries: the owner (as the refusal names it, `host/instance`) of a record that did not stop cleanly, which this process may take over once you have made sure that process has stopped"},
		{ptr: &c.Layout, svc: "Snowflake.Layout", def: "twitter", shown: "`twitter`", flag: "layout", usage: "snowflake layout: twitter, sonyflake, uid-generator, javascript, cosid", doc: "snowflake layout: `twitter` (`leaf`), `sonyflake`, `uid-generator`, `javascript` (`js`), `cosid` (CosId's, [cosid.md](cosid.md))", check: func() error { _, err := snowflake.Preset(c.Layout); return err }},
		{ptr: &c.AdminToken, secret: true, shown: "empty", flag: "admin-token", usage: "bearer token required for tag administration", doc: "bearer token required by `/v1/tags`; empty: no token (frond warns when not on loopback)"},
		{ptr: &c.AdminTokenFile, shown: "empty", flag: "admin-token-file", usage: "file holding the admin token", doc: "file holding the token (whitespace trimmed; an empty file is refused); exclusive with `admin_token`"},
		{ptr: &c.Pprof, def: "false", shown: "`false`", flag: "pprof", usage: "serve net/http/pprof under /debug/pprof/", doc: "serve `net/http/pprof` under `/debug/pprof/`"},
		{ptr: &c.ShutdownTimeout, def: "15s", shown: "`15s`", doc: "after SIGTERM/SIGINT the process is gone within this: requests in flight finish (within this less a quarter of it, at most 2 s less, kept for the next step; those still running then are cut, logged as a warning, and the exit status stays 0), registry calls and clock waits in progress are cancelled, and the exact time of the last snowflake ID is recorded (the log says \"snowflake time recorded at shutdown\"); must be positive", check: func() error { return positive(c.ShutdownTimeout) }},
		{ptr: &c.Log.Format, def: "text", shown: "`text`", flag: "log-format", usage: "log format: text or json", doc: "`text` or `json` (log/slog)", check: func() error { return oneOf(c.Log.Format, "text", "json") }},
		{ptr: &c.Log.Level, def: "info", shown: "`info`", flag: "log-level", usage: "log level: debug, info, warn, error", doc: "`debug`, `info`, `warn`, `error`", check: func() error {
			if _, err := c.LogLevel(); err != nil {
				return fmt.Errorf("%q: debug, info, warn or error", c.Log.Level)
			}
			return nil
		}},
		{ptr: &c.Log.Access, def: "false", shown: "`false`", flag: "access-log", usage: "log one line per HTTP request and gRPC call, with its X-Request-ID", doc: "one log line per HTTP request and gRPC call (method, route, status or code, bytes, duration, remote, `request_id`); the request ID is the caller's `X-Request-ID` (gRPC metadata `x-request-id`) or a new one, answered back in the same header ([operations.md](operations.md))"},
		{ptr: &c.TLS.CertFile, env: "FROND_TLS_CERT_FILE", shown: "empty: no TLS", flag: "tls-cert-file", usage: "TLS certificate (PEM) for every listener, reloaded when it changes", doc: "PEM certificate (with its chain) for every listener: HTTP, gRPC and RESP. Reloaded when the file changes (looked at on a handshake at most once a second), so a certificate is rotated without a restart. Env `FROND_TLS_CERT_FILE` ([security.md](security.md))"},
		{ptr: &c.TLS.KeyFile, env: "FROND_TLS_KEY_FILE", shown: "empty", flag: "tls-key-file", usage: "TLS private key (PEM)", doc: "its PEM private key; env `FROND_TLS_KEY_FILE`"},
		{ptr: &c.TLS.ClientCAFile, env: "FROND_TLS_CLIENT_CA_FILE", shown: "empty", flag: "tls-client-ca-file", usage: "CA certificates (PEM): clients must present a certificate they signed", doc: "PEM CA certificates: every client must present a certificate they signed (mutual TLS); needs `tls.cert_file`. Env `FROND_TLS_CLIENT_CA_FILE`"},
		{ptr: &c.Limits.MaxConnections, def: "10000", shown: "`10000`", doc: "open connections per listener (HTTP, gRPC, RESP each); one more is refused: HTTP 503, RESP `-ERR max number of clients reached`, gRPC (and any TLS port) a closed connection. At least 1. The other bounds of a connection (TLS handshake 10 s, one request 10 s from its first byte, one reply 30 s, idle 5 min, headers and gRPC metadata 16 KiB) are one policy for every listener, fixed: [security.md](security.md#connections)", check: func() error { return atLeast(c.Limits.MaxConnections, 1) }},
		{ptr: &c.Limits.MaxConnectionsPerAddress, def: "1000", shown: "`1000`", doc: "open connections per listener from one client address (an IPv4 address, an IPv6 /64), refused beyond as `limits.max_connections` is, so that one address cannot take every slot (and every file descriptor: 10,000 HTTP and 10,000 gRPC connections from one address took them all). `0`: the default; negative: no bound (clients behind one proxy or NAT share an address)"},
		{ptr: &c.Limits.Rate, def: "0", shown: "`0` (off)", doc: "requests per second per token (admin or tag token), or per client address (IPv4, or IPv6 /64) for requests without one, on every protocol; over it: `rate_limited` (HTTP 429 with `Retry-After`, gRPC `RESOURCE_EXHAUSTED` with `RetryInfo`, RESP `-RATE_LIMITED`). Probes and `/metrics` are exempt (`/metrics` and the readiness pages have a fixed rate of their own per address, 50 a second: [security.md](security.md#limits))", check: func() error { return rate(c.Limits.Rate) }},
		{ptr: &c.Limits.LeaseRate, def: "0", shown: "`0` (off)", doc: "IDs per second per token, or per client address without one, taken to be handed out by the client itself (`lease=1`, gRPC `LeaseRanges`, TinyID's and CosId's segments): IDs leased and never used still spend the ID space (one client leased 3.5 × 10^8 a second). Past it: `rate_limited` with the wait. Set it where anonymous clients reach the node, e.g. `1000000` ([security.md](security.md#limits))", check: func() error { return rate(c.Limits.LeaseRate) }},
		{ptr: &c.Limits.LeaseBurst, def: "0", shown: "`0` = ten seconds of `lease_rate`", doc: "IDs above `limits.lease_rate` leased at once", check: func() error { return rate(c.Limits.LeaseBurst) }},
		{ptr: &c.Limits.Burst, def: "0", shown: "`0` = the rate (at least 1)", doc: "requests above `limits.rate` allowed at once", check: func() error { return atLeast(c.Limits.Burst, 0) }},
		{ptr: &c.Limits.AuthFailures, def: "10", shown: "`10`", doc: "wrong tokens (admin or tag) an address may send within `limits.auth_window`; then every request from it is refused with `rate_limited` until the window ends, and a RESP connection is closed. 0: off", check: func() error { return atLeast(c.Limits.AuthFailures, 0) }},
		{ptr: &c.Limits.AuthWindow, def: "1m", shown: "`1m`", doc: "the window of `limits.auth_failures`; must be positive", check: func() error { return positive(c.Limits.AuthWindow) }},
		{ptr: &c.Limits.HandshakeTimeout, def: "10s", shown: "`10s`", doc: "a TLS handshake (and gRPC's HTTP/2 preface) must end within this of the accept, or the connection is closed; `0s`: the default; negative refused", check: func() error { return notNegative(c.Limits.HandshakeTimeout) }},
		{ptr: &c.Limits.ReadTimeout, def: "10s", shown: "`10s`", doc: "one request must arrive within this of its first byte (HTTP headers and body, one RESP command), so that one sent a byte at a time cannot hold a connection; a gRPC stream's headers are bounded by `limits.idle_timeout` instead (grpc-go has no read deadline of its own); `0s`: the default; negative refused", check: func() error { return notNegative(c.Limits.ReadTimeout) }},
		{ptr: &c.Limits.WriteTimeout, def: "30s", shown: "`30s`", doc: "a reply must be written within this: a client that does not read what it asked for is closed and the memory its replies held freed; `0s`: the default; negative refused", check: func() error { return notNegative(c.Limits.WriteTimeout) }},
		{ptr: &c.Limits.IdleTimeout, def: "5m", shown: "`5m`", doc: "a connection with no request in progress is closed after this (pooled clients open a new one); a gRPC `LeaseRanges` stream waiting this long for its next request ends with `UNAVAILABLE`, since an open stream keeps its connection from being idle (a health `Watch` stays: clients keep one per connection); `0s`: the default; negative refused", check: func() error { return notNegative(c.Limits.IdleTimeout) }},
		{ptr: &c.Limits.MaxHeaderBytes, def: "16384", shown: "`16384`", doc: "bound on HTTP request headers and gRPC metadata, in bytes; `0`: the default; negative refused", check: func() error { return atLeast(c.Limits.MaxHeaderBytes, 0) }},
		{ptr: &c.Limits.AnswerBudget, def: "134217728", shown: "`134217728` (128 MiB)", doc: "bytes of answers this node has built and its clients have not read yet, all protocols and connections together: each request for IDs reserves the most its answer can take (512 bytes, and per ID 96 plus its prefix) before it takes any, and gives it back once the answer is written (or its connection ends, or its write timed out). Past it a request is refused with `overloaded` (HTTP 503, gRPC `UNAVAILABLE`, RESP `-OVERLOADED`, retryable); an answer larger than the whole budget with `invalid_argument`. `0`: the default; negative: no bound ([security.md](security.md#one-budget-for-answers-in-flight))"},
		{ptr: &c.Idempotency.Window, def: "5m", shown: "`5m`", doc: "how long after its answer a request's idempotency key gets the same answer again ([api.md](api.md#idempotent-requests)); negative: requests with a key are refused", check: func() error { return notZero(c.Idempotency.Window) }},
		{ptr: &c.Idempotency.MaxEntries, def: "100000", shown: "`100000`", doc: "keys remembered at most; past it the oldest answers are forgotten (counted in `frond_idempotency_evicted_total`)", check: func() error { return atLeast(c.Idempotency.MaxEntries, 1) }},
		{ptr: &c.Idempotency.MaxIDs, def: "1000000", shown: "`1000000`", doc: "IDs (or ranges) the remembered answers hold at most, the same way", check: func() error { return atLeast(c.Idempotency.MaxIDs, 1) }},
		{ptr: &c.Idempotency.PerCallerEntries, def: "0", shown: "`0` (a tenth of `max_entries`)", doc: "keys one caller keeps remembered at most (a caller: a token the server gave out, else a client address, the /64 of IPv6); past it its own oldest answers are forgotten, so that one caller cannot flush another's keys", check: func() error { return atLeast(c.Idempotency.PerCallerEntries, 0) }},
		{ptr: &c.Idempotency.PerCallerIDs, def: "0", shown: "`0` (a tenth of `max_ids`)", doc: "IDs (or ranges) one caller's remembered answers hold at most, the same way", check: func() error { return atLeast(c.Idempotency.PerCallerIDs, 0) }},
		{ptr: &c.Metrics.MaxTags, def: "100", shown: "`100`", doc: "how many segment tags (and how many sequence tags) get series of their own on `/metrics`: those in `metrics.tags`, then the tags in trouble (a failing store call, then the shortest horizon), then the busiest. The sums over all tags are always there, so `/metrics` stays small with any number of tags ([operations.md](operations.md#metrics)). `0`: the default; negative: none"},
		{ptr: &c.Metrics.Tags, shown: "none", doc: "tags that get series of their own whenever they are in use, first within `metrics.max_tags`: a YAML list, or from the environment `FROND_METRICS__TAGS=order,pay`", check: func() error {
			for _, t := range c.Metrics.Tags {
				if err := frond.ValidateTagName(t); err != nil {
					return err
				}
			}
			return nil
		}},
		{ptr: &c.Snowflake.DatacenterBits, def: "0", shown: "`0`", doc: "how many of the layout's node bits, from the top, are the datacenter (seed 000's 5+5 of twitter's 10): each datacenter's registry gives worker IDs within it, so two datacenters never issue the same IDs, whether they share a registry or not ([deploy.md](deploy.md#several-datacenters)). Fewer than the layout's node bits; `0`: no datacenter", check: func() error {
			l, err := snowflake.Preset(c.Layout)
			if err == nil && c.Snowflake.DatacenterBits > 0 && c.Snowflake.DatacenterBits >= l.NodeBits {
				return fmt.Errorf("%d: fewer than the %d node bits of layout %s, so that each datacenter has worker IDs", c.Snowflake.DatacenterBits, l.NodeBits, l.Name)
			}
			return nil
		}},
		{ptr: &c.Snowflake.ShardBits, def: "0", shown: "`0`", doc: "gene IDs: how many of the layout's sequence bits, the lowest, are the shard a request names (`shard=5` or `shard_key=user-42`, as for a tag with shard bits), so that `id % 2^shard_bits` routes a row to its shard ([kinds.md](kinds.md#shard-bits-gene-ids)). A node issues 2^`shard_bits` times fewer IDs a tick (twitter with 4: 256 a millisecond); a request for a snowflake ID then needs a shard. 0 to 16, fewer than the layout's sequence bits; `0`: none", check: func() error {
			l, err := snowflake.Preset(c.Layout)
			if err == nil {
				_, err = l.WithShardBits(c.Snowflake.ShardBits)
			}
			return err
		}},
		{ptr: &c.Snowflake.Datacenter, svc: "Snowflake.Datacenter", def: "0", shown: "`0`", flag: "datacenter", usage: "this node's datacenter: 0 to 2^datacenter_bits - 1", doc: "this node's datacenter, 0 to 2^`datacenter_bits` - 1; not 0 only with `datacenter_bits`. The worker registry keeps each datacenter's worker IDs apart (its names get the number; Redis's `frond_dc` is this setting)"},
		{ptr: &c.Snowflake.MaxBackward, def: "5ms", shown: "`5ms`", doc: "largest backward clock step absorbed; larger ones refuse snowflake IDs. `0s`: the default; negative refuses every backward step (`0s` meant that before this version)"},
		{ptr: &c.Snowflake.MaxLead, def: "0s", shown: "`0s`", doc: "borrowing: how far ahead of the clock IDs may run when a tick's sequence is used up. `0s`: no borrowing (wait for the next tick); negative refused"},
		{ptr: &c.Snowflake.RandomStart, def: "0", shown: "`0`", doc: "start each tick's sequence at a random value below this (Leaf: 100), at most half the layout's sequence space. `0`: off; negative refused"},
		{ptr: &c.Snowflake.PersistEvery, def: "400ms", shown: "`400ms`", doc: "how often the registry records the reserved time (reserved up to 2 x this + `max_lead` ahead: a restart after kill -9 waits at most that long for its clock to pass it, 0.8 s by default); `0s`: the default; negative refused. Each node writes to its registry 1/`persist_every` times a second"},
		{ptr: &c.Snowflake.StartupWait, def: "0s", shown: "`0s` = 2 x persist_every + max_lead + 1s", doc: "when the clock is behind the worker ID's recorded time by at most this, wait for it at start; by more, serve segment IDs and refuse snowflake IDs until the clock passes it. `0s`: the computed value; negative: never wait"},
		{ptr: &c.Snowflake.MaxPeerSkew, def: "5s", shown: "`5s`", doc: "etcd, ZooKeeper: refuse snowflake IDs while this node's clock is further than this from its live peers' average. Negative turns the check off; `0s`: the default"},
		{ptr: &c.Snowflake.ExpiryWarning, def: "43800h", shown: "`43800h` (5 years)", doc: "warn at start and fail `/readyz`'s `layout` check when the snowflake layout's time field runs out within this; `0s`: the default; negative: never. A layout that runs out within 30 days is refused at start ([operations.md](operations.md))"},
		{ptr: &c.Segment.Threshold, def: "0.1", shown: "`0.1`", doc: "fraction of a segment used before the next one loads: more than 0, at most 1; `0`: the default"},
		{ptr: &c.Segment.FixedStep, def: "false", shown: "`false`", doc: "turn the adaptive step off"},
		{ptr: &c.Segment.FastSegment, def: "15m", shown: "`15m`", doc: "a segment that lasted less doubles the step; at most `slow_segment`; `0s`: the default; negative refused"},
		{ptr: &c.Segment.SlowSegment, def: "30m", shown: "`30m`", doc: "a segment that lasted more halves the step; `0s`: the default; negative refused"},
		{ptr: &c.Segment.MaxStep, def: "1000000", shown: "`1000000`", doc: "the adaptive step's ceiling (a tag's own larger step is kept); `0`: the default; negative refused"},
		{ptr: &c.Segment.LoadTimeout, def: "10s", shown: "`10s`", doc: "bound on one store call; `0s`: the default; negative refused"},
		{ptr: &c.Segment.FailFast, def: "1s", shown: "`1s`", doc: "after a failed load, requests with empty buffers fail at once for this long. `0s`: the default; negative: off (every request waits on the store; `0s` meant that before this version)"},
		{ptr: &c.Segment.Runway, def: "5m", shown: "`5m`", doc: "the store outage each segment tag's buffered IDs should outlast at its rate: a tag whose horizon is shorter is `low` (`/metrics`' `frond_segment_tags{state}`, the dashboard, `/readyz`), and `FrondSegmentHorizonLow` compares the horizon with it (`frond_segment_runway_seconds`). It loads nothing: size the step for it ([operations.md](operations.md#sizing-the-step-for-an-outage)). `0s`: the default; negative refused"},
		{ptr: &c.Segment.IdleAfter, def: "1h", shown: "`1h`", doc: "the buffer of a tag that handed out no ID for this long is dropped (its unused IDs skipped, as at a restart) and its metric series deleted: memory and series stay bounded by the tags in use. `0s`: the default; negative: never (Leaf's behaviour; `0s` meant that before this version)"},
		{ptr: &c.Sequences.Store, urls: true, shown: "the node's store when it is SQL, Redis or etcd", doc: "keyed sequence spaces ([sequences.md](sequences.md)): the SQL database (`sqlite://`, `mysql://`, `postgres://`), Redis (`redis://`) or etcd (`etcd://`), with the store's `frond_*` parameters, or `memory:` (trials), of the spaces, their sections' maxima and their owners' leases, shared by the nodes that serve them; empty: the node's `store` when it is one of those (the embedded SQLite by default), else off (a set of stores); `off`: off"}, // its scheme is checked with the store's, against the binary's one table of backends
		{ptr: &c.Sequences.Advertise, shown: "the HTTP listener's address when it is bound to one (`127.0.0.1:8080`), else `worker.host` and the HTTP port", doc: "`HOST:PORT` where the other nodes reach this node's HTTP API: requests for the sections this node owns are forwarded there. Checked at start: a node whose address does not reach itself logs `KEYED SEQUENCE ADVERTISE ADDRESS DOES NOT REACH THIS NODE`", check: func() error { return hostPort(c.Sequences.Advertise, true) }},
		{ptr: &c.Sequences.Memory, def: "536870912", shown: "`536870912` (512 MiB)", doc: "bytes of counters of every keyed sequence section this node serves, all spaces together (a section takes `slots × 4`): reserved before they are allocated, by the section's first request; a node takes no more sections than it can hold, and refuses one past it with `store_unavailable` (another node may serve it). `0`: the default; negative: no bound ([sequences.md](sequences.md#memory-a-table-of-counters-not-the-keys))"},
		{ptr: &c.Sequences.MaxSpaces, def: "64", shown: "`64`", doc: "keyed sequence spaces this node serves at once (each runs a round of leases every third of `lease_ttl`): past it, the space asked for least recently is stopped here (its sections given back, for other nodes) before another starts, unless it was asked within `sequences.min_residency`. `0`: the default; negative: no bound"},
		{ptr: &c.Sequences.IdleAfter, def: "10m", shown: "`10m`", doc: "a keyed sequence space asked nothing on this node for this long (no request, none forwarded here) is stopped here, its sections given back: its rounds of leases stop, so a node's rounds cost for the spaces in use, not for every space ever asked for; the next request starts it again. `0`: the default; negative: never"},
		{ptr: &c.Sequences.MinResidency, def: "1m", shown: "`1m`", doc: "a keyed sequence space asked on this node within this long is not stopped to make room for another past `sequences.max_spaces`: the other is refused (503) instead, so that a client asking for more spaces than that cannot stop the spaces in use. `0`: the default; negative: none (the space asked least recently always goes)"},
		{ptr: &c.Sequences.MaxSectionReads, def: "16384", shown: "`16384`", doc: "sections the rounds of leases of every keyed sequence space this node serves read from the store per second (a space costs its `sections × 3 / lease_ttl`: each round, one every third of `lease_ttl`, reads its whole table): a space past it alone is refused at creation (`invalid_argument`, naming the most sections it allows) and not started here; past it with the spaces running, the one asked for least recently is stopped first, as past `sequences.max_spaces`. By default one space of 16,384 sections under a `3s` lease, or 5,461 under `1s` (60,000 a second took 39% of a core on SQLite on a quiet machine, and ran past the rounds' deadlines on a busy one). `0`: the default; negative: no bound", check: func() error {
			if c.Sequences.MaxSectionReads != c.Sequences.MaxSectionReads { // NaN
				return fmt.Errorf("not a number")
			}
			return nil
		}},
		{ptr: &c.Sequences.StartRate, def: "1", shown: "`1`", doc: "keyed sequence spaces per second a token, or a client address without one (an IPv4 address, an IPv6 /64), may start on this node by asking for a space that is not running here; a request for a space already running is not counted. Past it: `rate_limited` with the wait (the space is not started). Each start is a round of leases on the store and, past `sequences.max_spaces`, a space stopped. `0`: off", check: func() error { return rate(c.Sequences.StartRate) }},
		{ptr: &c.Sequences.StartBurst, def: "32", shown: "`32`", doc: "keyed sequence spaces above `sequences.start_rate` a token or address may start at once (a client's first requests after a node starts). `0`: the rate (at least 1)", check: func() error { return atLeast(c.Sequences.StartBurst, 0) }},
		{ptr: &c.Sequences.MaxSpaceMemory, def: "268435456", shown: "`268435456` (256 MiB)", doc: "the largest table one keyed sequence space may have on this node (`sections × (slots × 4 + 256)` bytes: its counters and each section's state): a larger space is refused at creation (`invalid_argument`) and not started here (`store_unavailable`). `0`: the default; negative: no bound"},
		{ptr: &c.Sequences.LeaseTTL, def: "3s", shown: "`3s`", doc: "a section owner's lease, on the database's clock: a node killed without a clean stop has its sections served by the others within about this plus a third of it; at least `100ms`", check: func() error {
			if c.Sequences.LeaseTTL < 100*time.Millisecond {
				return fmt.Errorf("%v: at least 100ms", c.Sequences.LeaseTTL)
			}
			return nil
		}},
		{ptr: &c.Serials, shown: "none", row: "`serials.<name>.template`, `.source`, `.tag`, `.reset`, `.zone`, `.step`", doc: "business serial numbers: see [kinds.md](kinds.md). `step` is at least 1 (absent or 0: 1000)"},
		{ptr: &c.Obfuscation.Key, secret: true, svc: "ObfuscationKey", shown: "empty", doc: "key (16 bytes or more) of the opaque forms; exclusive with `obfuscation.key_file`; `frond config` masks it"},
		{ptr: &c.Obfuscation.KeyFile, shown: "empty", doc: "file holding the key (whitespace trimmed); exclusive with `obfuscation.key`"},
		{ptr: &c.Obfuscation.Scheme, svc: "ObfuscationScheme", shown: "empty", doc: "the key's construction, required with a key: `ff1` (FF1 with AES, for a new key) or `splitmix` (a key that gave opaque IDs before frond had FF1; it keeps giving the same ones)"},
		{ptr: &c.Obfuscation.KeyVersion, svc: "ObfuscationVersion", def: "1", shown: "`1`", doc: "the key's version, from 1: `reveal` takes it (docs/security.md, key rotation)"},
		{ptr: &c.Obfuscation.Previous, svc: "ObfuscationPrevious", shown: "none", row: "`obfuscation.previous.<version>.key` / `.key_file` / `.scheme`", doc: "earlier keys by version: they give no IDs, and `reveal` with their version maps their opaque IDs back; `frond config` masks `key`"},
		{ptr: &c.Obfuscation.SegmentWidth, svc: "ObfuscationWidth", def: "63", shown: "`63`", doc: "width in bits of opaque segment IDs, 20 to 63 with `ff1` (2 to 63 with `splitmix`); 53 keeps them JavaScript-safe"},
		{ptr: &c.Forms, shown: "none", row: "`forms.<tag>`", doc: "the default form of a segment tag: `number`, `base62`, `base32`, `opaque`, `opaque62` (the opaque forms need an obfuscation key), `mist` ([kinds.md](kinds.md#mist)). `opaque`, `opaque62` and `mist` name a mapping: a tag created through this node gets it, and a tag that exists with another mapping makes `frond serve` refuse to start ([kinds.md](kinds.md#a-tags-mapping))"},
		{ptr: &c.Prefixes, shown: "none", row: "`prefixes.<tag>`", doc: "the prefix of a segment tag's text IDs (`prefixes: {order: ord}` gives `ord_00000000001` in base62): 1 to 63 lowercase letters and underscores, starting and ending with a letter (TypeID's rule); numbers carry none, and a request's `prefix` replaces it ([kinds.md](kinds.md#prefixes))"},
		{ptr: &c.Tokens, shown: "none", row: "`tokens.<token>`", doc: "TinyID's access tokens: a list of the tags the token allows (`tokens: {0f673adf: [test, order]}`). When any is set, every request for segment IDs, over every protocol, must carry a token that allows its tag ([tinyid.md](tinyid.md)); a token cannot contain `.`; printed as `***`, also in errors. From the environment: `FROND_TOKENS__<token>=<tag>,<tag>` (the variable's name is the token, case kept: `FROND_TOKENS__0f673adf=test,order`; such a token is letters, digits and `_`)"},
	}
}

// declared is a decl with its key and the Go path of its field.
type declared struct {
	decl
	key, path string
}

// declaredKeys are the declarations of a Config of no one's: what they say of the
// keys (names, defaults, flags, environment variables, documentation),
// resolved once. Their pointers and checks are of that Config, not of a
// loaded one: use c.declarations() for those.
var declaredKeys = sync.OnceValue(func() []declared { return (&Config{}).declarations() })

// declarations resolves every decl's key and field path.
func (c *Config) declarations() []declared {
	ds := c.decls()
	out := make([]declared, 0, len(ds))
	root := reflect.ValueOf(c).Elem()
	for _, d := range ds {
		key, path, ok := fieldOf(root, reflect.ValueOf(d.ptr), "", "")
		if !ok {
			panic(fmt.Sprintf("config: a declaration points outside Config (%T)", d.ptr))
		}
		out = append(out, declared{d, key, path})
	}
	return out
}

// The keys of the sections of named entries, and of an earlier key's key.
var (
	tokensKey      = sectionKey(func(c *Config) any { return &c.Tokens })
	serialsKey     = sectionKey(func(c *Config) any { return &c.Serials })
	formsKey       = sectionKey(func(c *Config) any { return &c.Forms })
	prefixesKey    = sectionKey(func(c *Config) any { return &c.Prefixes })
	previousKeyKey = func() string {
		var pk PreviousKey
		key, _, _ := fieldOf(reflect.ValueOf(&pk).Elem(), reflect.ValueOf(&pk.Key), "", "")
		return key
	}()
)

func sectionKey(field func(*Config) any) string {
	var c Config
	return c.keyAt(field(&c))
}

// keyAt is the key of the field of c that ptr points to.
func (c *Config) keyAt(ptr any) string {
	key, _, ok := fieldOf(reflect.ValueOf(c).Elem(), reflect.ValueOf(ptr), "", "")
	if !ok {
		panic(fmt.Sprintf("config: %T points outside Config", ptr))
	}
	return key
}

// fieldOf finds the field of v that p points to: its key (koanf tags
// joined by ".") and its Go path.
func fieldOf(v, p reflect.Value, key, path string) (string, string, bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" {
			continue
		}
		fv := v.Field(i)
		k, gp := strings.TrimPrefix(key+"."+tag, "."), strings.TrimPrefix(path+"."+f.Name, ".")
		if fv.Addr().Pointer() == p.Pointer() && fv.Type() == p.Type().Elem() {
			return k, gp, true
		}
		if f.Type.Kind() == reflect.Struct {
			if k, gp, ok := fieldOf(fv, p, k, gp); ok {
				return k, gp, true
			}
		}
	}
	return "", "", false
}

// Defaults are the values when nothing is configured, typed as YAML would
// give them (durations as text).
func Defaults() map[string]any {
	out := map[string]any{}
	for _, d := range declaredKeys() {
		if v, ok := typed(d.ptr, d.def); ok {
			out[d.key] = v
		}
	}
	return out
}

// typed is def as the value of the field ptr points to; false for the
// sections of named entries, which have no default.
func typed(ptr any, def string) (any, bool) {
	switch ptr.(type) {
	case *string:
		return def, true
	case *time.Duration:
		if def == "" {
			def = "0s"
		}
		return def, true
	case *bool:
		return def == "true", true
	case *int, *int64:
		n, _ := strconv.ParseInt(def, 10, 64)
		return int(n), true
	case *uint:
		n, _ := strconv.ParseUint(def, 10, 64)
		return int(n), true
	case *float64:
		f, _ := strconv.ParseFloat(def, 64)
		return f, true
	}
	return nil, false
}

// Flag is a command-line flag and the key it sets.
type Flag struct{ Name, Key, Usage string }

// Flags are the command-line flags of frond serve and the commands.
func Flags() []Flag {
	var out []Flag
	for _, d := range declaredKeys() {
		if d.flag != "" {
			out = append(out, Flag{d.flag, d.key, d.usage + " (env " + EnvName(d.key) + ")"})
		}
	}
	return out
}

// AddFlags defines the flags on fs with the defaults.
//
// With names, only those flags are added: a command shows the flags it
// reads (frond audit reads the store and the registry, not the listeners'
// addresses); the other keys still come from the file and the environment.
// A name that is no flag panics: a mistake in frond's code.
func AddFlags(fs *pflag.FlagSet, names ...string) {
	d := Defaults()
	for _, n := range names {
		if !slices.ContainsFunc(Flags(), func(f Flag) bool { return f.Name == n }) {
			panic("config.AddFlags: no flag " + n)
		}
	}
	for _, f := range Flags() {
		if len(names) > 0 && !slices.Contains(names, f.Name) {
			continue
		}
		switch v := d[f.Key].(type) {
		case bool:
			fs.Bool(f.Name, v, f.Usage)
		case int:
			fs.Int64(f.Name, int64(v), f.Usage)
		default:
			fs.String(f.Name, fmt.Sprint(v), f.Usage)
		}
	}
}

// FlagName is the flag of a key ("" if it has none).
func FlagName(key string) string {
	for _, f := range Flags() {
		if f.Key == key {
			return f.Name
		}
	}
	return ""
}

// DocTable is docs/configuration.md's table of keys, from the
// declarations.
func DocTable() string {
	var b strings.Builder
	b.WriteString("| key | flag | default | meaning |\n|---|---|---|---|\n")
	for _, d := range declaredKeys() {
		key := d.row
		if key == "" {
			key = "`" + d.key + "`"
		}
		flag := ""
		if d.flag != "" {
			flag = "`--" + d.flag + "`"
		}
		b.WriteString("|")
		for _, cell := range []string{key, flag, d.shown, d.doc} {
			if cell != "" {
				b.WriteString(" " + cell)
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The checks of the declarations. Their errors do not name the key: the
// caller does.

func notEmpty(v string) error {
	if v == "" {
		return errors.New("is empty")
	}
	return nil
}

// hostPort checks a listen address HOST:PORT (empty, when optional: off).
func hostPort(addr string, optional bool) error {
	if addr == "" && optional {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%q: %v", addr, err)
	}
	return nil
}

func atLeast[N int | int64](v, low N) error {
	if v < low {
		if low == 0 {
			return fmt.Errorf("%d is negative", v)
		}
		return fmt.Errorf("%d: at least %d", v, low)
	}
	return nil
}

func within(v, low, high int) error {
	if v < low || v > high {
		return fmt.Errorf("%d: %d to %d", v, low, high)
	}
	return nil
}

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%v: it must be positive", d)
	}
	return nil
}

func notNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%v is negative", d)
	}
	return nil
}

func notZero(d time.Duration) error {
	if d == 0 {
		return errors.New("0: a duration such as 5m, or negative to refuse idempotency keys")
	}
	return nil
}

func oneOf(v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("%q: %s", v, strings.Join(allowed, ", "))
	}
	return nil
}

func rate(r float64) error {
	if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return fmt.Errorf("%v: 0 (off) or a positive number of requests per second", r)
	}
	return nil
}
