package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	frondclient "github.com/frond-id/frond/client"
	"github.com/frond-id/frond/internal/testenv"
)

// promtool is Debian's prometheus package's checker.
func promtool(t *testing.T) string { return testenv.Tool(t, "apt-get install prometheus", "promtool") }

// The metrics of a live frond serve, after requests over HTTP, gRPC and
// RESP, pass promtool check metrics; the alerting rules pass promtool check
// rules and their unit tests; and every metric the rules and the Grafana
// dashboard use is one frond exports.
func TestE2E_Promtool(t *testing.T) {
	pt := promtool(t)
	s := mustStart(t, t.TempDir(), "--grpc-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0")
	if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":1000}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	s.id("/api/segment/get/order")
	s.get("/v1/segment/nope")
	c, err := frondclient.New(frondclient.Options{Servers: []string{s.listenAddr("gRPC")}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Snowflake(ctx, 1); err != nil {
		t.Fatal(err)
	}
	redisCLI(t, s.respAddr(), "", "INCR", "order")
	createSpace(t, s, "prom", 100, 4) // a keyed sequence space's series too (FrondKeyedSequenceStoreLostData)
	if code, body := s.get("/v1/seq/prom/k"); code != 200 {
		t.Fatalf("keyed sequence: %d %s", code, body)
	}
	code, scrape := s.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	cmd := exec.Command(pt, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, want := range []string{`protocol="http"`, `protocol="grpc"`, `protocol="resp"`, "frond_snowflake_layout_expiry_timestamp_seconds"} {
		if !strings.Contains(scrape, want) {
			t.Fatalf("the scrape lacks %s", want)
		}
	}

	rules := filepath.Join("..", "..", "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "frond-alerts.yml"}, {"test", "rules", "frond-alerts_test.yml"}} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = rules
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// Every metric used is exported (histograms by their base name).
	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (frond_\w+)`).FindAllStringSubmatch(scrape, -1) {
		exported[m[1]] = true
	}
	for _, file := range []string{filepath.Join(rules, "frond-alerts.yml"), filepath.Join("..", "..", "deploy", "grafana", "frond.json")} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`frond_[a-z_]+`).FindAllString(string(b), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if !exported[base] && !strings.HasPrefix(name, "frond_client_") {
				t.Errorf("%s uses %s, which frond does not export", filepath.Base(file), name)
			}
		}
	}
}
