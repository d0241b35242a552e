package keyseq_test

import (
	"testing"

	"github.com/frond-id/frond/keyseq"
)

// The route header a client reads from a server's answer: what it accepts
// is a valid route that reads back the same.
func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"5/1024 self", "0/1 other", "1024/1024 self", "-1/4 self", "3/4", "3/99999999 self", " / self", "3/4 self "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r, ok := keyseq.ParseRoute(v)
		if !ok {
			return
		}
		if r.Sections < 1 || r.Sections > keyseq.MaxRouteSections || r.Section < 0 || r.Section >= r.Sections {
			t.Fatalf("%q: accepted %+v", v, r)
		}
		if back, ok := keyseq.ParseRoute(r.String()); !ok || back != r {
			t.Fatalf("%q: %+v reads back as %+v, %v", v, r, back, ok)
		}
	})
}

func TestParseRoute(t *testing.T) {
	for v, want := range map[string]bool{"5/1024 self": true, "0/1 other": true, "1024/1024 self": false, "3/4": false, "3/65537 self": false, "x/4 self": false} {
		if _, ok := keyseq.ParseRoute(v); ok != want {
			t.Errorf("%q: %v", v, ok)
		}
	}
}
