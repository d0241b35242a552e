package main

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frond-id/frond/config"
	"github.com/frond-id/frond/registry"
)

// runCLI runs frond in-process and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, environ []string, argv ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, argv, &out, &errb, environ)
	return code, out.String(), errb.String()
}

// frond with no command printed the help to stdout and exited 0.
func TestCLI_NoCommand(t *testing.T) {
	for _, argv := range [][]string{nil, {"tag"}, {"id"}} {
		code, out, errs := runCLI(t, nil, argv...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "Usage:") || !strings.Contains(errs, "\nfrond: a command is needed after") {
			t.Errorf("frond %v: exit %d, stdout %q, stderr:\n%s", argv, code, out, errs)
		}
	}
	for _, argv := range [][]string{{"bogus"}, {"servee"}, {"tag", "bogus"}} {
		if code, _, errs := runCLI(t, nil, argv...); code != exitUsage || !strings.Contains(errs, `unknown command "`+argv[len(argv)-1]+`"`) {
			t.Errorf("frond %v: exit %d, stderr:\n%s", argv, code, errs)
		}
	}
	if code, out, _ := runCLI(t, nil, "--help"); code != exitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("frond --help: exit %d, stdout:\n%s", code, out)
	}
	// The summary names what frond does (it named segment and snowflake
	// IDs over HTTP only).
	_, _, errs := runCLI(t, nil)
	for _, want := range []string{"UUIDs", "serial numbers", "sequence tags", "gRPC", "Redis protocol", "TinyID", "client library"} {
		if !strings.Contains(errs, want) {
			t.Errorf("frond's summary lacks %q:\n%s", want, errs)
		}
	}
}

// A mistyped flag, key or a missing argument gets a suggestion or a name
// ("unknown flag", "accepts 1 arg(s), received 0" said neither).
func TestCLI_Suggestions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "frond.yaml")
	os.WriteFile(cfg, []byte("segment:\n  thresold: 0.2\n"), 0o644)
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"serve", "--http-adr", "127.0.0.1:0"}, "unknown flag: --http-adr; did you mean --http-addr?"},
		{[]string{"bench", "--concurency", "2"}, "did you mean --concurrency?"},
		{[]string{"serve", "--zzz"}, "unknown flag: --zzz (frond serve --help lists the flags)"},
		{[]string{"config", "--check", "--config", cfg}, `unknown key "segment.thresold" in ` + cfg + ` (did you mean "segment.threshold"?`},
		{[]string{"id", "segment"}, "TAG is missing (usage: frond id segment TAG [flags])"},
		{[]string{"tag", "create", "--step", "5"}, "TAG is missing (usage: frond tag create TAG --step N"},
		{[]string{"decode", "1", "2"}, "accepts 1 arg(s), received 2 (usage: frond decode ID [flags])"},
		{[]string{"sevre"}, `unknown command "sevre" for "frond"; did you mean serve?`},
	} {
		code, _, errs := runCLI(t, []string{"FROND_DATA_DIR=" + dir}, tc.argv...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("frond %v: exit %d, stderr %q; want %q", tc.argv, code, errs, tc.want)
		}
	}
}

// A missing required flag or argument is a usage error (exit 2), found
// before the server is called (--server points nowhere).
func TestCLI_MissingRequired(t *testing.T) {
	for _, argv := range [][]string{
		{"tag", "create", "order"}, // --step
		{"tag", "create"}, {"tag", "get"}, {"tag", "set"}, {"tag", "set", "order"}, {"tag", "delete"},
		{"id", "segment"}, {"id", "serial"}, {"reveal"}, {"decode"},
	} {
		code, _, errs := runCLI(t, nil, append(argv, "--server", "http://127.0.0.1:1")...)
		if code != exitUsage {
			t.Errorf("frond %v: exit %d, want %d; stderr:\n%s", argv, code, exitUsage, errs)
		}
	}
	if _, _, errs := runCLI(t, nil, "tag", "create", "order"); !strings.Contains(errs, "--step is required") {
		t.Errorf("tag create without --step: %s", errs)
	}
}

