// Package config loads frond's configuration from defaults, a YAML file,
// FROND_* environment variables and command-line flags, in that order (a
// later source wins), and refuses unknown keys.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/frond-id/frond/service"
	"github.com/frond-id/frond/snowflake"
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
	Store           string        `koanf:"store"`            // store URL; empty: sqlite in data_dir
	Registry        string        `koanf:"registry"`         // worker registry URL; "file": in data_dir (docs/registries.md)
	Layout          string        `koanf:"layout"`           // snowflake layout preset
	Node            int64         `koanf:"node"`             // worker ID for the file registry
	AdminToken      string        `koanf:"admin_token"`      // bearer token for /v1/tags
	AdminTokenFile  string        `koanf:"admin_token_file"` // file holding the token
	Pprof           bool          `koanf:"pprof"`            // mount /debug/pprof/
	ShutdownTimeout time.Duration `koanf:"shutdown_timeout"` // grace for requests in flight
	Log             Log           `koanf:"log"`
	Snowflake       Snowflake     `koanf:"snowflake"`
	Worker          Worker        `koanf:"worker"`
	Segment         Segment       `koanf:"segment"`
	// Serials are business serial numbers by name (see docs/kinds.md).
	Serials map[string]service.SerialConfig `koanf:"serials"`
	// Obfuscation holds the key of the opaque (non-guessable) forms.
	Obfuscation Obfuscation `koanf:"obfuscation"`
	// Forms are default forms of segment tags: number, base62, base32, opaque, opaque62.
	Forms map[string]string `koanf:"forms"`
}

// Obfuscation configures the keyed permutation of the opaque forms.
type Obfuscation struct {
	Key          string `koanf:"key"`           // 16 bytes or more; prefer key_file
	KeyFile      string `koanf:"key_file"`      // file holding the key
	SegmentWidth uint   `koanf:"segment_width"` // bits of opaque segment IDs (63; 53 for JavaScript)
}

// Log configures logging.
type Log struct {
	Format string `koanf:"format"` // text or json
	Level  string `koanf:"level"`  // debug, info, warn, error
}

// Snowflake configures the snowflake clock policy.
type Snowflake struct {
	MaxBackward  time.Duration `koanf:"max_backward"`
	MaxLead      time.Duration `koanf:"max_lead"`
	RandomStart  int64         `koanf:"random_start"`
	PersistEvery time.Duration `koanf:"persist_every"`
	StartupWait  time.Duration `koanf:"startup_wait"`  // 0: 2 x persist_every + max_lead + 1s
	MaxPeerSkew  time.Duration `koanf:"max_peer_skew"` // negative: no peer clock check
}

// Worker configures how the node is known to a worker registry.
type Worker struct {
	Host         string        `koanf:"host"`          // empty: the first non-loopback IPv4 address
	Port         int           `koanf:"port"`          // 0: the HTTP port
	RecycleAfter time.Duration `koanf:"recycle_after"` // see docs/registries.md
	LeaseTTL     time.Duration `koanf:"lease_ttl"`
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
}

// Defaults are the values when nothing is configured.
func Defaults() map[string]any {
	return map[string]any{
		"config": "", "data_dir": "./data", "http_addr": ":8080", "store": "", "registry": "file",
		"layout": "twitter", "node": 0, "admin_token": "", "admin_token_file": "", "pprof": false,
		"shutdown_timeout": "15s",
		"log.format":       "text", "log.level": "info",
		"snowflake.max_backward": "5ms", "snowflake.max_lead": "0s", "snowflake.random_start": 0,
		"snowflake.persist_every": "1s", "snowflake.startup_wait": "0s", "snowflake.max_peer_skew": "5s",
		"worker.host": "", "worker.port": 0, "worker.recycle_after": "10m", "worker.lease_ttl": "10s",
		"segment.threshold": 0.1, "segment.fixed_step": false, "segment.fast_segment": "15m",
		"segment.slow_segment": "30m", "segment.max_step": 1_000_000, "segment.load_timeout": "10s",
		"segment.fail_fast": "1s",
		"obfuscation.key":   "", "obfuscation.key_file": "", "obfuscation.segment_width": 63,
	}
}

