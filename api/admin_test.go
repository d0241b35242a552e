package api

import (
	"errors"
	"testing"
)

func TestBearer(t *testing.T) {
	for in, want := range map[string]string{"Bearer x": "x", "bearer x": "x", "BEARER  x ": "x", "Basic x": "", "Bearer": "", "Bearer ": "", "": ""} {
		if got, ok := Bearer(in); got != want || ok != (want != "") {
			t.Errorf("Bearer(%q) = %q, %v", in, got, ok)
		}
	}
}

// With no admin token, tag administration is answered to loopback only.
func TestAdminWithoutToken(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:5000", "127.8.9.1", "[::1]:5000", "[::ffff:127.0.0.1]:80"} {
		if err := AdminWithoutToken(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"10.0.0.1:5000", "[2001:db8::1]:80", "0.0.0.0:1", "pipe", ""} {
		var e *Error
		if err := AdminWithoutToken(addr); !errors.As(err, &e) || e.Code != "forbidden" {
			t.Errorf("%s: %v, want forbidden", addr, err)
		}
	}
}
