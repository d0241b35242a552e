// Package config loads frond's configuration from defaults, a YAML file,
// FROND_* environment variables and command-line flags, in that order (a
// later source wins), and refuses unknown keys.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond/internal/secret"
	"github.com/frond-id/frond/internal/tlsconf"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/worker"
	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// ErrInvalid wraps every configuration error.
var ErrInvalid = errors.New("invalid configuration")

// Config is frond's configuration. Keys are the koanf tags; nested keys are
// joined with "." in files and flags and with "__" in environment variables
// (FROND_SEGMENT__MAX_STEP).
type Config struct {
	Config          string        `koanf:"config"`           // the YAML file read, if any
	DataDir         string        `koanf:"data_dir"`         // embedded store and worker state
	HTTPAddr        string        `koanf:"http_addr"`        // HOST:PORT
	GRPCAddr        string        `koanf:"grpc_addr"`        // HOST:PORT of gRPC; empty: off
	RESPAddr        string        `koanf:"resp_addr"`        // HOST:PORT of the Redis protocol; empty: off
	Store           string        `koanf:"store"`            // store URL; empty: sqlite in data_dir
	Registry        string        `koanf:"registry"`         // worker registry URL; "file": in data_dir (docs/registries.md)
	Layout          string        `koanf:"layout"`           // snowflake layout preset
	Node            int64         `koanf:"node"`             // worker ID for the file registry
	AdminToken      string        `koanf:"admin_token"`      // bearer token for /v1/tags
	AdminTokenFile  string        `koanf:"admin_token_file"` // file holding the token
	Pprof           bool          `koanf:"pprof"`            // mount /debug/pprof/
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"` // grace for requests in flight
	Log             Log           `koanf:"log"`
	TLS             TLS           `koanf:"tls"`
	Limits          Limits        `koanf:"limits"`
	Idempotency     Idempotency   `koanf:"idempotency"`
	Metrics         Metrics       `koanf:"metrics"`
	Snowflake       Snowflake     `koanf:"snowflake"`
	Worker          Worker        `koanf:"worker"`
	Segment         Segment       `koanf:"segment"`
	Sequences       Sequences     `koanf:"sequences"`
	// Serials are business serial numbers by name (see docs/kinds.md).
	Serials map[string]service.SerialConfig `koanf:"serials"`
	// Obfuscation holds the key of the opaque (non-guessable) forms.
	Obfuscation Obfuscation `koanf:"obfuscation"`
	// Forms are default forms of segment tags: number, base62, base32, opaque, opaque62, mist.
	Forms map[string]string `koanf:"forms"`
	// Prefixes are prefixes of segment tags' text IDs ("ord": "ord_2XgH4...").
	Prefixes map[string]string `koanf:"prefixes"`
	// Tokens are TinyID's access tokens, each with the tags it allows: when
	// any is set, every request for segment IDs must carry one that allows
	// its tag (docs/tinyid.md).
	Tokens map[string][]string `koanf:"tokens"`
}

// Obfuscation configures the keyed permutation of the opaque forms.
type Obfuscation struct {
	Key          string `koanf:"key"`           // 16 bytes or more; prefer key_file
	KeyFile      string `koanf:"key_file"`      // file holding the key
	Scheme       string `koanf:"scheme"`        // ff1, or splitmix for keys from before FF1; required with a key
	KeyVersion   int    `koanf:"key_version"`   // the key's version (reveal takes it)
	SegmentWidth uint   `koanf:"segment_width"` // bits of opaque segment IDs (63; 53 for JavaScript)
	// Previous are earlier keys by version: they give no IDs; reveal maps
	// opaque IDs they gave back (docs/security.md, key rotation).
	Previous map[string]PreviousKey `koanf:"previous"`
}

// PreviousKey is an earlier obfuscation key.
type PreviousKey struct {
	Scheme  string `koanf:"scheme"`
	Key     string `koanf:"key"`
	KeyFile string `koanf:"key_file"`
}

// Log configures logging.
type Log struct {
	Format string `koanf:"format"` // text or json
	Level  string `koanf:"level"`  // debug, info, warn, error
	Access bool   `koanf:"access"` // one line per HTTP request and gRPC call
}