// Flags are the command-line flags of frond serve and the keys they set.
var Flags = []struct{ Name, Key, Usage string }{
	{"config", "config", "YAML configuration file (env FROND_CONFIG)"},
	{"data-dir", "data_dir", "data directory: embedded store and worker state (env FROND_DATA_DIR)"},
	{"http-addr", "http_addr", "HTTP listen address HOST:PORT (env FROND_HTTP_ADDR)"},
	{"store", "store", "segment store URL, e.g. sqlite:///var/lib/frond/frond.db (default: sqlite in the data directory) (env FROND_STORE)"},
	{"registry", "registry", "worker registry: file, static:N, static:ordinal, etcd://, zk://, redis://, mysql://, postgres://, sqlite:// (env FROND_REGISTRY; docs/registries.md)"},
	{"layout", "layout", "snowflake layout: twitter, sonyflake, uid-generator, javascript (env FROND_LAYOUT)"},
	{"node", "node", "snowflake worker ID for the file registry (env FROND_NODE)"},
	{"admin-token", "admin_token", "bearer token required for tag administration (env FROND_ADMIN_TOKEN)"},
	{"admin-token-file", "admin_token_file", "file holding the admin token (env FROND_ADMIN_TOKEN_FILE)"},
	{"pprof", "pprof", "serve net/http/pprof under /debug/pprof/ (env FROND_PPROF)"},
	{"log-format", "log.format", "log format: text or json (env FROND_LOG__FORMAT)"},
	{"log-level", "log.level", "log level: debug, info, warn, error (env FROND_LOG__LEVEL)"},
}

// AddFlags defines the flags on fs with the defaults.
func AddFlags(fs *pflag.FlagSet) {
	d := Defaults()
	for _, f := range Flags {
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

// envSkip are FROND_ variables that are not configuration keys.
func envSkip(name string) bool {
	return strings.HasPrefix(name, "TEST_") || name == "SERVER"
}

// Load reads the configuration: defaults, then the YAML file (from the
// --config flag or FROND_CONFIG), then FROND_* variables, then the flags
// that were set. environ is os.Environ() in production.
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
	if path != "" {
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return nil, nil, fmt.Errorf("%w: read %s: %v", ErrInvalid, path, err)
		}
		k.Set("config", path)
	}
	err := k.Load(env.Provider(".", env.Opt{
		Prefix:      "FROND_",
		EnvironFunc: func() []string { return environ },
		TransformFunc: func(key, v string) (string, any) {
			name := strings.TrimPrefix(key, "FROND_")
			if envSkip(name) {
				return "", nil
			}
			return strings.ReplaceAll(strings.ToLower(name), "__", "."), v
		},
	}), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: environment: %v", ErrInvalid, err)
	}
	if fs != nil {
		keyOf := map[string]string{}
		for _, f := range Flags {
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
	var c Config
	err = k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc()),
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		Result:           &c,
		TagName:          "koanf",
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v (the keys are listed in docs/configuration.md)", ErrInvalid, err)
	}
	if err := c.finish(); err != nil {
		return nil, nil, err
	}
	return &c, k, nil
}