// decode printed "worker" where the API and --json say "node".
func TestCLI_DecodeNode(t *testing.T) {
	code, out, _ := runCLI(t, nil, "decode", "1861083629105360902")
	if code != exitOK || !strings.Contains(out, "node      491\n") || strings.Contains(out, "worker") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestCLI_ConfigCheck(t *testing.T) {
	code, out, _ := runCLI(t, nil, "config", "--check")
	if code != exitOK || out != "configuration OK\n" {
		t.Fatalf("valid: exit %d, %q", code, out)
	}
	code, out, errs := runCLI(t, []string{"FROND_SEGMENT__THRESHOLD=2"}, "config", "--check")
	if code != exitUsage || out != "" || !strings.Contains(errs, "segment.threshold") || !strings.Contains(errs, "FROND_SEGMENT__THRESHOLD") {
		t.Fatalf("invalid: exit %d, stdout %q, stderr %s", code, out, errs)
	}
	// Store and registry URLs are parsed as opening them would, without
	// contacting anything.
	code, _, errs = runCLI(t, []string{"FROND_REGISTRY=etcd://127.0.0.1:1?frond_timeout=soon"}, "config", "--check")
	if code != exitUsage || !strings.Contains(errs, "registry") || !strings.Contains(errs, "frond_timeout") {
		t.Fatalf("bad registry URL parameter: exit %d, %s", code, errs)
	}
	// Datacenters: Redis's frond_dc is the node's datacenter, and a worker
	// ID from configuration has the worker bits only.
	dc := []string{"FROND_SNOWFLAKE__DATACENTER_BITS=5", "FROND_SNOWFLAKE__DATACENTER=1"}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{append(dc, "FROND_REGISTRY=redis://127.0.0.1:1/0?frond_dc=2"), "one setting"},
		{append(dc, "FROND_NODE=40"), "worker ID 40: 0 to 31"},
		{[]string{"FROND_SNOWFLAKE__DATACENTER=1"}, "snowflake.datacenter"},
		{[]string{"FROND_SNOWFLAKE__DATACENTER_BITS=10"}, "snowflake.datacenter_bits"},
	} {
		if code, _, errs := runCLI(t, c.env, "config", "--check"); code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s", c.env, code, errs)
		}
	}
	if code, out, errs := runCLI(t, append(dc, "FROND_NODE=31", "FROND_REGISTRY=redis://127.0.0.1:1/0?frond_dc=1"), "config", "--check"); code != exitOK {
		t.Errorf("datacenter 1, frond_dc=1: exit %d, %s%s", code, out, errs)
	}
	// Without --check, frond config validates the same way.
	if code, _, errs := runCLI(t, []string{"FROND_SEGMENT__THRESHOLD=2"}, "config"); code != exitUsage || !strings.Contains(errs, "segment.threshold") {
		t.Fatalf("frond config: exit %d, %s", code, errs)
	}
}