// TLS turns TLS on for every listener (HTTP, gRPC, RESP).
type TLS struct {
	CertFile     string `koanf:"cert_file"`      // PEM certificate (chain); reloaded when it changes
	KeyFile      string `koanf:"key_file"`       // PEM private key
	ClientCAFile string `koanf:"client_ca_file"` // PEM CAs: clients must present a certificate they signed (mTLS)
}

// Limits bound what clients may ask of every listener (docs/security.md).
type Limits struct {
	MaxConnections int `koanf:"max_connections"` // open connections per listener
	// MaxConnectionsPerAddress bounds a listener's connections from one
	// client address (api.ConnPolicy.MaxConnsPerAddress).
	MaxConnectionsPerAddress int     `koanf:"max_connections_per_address"`
	Rate                     float64 `koanf:"rate"`  // requests per second per token or address; 0: off
	Burst                    int     `koanf:"burst"` // requests above the rate at once; 0: the rate, at least 1
	// LeaseRate and LeaseBurst bound the IDs a token or address takes to
	// hand out itself (api.GuardOptions.LeaseRate); 0: off.
	LeaseRate    float64       `koanf:"lease_rate"`
	LeaseBurst   float64       `koanf:"lease_burst"`
	AuthFailures int           `koanf:"auth_failures"` // wrong tokens per address within auth_window; 0: off
	AuthWindow   time.Duration `koanf:"auth_window"`
	// The connection policy of every listener (api.ConnPolicy).
	HandshakeTimeout time.Duration `koanf:"handshake_timeout"`
	ReadTimeout      time.Duration `koanf:"read_timeout"`
	WriteTimeout     time.Duration `koanf:"write_timeout"`
	IdleTimeout      time.Duration `koanf:"idle_timeout"`
	MaxHeaderBytes   int           `koanf:"max_header_bytes"`
	// AnswerBudget bounds the bytes of answers built and not yet read by
	// their clients, node-wide (service.Config.AnswerBudget).
	AnswerBudget int64 `koanf:"answer_budget"`
}

// Metrics bound the series per tag of /metrics (docs/operations.md).
type Metrics struct {
	MaxTags int      `koanf:"max_tags"` // segment (and sequence) tags with series of their own; negative: none
	Tags    []string `koanf:"tags"`     // tags given series of their own whenever in use
}

// Idempotency bounds the memory of idempotent requests (docs/api.md).
type Idempotency struct {
	Window     time.Duration `koanf:"window"`      // how long an answer is given again; negative: keys refused
	MaxEntries int           `koanf:"max_entries"` // keys remembered at most
	MaxIDs     int64         `koanf:"max_ids"`     // IDs (or ranges) remembered answers hold at most
	// PerCallerEntries and PerCallerIDs bound one caller's share (0: a
	// tenth of each).
	PerCallerEntries int   `koanf:"per_caller_entries"`
	PerCallerIDs     int64 `koanf:"per_caller_ids"`
}

// On reports whether TLS is configured.
func (t TLS) On() bool { return t.CertFile != "" || t.KeyFile != "" }

// Snowflake configures the snowflake clock policy.
type Snowflake struct {
	// DatacenterBits of the layout's node bits are the datacenter
	// (seed 000's 5+5); Datacenter is this node's.
	DatacenterBits uint  `koanf:"datacenter_bits"`
	Datacenter     int64 `koanf:"datacenter"`
	// ShardBits of the layout's sequence bits, the lowest, are the shard a
	// request names (gene IDs: snowflake.Layout.WithShardBits).
	ShardBits    uint          `koanf:"shard_bits"`
	MaxBackward  time.Duration `koanf:"max_backward"`
	MaxLead      time.Duration `koanf:"max_lead"`
	RandomStart  int64         `koanf:"random_start"`
	PersistEvery time.Duration `koanf:"persist_every"`
	StartupWait  time.Duration `koanf:"startup_wait"`  // 0: 2 x persist_every + max_lead + 1s
	MaxPeerSkew  time.Duration `koanf:"max_peer_skew"` // negative: no peer clock check
	// ExpiryWarning: warn (at start, in /readyz) when the layout runs out
	// within it; negative: never.
	ExpiryWarning time.Duration `koanf:"expiry_warning"`
}

