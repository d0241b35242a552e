package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/worker"
	"github.com/spf13/pflag"
)

func load(t *testing.T, args []string, env []string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, _, err := Load(fs, env)
	return c, err
}

func TestLoad_Defaults(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "./data" || c.HTTPAddr != ":8080" || c.Store != "sqlite://./data/frond.db" || c.Layout != "twitter" ||
		c.Snowflake.MaxBackward != 5*time.Millisecond || c.Segment.MaxStep != 1_000_000 || c.Segment.FastSegment != 15*time.Minute ||
		c.Log.Format != "text" || c.Loopback() {
		t.Fatalf("defaults %+v", c)
	}
}

// File < environment < flags.
func TestLoad_Precedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frond.yaml")
	os.WriteFile(path, []byte("data_dir: /from/file\nhttp_addr: 127.0.0.1:1111\nlayout: sonyflake\nsegment:\n  max_step: 42\n  fast_segment: 1m\nlog:\n  level: debug\n"), 0o644)
	env := []string{"FROND_CONFIG=" + path, "FROND_HTTP_ADDR=127.0.0.1:2222", "FROND_SEGMENT__MAX_STEP=77", "FROND_TEST_REQUIRE=1", "FROND_SERVER=http://x", "HOME=/root",
		"FROND_CA_FILE=/ca.pem", "FROND_CERT_FILE=/c.pem", "FROND_KEY_FILE=/k.pem"} // the client commands' variables
	c, err := load(t, []string{"--http-addr", "127.0.0.1:3333", "--log-format", "json"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/from/file" || c.HTTPAddr != "127.0.0.1:3333" || c.Segment.MaxStep != 77 || c.Segment.FastSegment != time.Minute ||
		c.Layout != "sonyflake" || c.Log.Level != "debug" || c.Log.Format != "json" || c.Config != path || !c.Loopback() {
		t.Fatalf("config %+v", c)
	}
	// The --config flag beats FROND_CONFIG.
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("data_dir: /from/other\n"), 0o644)
	if c, err = load(t, []string{"--config", other}, env); err != nil || c.DataDir != "/from/other" {
		t.Fatalf("--config: %+v, %v", c, err)
	}
}

