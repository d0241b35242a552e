package secret

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"mysql://u:pa%ss@h:3306/db":                   "***", // does not parse: masked whole
		"redis://u:se%cret@h:99999/0":                 "***",
		"postgres://u:p@ss:w@rd@h/db":                 "postgres://u:***@h/db",
		"postgres://h/db?sslmode=disable&password=hx": "postgres://h/db?sslmode=disable&password=***",
		"sqlite:///var/lib/frond.db":                  "sqlite:///var/lib/frond.db",
		"redis://:only-password@h:6379/0":             "redis://:***@h:6379/0",
		"mysql://u:a b@h/db etcd://h:2379":            "*** b@h/db etcd://h:2379", // a space splits URLs: the first does not parse, masked whole
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// Issue 43, item 9: a password with '#', '?', '\\', '"' or U+3000 makes
// the URL fail to parse, and the parser's error cuts or escapes it, so that
// the password as written was not in the message: a URL that does not
// parse is masked whole, as written and as Go quotes it.
func TestURL_DoesNotParse(t *testing.T) {
	for _, pass := range []string{"zq#xw", "zq?xw", `zq\xw`, `zq"xw`, "zq\u3000xw", "zqxw#t?k", "zq?", "zq#"} {
		raw := "mysql://frond:" + pass + "@db:3306/ids"
		_, perr := url.Parse(raw)
		for _, out := range []string{URL(raw), ScrubError(fmt.Errorf("open store: %w", perr), Passwords(raw)...).Error(),
			ScrubError(fmt.Errorf("store %q: %v", raw, perr), Passwords(raw)...).Error()} {
			if strings.Contains(out, "zq") {
				t.Errorf("password %q shows in %q", pass, out)
			}
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