// Worker configures how the node is known to a worker registry.
type Worker struct {
	Host         string        `koanf:"host"`          // empty: the first non-loopback IPv4 address
	Port         int           `koanf:"port"`          // 0: the HTTP port
	RecycleAfter time.Duration `koanf:"recycle_after"` // see docs/registries.md
	LeaseTTL     time.Duration `koanf:"lease_ttl"`
	// Instance tells apart processes with one host name in the record of
	// the file and static registries: a pod's UID (docs/deploy.md).
	Instance string `koanf:"instance"`
	// TakeOver names the owner of a worker record that did not stop
	// cleanly, which this process may take over (docs/registries.md).
	TakeOver string `koanf:"takeover"`
}

// Segment configures the segment engine.
type Segment struct {
	Threshold   float64       `koanf:"threshold"`
	FixedStep   bool          `koanf:"fixed_step"`
	FastSegment time.Duration `koanf:"fast_segment"`
	SlowSegment time.Duration `koanf:"slow_segment"`
	MaxStep     int64         `koanf:"max_step"`
	LoadTimeout time.Duration `koanf:"load_timeout"`
	FailFast    time.Duration `koanf:"fail_fast"`
	IdleAfter   time.Duration `koanf:"idle_after"` // 0s or negative: never drop idle buffers
	Runway      time.Duration `koanf:"runway"`
}

// Sequences configures keyed sequence spaces (docs/sequences.md).
type Sequences struct {
	// Store is the SQL database of the spaces, their sections' maxima and
	// their owners; "" the node's store when it is one SQL database (the
	// embedded SQLite included), "off" none.
	Store     string        `koanf:"store"`
	Advertise string        `koanf:"advertise"` // HOST:PORT other nodes reach this node's HTTP API at; "": the HTTP listener's address, else worker.host and the HTTP port
	LeaseTTL  time.Duration `koanf:"lease_ttl"` // a section owner's lease
	// Memory bounds the counters of every section this node serves, all
	// spaces together (keyseq.Budget); MaxSpaceMemory one space's whole
	// table. 0: the defaults; negative: no bound.
	Memory         int64 `koanf:"memory"`
	MaxSpaceMemory int64 `koanf:"max_space_memory"`
	// MaxSpaces bounds the spaces a node serves at once (keyseq.NodeOptions.MaxSpaces).
	MaxSpaces int `koanf:"max_spaces"`
	// MaxSectionReads bounds what the rounds of leases of the spaces a node
	// serves read per second (keyseq.NodeOptions.MaxSectionReads).
	MaxSectionReads float64 `koanf:"max_section_reads"`
	// IdleAfter stops a space asked nothing on this node for that long
	// (keyseq.NodeOptions.IdleAfter).
	IdleAfter time.Duration `koanf:"idle_after"`
	// MinResidency keeps a space asked within it from being stopped to
	// make room (keyseq.NodeOptions.MinResidency).
	MinResidency time.Duration `koanf:"min_residency"`
	// StartRate and StartBurst bound the spaces a token or address starts
	// on a node by asking for them (api.GuardOptions.StartRate); 0: off.
	StartRate  float64 `koanf:"start_rate"`
	StartBurst int     `koanf:"start_burst"`
}

// envSkip are FROND_ variables that are not configuration keys: the
// tests', and the client commands' server and TLS files (which a
// container sets for frond health beside frond serve's own variables).
func envSkip(name string) bool {
	switch name {
	case "SERVER", "CA_FILE", "CERT_FILE", "KEY_FILE":
		return true
	}
	return strings.HasPrefix(name, "TEST_")
}

// envKey is the key a FROND_ variable sets ("" if none).
func envKey(name string) string {
	name, ok := strings.CutPrefix(name, "FROND_")
	if !ok || envSkip(name) {
		return ""
	}
	for _, d := range declaredKeys() {
		if d.env != "" && strings.EqualFold(d.env, "FROND_"+name) {
			return d.key
		}
	}
	return strings.ReplaceAll(strings.ToLower(name), "__", ".")
}