func TestLoad_Errors(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("data_dir: x\ncolour: blue\n"), 0o644)
	nested := filepath.Join(dir, "nested.yaml")
	os.WriteFile(nested, []byte("segment:\n  max_stepp: 5\n"), 0o644)
	empty := filepath.Join(dir, "empty-token")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for name, tc := range map[string]struct {
		args, env []string
		want      string
	}{
		"unknown file key":    {env: []string{"FROND_CONFIG=" + unknown}, want: "colour"},
		"unknown nested key":  {env: []string{"FROND_CONFIG=" + nested}, want: "max_stepp"},
		"unknown env key":     {env: []string{"FROND_DATADIR=x"}, want: "datadir"},
		"missing file":        {args: []string{"--config", filepath.Join(dir, "nope.yaml")}, want: "nope.yaml"},
		"bad duration":        {env: []string{"FROND_SNOWFLAKE__MAX_LEAD=soon"}, want: "max_lead"},
		"bad layout":          {args: []string{"--layout", "nope"}, want: "no preset"},
		"bad addr":            {args: []string{"--http-addr", "8080"}, want: "http_addr"},
		"bad grpc addr":       {args: []string{"--grpc-addr", "9090"}, want: "grpc_addr"},
		"bad resp addr":       {env: []string{"FROND_RESP_ADDR=nope"}, want: "resp_addr"},
		"bad log format":      {args: []string{"--log-format", "xml"}, want: "log.format"},
		"bad log level":       {env: []string{"FROND_LOG__LEVEL=loud"}, want: "log.level"},
		"negative node":       {args: []string{"--node", "-1"}, want: "node"},
		"empty token file":    {args: []string{"--admin-token-file", empty}, want: "empty"},
		"missing token file":  {args: []string{"--admin-token-file", filepath.Join(dir, "none")}, want: "admin_token_file"},
		"token and file both": {args: []string{"--admin-token", "a", "--admin-token-file", empty}, want: "admin_token"},
		"tls cert, no key":    {args: []string{"--tls-cert-file", empty}, want: "tls.key_file"},
		"tls files missing":   {env: []string{"FROND_TLS_CERT_FILE=/nope.pem", "FROND_TLS_KEY_FILE=/nope-key.pem"}, want: "tls.cert_file"},
		"client CA, no TLS":   {env: []string{"FROND_TLS_CLIENT_CA_FILE=" + empty}, want: "tls.client_ca_file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.env)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLoad_KindsAndObfuscation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frond.yaml")
	os.WriteFile(filepath.Join(dir, "v1.key"), []byte("the key of 2025, sixteen+\n"), 0o600)
	os.WriteFile(path, []byte(`obfuscation:
  key: "0123456789abcdef0123"
  scheme: ff1
  key_version: 2
  segment_width: 53
  previous:
    1: {scheme: splitmix, key_file: `+filepath.Join(dir, "v1.key")+`}
serials:
  pay:
    template: "PAY{time:yyyyMMdd}{seq:6}"
    reset: day
forms:
  order: opaque62
`), 0o644)
	c, err := load(t, nil, []string{"FROND_CONFIG=" + path, "FROND_SERIALS__ORD__TEMPLATE=ORD{seq:9}"})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.ServiceConfig()
	if len(sc.ObfuscationPrevious) != 1 || sc.ObfuscationPrevious[0].Version != 1 || sc.ObfuscationPrevious[0].Scheme != "splitmix" ||
		string(sc.ObfuscationPrevious[0].Key) != "the key of 2025, sixteen+" || sc.ObfuscationVersion != 2 || sc.ObfuscationScheme != "ff1" {
		t.Fatalf("service config: %+v", sc)
	}
	if c.Obfuscation.Key != "0123456789abcdef0123" || c.Obfuscation.SegmentWidth != 53 || c.Serials["pay"].Reset != "day" ||
		c.Serials["ord"].Template != "ORD{seq:9}" || c.Forms["order"] != "opaque62" {
		t.Fatalf("config %+v", c)
	}
	os.WriteFile(path, []byte("serials:\n  pay:\n    templat: x\n"), 0o644)
	if _, err := load(t, nil, []string{"FROND_CONFIG=" + path}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "templat") {
		t.Fatalf("unknown serial key: %v", err)
	}
	if _, err := load(t, nil, []string{"FROND_OBFUSCATION__KEY=short", "FROND_OBFUSCATION__SCHEME=ff1"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short key: %v", err)
	}
}

// A key without its scheme stops the start: an upgrade never silently
// changes the opaque IDs a key gives.
func TestLoad_ObfuscationSchemeRequired(t *testing.T) {
	_, err := load(t, nil, []string{"FROND_OBFUSCATION__KEY=0123456789abcdef0123"})
	var ke *KeyError
	if !errors.As(err, &ke) || !slices.Equal(ke.Keys, []string{"obfuscation.scheme"}) || !strings.Contains(err.Error(), "splitmix") {
		t.Fatalf("key without a scheme: %v", err)
	}
	for _, c := range []struct {
		env []string
		key string
	}{
		{[]string{"FROND_OBFUSCATION__SCHEME=aes"}, "obfuscation.scheme"},
		{[]string{"FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__PREVIOUS__X__KEY=0123456789abcdef0123", "FROND_OBFUSCATION__PREVIOUS__X__SCHEME=ff1"}, "obfuscation.previous"},
		{[]string{"FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__PREVIOUS__3__KEY=0123456789abcdef0123"}, "obfuscation.previous.3.scheme"},
		{[]string{"FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__PREVIOUS__3__SCHEME=ff1"}, "obfuscation.previous.3"},
		{[]string{"FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__PREVIOUS__1__KEY=0123456789abcdef0123", "FROND_OBFUSCATION__PREVIOUS__1__SCHEME=ff1"}, "obfuscation.previous.1"},
		{[]string{"FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__SEGMENT_WIDTH=16"}, "obfuscation.segment_width"},
	} {
		_, err := load(t, nil, append([]string{"FROND_OBFUSCATION__KEY=0123456789abcdef0123"}, c.env...))
		if !errors.As(err, &ke) || !slices.Equal(ke.Keys, []string{c.key}) {
			t.Errorf("%v: %v, want an error on %s", c.env, err, c.key)
		}
	}
}

func TestMasked(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	AddFlags(fs)
	fs.Parse([]string{"--admin-token-file", tok, "--store", "mysql://root:hunter2@db:3306/ids"})
	c, k, err := Load(fs, []string{"FROND_OBFUSCATION__KEY=very secret key of sixteen+", "FROND_OBFUSCATION__SCHEME=ff1", "FROND_OBFUSCATION__KEY_VERSION=2",
		"FROND_OBFUSCATION__PREVIOUS__1__KEY=old secret key of sixteen+", "FROND_OBFUSCATION__PREVIOUS__1__SCHEME=splitmix"})
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminToken != "s3cret" {
		t.Fatalf("token %q", c.AdminToken)
	}
	out, err := Masked(k, c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	// The token came from its file: admin_token is not shown as set too
	// (it read '***', as if both were); the key set itself is masked.
	if strings.Contains(s, "s3cret") || strings.Contains(s, "hunter2") || strings.Contains(s, "very secret") || strings.Contains(s, "old secret") ||
		!strings.Contains(s, "admin_token: \"\"") || !strings.Contains(s, "admin_token_file: "+tok) || !strings.Contains(s, "    key: '***'") || !strings.Contains(s, "root:***@db") {
		t.Fatalf("masked config:\n%s", s)
	}
	// The store in effect: without one, the SQLite file in data_dir.
	c, k, err = Load(nil, []string{"FROND_DATA_DIR=/var/lib/frond"})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := Masked(k, c); !strings.Contains(string(out), "store: sqlite:///var/lib/frond/frond.db") {
		t.Fatalf("the default store is not shown:\n%s", out)
	}
	for _, key := range []string{"data_dir:", "max_step:", "max_backward: 5ms", "format: text"} {
		if !strings.Contains(s, key) {
			t.Fatalf("masked config lacks %q:\n%s", key, s)
		}
	}
}

// A URL whose user or password holds a Unicode space is masked whole: the
// printer split it on that space (strings.Fields) and printed the pieces,
// password included.
func TestMasked_UnicodeSpace(t *testing.T) {
	c, k, err := Load(nil, []string{"FROND_REGISTRY=etcd://u:p\u3000w0rd@h:2379", "FROND_STORE=mysql://\u3000:000@h:3306/db mysql://a:b\u00a0pass@h2/db"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Masked(k, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"w0rd", ":000@", "pass@"} {
		if strings.Contains(string(out), leak) {
			t.Fatalf("masked config shows %q:\n%s", leak, out)
		}
	}
}

// The TLS variables keep their one-underscore names in any case, as the
// others do: FROND_tls_client_ca_file is tls.client_ca_file.
func TestEnv_TLSNamesAnyCase(t *testing.T) {
	_, err := load(t, nil, []string{"FROND_tls_client_ca_file=/nope.pem"})
	var ke *KeyError
	if !errors.As(err, &ke) || !slices.Equal(ke.Keys, []string{"tls.client_ca_file"}) {
		t.Fatalf("FROND_tls_client_ca_file without TLS: %v, want the key's own error", err)
	}
}

// Every invalid value is refused by Load, naming its key, its environment
// variable and its flag; before, some passed Load and failed later (after a
// worker ID was acquired, or on a client's request), some passed silently.
func TestLoad_InvalidValues(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_", "\n", "_", " ", "_").Replace(body)+".yaml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	pay := "FROND_SERIALS__PAY__TEMPLATE=PAY{seq:6}"
	for _, tc := range []struct {
		name      string
		args, env []string
		keys      []string
	}{
		{"threshold 2", nil, []string{"FROND_SEGMENT__THRESHOLD=2"}, []string{"segment.threshold"}},
		{"sequences lease 10ms", nil, []string{"FROND_SEQUENCES__LEASE_TTL=10ms"}, []string{"sequences.lease_ttl"}},
		{"sequences advertise", nil, []string{"FROND_SEQUENCES__ADVERTISE=nohost"}, []string{"sequences.advertise"}},
		{"max_step -1", nil, []string{"FROND_SEGMENT__MAX_STEP=-1"}, []string{"segment.max_step"}},
		{"max_step abc", nil, []string{"FROND_SEGMENT__MAX_STEP=abc"}, []string{"segment.max_step"}},
		{"max_step in file", nil, []string{"FROND_CONFIG=" + file("segment:\n  max_step: abc\n")}, []string{"segment.max_step"}},
		{"load_timeout -1s", nil, []string{"FROND_SEGMENT__LOAD_TIMEOUT=-1s"}, []string{"segment.load_timeout"}},
		{"fast > slow", nil, []string{"FROND_SEGMENT__FAST_SEGMENT=1h"}, []string{"segment.fast_segment", "segment.slow_segment"}},
		{"max_lead -1ms", nil, []string{"FROND_SNOWFLAKE__MAX_LEAD=-1ms"}, []string{"snowflake.max_lead"}},
		{"max_lead 5", nil, []string{"FROND_CONFIG=" + file("snowflake:\n  max_lead: 5\n")}, []string{"snowflake.max_lead"}},
		{"random_start too big", nil, []string{"FROND_SNOWFLAKE__RANDOM_START=100000"}, []string{"snowflake.random_start"}},
		{"persist_every -1s", nil, []string{"FROND_SNOWFLAKE__PERSIST_EVERY=-1s"}, []string{"snowflake.persist_every"}},
		{"serial step -5", nil, []string{pay, "FROND_SERIALS__PAY__STEP=-5"}, []string{"serials.pay.step"}},
		{"serial zone", nil, []string{pay, "FROND_SERIALS__PAY__ZONE=Mars/Base"}, []string{"serials.pay.zone"}},
		{"serial template", nil, []string{"FROND_SERIALS__PAY__TEMPLATE=PAY"}, []string{"serials.pay.template"}},
		{"serial step abc", nil, []string{pay, "FROND_SERIALS__PAY__STEP=abc"}, []string{"serials.pay.step"}},
		{"form", nil, []string{"FROND_FORMS__ORDER=roman"}, []string{"forms.order"}},
		{"opaque form without key", nil, []string{"FROND_FORMS__ORDER=opaque"}, []string{"forms.order"}},
		{"short key", nil, []string{"FROND_OBFUSCATION__KEY=short", "FROND_OBFUSCATION__SCHEME=ff1"}, []string{"obfuscation.key"}},
		{"segment_width 64", nil, []string{"FROND_OBFUSCATION__SEGMENT_WIDTH=64"}, []string{"obfuscation.segment_width"}},
		{"segment_width -1", nil, []string{"FROND_OBFUSCATION__SEGMENT_WIDTH=-1"}, []string{"obfuscation.segment_width"}},
		{"shutdown_timeout 0s", nil, []string{"FROND_SHUTDOWN_TIMEOUT=0s"}, []string{"shutdown_timeout"}},
		{"pprof maybe", nil, []string{"FROND_PPROF=maybe"}, []string{"pprof"}},
		{"section given a value", nil, []string{"FROND_SEGMENT=5"}, []string{"segment"}},
		{"value given a section", nil, []string{"FROND_SEGMENT__MAX_STEP__X=5"}, []string{"segment.max_step"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.args, tc.env)
			var ke *KeyError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ke) || !slices.Equal(ke.Keys, tc.keys) {
				t.Fatalf("err = %v; want a *KeyError on %v", err, tc.keys)
			}
			for _, k := range tc.keys {
				want := []string{k, EnvName(k)}
				if f := FlagName(k); f != "" {
					want = append(want, "--"+f)
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%q lacks %q", err, w)
					}
				}
			}
			if strings.Contains(err.Error(), "int64") || strings.Contains(err.Error(), "Duration") || strings.Contains(err.Error(), "expected type") {
				t.Errorf("%q names Go types", err)
			}
		})
	}
}

func TestLoad_Messages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frond.yaml")
	os.WriteFile(path, []byte("segment:\n  thresold: 0.2\n"), 0o644)
	_, err := load(t, nil, []string{"FROND_CONFIG=" + path})
	if want := `invalid configuration: unknown key "segment.thresold" in ` + path + ` (did you mean "segment.threshold"? The keys are listed in docs/configuration.md)`; err == nil || err.Error() != want {
		t.Errorf("unknown key in a file:\n got %v\nwant %s", err, want)
	}
	_, err = load(t, nil, []string{"FROND_SEGMENT__THRESOLD=0.2"})
	if want := `invalid configuration: unknown key "segment.thresold" from FROND_SEGMENT__THRESOLD (did you mean "segment.threshold"? The keys are listed in docs/configuration.md)`; err == nil || err.Error() != want {
		t.Errorf("unknown key in the environment:\n got %v\nwant %s", err, want)
	}
	_, err = load(t, nil, []string{"FROND_SEGMENT__MAX_STEP=abc"})
	if want := `invalid configuration: segment.max_step: "abc" is not a whole number (env FROND_SEGMENT__MAX_STEP)`; err == nil || err.Error() != want {
		t.Errorf("wrong type:\n got %v\nwant %s", err, want)
	}
	_, err = load(t, []string{"--http-addr", "nope"}, nil)
	if want := `(env FROND_HTTP_ADDR, flag --http-addr)`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("flag: got %v, want it to end %s", err, want)
	}
}

