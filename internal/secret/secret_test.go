package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
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

// Issue 43, item 8: what the process remembers is masked in any error
// (Hide) and any log line (Handler), as written, as Go quotes it and as
// JSON escapes it, in the message and every kind of attribute.
func TestHideAndHandler(t *testing.T) {
	const pw = `hid"e\pw`
	Remember(pw)
	err := Hide(fmt.Errorf("dial [http://u:%s@h:1]: %w", pw, errSentinel))
	if strings.Contains(err.Error(), pw) || !errors.Is(err, errSentinel) {
		t.Fatalf("Hide: %v", err)
	}
	if Hide(nil) != nil {
		t.Fatal("Hide(nil) is not nil")
	}
	for _, format := range []string{"text", "json"} {
		var out strings.Builder
		var h slog.Handler = slog.NewTextHandler(&out, nil)
		if format == "json" {
			h = slog.NewJSONHandler(&out, nil)
		}
		log := slog.New(Handler(h)).With("with", "at "+pw)
		log.Error("opening "+pw, "s", pw, "err", fmt.Errorf("x %s", pw), "list", []string{pw},
			slog.Group("g", "inner", pw), "n", 7)
		text := out.String()
		q := strconv.Quote(pw)
		for _, form := range []string{pw, q[1 : len(q)-1]} {
			if strings.Contains(text, form) {
				t.Fatalf("%s: %q shows in %s", format, form, text)
			}
		}
		if strings.Count(text, Mask) < 6 || !strings.Contains(text, "7") {
			t.Fatalf("%s: not every attribute is there, masked: %s", format, text)
		}
	}
}

var errSentinel = errors.New("sentinel")

// A short remembered secret is masked where it stands as a password, not
// in the words around it (a password "frond" in frond's own messages).
func TestHide_ShortSecret(t *testing.T) {
	Remember("frond")
	got := HideString(`run frond stores set: dial [mysql://u:frond@h:1] user=u password=frond`)
	if want := `run frond stores set: dial [mysql://u:***@h:1] user=u password=***`; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