// EnvName is the environment variable of a key: FROND_SEGMENT__MAX_STEP, or
// the one its declaration names (FROND_TLS_CERT_FILE, as TLS settings are
// usually named).
func EnvName(key string) string {
	for _, d := range declaredKeys() {
		if d.key == key && d.env != "" {
			return d.env
		}
	}
	return "FROND_" + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// KeyError is an invalid value of one or more keys. Its message names each
// key with its environment variable and flag.
type KeyError struct {
	Keys []string // "segment.max_step", "serials.pay.step"
	Err  error
}

func (e *KeyError) Error() string {
	keys := make([]string, len(e.Keys))
	where := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		keys[i], where[i] = k, EnvName(k)
		if token, ok := strings.CutPrefix(k, tokensKey+"."); ok {
			// The key names a secret: a tag token.
			keys[i] = tokensKey + "." + secret.Mask
			where[i] = strings.TrimSuffix(where[i], strings.ToUpper(token)) + secret.Mask
		}
		if f := FlagName(k); f != "" {
			where[i] += ", flag --" + f
		}
	}
	return fmt.Sprintf("%s: %v (env %s)", strings.Join(keys, " and "), e.Err, strings.Join(where, "; "))
}

// Unwrap returns the cause.
func (e *KeyError) Unwrap() error { return e.Err }

// keyErr returns a KeyError that also wraps ErrInvalid.
func keyErr(err error, keys ...string) error {
	return fmt.Errorf("%w: %w", ErrInvalid, &KeyError{Keys: keys, Err: err})
}

// Load reads the configuration: defaults, then the YAML file (from the
// --config flag or FROND_CONFIG), then FROND_* variables, then the flags
// that were set. environ is os.Environ() in production. It validates every
// value, with the engines' own rules (Validate), before anything starts:
// every error wraps ErrInvalid, and one about a value is a *KeyError.
func Load(fs *pflag.FlagSet, environ []string) (*Config, *koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(Defaults(), "."), nil); err != nil {
		return nil, nil, err
	}
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "FROND_CONFIG="); ok {
			path = v
		}
	}
	if fs != nil {
		if f := fs.Lookup("config"); f != nil && f.Changed {
			path = f.Value.String()
		}
	}
	fromFile := koanf.New(".")
	if path != "" {
		if err := fromFile.Load(file.Provider(path), yaml.Parser()); err != nil {
			return nil, nil, fmt.Errorf("%w: read %s: %v", ErrInvalid, path, err)
		}
		if err := k.Merge(fromFile); err != nil {
			return nil, nil, fmt.Errorf("%w: read %s: %v", ErrInvalid, path, err)
		}
		k.Set("config", path)
	}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix:      "FROND_",
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(name, v string) (string, any) {
			key := envKey(name)
			if token, ok := strings.CutPrefix(name, EnvName(tokensKey)+"__"); ok && key != "" {
				// A tag token keeps its case (the variable's name is the
				// token), and its tags are a comma-separated list:
				// FROND_TOKENS__0f673adf=test,order.
				var tags []any
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						tags = append(tags, t)
					}
				}
				return tokensKey + "." + token, tags
			}
			if key != "" {
				return key, v
			}
			return "", nil
		},
	}), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: environment: %v", ErrInvalid, err)
	}
	if fs != nil {
		keyOf := map[string]string{}
		for _, f := range Flags() {
			keyOf[f.Name] = f.Key
		}
		err := k.Load(posflag.ProviderWithFlag(fs, ".", k, func(f *pflag.Flag) (string, any) {
			key, ok := keyOf[f.Name]
			if !ok || !f.Changed {
				return "", nil
			}
			return key, posflag.FlagVal(fs, f)
		}), nil)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: flags: %v", ErrInvalid, err)
		}
	}
	source := func(key string) string {
		if fromFile.Exists(key) {
			return "in " + path
		}
		return "from " + EnvName(key)
	}
	if err := checkKeys(k, source); err != nil {
		return nil, nil, err
	}
	var c Config
	err = k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc(), mapstructure.StringToSliceHookFunc(",")),
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		Result:           &c,
		TagName:          "koanf",
	}})
	if err != nil { // checkKeys lets nothing through that fails here
		return nil, nil, fmt.Errorf("%w: %v (the keys are listed in docs/configuration.md)", ErrInvalid, err)
	}
	if err := c.finish(); err != nil {
		return nil, nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	return &c, k, nil
}