// The engines' keys mean what they mean to the engines: zero is the
// default (it used to mean "refuse every backward step" for
// snowflake.max_backward and "off" for segment.fail_fast and idle_after,
// and was refused elsewhere), negative is what the engine says.
func TestConfig_ZeroIsTheDefault(t *testing.T) {
	c, err := load(t, nil, []string{"FROND_SNOWFLAKE__MAX_BACKWARD=0s", "FROND_SNOWFLAKE__PERSIST_EVERY=0s", "FROND_SNOWFLAKE__MAX_PEER_SKEW=0s",
		"FROND_SNOWFLAKE__EXPIRY_WARNING=0s", "FROND_SEGMENT__THRESHOLD=0", "FROND_SEGMENT__MAX_STEP=0", "FROND_SEGMENT__LOAD_TIMEOUT=0s",
		"FROND_SEGMENT__FAIL_FAST=0s", "FROND_SEGMENT__IDLE_AFTER=0s", "FROND_SEGMENT__FAST_SEGMENT=0s", "FROND_SEGMENT__SLOW_SEGMENT=0s"})
	if err != nil {
		t.Fatal(err)
	}
	sc := c.ServiceConfig()
	e, err := segment.New(memstore.New(nil), sc.Segment)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, want := e.Settings(), segment.Settings{Threshold: segment.DefaultThreshold, MaxStep: segment.DefaultMaxStep, LoadTimeout: segment.DefaultLoadTimeout,
		FailFast: segment.DefaultFailFast, IdleAfter: segment.DefaultIdleAfter, FastSegment: segment.DefaultFastSegment, SlowSegment: segment.DefaultSlowSegment}
	if got.Threshold != want.Threshold || got.MaxStep != want.MaxStep || got.LoadTimeout != want.LoadTimeout || got.FailFast != want.FailFast ||
		got.IdleAfter != want.IdleAfter || got.FastSegment != want.FastSegment || got.SlowSegment != want.SlowSegment {
		t.Errorf("segment settings from zeros: %+v", got)
	}
	w := sc.Snowflake.WithDefaults()
	if sc.Snowflake.MaxBackward != 0 || w.PersistEvery != worker.DefaultPersistEvery || w.MaxPeerSkew != 5*time.Second || w.ExpiryWarning != worker.DefaultExpiryWarning {
		t.Errorf("snowflake settings from zeros: %+v", w)
	}
	// Negative: the engines' "refuse every backward step" and "off".
	c, err = load(t, nil, []string{"FROND_SNOWFLAKE__MAX_BACKWARD=-1ns", "FROND_SEGMENT__FAIL_FAST=-1s", "FROND_SEGMENT__IDLE_AFTER=-1s"})
	if err != nil {
		t.Fatal(err)
	}
	if sc := c.ServiceConfig(); sc.Snowflake.MaxBackward >= 0 || sc.Segment.FailFast >= 0 || sc.Segment.IdleAfter >= 0 {
		t.Errorf("negatives: %+v", sc)
	}
	if sc := c.ServiceConfig(); sc.Snowflake.Layout.Name != "twitter" || sc.Snowflake.PersistEvery != 400*time.Millisecond {
		t.Errorf("defaults: %+v", sc)
	}
}

