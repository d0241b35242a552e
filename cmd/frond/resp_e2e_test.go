package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/frond-id/frond/internal/testenv"
)

// respAddr is the Redis-protocol address s logged at start.
func (s *server) respAddr() string { return s.listenAddr("Redis protocol") }

// listenAddr is the address of the listener of protocol ("gRPC", "Redis
// protocol") that s logged at start.
func (s *server) listenAddr(protocol string) string {
	for _, line := range strings.Split(s.log(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "frond listening for "+protocol {
			return rec.Addr
		}
	}
	s.t.Fatalf("no %s listener in the log:\n%s", protocol, s.log())
	return ""
}

// redisCLI runs Debian's redis-cli (redis-tools) against addr.
func redisCLI(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	path := testenv.Tool(t, "apt-get install redis-tools", "redis-cli")
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(path, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// The README's Redis tour with the real clients: redis-cli as a user
// would type it, a pipelined --pipe run, -r repeats, and redis-benchmark
// with a custom command.
func TestE2E_RESP_RealClients(t *testing.T) {
	s := mustStart(t, t.TempDir(), "--resp-addr", "127.0.0.1:0")
	if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":1000}`); code != 201 {
		t.Fatalf("create tag: %d %s", code, body)
	}
	addr := s.respAddr()
	if out := redisCLI(t, addr, "", "INCR", "order"); strings.TrimSpace(out) != "1" {
		t.Fatalf("redis-cli INCR order: %q", out)
	}
	if out := redisCLI(t, addr, "", "SEGMENT", "order", "COUNT", "3"); strings.Join(strings.Fields(out), " ") != "2 3 4" {
		t.Fatalf("redis-cli SEGMENT order COUNT 3: %q", out)
	}
	if id, err := strconv.ParseInt(strings.TrimSpace(redisCLI(t, addr, "", "SNOWFLAKE")), 10, 64); err != nil || id < 1<<40 {
		t.Fatalf("redis-cli SNOWFLAKE: %d, %v", id, err)
	}
	if out := redisCLI(t, addr, "", "INCR", "nope"); !strings.Contains(out, "TAG_NOT_FOUND") {
		t.Fatalf("redis-cli INCR nope: %q", out)
	}
	// -r: the same command again and again on one connection.
	out := redisCLI(t, addr, "", "-r", "100", "INCR", "order")
	lines := strings.Fields(out)
	if len(lines) != 100 {
		t.Fatalf("redis-cli -r 100 INCR order: %d lines", len(lines))
	}
	prev := int64(4)
	for _, l := range lines {
		id, err := strconv.ParseInt(l, 10, 64)
		if err != nil || id != prev+1 {
			t.Fatalf("redis-cli -r: %q after %d", l, prev)
		}
		prev = id
	}
	// --pipe: a mass of commands in the protocol, answered in order.
	var pipe strings.Builder
	for range 1000 {
		pipe.WriteString("*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n")
	}
	if out := redisCLI(t, addr, pipe.String(), "--pipe"); !strings.Contains(out, "errors: 0, replies: 1000") {
		t.Fatalf("redis-cli --pipe: %q", out)
	}
	if id, _ := strconv.ParseInt(strings.TrimSpace(redisCLI(t, addr, "", "INCR", "order")), 10, 64); id != prev+1001 {
		t.Fatalf("after --pipe INCR order = %d, want %d", id, prev+1001)
	}
	// redis-benchmark with a custom command, pipelined.
	path := testenv.Tool(t, "apt-get install redis-tools", "redis-benchmark")
	host, port, _ := strings.Cut(addr, ":")
	bench := exec.Command(path, "-h", host, "-p", port, "-n", "20000", "-c", "4", "-P", "16", "-q", "INCR", "order")
	bout, err := bench.CombinedOutput()
	if err != nil || !strings.Contains(string(bout), "requests per second") {
		t.Fatalf("redis-benchmark: %v\n%s", err, bout)
	}
	t.Logf("redis-benchmark -n 20000 -c 4 -P 16 INCR order: %s", strings.TrimSpace(string(bout)))
	if id, _ := strconv.ParseInt(strings.TrimSpace(redisCLI(t, addr, "", "INCR", "order")), 10, 64); id != prev+1001+20001 {
		t.Fatalf("after redis-benchmark INCR order = %d, want %d", id, prev+1001+20001)
	}
}
