// Package config loads frond's configuration from defaults, a YAML file,
// FROND_* environment variables and command-line flags, in that order (a
// later source wins), and refuses unknown keys.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
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
	Snowflake       Snowflake     `koanf:"snowflake"`
	Worker          Worker        `koanf:"worker"`
	Segment         Segment       `koanf:"segment"`
	// Serials are business serial numbers by name (see docs/kinds.md).
	Serials map[string]service.SerialConfig `koanf:"serials"`
	// Obfuscation holds the key of the opaque (non-guessable) forms.
	Obfuscation Obfuscation `koanf:"obfuscation"`
	// Forms are default forms of segment tags: number, base62, base32, opaque, opaque62.
	Forms map[string]string `koanf:"forms"`
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
	MaxConnections int           `koanf:"max_connections"` // open connections per listener
	Rate           float64       `koanf:"rate"`            // requests per second per token or address; 0: off
	Burst          int           `koanf:"burst"`           // requests above the rate at once; 0: the rate, at least 1
	AuthFailures   int           `koanf:"auth_failures"`   // wrong tokens per address within auth_window; 0: off
	AuthWindow     time.Duration `koanf:"auth_window"`
}

// Idempotency bounds the memory of idempotent requests (docs/api.md).
type Idempotency struct {
	Window     time.Duration `koanf:"window"`      // how long an answer is given again; negative: keys refused
	MaxEntries int           `koanf:"max_entries"` // keys remembered at most
	MaxIDs     int64         `koanf:"max_ids"`     // IDs (or ranges) remembered answers hold at most
}

// On reports whether TLS is configured.
func (t TLS) On() bool { return t.CertFile != "" || t.KeyFile != "" }

// Snowflake configures the snowflake clock policy.
type Snowflake struct {
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
}

// Defaults are the values when nothing is configured.
func Defaults() map[string]any {
	return map[string]any{
		"config": "", "data_dir": "./data", "http_addr": ":8080", "grpc_addr": "", "resp_addr": "", "store": "", "registry": "file",
		"layout": "twitter", "node": 0, "admin_token": "", "admin_token_file": "", "pprof": false,
		"shutdown_timeout": "15s",
		"log.format":       "text", "log.level": "info", "log.access": false,
		"tls.cert_file": "", "tls.key_file": "", "tls.client_ca_file": "",
		"limits.max_connections": 10_000, "limits.rate": 0.0, "limits.burst": 0, "limits.auth_failures": 10, "limits.auth_window": "1m",
		"idempotency.window": "5m", "idempotency.max_entries": 100_000, "idempotency.max_ids": 1_000_000,
		"snowflake.max_backward": "5ms", "snowflake.max_lead": "0s", "snowflake.random_start": 0,
		"snowflake.persist_every": "400ms", "snowflake.startup_wait": "0s", "snowflake.max_peer_skew": "5s", "snowflake.expiry_warning": "43800h",
		"worker.host": "", "worker.port": 0, "worker.recycle_after": "10m", "worker.lease_ttl": "10s",
		"worker.instance": "", "worker.takeover": "",
		"segment.threshold": 0.1, "segment.fixed_step": false, "segment.fast_segment": "15m",
		"segment.slow_segment": "30m", "segment.max_step": 1_000_000, "segment.load_timeout": "10s",
		"segment.fail_fast": "1s", "segment.idle_after": "1h",
		"obfuscation.key": "", "obfuscation.key_file": "", "obfuscation.segment_width": 63,
		"obfuscation.scheme": "", "obfuscation.key_version": 1,
	}
}

