// Package testenv is what frond's tests share about their surroundings:
// whether a missing server or tool skips a test or fails it
// (FROND_TEST_REQUIRE=1, which CI sets, so that nothing skips there), where
// a tool is, a context bounded for a test, and waiting for a condition that
// background work makes true.
package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Require reports whether FROND_TEST_REQUIRE=1: a test that would skip
// for want of a server or a tool fails instead.
func Require() bool { return os.Getenv("FROND_TEST_REQUIRE") == "1" }

// Skip skips t with the message, or fails it under Require.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Require() {
		t.Fatal(msg + ", and FROND_TEST_REQUIRE=1: the test cannot run")
	}
	sayOnce.Do(func() { say(msg) })
	t.Skip(msg)
}

var sayOnce sync.Once

// openTerminal opens the terminal of the person running the tests.
var openTerminal = func() (io.WriteCloser, error) { return os.OpenFile("/dev/tty", os.O_WRONLY, 0) }

// openGoOutput opens the standard error of the go command that runs this
// test binary (Linux: /proc/PPID/fd/2, only when the parent is go), for a
// notice to reach a log where there is no terminal (CI).
var openGoOutput = func() (io.WriteCloser, error) {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || strings.TrimSuffix(filepath.Base(exe), ".exe") != "go" {
		return nil, fmt.Errorf("the parent is not the go command")
	}
	return os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", ppid), os.O_WRONLY|os.O_APPEND, 0)
}

// say tells the person running the tests, once per test binary, that tests
// skip and how to run them: go test shows nothing of a package that passes
// (its skips included) unless -v is given, and a newcomer took a green run
// for a whole one (issue 44, item 9). It writes to /dev/tty, which go test
// does not capture; without a terminal (CI, a pipe) to the go command's
// own standard error, which is the log (issue 60, item 7: a CI log showed
// a package that skipped as a plain "ok").
func say(first string) {
	tty, err := openTerminal()
	if err != nil {
		if tty, err = openGoOutput(); err != nil {
			return
		}
	}
	defer tty.Close()
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	fmt.Fprintf(tty, "frond: %s skips the tests that need a real server or tool (first: %s); eval \"$(bash scripts/test-env.sh)\" starts them all (docs/development.md)\n", pkg, first)
}

// Getenv returns the environment variable name (a real server's address),
// or skips t when it is empty (fails it under Require).
func Getenv(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		Skip(t, "%s is not set", name)
	}
	return v
}

// Tool returns the path of the first of names found on PATH or in
// $(go env GOPATH)/bin, or skips t (fails it under Require) saying how to
// install it.
func Tool(t testing.TB, install string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, name := range names {
			p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	Skip(t, "%s is not installed (%s)", names[0], install)
	return ""
}

// Ctx returns a context that ends when t does, or after 30 s.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// WaitFor polls cond until it holds (background work runs on its own
// timers), failing t after 10 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