// Every invalid value stops frond serve with exit 2, naming the key, its
// variable and its flag, before anything is touched: the data directory
// (file registry, SQLite store) is not created, the store is not dialled,
// and the port is not bound (the test holds it: binding it would fail with
// exit 1, "address already in use").
func TestCLI_ServeRefusesInvalidConfig(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	yaml := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	pay := "FROND_SERIALS__PAY__TEMPLATE=PAY{seq:6}"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		keys []string
	}{
		{"threshold 2", []string{"FROND_SEGMENT__THRESHOLD=2"}, nil, []string{"segment.threshold"}},
		{"load_timeout -1s", []string{"FROND_SEGMENT__LOAD_TIMEOUT=-1s"}, nil, []string{"segment.load_timeout"}},
		{"max_step -1", []string{"FROND_SEGMENT__MAX_STEP=-1"}, nil, []string{"segment.max_step"}},
		{"serials.pay.step -5", []string{pay, "FROND_SERIALS__PAY__STEP=-5"}, nil, []string{"serials.pay.step"}},
		{"max_lead -1ms", []string{"FROND_SNOWFLAKE__MAX_LEAD=-1ms"}, nil, []string{"snowflake.max_lead"}},
		{"persist_every -1s", []string{"FROND_SNOWFLAKE__PERSIST_EVERY=-1s"}, nil, []string{"snowflake.persist_every"}},
		{"unknown key in a file", []string{"FROND_CONFIG=" + yaml("typo.yaml", "segment:\n  thresold: 0.2\n")}, nil, []string{"segment.thresold"}},
		{"wrong type in a file", []string{"FROND_CONFIG=" + yaml("type.yaml", "segment:\n  max_step: abc\n")}, nil, []string{"segment.max_step"}},
		{"short obfuscation key", []string{"FROND_OBFUSCATION__KEY=short", "FROND_OBFUSCATION__SCHEME=ff1"}, nil, []string{"obfuscation.key"}},
		{"obfuscation key without its scheme", []string{"FROND_OBFUSCATION__KEY=0123456789abcdef0123"}, nil, []string{"obfuscation.scheme"}},
		{"opaque form without key", []string{"FROND_FORMS__ORDER=opaque"}, nil, []string{"forms.order"}},
		{"node beyond the layout", nil, []string{"--node", "2000"}, []string{"node"}},
		{"static worker beyond the layout", nil, []string{"--registry", "static:70000"}, []string{"registry"}},
		{"layout", nil, []string{"--layout", "nope"}, []string{"layout"}},
		{"store scheme", nil, []string{"--store", "bogus://x"}, []string{"store"}},
		{"store without a scheme", nil, []string{"--store", "memory"}, []string{"store"}},
		{"registry scheme", nil, []string{"--registry", "consul://x"}, []string{"registry"}},
		{"registry without ://", nil, []string{"--registry", "etcd:127.0.0.1"}, []string{"registry"}},
		{"registry file URL", nil, []string{"--registry", "file:///tmp/x"}, []string{"registry"}},
		{"store URL parameter", nil, []string{"--store", "mysql://u:secret@127.0.0.1:1/ids?frond_timeout=abc"}, []string{"store"}},
		{"unknown store URL parameter", nil, []string{"--store", "redis://127.0.0.1:1/0?frond_nope=1"}, []string{"store"}},
		{"registry URL parameter", nil, []string{"--registry", "etcd://127.0.0.1:1?frond_timeout=-1s"}, []string{"registry"}},
		{"registry URL mode", nil, []string{"--registry", "redis://127.0.0.1:1/0?frond_mode=sometimes"}, []string{"registry"}},
		{"zookeeper root", nil, []string{"--registry", "zk://127.0.0.1:1/a//b"}, []string{"registry"}},
		{"log level", nil, []string{"--log-level", "loud"}, []string{"log.level"}},
	} {
		for _, store := range []string{"", "mysql://u:p@127.0.0.1:1/ids"} {
			t.Run(tc.name+"/"+map[bool]string{true: "sqlite", false: "mysql"}[store == ""], func(t *testing.T) {
				data := filepath.Join(dir, "data", strings.ReplaceAll(tc.name, " ", "_"))
				argv := append([]string{"serve", "--data-dir", data, "--http-addr", ln.Addr().String()}, tc.args...)
				if store != "" && !strings.Contains(strings.Join(tc.args, " "), "--store") {
					argv = append(argv, "--store", store)
				}
				start := time.Now()
				code, _, errs := runCLI(t, tc.env, argv...)
				if code != exitUsage {
					t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errs)
				}
				for _, k := range tc.keys {
					want := []string{k}
					if !strings.HasPrefix(errs, "frond: invalid configuration: unknown key") {
						want = append(want, config.EnvName(k))
						if f := config.FlagName(k); f != "" {
							want = append(want, "--"+f)
						}
					}
					for _, w := range want {
						if !strings.Contains(errs, w) {
							t.Errorf("stderr lacks %q:\n%s", w, errs)
						}
					}
				}
				if _, err := os.Stat(data); !os.IsNotExist(err) {
					t.Errorf("the data directory was created (%v)", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v: something was dialled", d)
				}
				if strings.Contains(errs, "secret") {
					t.Errorf("stderr shows a password:\n%s", errs)
				}
			})
		}
	}
}

