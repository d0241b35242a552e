package httpapi

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"", "1", "10000", "10001", "-1", "0", "abc", "1e3", "+5", " 5", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, given, err := parseCount(raw, 10_000)
		if raw == "" {
			if n != 1 || given || err != nil {
				t.Fatalf("empty: %d %v %v", n, given, err)
			}
			return
		}
		if err == nil && (n < 1 || n > 10_000) {
			t.Fatalf("parseCount(%q) = %d accepted", raw, n)
		}
		if v, perr := strconv.ParseInt(raw, 10, 64); perr == nil && v >= 1 && v <= 10_000 && (err != nil || n != v) {
			t.Fatalf("parseCount(%q) = %d, %v; want %d", raw, n, err, v)
		}
	})
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "1861083629105360902", "-1", "9223372036854775808", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := parseID(raw)
		v, perr := strconv.ParseInt(raw, 10, 64)
		if ok := perr == nil && v >= 0; ok != (err == nil) || (ok && v != id) {
			t.Fatalf("parseID(%q) = %d, %v; ParseInt gives %d, %v", raw, id, err, v, perr)
		}
	})
}

// Tag names and counts from outside go through the whole handler: no panic,
// no 5xx except the documented 500 of Leaf's API, no IDs consumed by bad input.
func FuzzHandlers(f *testing.F) {
	f.Add("order", "5")
	f.Add("a b", "-1")
	f.Add("../../etc", "abc")
	f.Add(strings.Repeat("x", 200), "10001")
	fx := newFixture(f, Options{})
	f.Fuzz(func(t *testing.T, tag, n string) {
		fx.t = t
		p := "/v1/segment/" + url.PathEscape(tag) + "?n=" + url.QueryEscape(n)
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		switch w.Code {
		case 200, 400, 404:
		case 301, 307, 308: // ServeMux redirects paths with "." or ".." to their clean form
		default:
			t.Fatalf("GET %s: status %d: %s", p, w.Code, w.Body.String())
		}
		w = httptest.NewRecorder()
		fx.h.ServeHTTP(w, httptest.NewRequest("GET", "/api/segment/get/"+url.PathEscape(tag), nil))
		if w.Code != 200 && w.Code != 500 && w.Code != 404 && !redirect(w.Code) { // 404: empty key, no route
			t.Fatalf("Leaf API status %d", w.Code)
		}
		if w.Code == 500 && !strings.HasPrefix(w.Body.String(), "error: ") {
			t.Fatalf("Leaf API error body %q", w.Body.String())
		}
		w = httptest.NewRecorder()
		fx.h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/decode/"+url.PathEscape(n)+"?layout="+url.QueryEscape(tag), nil))
		if w.Code != 200 && w.Code != 400 && w.Code != 404 && !redirect(w.Code) {
			t.Fatalf("decode status %d", w.Code)
		}
	})
}

func redirect(code int) bool { return code == 301 || code == 307 || code == 308 }
