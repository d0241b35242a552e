package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	env := []string{"FROND_CONFIG=" + path, "FROND_HTTP_ADDR=127.0.0.1:2222", "FROND_SEGMENT__MAX_STEP=77", "FROND_TEST_REQUIRE=1", "FROND_SERVER=http://x", "HOME=/root"}
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
		"bad log format":      {args: []string{"--log-format", "xml"}, want: "log.format"},
		"bad log level":       {env: []string{"FROND_LOG__LEVEL=loud"}, want: "log.level"},
		"negative node":       {args: []string{"--node", "-1"}, want: "node"},
		"unknown registry":    {args: []string{"--registry", "consul://x"}, want: "registry"},
		"empty token file":    {args: []string{"--admin-token-file", empty}, want: "empty"},
		"missing token file":  {args: []string{"--admin-token-file", filepath.Join(dir, "none")}, want: "admin_token_file"},
		"token and file both": {args: []string{"--admin-token", "a", "--admin-token-file", empty}, want: "admin_token"},
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
	os.WriteFile(path, []byte(`obfuscation:
  key: "0123456789abcdef0123"
  segment_width: 53
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
	if c.Obfuscation.Key != "0123456789abcdef0123" || c.Obfuscation.SegmentWidth != 53 || c.Serials["pay"].Reset != "day" ||
		c.Serials["ord"].Template != "ORD{seq:9}" || c.Forms["order"] != "opaque62" {
		t.Fatalf("config %+v", c)
	}
	os.WriteFile(path, []byte("serials:\n  pay:\n    templat: x\n"), 0o644)
	if _, err := load(t, nil, []string{"FROND_CONFIG=" + path}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "templat") {
		t.Fatalf("unknown serial key: %v", err)
	}
	if _, err := load(t, nil, []string{"FROND_OBFUSCATION__KEY=short"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("short key: %v", err)
	}
}

func TestMasked(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	AddFlags(fs)
	fs.Parse([]string{"--admin-token-file", tok, "--store", "mysql://root:hunter2@db:3306/ids"})
	c, k, err := Load(fs, []string{"FROND_OBFUSCATION__KEY=very secret key of sixteen+"})
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
	if strings.Contains(s, "s3cret") || strings.Contains(s, "hunter2") || strings.Contains(s, "very secret") || !strings.Contains(s, "admin_token: '***'") || !strings.Contains(s, "root:***@db") {
		t.Fatalf("masked config:\n%s", s)
	}
	for _, key := range []string{"data_dir:", "max_step:", "max_backward: 5ms", "format: text"} {
		if !strings.Contains(s, key) {
			t.Fatalf("masked config lacks %q:\n%s", key, s)
		}
	}
}
