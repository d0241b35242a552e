package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// binary is the frond binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "frond-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "frond")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build frond:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running frond serve process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	logs strings.Builder
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

// wait waits for the process to exit and returns its exit status.
func (s *server) wait() error {
	<-s.done
	return s.err
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// startServer runs frond serve on a free port and waits until it listens.
func startServer(t *testing.T, dataDir string, extra ...string) (*server, error) {
	t.Helper()
	return startServerEnv(t, nil, dataDir, extra...)
}

// startServerEnv is startServer with extra environment variables.
func startServerEnv(t *testing.T, env []string, dataDir string, extra ...string) (*server, error) {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--log-format", "json"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "FROND_CONFIG="), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "frond listening" {
				addr <- rec.Addr
			}
		}
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("server log:\n%s", s.log())
		}
	})
	select {
	case a := <-addr:
		s.url = "http://" + a
		return s, nil
	case <-s.done:
		return s, fmt.Errorf("frond serve exited: %v\n%s", s.err, s.log())
	case <-time.After(20 * time.Second):
		return s, errors.New("frond serve did not start listening in 20 s:\n" + s.log())
	}
}

func mustStart(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	s, err := startServer(t, dataDir, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *server) get(path string) (int, string) {
	s.t.Helper()
	return s.req("GET", path, "")
}

func (s *server) req(method, path, body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// id takes one ID from a Leaf endpoint, retrying on 500/503 for up to 10 s
// (a snowflake reservation after a crash).
func (s *server) id(path string) int64 {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := s.get(path)
		if code == 200 {
			id, err := strconv.ParseInt(body, 10, 64)
			if err != nil {
				s.t.Fatalf("%s: body %q", path, body)
			}
			return id
		}
		if time.Now().After(deadline) || !strings.Contains(body, "clock_backwards") {
			s.t.Fatalf("%s: %d %s", path, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// batch takes n IDs from a /v1 endpoint.
func (s *server) batch(path string) []int64 {
	s.t.Helper()
	code, body := s.get(path)
	if code != 200 {
		s.t.Fatalf("%s: %d %s", path, code, body)
	}
	var out struct{ IDs []int64 }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		s.t.Fatal(err)
	}
	return out.IDs
}

func (s *server) stop(sig syscall.Signal) error {
	s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
		return s.err
	case <-time.After(20 * time.Second):
		s.t.Fatalf("frond did not exit on %v", sig)
		return nil
	}
}

// The end-to-end test: IDs of both kinds, SIGKILL, restart: no ID
// repeats and segment IDs continue above the earlier ones.
func TestE2E_KillRestart(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir)
	if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":100}`); code != 201 {
		t.Fatalf("create tag: %d %s", code, body)
	}
	seen := map[string]bool{}
	var segMax, snowMax int64
	take := func(s *server, kind string, ids ...int64) {
		for _, id := range ids {
			key := kind + strconv.FormatInt(id, 10)
			if seen[key] {
				t.Fatalf("%s ID %d issued twice", kind, id)
			}
			seen[key] = true
		}
	}
	for i := 0; i < 150; i++ {
		id := s.id("/api/segment/get/order")
		take(s, "segment", id)
		segMax = max(segMax, id)
		sid := s.id("/api/snowflake/get/x")
		take(s, "snowflake", sid)
		snowMax = max(snowMax, sid)
	}
	ids := s.batch("/v1/segment/order?n=500")
	take(s, "segment", ids...)
	segMax = max(segMax, ids[len(ids)-1])
	ids = s.batch("/v1/snowflake?n=500")
	take(s, "snowflake", ids...)
	snowMax = max(snowMax, ids[len(ids)-1])

	s.stop(syscall.SIGKILL)
	s2 := mustStart(t, dir)
	first := s2.id("/api/segment/get/order")
	if first <= segMax {
		t.Fatalf("after SIGKILL the first segment ID %d is not above %d", first, segMax)
	}
	take(s2, "segment", first)
	take(s2, "segment", s2.batch("/v1/segment/order?n=300")...)
	sid := s2.id("/api/snowflake/get/x")
	if sid <= snowMax {
		t.Fatalf("after SIGKILL snowflake ID %d is not above %d", sid, snowMax)
	}
	take(s2, "snowflake", sid)
	take(s2, "snowflake", s2.batch("/v1/snowflake?n=300")...)
}

// SIGTERM: the server finishes, records the exact snowflake time, exits 0;
// a restart serves snowflake IDs at once.
func TestE2E_GracefulRestart(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir)
	before := s.id("/api/snowflake/get/x")
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log())
	}
	if !strings.Contains(s.log(), "snowflake time recorded") {
		t.Fatalf("no shutdown record:\n%s", s.log())
	}
	s2 := mustStart(t, dir)
	code, body := s2.get("/api/snowflake/get/x")
	if code != 200 {
		t.Fatalf("right after a clean restart: %d %s", code, body)
	}
	if id, _ := strconv.ParseInt(body, 10, 64); id <= before {
		t.Fatalf("%d after %d", id, before)
	}
	if code, body := s2.get("/readyz"); code != 200 {
		t.Fatalf("readyz %d %s", code, body)
	}
}

