package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tourBlocks returns the command lines of the sh blocks of the README's
// "A quick tour" section, with their trailing comments.
func tourBlocks(t *testing.T) [][2]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## A quick tour")
	if start < 0 {
		t.Fatal(`README has no "## A quick tour"`)
	}
	text = text[start:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	var lines [][2]string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
			cmd, comment, _ := strings.Cut(line, " #")
			if cmd = strings.TrimSpace(cmd); cmd != "" {
				lines = append(lines, [2]string{cmd, strings.TrimSpace(comment)})
			}
		}
	}
	if len(lines) < 20 {
		t.Fatalf("found %d tour commands in README", len(lines))
	}
	return lines
}

// The README's tour as a new user runs it, line by line and in order, on a
// fresh server: every command succeeds (curl fails on an HTTP error here),
// and the outputs the README states are the outputs.
func TestREADME_Tour(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, filepath.Join(dir, "data"), "--resp-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0")
	// ./frond in the tour is the binary built in the current directory.
	if err := os.Symlink(binary, filepath.Join(dir, "frond")); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.url, "http://")
	stated := regexp.MustCompile(`^(Leaf's API: )?(\{.*\}|\d+)$`)
	for _, l := range tourBlocks(t) {
		line, comment := l[0], l[1]
		run := strings.ReplaceAll(line, "localhost:8080", addr)
		if strings.HasPrefix(run, "redis-cli ") {
			_, port, _ := strings.Cut(s.respAddr(), ":")
			run = strings.ReplaceAll(run, "-p 6380", "-p "+port)
		}
		if strings.HasPrefix(run, "grpcurl ") {
			run = grpcurlPath(t) + strings.ReplaceAll(strings.TrimPrefix(run, "grpcurl"), "localhost:9090", s.listenAddr("gRPC"))
		}
		if strings.HasPrefix(run, "curl ") {
			run = "curl -fsS " + strings.TrimPrefix(run, "curl ")
		}
		cmd := exec.Command("bash", "-c", run)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FROND_SERVER="+s.url, "FROND_CONFIG=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README: %s\n%v\n%s", line, err, out)
		}
		got := strings.TrimSpace(string(out))
		m := stated.FindStringSubmatch(comment)
		if m == nil || strings.Contains(line, "snowflake") {
			continue // no output stated, or a snowflake ID (it depends on the time)
		}
		want := m[2]
		if strings.HasPrefix(want, "{") {
			var a, b any
			if json.Unmarshal([]byte(want), &b) != nil || json.Unmarshal([]byte(got), &a) != nil || !jsonEqual(a, b) {
				t.Fatalf("README: %s\nstates %s\nanswered %s", line, want, got)
			}
		} else if got != want {
			t.Fatalf("README: %s\nstates %s\nanswered %s", line, want, got)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