// finish checks the keys only this package knows and fills derived values.
func (c *Config) finish() error {
	for _, d := range c.declarations() {
		if d.check != nil {
			if err := d.check(); err != nil {
				return keyErr(err, d.key)
			}
		}
	}
	if err := c.checkTLS(); err != nil {
		return err
	}
	if c.Worker.LeaseTTL > c.Worker.RecycleAfter {
		lease, recycle := c.keyAt(&c.Worker.LeaseTTL), c.keyAt(&c.Worker.RecycleAfter)
		return keyErr(fmt.Errorf("%s %v must not exceed %s %v", lease, c.Worker.LeaseTTL, recycle, c.Worker.RecycleAfter), lease, recycle)
	}
	if c.AdminTokenFile != "" {
		if c.AdminToken != "" {
			return keyErr(errors.New("both are set: choose one"), c.keyAt(&c.AdminToken), c.keyAt(&c.AdminTokenFile))
		}
		b, err := readSecret(c.AdminTokenFile)
		if err != nil {
			return keyErr(err, c.keyAt(&c.AdminTokenFile))
		}
		c.AdminToken = strings.TrimSpace(string(b))
		if c.AdminToken == "" {
			return keyErr(fmt.Errorf("%s is empty", c.AdminTokenFile), c.keyAt(&c.AdminTokenFile))
		}
	}
	if c.Obfuscation.KeyFile != "" {
		if c.Obfuscation.Key != "" {
			return keyErr(errors.New("both are set: choose one"), c.keyAt(&c.Obfuscation.Key), c.keyAt(&c.Obfuscation.KeyFile))
		}
		b, err := readSecret(c.Obfuscation.KeyFile)
		if err != nil {
			return keyErr(err, c.keyAt(&c.Obfuscation.KeyFile))
		}
		c.Obfuscation.Key = strings.TrimSpace(string(b))
	}
	if c.Obfuscation.Key != "" && c.Obfuscation.Scheme == "" {
		return keyErr(errors.New("is required with a key: ff1 for a new key, or splitmix for a key that gave opaque IDs before frond had FF1 (it keeps giving the same IDs; docs/security.md)"), c.keyAt(&c.Obfuscation.Scheme))
	}
	for v, pk := range c.Obfuscation.Previous {
		prefix := c.keyAt(&c.Obfuscation.Previous) + "." + v + "."
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return keyErr(fmt.Errorf("%q is not a key version (a whole number from 1)", v), c.keyAt(&c.Obfuscation.Previous))
		}
		if pk.KeyFile != "" {
			if pk.Key != "" {
				return keyErr(errors.New("both are set: choose one"), prefix+"key", prefix+"key_file")
			}
			b, err := readSecret(pk.KeyFile)
			if err != nil {
				return keyErr(err, prefix+"key_file")
			}
			pk.Key = strings.TrimSpace(string(b))
		}
		if pk.Key == "" {
			return keyErr(errors.New("has no key: set key_file (or key)"), strings.TrimSuffix(prefix, "."))
		}
		if pk.Scheme == "" {
			return keyErr(errors.New("is required: ff1 or splitmix, the scheme the key was used with"), prefix+"scheme")
		}
		c.Obfuscation.Previous[v] = pk
	}
	if c.Store == "" {
		c.Store = "sqlite://" + strings.TrimSuffix(c.DataDir, "/") + "/frond.db"
	}
	return nil
}

// readSecret reads a file holding a secret. A systemd credential
// (/run/credentials/UNIT/NAME) exists only while its unit runs: a check
// from a shell is told to give the credential's source instead.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(path, "/run/credentials/") {
		return nil, fmt.Errorf("%w (systemd provides /run/credentials/ only while the unit runs; to check the configuration from a shell, give the credential's source with the flag or variable below, as deploy/systemd/frond.yaml shows)", err)
	}
	return b, err
}