// The warning about a missing admin token looks at every listener: the
// admin operations are reachable over gRPC and RESP too.
func TestLoopback_EveryListener(t *testing.T) {
	for _, tc := range []struct {
		http, grpc, resp string
		want             bool
	}{
		{"127.0.0.1:8080", "", "", true},
		{"127.0.0.1:8080", "localhost:9090", "[::1]:6380", true},
		{"127.0.0.1:8080", ":9090", "", false},
		{"127.0.0.1:8080", "", "0.0.0.0:6380", false},
		{":8080", "127.0.0.1:9090", "", false},
	} {
		c := Config{HTTPAddr: tc.http, GRPCAddr: tc.grpc, RESPAddr: tc.resp}
		if got := c.Loopback(); got != tc.want {
			t.Errorf("Loopback(%q, %q, %q) = %v, want %v", tc.http, tc.grpc, tc.resp, got, tc.want)
		}
	}
}

// Tokens come from the file as token: [tags]; the service gets them as
// they are, and the printed configuration hides the tokens.
func TestTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frond.yaml")
	os.WriteFile(path, []byte("tokens:\n  0f673adf80504e2e: [test, test_odd]\n  abc: [order]\n"), 0o644)
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	AddFlags(fs)
	fs.Parse([]string{"--config", path})
	c, k, err := Load(fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.ServiceConfig()
	if len(sc.Tokens) != 2 || strings.Join(sc.Tokens["0f673adf80504e2e"], ",") != "test,test_odd" || sc.Tokens["abc"][0] != "order" {
		t.Fatalf("service tokens %v", sc.Tokens)
	}
	out, err := Masked(k, c)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "0f673adf80504e2e") || strings.Contains(s, "abc") || !strings.Contains(s, "test_odd") {
		t.Fatalf("masked config:\n%s", s)
	}
	for _, bad := range []string{"tokens:\n  x: order\n", "tokens:\n  x: [\"bad tag\"]\n", "tokens:\n  x: []\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, _, err := Load(fs, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "tokens") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Tag tokens can be set from the environment, keeping their case, with
// their tags as a comma-separated list; an error about one does not print
// it; a URL that does not parse is printed without its password (issue
// 29, item 11).
func TestLoad_SecretsFromTheEnvironment(t *testing.T) {
	c, err := load(t, nil, []string{"FROND_TOKENS__AbC123=order, pay", "FROND_TOKENS__x9=test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tokens["AbC123"]; len(got) != 2 || got[0] != "order" || got[1] != "pay" || len(c.Tokens["x9"]) != 1 {
		t.Fatalf("tokens %v", c.Tokens)
	}
	_, err = load(t, nil, []string{"FROND_TOKENS__Secret9="})
	if err == nil || strings.Contains(strings.ToLower(err.Error()), "secret9") {
		t.Fatalf("a token with no tag: %v", err)
	}
	for _, raw := range []string{"mysql://u:pa%ss@h:3306/db", "postgres://u:pa%zzword@h/db", "mysql://u:hunter2@h:99x/db"} {
		_, err := load(t, []string{"--store", raw}, nil)
		if err == nil {
			continue // a URL the config check lets through is checked by the store (cmd/frond)
		}
		if strings.Contains(err.Error(), "pa%ss") || strings.Contains(err.Error(), "zzword") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%s: the error shows the password: %v", raw, err)
		}
	}
}

// Secrets lists every configured secret: what frond remembers so that no
// error or log line shows one (issue 43, item 8).
func TestSecrets(t *testing.T) {
	c, err := load(t, []string{"--admin-token", "adm-Tok-1", "--store", "mysql://u:st-Pw-2@h/db redis://:rd-Pw-3@h:6379/0",
		"--registry", "etcd://u:rg-Pw-4@h:2379"}, []string{"FROND_TOKENS__tg-Tok-5=order"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Secrets(), " ")
	for _, want := range []string{"adm-Tok-1", "st-Pw-2", "rd-Pw-3", "rg-Pw-4", "tg-Tok-5"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets() = %q: no %s", got, want)
		}
	}
}
