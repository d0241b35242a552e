// Package secret keeps secrets out of what frond prints: the passwords of
// store and registry URLs (also of URLs that do not parse), in errors, log
// lines and `frond config`. One place, used by every printer.
package secret

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
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
// first.
func Scrub(s string, secrets ...string) string {
	sorted := append([]string(nil), secrets...)
	for i := 1; i < len(sorted); i++ { // a handful: insertion sort, longest first
		for j := i; j > 0 && len(sorted[j]) > len(sorted[j-1]); j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, sec := range sorted {
		if len(sec) >= 4 {
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

func (e *Error) Error() string { return Scrub(e.err.Error(), e.secrets...) }

// Unwrap returns the original error.
func (e *Error) Unwrap() error { return e.err }
