package secret

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"mysql://u:pa%ss@h:3306/db":                   "mysql://u:***@h:3306/db",
		"redis://u:se%cret@h:99999/0":                 "redis://u:***@h:99999/0",
		"postgres://u:p@ss:w@rd@h/db":                 "postgres://u:***@h/db",
		"postgres://h/db?sslmode=disable&password=hx": "postgres://h/db?sslmode=disable&password=***",
		"sqlite:///var/lib/frond.db":                  "sqlite:///var/lib/frond.db",
		"redis://:only-password@h:6379/0":             "redis://:***@h:6379/0",
		"mysql://u:a b@h/db etcd://h:2379":            "mysql://u:a b@h/db etcd://h:2379", // a space splits URLs: not one of them
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// An error that quotes a URL, percent-decoded or not, keeps no password.
func TestScrubError(t *testing.T) {
	raw := "mysql://frond:s3cr%65t@db:3306/ids"
	inner := errors.New("boom")
	err := ScrubError(fmt.Errorf("parse %q: %w; decoded s3cret", raw, inner), Passwords(raw)...)
	if msg := err.Error(); strings.Contains(msg, "s3cr") || !strings.Contains(msg, Mask) {
		t.Fatalf("%s", msg)
	}
	if !errors.Is(err, inner) {
		t.Fatal("does not unwrap")
	}
}

func FuzzURL(f *testing.F) {
	f.Add("mysql://u:p@h/db", "p")
	f.Add("\u3000", "000") // a Unicode space in the user cut the URL in two (found by CI's fuzz step)
	f.Add("u", "p\u00a0ss")
	f.Fuzz(func(t *testing.T, user, pass string) {
		if strings.ContainsAny(user, ":@/?# \t\n\r\v\f") || strings.ContainsAny(pass, "/?# \t\n\r\v\f") || len(pass) < 3 || strings.Contains(pass, "@") || pass == Mask {
			return // (a password that is the mask itself shows as itself)
		}
		raw := "mysql://" + user + ":" + pass + "@h:3306/db"
		if got := URL(raw); strings.Contains(got, ":"+pass+"@") {
			t.Fatalf("URL(%q) = %q keeps the password", raw, got)
		}
	})
}
