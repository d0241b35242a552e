package api

import (
	"strings"
	"testing"
)

func TestRequestID(t *testing.T) {
	if got := RequestID("abc-123", false); got != "abc-123" {
		t.Fatalf("a caller's ID: %q", got)
	}
	for _, bad := range []string{"", "has space", "new\nline", strings.Repeat("x", 129), "caf\xc3\xa9"} {
		if got := RequestID(bad, false); got != "" {
			t.Errorf("RequestID(%q, false) = %q", bad, got)
		}
		if got := RequestID(bad, true); len(got) != 16 || got == bad {
			t.Errorf("RequestID(%q, true) = %q, want a new 16-digit ID", bad, got)
		}
	}
	if RequestID("", true) == RequestID("", true) {
		t.Fatal("two new IDs are equal")
	}
}
