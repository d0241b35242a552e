package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"
)

// frond bench against frond serve over every protocol, as a user runs it:
// the JSON has the documented keys, IDs came, none twice, no errors; the
// summary and the progress lines read as documented.
func TestE2E_Bench(t *testing.T) {
	s := mustStart(t, t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	if code, body := s.req("POST", "/v1/tags", `{"name":"bench","step":10000}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	grpcAddr, respAddr := s.listenAddr("gRPC"), s.listenAddr("Redis protocol")
	if n := strings.Count(s.log(), "SINGLE NODE: "); n != 1 { // the defaults are one node's: said once
		t.Fatalf("the single-node defaults said %d times:\n%s", n, s.log())
	}
	for _, tc := range []struct{ protocol, server, kind, extra string }{
		{"leaf", s.url, "segment", ""},
		{"http", s.url, "snowflake", "--batch=10"},
		{"grpc", grpcAddr, "segment", "--batch=100"},
		{"resp", respAddr, "segment", "--rate=2000"},
		{"client", grpcAddr, "segment", "--count=50000"},
	} {
		args := []string{"bench", "--json", "--protocol", tc.protocol, "--server", tc.server, "--kind", tc.kind,
			"--duration", "700ms", "--warmup", "200ms", "--concurrency", "8"}
		if tc.extra != "" {
			args = append(args, tc.extra)
		}
		out, err := exec.Command(binary, args...).Output()
		if err != nil {
			t.Fatalf("frond %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %v in %s", tc.protocol, err, out)
		}
		for _, key := range []string{"ids", "requests", "duplicates", "errors", "ids_per_second", "requests_per_second", "latency_us"} {
			if _, ok := res[key]; !ok {
				t.Fatalf("%s: no %q in %s", tc.protocol, key, out)
			}
		}
		lat := res["latency_us"].(map[string]any)
		for _, key := range []string{"p50", "p90", "p99", "p999", "max"} {
			if _, ok := lat[key]; !ok {
				t.Fatalf("%s: no latency_us.%s in %s", tc.protocol, key, out)
			}
		}
		if res["ids"].(float64) < 100 || res["duplicates"].(float64) != 0 || len(res["errors"].(map[string]any)) != 0 {
			t.Fatalf("%s: %s", tc.protocol, out)
		}
		if tc.extra == "--count=50000" && res["requests"].(float64) != 50000 {
			t.Fatalf("--count 50000: %s", out)
		}
		if tc.extra == "--rate=2000" && (res["requests_per_second"].(float64) < 1500 || res["requests_per_second"].(float64) > 2500) {
			t.Fatalf("--rate 2000: %s", out)
		}
	}
	// The summary, and progress lines when stderr is not a terminal.
	cmd := exec.Command(binary, "bench", "--protocol", "http", "--server", s.url, "--duration", "1500ms", "--warmup", "0s")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("summary: %v\n%s\n%s", err, out, stderr.String())
	}
	for _, want := range []string{"frond bench: segment bench over http", "IDs ", "latency     p50", "errors      none", "duplicates  0 among"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "requests/s") {
		t.Fatalf("no progress lines on stderr: %q", stderr.String())
	}
	// A missing tag is said at once, with its code.
	out, err = exec.Command(binary, "bench", "--protocol", "grpc", "--server", grpcAddr, "--tag", "nope", "--duration", "1s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tag_not_found") && !strings.Contains(string(out), "not found") {
		t.Fatalf("a missing tag: %v\n%s", err, out)
	}
}

// A server that is not there: exit 1 (not 3, "the server answered"), in
// one line whatever the protocol (go-redis logged a line per connection of
// its pool).
func TestCLI_BenchUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, p := range []string{"grpc", "resp", "client", "http", "leaf"} {
		server := addr
		if p == "http" || p == "leaf" {
			server = "http://" + addr
		}
		code, out, errs := runCLI(t, nil, "bench", "--protocol", p, "--server", server, "--duration", "1s")
		if code != exitError || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no answer from "+server+" over "+p) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", p, code, out, errs)
		}
	}
}