// Flags are the command-line flags of frond serve and the keys they set.
var Flags = []struct{ Name, Key, Usage string }{
	{"config", "config", "YAML configuration file (env FROND_CONFIG)"},
	{"data-dir", "data_dir", "data directory: embedded store and worker state (env FROND_DATA_DIR)"},
	{"http-addr", "http_addr", "HTTP listen address HOST:PORT (env FROND_HTTP_ADDR)"},
	{"grpc-addr", "grpc_addr", "gRPC listen address HOST:PORT, off when empty (env FROND_GRPC_ADDR; docs/grpc.md)"},
	{"resp-addr", "resp_addr", "Redis protocol (RESP) listen address HOST:PORT, off when empty (env FROND_RESP_ADDR; docs/resp.md)"},
	{"store", "store", "segment store URL, e.g. sqlite:///var/lib/frond/frond.db (default: sqlite in the data directory) (env FROND_STORE)"},
	{"registry", "registry", "worker registry: file, static:N, static:ordinal, etcd://, zk://, redis://, mysql://, postgres://, sqlite:// (env FROND_REGISTRY; docs/registries.md)"},
	{"layout", "layout", "snowflake layout: twitter, sonyflake, uid-generator, javascript (env FROND_LAYOUT)"},
	{"node", "node", "snowflake worker ID for the file registry (env FROND_NODE)"},
	{"admin-token", "admin_token", "bearer token required for tag administration (env FROND_ADMIN_TOKEN)"},
	{"admin-token-file", "admin_token_file", "file holding the admin token (env FROND_ADMIN_TOKEN_FILE)"},
	{"pprof", "pprof", "serve net/http/pprof under /debug/pprof/ (env FROND_PPROF)"},
	{"log-format", "log.format", "log format: text or json (env FROND_LOG__FORMAT)"},
	{"log-level", "log.level", "log level: debug, info, warn, error (env FROND_LOG__LEVEL)"},
	{"tls-cert-file", "tls.cert_file", "TLS certificate (PEM) for every listener, reloaded when it changes (env FROND_TLS_CERT_FILE)"},
	{"tls-key-file", "tls.key_file", "TLS private key (PEM) (env FROND_TLS_KEY_FILE)"},
	{"tls-client-ca-file", "tls.client_ca_file", "CA certificates (PEM): clients must present a certificate they signed (env FROND_TLS_CLIENT_CA_FILE)"},
	{"access-log", "log.access", "log one line per HTTP request and gRPC call, with its X-Request-ID (env FROND_LOG__ACCESS)"},
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
	key := strings.ReplaceAll(strings.ToLower(name), "__", ".")
	for k, alias := range envAliases {
		if key == alias {
			return k
		}
	}
	return key
}

// envAliases are keys whose variable has one underscore where nesting
// would have two: FROND_TLS_CERT_FILE, as TLS settings are usually named.
var envAliases = map[string]string{"tls.cert_file": "tls_cert_file", "tls.key_file": "tls_key_file", "tls.client_ca_file": "tls_client_ca_file"}