// A data directory where worker.json cannot be written (here: its
// temporary file is a directory; a read-only or full disk does the same): a
// fresh worker ID has no recorded time, so the node must issue no snowflake
// ID at all. Before, it issued with nothing recorded, and a kill -9 and a
// restart with the clock behind handed out the same IDs again.
func TestE2E_FreshWorkerUnwritableRecord(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "worker.json.tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "worker.json.tmp", "x"), []byte("x"), 0o644) // not removable as a file
	s := mustStart(t, dir)
	for _, path := range []string{"/v1/snowflake", "/v1/snowflake?n=5"} {
		if code, body := s.get(path); code != 503 || !strings.Contains(body, "registry_behind") {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	if code, body := s.get("/api/snowflake/get/x"); code != 500 || !strings.Contains(body, "registry_behind") {
		t.Fatalf("Leaf API: %d %s", code, body)
	}
	if code, body := s.get("/readyz/snowflake"); code != 503 || !strings.Contains(body, "worker.json") {
		t.Fatalf("/readyz/snowflake: %d %s", code, body)
	}
	if code, body := s.get("/readyz/segment"); code != 200 {
		t.Fatalf("/readyz/segment: %d %s", code, body)
	}
}

// A clock an hour behind the recorded time: the node starts and serves
// segment IDs; snowflake IDs are refused, saying by how much, on both APIs
// and in /readyz.
func TestE2E_ClockBehindServesSegments(t *testing.T) {
	dir := t.TempDir()
	last := time.Now().Add(time.Hour)
	rec := fmt.Sprintf(`{"node":0,"last_issued":%q,"last_issued_unix_nanos":%d}`, last.UTC().Format(time.RFC3339Nano), last.UnixNano())
	os.WriteFile(filepath.Join(dir, "worker.json"), []byte(rec), 0o644)
	s := mustStart(t, dir)
	checkClockRefusal(t, s, `the clock is (59m5\d|1h0m0)[.0-9]*s behind`)
}

// checkClockRefusal checks a node whose clock is behind its worker ID's
// recorded time; behind matches the error's statement of by how much.
func checkClockRefusal(t *testing.T, s *server, behind string) {
	t.Helper()
	code, body := s.get("/v1/snowflake")
	if code != 503 || !strings.Contains(body, "clock_backwards") || !regexp.MustCompile(behind).MatchString(body) {
		t.Fatalf("/v1/snowflake: %d %s", code, body)
	}
	if code, body := s.get("/api/snowflake/get/x"); code != 500 {
		t.Fatalf("/api/snowflake/get: %d %s", code, body)
	}
	// Degraded, not down: segment IDs are served.
	if code, body := s.get("/readyz"); code != 200 || !strings.Contains(body, `"name":"clock","ok":false`) || !strings.Contains(body, "behind") || !strings.Contains(body, "degraded") {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	if code, body := s.req("POST", "/v1/tags", `{"name":"clk","step":10}`); code != 201 {
		t.Fatalf("create tag: %d %s", code, body)
	}
	if id := s.id("/api/segment/get/clk"); id < 0 {
		t.Fatalf("segment id %d", id)
	}
}

// Two processes on one data directory would share a worker ID: refused.
func TestE2E_SecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	mustStart(t, dir)
	s, err := startServer(t, dir)
	if err == nil || !strings.Contains(s.log(), "another process on this machine holds") {
		t.Fatalf("second process: %v\n%s", err, s.log())
	}
}

// The CLI against a running server, with its exit codes.
func TestE2E_CLI(t *testing.T) {
	s := mustStart(t, t.TempDir(), "--admin-token", "tok")
	cli := func(args ...string) (string, int) {
		if !slices.Contains(args, "--server") && (args[0] == "id" || args[0] == "tag") {
			args = append(args, "--server", s.url)
		}
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "FROND_ADMIN_TOKEN=tok")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	expect := func(wantCode int, wantOut string, args ...string) string {
		t.Helper()
		out, code := cli(args...)
		if code != wantCode || !strings.Contains(out, wantOut) {
			t.Fatalf("frond %v: exit %d, want %d; output:\n%s", args, code, wantCode, out)
		}
		return out
	}
	expect(0, "order", "tag", "create", "order", "--step", "10", "--max-id", "100", "--description", "orders")
	expect(3, "tag_exists", "tag", "create", "order", "--step", "10")
	expect(2, "step", "tag", "create", "x", "--step", "0")
	out := expect(0, "100\n101\n102\n", "id", "segment", "order", "-n", "3")
	if strings.Count(out, "\n") != 3 {
		t.Fatalf("output %q", out)
	}
	expect(0, "103 110 1\n", "id", "segment", "order", "-n", "7", "--ranges")
	expect(3, "tag_not_found", "id", "segment", "nope")
	expect(2, "-n 0", "id", "segment", "order", "-n", "0")
	expect(2, "invalid argument", "id", "segment", "bad name")
	if out := expect(0, "", "id", "snowflake", "-n", "5"); strings.Count(out, "\n") != 5 {
		t.Fatalf("snowflake output %q", out)
	}
	expect(0, "2000", "tag", "set", "order", "--step", "2000")
	expect(3, "would_reissue", "tag", "set", "order", "--max-id", "5")
	expect(2, "nothing to change", "tag", "set", "order")
	expect(0, "orders", "tag", "get", "order")
	expect(0, "order", "tag", "list")
	expect(3, "unauthorized", "tag", "list", "--token", "wrong")
	expect(0, "deleted order", "tag", "delete", "order")
	expect(3, "tag_not_found", "tag", "delete", "order")
	expect(1, "cannot reach", "id", "snowflake", "--server", "http://127.0.0.1:1")
	expect(0, "node      491", "decode", "1861083629105360902")
	expect(2, "no preset", "decode", "1", "--layout", "nope")
	// Bounds of a range of time (the server's layout), and compose.
	out = expect(0, "\n", "id", "bounds", "--from", "2026-11-01", "--to", "2026-12-01")
	lines := strings.Fields(out)
	if len(lines) != 2 {
		t.Fatalf("id bounds: %q", out)
	}
	expect(0, "time      2026-11-01T00:00:00Z", "decode", lines[0])
	expect(0, "time      2026-11-30T23:59:59.999Z", "decode", lines[1])
	expect(0, `"first": "user_01`, "id", "bounds", "--kind", "uuid", "--form", "typeid", "--prefix", "user", "--from", "2026-11-01", "--to", "2026-12-01", "--json")
	expect(2, "is not before", "id", "bounds", "--from", "2026-12-01", "--to", "2026-11-01")
	expect(2, "not a time", "id", "bounds", "--from", "soon", "--to", "2026-11-01")
	expect(3, "invalid_argument", "id", "bounds", "--kind", "segment", "--from", "2026-11-01", "--to", "2026-12-01")
	composed := expect(0, "sequence  7", "compose", "--time", "2026-11-29T12:00:00.123Z", "--node", "5", "--sequence", "7")
	id := strings.Fields(composed)[1]
	expect(0, "time      2026-11-29T12:00:00.123Z", "decode", id)
	expect(2, "node 1024 out of 0..1023", "compose", "--time", "2026-11-29", "--node", "1024")
	// A tag with shard bits: every ID carries the key's shard.
	expect(0, "shard:2", "tag", "create", "orders", "--step", "100", "--mapping", "shard:2")
	for _, line := range strings.Fields(expect(0, "\n", "id", "segment", "orders", "--shard-key", "user-42", "-n", "3")) {
		if id, err := strconv.ParseInt(line, 10, 64); err != nil || id%4 != 1 {
			t.Fatalf("user-42's IDs: %q", line)
		}
	}
	expect(3, "shard bits", "id", "segment", "orders")
	// Snowflake shard bits (snowflake.shard_bits): offline, and a server
	// without them refuses a shard.
	sharded := expect(0, "shard     13", "compose", "--time", "2026-11-29", "--node", "5", "--shard-bits", "4", "--shard-key", "user-42")
	expect(0, "shard     13", "decode", strings.Fields(sharded)[1], "--shard-bits", "4")
	expect(2, "fewer than the 12 sequence bits", "compose", "--time", "2026-11-29", "--shard-bits", "13")
	expect(3, "no shard bits", "id", "snowflake", "--shard", "1")
	expect(0, "commit ", "version")
	expect(0, `"platform"`, "version", "--json")
	expect(0, "/healthz: ok", "health", "--server", s.url)
	expect(0, "/readyz: ok", "health", "--ready", "--server", s.url)
	expect(0, "/readyz/segment: ok", "health", "--ready=segment", "--server", s.url)
	expect(1, "cannot reach", "health", "--server", "http://127.0.0.1:1")
	expect(2, "--ready", "health", "--ready=uuid", "--server", s.url)
}

// frond config prints the effective configuration with secrets masked and
// refuses unknown keys.
func TestE2E_Config(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "frond.yaml")
	os.WriteFile(path, []byte("admin_token: hunter2\nsegment:\n  max_step: 5000\n"), 0o644)
	cmd := exec.Command(binary, "config", "--config", path, "--http-addr", "127.0.0.1:9999")
	cmd.Env = append(os.Environ(), "FROND_LAYOUT=sonyflake")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"admin_token: '***'", "max_step: 5000", "layout: sonyflake", "http_addr: 127.0.0.1:9999"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "hunter2") {
		t.Fatalf("secret printed:\n%s", out)
	}
	os.WriteFile(path, []byte("colour: blue\n"), 0o644)
	cmd = exec.Command(binary, "config", "--config", path)
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "colour") {
		t.Fatalf("unknown key: %v\n%s", err, out)
	}
}

// Every command has help text and an example.
func TestHelp_EveryCommandHasExamples(t *testing.T) {
	root := newRoot(t.Context(), env{stdout: io.Discard, stderr: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" || c.Example == "" {
			t.Errorf("command %q lacks help text or an example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub)
			}
		}
	}
	walk(root)
}

// A request still in flight when the shutdown grace runs out (here a body
// that never comes) is cut, and the process still exits 0 once it has
// recorded the snowflake time: the grace did what it says. (It exited 1
// with "shutdown: context deadline exceeded", seen in CI's chaos runs.)
func TestE2E_ShutdownCutsRequestsPastGrace(t *testing.T) {
	s, err := startServerEnv(t, []string{"FROND_SHUTDOWN_TIMEOUT=2s"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.id("/api/snowflake/get/x")
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers and part of the body: the handler waits for the rest.
	fmt.Fprintf(conn, "POST /v1/tags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":")
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit: %v\n%s", err, s.log())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopping took %v with a 2s grace", took)
	}
	if log := s.log(); !strings.Contains(log, "requests still in flight when the grace ran out were cut") || !strings.Contains(log, "snowflake time recorded at shutdown") {
		t.Fatalf("log:\n%s", log)
	}
}