// A server that wants the admin token: the CLI says how to give it (the
// server's hint, an Authorization header, is for HTTP clients).
func TestCLI_AdminTokenHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"tag administration needs the admin token: send Authorization: Bearer <token>"}}`))
	}))
	defer srv.Close()
	code, _, errs := runCLI(t, nil, "tag", "create", "t2", "--step", "10", "--server", srv.URL)
	if code != exitServer || !strings.Contains(errs, "needs the admin token: pass it with --token TOKEN or FROND_ADMIN_TOKEN") || strings.Contains(errs, "Bearer") {
		t.Errorf("no token: exit %d, %s", code, errs)
	}
	code, _, errs = runCLI(t, []string{"FROND_ADMIN_TOKEN=wrong"}, "tag", "create", "t2", "--step", "10", "--server", srv.URL)
	if code != exitServer || !strings.Contains(errs, "the token given (--token or FROND_ADMIN_TOKEN) is not the server's") {
		t.Errorf("a wrong token: exit %d, %s", code, errs)
	}
}

// deploy/systemd/frond.yaml checks from a shell as its comment says: its
// credential exists only while the unit runs, and the error says how.
func TestCLI_ConfigCheckSystemd(t *testing.T) {
	const file = "../../deploy/systemd/frond.yaml"
	code, _, errs := runCLI(t, nil, "config", "--check", "--config", file)
	if code != exitUsage || !strings.Contains(errs, "give the credential's source with the flag") || !strings.Contains(errs, "--admin-token-file") {
		t.Fatalf("without the credential: exit %d, %s", code, errs)
	}
	token := filepath.Join(t.TempDir(), "admin-token")
	os.WriteFile(token, []byte("a token\n"), 0o600)
	code, out, errs := runCLI(t, nil, "config", "--check", "--config", file, "--admin-token-file", token)
	if code != exitOK || out != "configuration OK\n" {
		t.Fatalf("with the credential's source: exit %d, %s%s", code, out, errs)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "--admin-token-file /etc/frond/admin-token") {
		t.Fatalf("the file's comment does not say how to check it:\n%s", b)
	}
}

// frond config shows the values in effect: the address a node registers
// under, and its port, where the configuration leaves them empty.
func TestCLI_ConfigEffective(t *testing.T) {
	code, out, errs := runCLI(t, []string{"FROND_DATA_DIR=" + t.TempDir()}, "config", "--http-addr", "127.0.0.1:8181")
	if code != exitOK || !strings.Contains(out, "    host: "+registry.DefaultHost()+"\n") || !strings.Contains(out, "    port: \"8181\"") && !strings.Contains(out, "    port: 8181") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// Issue 43, item 9: store passwords with '#', '?', '\', '"' or U+3000 made
// the URL fail to parse, and the parser's error (cut or escaped) printed
// them: frond config --check and frond serve print no part of them.
func TestCLI_PasswordsThatBreakTheURL(t *testing.T) {
	for _, pass := range []string{"zq#xw9", "zq?xw9", `zq\xw9`, `zq"xw9`, "zq\u3000xw9"} {
		env := []string{"FROND_STORE=mysql://frond:" + pass + "@127.0.0.1:1/ids"}
		for _, argv := range [][]string{{"config", "--check"}, {"config"}, {"serve", "--http-addr", "127.0.0.1:0"}} {
			_, out, errs := runCLI(t, env, argv...)
			if strings.Contains(out+errs, "zq") || strings.Contains(out+errs, "xw9") {
				t.Errorf("frond %v with password %q printed it:\n%s%s", argv, pass, out, errs)
			}
		}
	}
}

// The listeners leave file descriptors to the stores and the registry
// (issue 43, item 5): their bounds are lowered when full listeners would
// take them all.
func TestReserveFDs(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		t.Skip("no finite file limit")
	}
	log := slog.New(slog.DiscardHandler)
	if got := reserveFDs(10, 3, log); got != 10 {
		t.Fatalf("a bound that fits: %d", got)
	}
	n := int(rl.Cur)
	if got := reserveFDs(n, 2, log); got*2 > n-fdReserve || got < 16 {
		t.Fatalf("two listeners of %d each with %d descriptors: lowered to %d", n, n, got)
	}
}

// Issue 44, item 7: what a newcomer tripped on in the CLI.
func TestCLI_NewcomerTrips(t *testing.T) {
	// frond --version was unknown; it prints what frond version prints.
	code, out, errs := runCLI(t, nil, "--version")
	_, want, _ := runCLI(t, nil, "version")
	if code != exitOK || out != want || !strings.HasPrefix(out, "frond ") {
		t.Errorf("frond --version: exit %d, %q (frond version: %q) %s", code, out, want, errs)
	}
	// The root help named UUIDs v4 and v7 only.
	_, _, help := runCLI(t, nil)
	if !strings.Contains(help, "UUIDs (v1\nto v7") {
		t.Errorf("the root help:\n%s", help)
	}
	// frond audit and frond stores listed every serve flag.
	for _, argv := range [][]string{{"audit", "--help"}, {"stores", "show", "--help"}, {"stores", "set", "--help"}} {
		_, out, _ := runCLI(t, nil, argv...)
		for _, f := range []string{"--grpc-addr", "--pprof", "--http-addr", "--admin-token", "--tls-cert-file"} {
			if strings.Contains(out, f) {
				t.Errorf("frond %v shows %s, which it does not read:\n%s", argv, f, out)
			}
		}
		if !strings.Contains(out, "--store") || !strings.Contains(out, "--config") {
			t.Errorf("frond %v does not show --store and --config:\n%s", argv, out)
		}
	}
	// frond decode --datacenter-bits: every value in one column.
	_, out, _ = runCLI(t, nil, "decode", "--datacenter-bits", "5", "2124376161118060544")
	col := -1
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.IndexFunc(line[strings.IndexByte(line, ' '):], func(r rune) bool { return r != ' ' }) + strings.IndexByte(line, ' ')
		if col >= 0 && i != col {
			t.Fatalf("decode's values are not in one column:\n%s", out)
		}
		col = i
	}
	if !strings.Contains(out, "datacenter") {
		t.Fatalf("decode --datacenter-bits:\n%s", out)
	}
}
