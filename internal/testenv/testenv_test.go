package testenv

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type buf struct{ strings.Builder }

func (*buf) Close() error { return nil }

// Issue 44, item 9: a skip tells the terminal, in one line, which package
// skips, the first reason, and how to run them all.
func TestSay(t *testing.T) {
	var b buf
	old := openTerminal
	defer func() { openTerminal = old }()
	openTerminal = func() (io.WriteCloser, error) { return &b, nil }
	say("FROND_TEST_MYSQL_URL is not set")
	got := b.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "testenv skips") || !strings.Contains(got, "FROND_TEST_MYSQL_URL is not set") ||
		!strings.Contains(got, `eval "$(bash scripts/test-env.sh)"`) {
		t.Fatalf("said %q", got)
	}
}

// Issue 60, item 7: without a terminal (CI) the notice goes to the go
// command's own output, the log, rather than nowhere.
func TestSay_NoTerminal(t *testing.T) {
	var b buf
	oldT, oldG := openTerminal, openGoOutput
	defer func() { openTerminal, openGoOutput = oldT, oldG }()
	openTerminal = func() (io.WriteCloser, error) { return nil, errors.New("no terminal") }
	openGoOutput = func() (io.WriteCloser, error) { return &b, nil }
	say("FROND_TEST_REDIS_URL is not set")
	if got := b.String(); !strings.Contains(got, "skips the tests") || !strings.Contains(got, "FROND_TEST_REDIS_URL is not set") {
		t.Fatalf("said %q", got)
	}
}