// checkTLS checks the TLS files: both or neither, readable, and a client
// CA only with TLS.
func (c *Config) checkTLS() error {
	if c.TLS.On() {
		if c.TLS.CertFile == "" || c.TLS.KeyFile == "" {
			key := c.keyAt(&c.TLS.CertFile)
			if c.TLS.KeyFile == "" {
				key = c.keyAt(&c.TLS.KeyFile)
			}
			return keyErr(tlsconf.ErrIncomplete, key)
		}
		if _, err := tlsconf.New(tlsconf.Files{Cert: c.TLS.CertFile, Key: c.TLS.KeyFile}, nil); err != nil {
			return keyErr(err, c.keyAt(&c.TLS.CertFile))
		}
		if c.TLS.ClientCAFile != "" {
			if _, err := tlsconf.CertPool(c.TLS.ClientCAFile); err != nil {
				return keyErr(err, c.keyAt(&c.TLS.ClientCAFile))
			}
		}
	} else if c.TLS.ClientCAFile != "" {
		return keyErr(fmt.Errorf("client certificates need TLS: set %s and %s too", c.keyAt(&c.TLS.CertFile), c.keyAt(&c.TLS.KeyFile)), c.keyAt(&c.TLS.ClientCAFile))
	}
	return nil
}

// ServiceConfig is the service.Config of c: frond serve runs with it (after
// setting the clock and the metrics hook) and Validate checks it. Zero and
// negative values mean what they mean to the engines (zero: the default).
func (c *Config) ServiceConfig() service.Config {
	layout, _ := snowflake.Preset(c.Layout)
	layout.DatacenterBits = c.Snowflake.DatacenterBits
	if sharded, err := layout.WithShardBits(c.Snowflake.ShardBits); err == nil { // checked by finish
		layout = sharded
	}
	var key []byte
	if c.Obfuscation.Key != "" {
		key = []byte(c.Obfuscation.Key)
	}
	var previous []service.ObfuscationKey
	for _, v := range slices.Sorted(maps.Keys(c.Obfuscation.Previous)) {
		n, _ := strconv.Atoi(v) // finish checked it
		pk := c.Obfuscation.Previous[v]
		previous = append(previous, service.ObfuscationKey{Version: n, Scheme: pk.Scheme, Key: []byte(pk.Key)})
	}
	return service.Config{
		Snowflake: worker.Settings{
			Layout: layout, Datacenter: c.Snowflake.Datacenter, MaxBackward: c.Snowflake.MaxBackward, MaxLead: c.Snowflake.MaxLead,
			RandomStart: c.Snowflake.RandomStart, PersistEvery: c.Snowflake.PersistEvery,
			StartupWait: c.Snowflake.StartupWait, MaxPeerSkew: c.Snowflake.MaxPeerSkew, ExpiryWarning: c.Snowflake.ExpiryWarning,
		},
		Segment: segment.Settings{
			Threshold: c.Segment.Threshold, FixedStep: c.Segment.FixedStep,
			FastSegment: c.Segment.FastSegment, SlowSegment: c.Segment.SlowSegment,
			MaxStep: c.Segment.MaxStep, LoadTimeout: c.Segment.LoadTimeout, FailFast: c.Segment.FailFast,
			IdleAfter: c.Segment.IdleAfter, Runway: c.Segment.Runway,
		},
		Serials:             c.Serials,
		ObfuscationKey:      key,
		ObfuscationScheme:   c.Obfuscation.Scheme,
		ObfuscationVersion:  c.Obfuscation.KeyVersion,
		ObfuscationPrevious: previous,
		ObfuscationWidth:    c.Obfuscation.SegmentWidth,
		Forms:               c.Forms,
		Prefixes:            c.Prefixes,
		Tokens:              c.Tokens,
		AdminToken:          c.AdminToken,
		Idempotency: service.Idempotency{Window: c.Idempotency.Window, MaxEntries: c.Idempotency.MaxEntries, MaxIDs: c.Idempotency.MaxIDs,
			PerCallerEntries: c.Idempotency.PerCallerEntries, PerCallerIDs: c.Idempotency.PerCallerIDs},
		AnswerBudget: c.Limits.AnswerBudget,
	}
}

