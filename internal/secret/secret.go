// Package secret keeps secrets out of what frond prints: the passwords of
// store and registry URLs (also of URLs that do not parse), in errors, log
// lines and `frond config`. One place, used by every printer.
package secret

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Mask is what a secret is printed as.
const Mask = "***"

// userinfo finds "scheme://user:password@" in a URL that may not parse,
// anywhere in a text (a list of URLs, a message quoting one): the password
// runs to the last "@" before the path or the next ASCII space. Other
// spaces (U+3000, U+00A0) are part of the user or password: splitting on
// them, as strings.Fields does, cut a URL in two and kept its password.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*:)([^/?#\s]*)@`)

// Fields splits a list of URLs (a store setting) on ASCII spaces only: the
// separators Passwords knows. Other spaces belong to a URL (its user or
// password); splitting on them, as strings.Fields does, would leave a piece
// without its scheme, whose password no masking finds.
func Fields(list string) []string { return strings.FieldsFunc(list, asciiSpace) }

// asciiSpace separates the URLs of a list.
func asciiSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// passwordParams are query parameters that carry a secret (database
// drivers accept a password there).
var passwordParams = []string{"password", "pass", "passwd", "pwd", "secret", "token", "sslpassword"}

// Passwords returns the secrets of a URL (or of several separated by
// spaces), as written and percent-decoded, whether or not it parses. A URL
// that does not parse is a secret whole, as written and as Go quotes it
// (url.Parse's error quotes it, escaping a '"', a '\\' or a U+3000, and a
// password with '#' or '?' is cut where the parser reads a fragment or a
// query: masking the password alone would miss it; issue 43).
func Passwords(raw string) []string {
	var out []string
	add := func(s string) {
		if s == "" || s == Mask {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s {
			out = append(out, d)
		}
		if e := url.QueryEscape(s); e != s {
			out = append(out, e)
		}
	}
	for _, m := range userinfo.FindAllStringSubmatch(raw, -1) {
		add(m[2])
	}
	for _, f := range strings.FieldsFunc(raw, asciiSpace) {
		if i := strings.Index(f, "://"); i >= 0 {
			if _, err := url.Parse(f); err != nil {
				addUnparsed(f, i+3, add)
			}
		}
		if _, q, ok := strings.Cut(f, "?"); ok {
			for _, kv := range strings.Split(q, "&") {
				k, v, _ := strings.Cut(kv, "=")
				for _, p := range passwordParams {
					if strings.EqualFold(k, p) {
						add(v)
					}
				}
			}
		}
	}
	return out
}

// addUnparsed adds the secrets of f, a URL that does not parse (its
// authority from at): f whole, and as the parser's error quotes what it
// read of it: cut at a '#' (the fragment) or a '?' (the query), quoted as
// Go quotes it; and what stands after the user's ':' in the authority the
// parser read, which its errors name alone ("invalid port \":s3cr\"").
func addUnparsed(f string, at int, add func(string)) {
	quoted := func(s string) {
		add(s)
		if q := strconv.Quote(s); q[1:len(q)-1] != s {
			add(q[1 : len(q)-1])
		}
	}
	quoted(f)
	for _, c := range []byte{'#', '?'} {
		if i := strings.IndexByte(f, c); i > at {
			quoted(f[:i])
		}
	}
	auth := f[at:]
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[:i]
	}
	if _, pass, ok := strings.Cut(auth, ":"); ok {
		quoted(pass)
	}
}

// URL returns raw with its secrets masked, whether or not it parses.
func URL(raw string) string { return Scrub(raw, Passwords(raw)...) }

// Scrub returns s with every occurrence of each secret masked, the longest
// first; one shorter than 4 bytes only where it stands as a password or a
// parameter's value (anywhere, it would mask the text around it).
func Scrub(s string, secrets ...string) string { return scrub(s, 4, secrets) }

// anywhereRemembered is the length from which a remembered secret (one not
// known to be a URL's password) is masked anywhere in a text: a short
// token or password ("frond") is also a word of frond's messages.
const anywhereRemembered = 8