// EnvName is the environment variable of a key: FROND_SEGMENT__MAX_STEP.
func EnvName(key string) string {
	if alias, ok := envAliases[key]; ok {
		return "FROND_" + strings.ToUpper(alias)
	}
	return "FROND_" + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// FlagName is the flag of a key ("" if it has none).
func FlagName(key string) string {
	for _, f := range Flags {
		if f.Key == key {
			return f.Name
		}
	}
	return ""
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
		if _, token, ok := strings.Cut(k, "tokens."); ok && strings.HasPrefix(k, "tokens.") {
			// The key names a secret: a tag token.
			keys[i] = "tokens." + secret.Mask
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
			if token, ok := strings.CutPrefix(name, "FROND_TOKENS__"); ok && key != "" {
				// A tag token keeps its case (the variable's name is the
				// token), and its tags are a comma-separated list:
				// FROND_TOKENS__0f673adf=test,order.
				var tags []any
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						tags = append(tags, t)
					}
				}
				return "tokens." + token, tags
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
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc()),
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
	if c.DataDir == "" {
		return keyErr(errors.New("is empty"), "data_dir")
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return keyErr(fmt.Errorf("%q: %v", c.HTTPAddr, err), "http_addr")
	}
	for _, a := range [][2]string{{"grpc_addr", c.GRPCAddr}, {"resp_addr", c.RESPAddr}} {
		if a[1] == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a[1]); err != nil {
			return keyErr(fmt.Errorf("%q: %v", a[1], err), a[0])
		}
	}
	if c.TLS.On() {
		if c.TLS.CertFile == "" || c.TLS.KeyFile == "" {
			key := "tls.cert_file"
			if c.TLS.KeyFile == "" {
				key = "tls.key_file"
			}
			return keyErr(tlsconf.ErrIncomplete, key)
		}
		if _, err := tlsconf.New(tlsconf.Files{Cert: c.TLS.CertFile, Key: c.TLS.KeyFile}, nil); err != nil {
			return keyErr(err, "tls.cert_file")
		}
		if c.TLS.ClientCAFile != "" {
			if _, err := tlsconf.CertPool(c.TLS.ClientCAFile); err != nil {
				return keyErr(err, "tls.client_ca_file")
			}
		}
	} else if c.TLS.ClientCAFile != "" {
		return keyErr(errors.New("client certificates need TLS: set tls.cert_file and tls.key_file too"), "tls.client_ca_file")
	}
	if c.Limits.MaxConnections < 1 {
		return keyErr(fmt.Errorf("%d: at least 1", c.Limits.MaxConnections), "limits.max_connections")
	}
	if c.Limits.Rate < 0 || math.IsNaN(c.Limits.Rate) || math.IsInf(c.Limits.Rate, 0) {
		return keyErr(fmt.Errorf("%v: 0 (off) or a positive number of requests per second", c.Limits.Rate), "limits.rate")
	}
	if c.Limits.Burst < 0 {
		return keyErr(fmt.Errorf("%d is negative (0: the rate)", c.Limits.Burst), "limits.burst")
	}
	if c.Limits.AuthFailures < 0 {
		return keyErr(fmt.Errorf("%d is negative (0: off)", c.Limits.AuthFailures), "limits.auth_failures")
	}
	if c.Limits.AuthWindow <= 0 {
		return keyErr(fmt.Errorf("%v: it must be positive", c.Limits.AuthWindow), "limits.auth_window")
	}
	if c.Idempotency.Window == 0 {
		return keyErr(errors.New("0: a duration such as 5m, or negative to refuse idempotency keys"), "idempotency.window")
	}
	if c.Idempotency.MaxEntries < 1 {
		return keyErr(fmt.Errorf("%d: at least 1", c.Idempotency.MaxEntries), "idempotency.max_entries")
	}
	if c.Idempotency.MaxIDs < 1 {
		return keyErr(fmt.Errorf("%d: at least 1", c.Idempotency.MaxIDs), "idempotency.max_ids")
	}
	if _, err := snowflake.Preset(c.Layout); err != nil {
		return keyErr(err, "layout")
	}
	if c.Node < 0 {
		return keyErr(fmt.Errorf("%d is negative", c.Node), "node")
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return keyErr(fmt.Errorf("%q: text or json", c.Log.Format), "log.format")
	}
	if _, err := c.LogLevel(); err != nil {
		return keyErr(fmt.Errorf("%q: debug, info, warn or error", c.Log.Level), "log.level")
	}
	if c.Worker.Port < 0 || c.Worker.Port > 65535 {
		return keyErr(fmt.Errorf("%d: 0 to 65535", c.Worker.Port), "worker.port")
	}
	// Every key below has its default in Defaults, so zero is not "the
	// default" here: it is refused where it would mean nothing sensible.
	positive := []struct {
		key string
		d   time.Duration
	}{
		{"worker.recycle_after", c.Worker.RecycleAfter}, {"worker.lease_ttl", c.Worker.LeaseTTL},
		{"shutdown_timeout", c.ShutdownTimeout}, {"snowflake.persist_every", c.Snowflake.PersistEvery},
		{"snowflake.max_peer_skew", c.Snowflake.MaxPeerSkew}, // negative: off (the service's meaning)
		{"snowflake.expiry_warning", c.Snowflake.ExpiryWarning},
		{"segment.fast_segment", c.Segment.FastSegment}, {"segment.slow_segment", c.Segment.SlowSegment},
		{"segment.load_timeout", c.Segment.LoadTimeout},
	}
	for _, p := range positive {
		if p.d == 0 {
			return keyErr(errors.New("0 is not allowed: it must be positive (leave the key out for the default)"), p.key)
		}
	}
	for _, p := range positive[:3] { // the others: the engines refuse negatives, or read them as "off"
		if p.d < 0 {
			return keyErr(fmt.Errorf("%v is negative: it must be positive", p.d), p.key)
		}
	}
	if c.Snowflake.MaxBackward < 0 {
		return keyErr(fmt.Errorf("%v is negative (0s refuses every backward step)", c.Snowflake.MaxBackward), "snowflake.max_backward")
	}
	if c.Segment.Threshold == 0 {
		return keyErr(errors.New("0 is not allowed: more than 0, at most 1"), "segment.threshold")
	}
	if c.Segment.MaxStep == 0 {
		return keyErr(errors.New("0 is not allowed: at least 1"), "segment.max_step")
	}
	if c.Worker.LeaseTTL > c.Worker.RecycleAfter {
		return keyErr(fmt.Errorf("worker.lease_ttl %v must not exceed worker.recycle_after %v", c.Worker.LeaseTTL, c.Worker.RecycleAfter), "worker.lease_ttl", "worker.recycle_after")
	}
	if c.AdminTokenFile != "" {
		if c.AdminToken != "" {
			return keyErr(errors.New("both are set: choose one"), "admin_token", "admin_token_file")
		}
		b, err := os.ReadFile(c.AdminTokenFile)
		if err != nil {
			return keyErr(err, "admin_token_file")
		}
		c.AdminToken = strings.TrimSpace(string(b))
		if c.AdminToken == "" {
			return keyErr(fmt.Errorf("%s is empty", c.AdminTokenFile), "admin_token_file")
		}
	}
	if c.Obfuscation.KeyFile != "" {
		if c.Obfuscation.Key != "" {
			return keyErr(errors.New("both are set: choose one"), "obfuscation.key", "obfuscation.key_file")
		}
		b, err := os.ReadFile(c.Obfuscation.KeyFile)
		if err != nil {
			return keyErr(err, "obfuscation.key_file")
		}
		c.Obfuscation.Key = strings.TrimSpace(string(b))
	}
	if c.Obfuscation.Key != "" && c.Obfuscation.Scheme == "" {
		return keyErr(errors.New("is required with a key: ff1 for a new key, or splitmix for a key that gave opaque IDs before frond had FF1 (it keeps giving the same IDs; docs/security.md)"), "obfuscation.scheme")
	}
	for v, pk := range c.Obfuscation.Previous {
		prefix := "obfuscation.previous." + v + "."
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return keyErr(fmt.Errorf("%q is not a key version (a whole number from 1)", v), "obfuscation.previous")
		}
		if pk.KeyFile != "" {
			if pk.Key != "" {
				return keyErr(errors.New("both are set: choose one"), prefix+"key", prefix+"key_file")
			}
			b, err := os.ReadFile(pk.KeyFile)
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

// ServiceConfig is the service.Config of c: frond serve runs with it (after
// setting the clock and the metrics hook) and Validate checks it. Zero and
// negative values mean what docs/configuration.md says, which for
// snowflake.max_backward and segment.fail_fast differs from the engines'
// zero values (there, zero means the default).
func (c *Config) ServiceConfig() service.Config {
	layout, _ := snowflake.Preset(c.Layout)
	maxBackward := c.Snowflake.MaxBackward
	if maxBackward == 0 {
		maxBackward = -1 // the generator's "refuse every backward step"
	}
	failFast := c.Segment.FailFast
	if failFast == 0 {
		failFast = -1 // the engine's "off"
	}
	idleAfter := c.Segment.IdleAfter
	if idleAfter == 0 {
		idleAfter = -1 // the engine's "never"
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
			Layout: layout, MaxBackward: maxBackward, MaxLead: c.Snowflake.MaxLead,
			RandomStart: c.Snowflake.RandomStart, PersistEvery: c.Snowflake.PersistEvery,
			StartupWait: c.Snowflake.StartupWait, MaxPeerSkew: c.Snowflake.MaxPeerSkew, ExpiryWarning: c.Snowflake.ExpiryWarning,
		},
		Segment: segment.Settings{
			Threshold: c.Segment.Threshold, FixedStep: c.Segment.FixedStep,
			FastSegment: c.Segment.FastSegment, SlowSegment: c.Segment.SlowSegment,
			MaxStep: c.Segment.MaxStep, LoadTimeout: c.Segment.LoadTimeout, FailFast: failFast,
			IdleAfter: idleAfter,
		},
		Serials:             c.Serials,
		ObfuscationKey:      key,
		ObfuscationScheme:   c.Obfuscation.Scheme,
		ObfuscationVersion:  c.Obfuscation.KeyVersion,
		ObfuscationPrevious: previous,
		ObfuscationWidth:    c.Obfuscation.SegmentWidth,
		Forms:               c.Forms,
		Tokens:              c.Tokens,
		Idempotency:         service.Idempotency{Window: c.Idempotency.Window, MaxEntries: c.Idempotency.MaxEntries, MaxIDs: c.Idempotency.MaxIDs},
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

// keyOf maps a service.Config field path to the key that sets it.
func (c *Config) keyOf(field string) string {
	if rest, ok := strings.CutPrefix(field, "Serials["); ok {
		name, f, _ := strings.Cut(rest, "].")
		return "serials." + name + "." + strings.ToLower(f)
	}
	if rest, ok := strings.CutPrefix(field, "Forms["); ok {
		return "forms." + strings.TrimSuffix(rest, "]")
	}
	if strings.HasPrefix(field, "Tokens[") {
		return "tokens" // the key, not the token: errors do not print secrets
	}
	if field == "ObfuscationKey" && c.Obfuscation.KeyFile != "" {
		return "obfuscation.key_file"
	}
	if rest, ok := strings.CutPrefix(field, "ObfuscationPrevious["); ok {
		if i, err := strconv.Atoi(strings.TrimSuffix(rest, "]")); err == nil {
			vs := slices.Sorted(maps.Keys(c.Obfuscation.Previous))
			if i < len(vs) {
				return "obfuscation.previous." + vs[i]
			}
		}
		return "obfuscation.previous"
	}
	keys := map[string]string{
		"Snowflake.Layout": "layout", "Snowflake.PersistEvery": "snowflake.persist_every", "Snowflake.MaxBackward": "snowflake.max_backward",
		"Snowflake.MaxLead": "snowflake.max_lead", "Snowflake.RandomStart": "snowflake.random_start", "Snowflake.StartupWait": "snowflake.startup_wait",
		"Snowflake.MaxPeerSkew": "snowflake.max_peer_skew", "Snowflake.ExpiryWarning": "snowflake.expiry_warning",
		"Segment.Threshold":   "segment.threshold",
		"Segment.FastSegment": "segment.fast_segment", "Segment.SlowSegment": "segment.slow_segment",
		"Segment.MaxStep": "segment.max_step", "Segment.LoadTimeout": "segment.load_timeout",
		"Segment.FailFast": "segment.fail_fast", "Segment.IdleAfter": "segment.idle_after", "Segment": "segment",
		"ObfuscationKey": "obfuscation.key", "ObfuscationWidth": "obfuscation.segment_width",
		"ObfuscationScheme": "obfuscation.scheme", "ObfuscationPrevious": "obfuscation.previous",
	}
	if k, ok := keys[field]; ok {
		return k
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
	for v := range c.Obfuscation.Previous {
		if m.String("obfuscation.previous."+v+".key") != "" {
			m.Set("obfuscation.previous."+v+".key", "***")
		}
	}
	if len(c.Tokens) > 0 {
		// The tags stay visible; each token shows as *** and a number.
		m.Delete("tokens")
		i := 0
		for _, token := range slices.Sorted(maps.Keys(c.Tokens)) {
			i++
			m.Set("tokens.***"+strconv.Itoa(i), c.Tokens[token])
		}
	}
	m.Set("registry", secret.URL(m.String("registry")))
	stores := strings.Fields(c.Store)
	for i := range stores {
		stores[i] = secret.URL(stores[i])
	}
	m.Set("store", strings.Join(stores, " "))
	return m.Marshal(yaml.Parser())
}