// Validate checks c with the engines' rules (service.Config.Validate),
// naming the keys at fault. Load calls it. The store and registry settings
// are the backends' to check (cmd/frond).
func (c *Config) Validate() error {
	sc := c.ServiceConfig()
	if err := sc.Validate(); err != nil {
		var ce *service.ConfigError
		if !errors.As(err, &ce) {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		keys := make([]string, 0, len(ce.Fields))
		for _, f := range ce.Fields {
			keys = append(keys, c.keyOf(f))
		}
		return keyErr(ce.Err, keys...)
	}
	return nil
}

// keyOf maps a service.Config field path to the key that sets it (the
// declarations' svc, or the same Go path).
func (c *Config) keyOf(field string) string {
	if rest, ok := strings.CutPrefix(field, "Serials["); ok {
		name, f, _ := strings.Cut(rest, "].")
		return serialsKey + "." + name + "." + strings.ToLower(f)
	}
	if rest, ok := strings.CutPrefix(field, "Forms["); ok {
		return formsKey + "." + strings.TrimSuffix(rest, "]")
	}
	if rest, ok := strings.CutPrefix(field, "Prefixes["); ok {
		return prefixesKey + "." + strings.TrimSuffix(rest, "]")
	}
	if strings.HasPrefix(field, "Tokens[") {
		return tokensKey // the key, not the token: errors do not print secrets
	}
	if field == "ObfuscationKey" && c.Obfuscation.KeyFile != "" {
		return c.keyAt(&c.Obfuscation.KeyFile)
	}
	if rest, ok := strings.CutPrefix(field, "ObfuscationPrevious["); ok {
		if i, err := strconv.Atoi(strings.TrimSuffix(rest, "]")); err == nil {
			vs := slices.Sorted(maps.Keys(c.Obfuscation.Previous))
			if i < len(vs) {
				return c.keyAt(&c.Obfuscation.Previous) + "." + vs[i]
			}
		}
		return c.keyAt(&c.Obfuscation.Previous)
	}
	for _, d := range c.declarations() {
		if d.svc == field || d.svc == "" && d.path == field {
			return d.key
		}
	}
	for _, d := range c.declarations() { // a whole section ("Segment")
		if section, _, ok := strings.Cut(d.key, "."); ok && strings.HasPrefix(d.path, field+".") {
			return section
		}
	}
	return field
}

// LogLevel parses Log.Level.
func (c *Config) LogLevel() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.Log.Level))
	return l, err
}

// Loopback reports whether every listen address (HTTP, gRPC, RESP) only
// accepts local connections.
func (c *Config) Loopback() bool {
	for _, addr := range []string{c.HTTPAddr, c.GRPCAddr, c.RESPAddr} {
		if addr != "" && !loopback(addr) {
			return false
		}
	}
	return true
}

func loopback(addr string) bool {
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Secrets returns every secret of the configuration: the admin token, the
// keys, the tag tokens, and the passwords of the store and registry URLs
// (also of URLs that do not parse). frond remembers them (secret.Remember)
// so that no error or log line shows one, whoever wrote it.
func (c *Config) Secrets() []string {
	var out []string
	for _, d := range c.declarations() {
		switch v := d.ptr.(type) {
		case *string:
			if d.secret {
				out = append(out, *v)
			}
			if d.urls {
				out = append(out, secret.Passwords(*v)...)
			}
		case *map[string]PreviousKey:
			for _, k := range *v {
				out = append(out, k.Key)
			}
		case *map[string][]string:
			for token := range *v {
				out = append(out, token)
			}
		}
	}
	return out
}

// Masked returns the configuration as a nested map for printing, with the
// admin token and any password in a URL replaced by "***".
func Masked(k *koanf.Koanf, c *Config) ([]byte, error) {
	m := koanf.New(".")
	m.Load(confmap.Provider(k.All(), "."), nil)
	for _, d := range c.declarations() {
		switch v := d.ptr.(type) {
		case *string:
			// A secret read from its file (admin_token_file, key_file) is
			// not shown as set itself: only one of the two is.
			if d.secret && m.String(d.key) != "" {
				m.Set(d.key, secret.Mask)
			}
			if d.urls { // the URL in effect: the store's default is the SQLite file in data_dir
				m.Set(d.key, secret.URL(*v))
			}
		case *map[string]PreviousKey:
			for version := range *v {
				if key := d.key + "." + version + "." + previousKeyKey; m.String(key) != "" {
					m.Set(key, secret.Mask)
				}
			}
		case *map[string][]string: // tokens: the tags stay visible; each token shows as *** and a number
			if len(*v) == 0 {
				continue
			}
			m.Delete(d.key)
			for i, token := range slices.Sorted(maps.Keys(*v)) {
				m.Set(d.key+"."+secret.Mask+strconv.Itoa(i+1), (*v)[token])
			}
		}
	}
	return m.Marshal(yaml.Parser())
}