// finish validates and fills derived values.
func (c *Config) finish() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if c.DataDir == "" {
		return bad("data_dir is empty")
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return bad("http_addr %q: %v", c.HTTPAddr, err)
	}
	if _, err := snowflake.Preset(c.Layout); err != nil {
		return bad("layout: %v", err)
	}
	if c.Node < 0 {
		return bad("node %d is negative", c.Node)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return bad("log.format %q: text or json", c.Log.Format)
	}
	if _, err := c.LogLevel(); err != nil {
		return bad("log.level %q: debug, info, warn or error", c.Log.Level)
	}
	if err := checkRegistry(c.Registry); err != nil {
		return bad("%v", err)
	}
	if c.Worker.Port < 0 || c.Worker.Port > 65535 {
		return bad("worker.port %d: 0 to 65535", c.Worker.Port)
	}
	if c.Worker.RecycleAfter <= 0 || c.Worker.LeaseTTL <= 0 {
		return bad("worker.recycle_after %v and worker.lease_ttl %v must be positive", c.Worker.RecycleAfter, c.Worker.LeaseTTL)
	}
	if c.Worker.LeaseTTL > c.Worker.RecycleAfter {
		return bad("worker.lease_ttl %v must not exceed worker.recycle_after %v", c.Worker.LeaseTTL, c.Worker.RecycleAfter)
	}
	if c.ShutdownTimeout <= 0 {
		return bad("shutdown_timeout %v must be positive", c.ShutdownTimeout)
	}
	if c.AdminTokenFile != "" {
		b, err := os.ReadFile(c.AdminTokenFile)
		if err != nil {
			return bad("admin_token_file: %v", err)
		}
		if c.AdminToken != "" {
			return bad("both admin_token and admin_token_file are set: choose one")
		}
		c.AdminToken = strings.TrimSpace(string(b))
		if c.AdminToken == "" {
			return bad("admin_token_file %s is empty", c.AdminTokenFile)
		}
	}
	if c.Obfuscation.KeyFile != "" {
		if c.Obfuscation.Key != "" {
			return bad("both obfuscation.key and obfuscation.key_file are set: choose one")
		}
		b, err := os.ReadFile(c.Obfuscation.KeyFile)
		if err != nil {
			return bad("obfuscation.key_file: %v", err)
		}
		c.Obfuscation.Key = strings.TrimSpace(string(b))
	}
	if c.Obfuscation.Key != "" && len(c.Obfuscation.Key) < 16 {
		return bad("the obfuscation key has %d bytes: at least 16", len(c.Obfuscation.Key))
	}
	if w := c.Obfuscation.SegmentWidth; w < 2 || w > 63 {
		return bad("obfuscation.segment_width %d: 2 to 63", w)
	}
	if c.Store == "" {
		c.Store = "sqlite://" + strings.TrimSuffix(c.DataDir, "/") + "/frond.db"
	}
	return nil
}

// RegistrySchemes are the URL schemes of the network worker registries.
var RegistrySchemes = []string{"etcd", "zk", "redis", "rediss", "mysql", "postgres", "postgresql", "sqlite"}

func checkRegistry(raw string) error {
	if raw == "" || raw == "file" || strings.HasPrefix(raw, "static:") {
		return nil
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if ok {
		for _, s := range RegistrySchemes {
			if s == scheme {
				return nil
			}
		}
	}
	return fmt.Errorf("registry %q: want file, static:N, static:ordinal[+BASE] or a URL with scheme %s", raw, strings.Join(RegistrySchemes, ", "))
}

// LogLevel parses Log.Level.
func (c *Config) LogLevel() (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(c.Log.Level))
	return l, err
}

// Loopback reports whether the HTTP address only accepts local connections.
func (c *Config) Loopback() bool {
	host, _, _ := net.SplitHostPort(c.HTTPAddr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Masked returns the configuration as a nested map for printing, with the
// admin token and any password in a URL replaced by "***".
func Masked(k *koanf.Koanf, c *Config) ([]byte, error) {
	m := koanf.New(".")
	m.Load(confmap.Provider(k.All(), "."), nil)
	if c.AdminToken != "" {
		m.Set("admin_token", "***")
	}
	if c.Obfuscation.Key != "" {
		m.Set("obfuscation.key", "***")
	}
	m.Set("registry", maskURL(m.String("registry")))
	stores := strings.Fields(c.Store)
	for i := range stores {
		stores[i] = maskURL(stores[i])
	}
	m.Set("store", strings.Join(stores, " "))
	return m.Marshal(yaml.Parser())
}

func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
}