// scrub is Scrub, masking secrets of anywhere bytes or more anywhere.
func scrub(s string, anywhere int, secrets []string) string {
	sorted := append([]string(nil), secrets...)
	for i := 1; i < len(sorted); i++ { // a handful: insertion sort, longest first
		for j := i; j > 0 && len(sorted[j]) > len(sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, sec := range sorted {
		if len(sec) >= anywhere {
			s = strings.ReplaceAll(s, sec, Mask)
			continue
		}
		// A short one only where a URL holds it: anywhere, it would mask
		// the text around it.
		s = strings.ReplaceAll(s, ":"+sec+"@", ":"+Mask+"@")
		s = strings.ReplaceAll(s, `":`+sec+`"`, `":`+Mask+`"`) // url.Parse's "invalid port \":pw\""
		for _, end := range []string{"&", "\"", " ", ")"} {
			s = strings.ReplaceAll(s, "="+sec+end, "="+Mask+end)
		}
		if strings.HasSuffix(s, "="+sec) {
			s = strings.TrimSuffix(s, sec) + Mask
		}
	}
	return s
}

// Error is an error whose message has secrets masked; it unwraps to the
// original, so errors.Is and errors.As see through it.
type Error struct {
	err     error
	secrets []string
}

// ScrubError returns err with the given secrets masked in its message (nil
// for nil).
func ScrubError(err error, secrets ...string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	return &Error{err: err, secrets: secrets}
}

// Error returns the message with the error's secrets and every remembered
// one masked.
func (e *Error) Error() string {
	return HideString(Scrub(e.err.Error(), e.secrets...))
}

// Unwrap returns the original error.
func (e *Error) Unwrap() error { return e.err }

// known holds the secrets this process was configured with (Remember):
// every error from a backend passes through Hide before it can reach an
// output, and every log line through Handler, so a secret is masked even
// where no parser recognised it as one (a driver quoting its DSN, a client
// naming its endpoints with their user and password; issue 43).
var known struct {
	sync.RWMutex
	list []string
	set  map[string]bool
}

// Remember adds secrets to those Hide and Handler mask, as written, quoted
// as Go quotes them and escaped as JSON escapes them. Empty strings are
// ignored. One shorter than 8 bytes is masked only where it stands as a
// password or a parameter's value (":pw@", "=pw&"): anywhere, a short
// password such as "frond" would mask frond's own words.
func Remember(secrets ...string) {
	known.Lock()
	defer known.Unlock()
	if known.set == nil {
		known.set = map[string]bool{}
	}
	for _, s := range secrets {
		if s == "" || s == Mask {
			continue
		}
		q := strconv.Quote(s)
		for _, v := range []string{s, q[1 : len(q)-1], jsonQuoted(s)} {
			if !known.set[v] {
				known.set[v] = true
				known.list = append(known.list, v)
			}
		}
	}
}

// RememberURLs remembers the secrets of URLs (Passwords), parsed or not.
func RememberURLs(raws ...string) {
	for _, raw := range raws {
		Remember(Passwords(raw)...)
	}
}

// remembered returns the remembered secrets.
func remembered() []string {
	known.RLock()
	defer known.RUnlock()
	return known.list
}

// jsonQuoted is s as a JSON string holds it, without the quotes.
func jsonQuoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Hide returns err with every remembered secret, and the extra ones,
// masked in its message (when it is printed: a secret remembered later is
// masked too); errors.Is and errors.As see through it. Nil for nil.
func Hide(err error, extra ...string) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*Error); ok && len(extra) == 0 {
		return err // already hidden: Error masks what is remembered when printed
	}
	return &Error{err: err, secrets: extra}
}

// HideString returns s with every remembered secret masked.
func HideString(s string) string {
	if list := remembered(); len(list) > 0 {
		return scrub(s, anywhereRemembered, list)
	}
	return s
}

// Handler returns a slog.Handler that masks every remembered secret in
// what it passes to h: the message and every attribute's value (strings,
// errors, and anything else as it prints), in groups too.
func Handler(h slog.Handler) slog.Handler { return hiding{h} }

type hiding struct{ h slog.Handler }

func (x hiding) Enabled(ctx context.Context, l slog.Level) bool { return x.h.Enabled(ctx, l) }

func (x hiding) Handle(ctx context.Context, r slog.Record) error {
	if len(remembered()) == 0 {
		return x.h.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, HideString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hideAttr(a))
		return true
	})
	return x.h.Handle(ctx, out)
}

func (x hiding) WithAttrs(as []slog.Attr) slog.Handler {
	hidden := make([]slog.Attr, len(as))
	for i, a := range as {
		hidden[i] = hideAttr(a)
	}
	return hiding{x.h.WithAttrs(hidden)}
}

func (x hiding) WithGroup(name string) slog.Handler { return hiding{x.h.WithGroup(name)} }

// hideAttr masks the remembered secrets in a's value.
func hideAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, HideString(v.String()))
	case slog.KindGroup:
		g := v.Group()
		hidden := make([]any, len(g))
		for i, b := range g {
			hidden[i] = hideAttr(b)
		}
		return slog.Group(a.Key, hidden...)
	case slog.KindAny:
		var text string
		if err, ok := v.Any().(error); ok {
			text = err.Error()
		} else {
			text = fmt.Sprint(v.Any())
		}
		if hidden := HideString(text); hidden != text {
			return slog.String(a.Key, hidden)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
