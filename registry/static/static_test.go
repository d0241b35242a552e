package static

import (
	"errors"
	"testing"

	"github.com/frond-id/frond"
)

func TestNode(t *testing.T) {
	for _, c := range []struct {
		spec, host string
		want       int64
	}{
		{"static:7", "anything", 7},
		{"static:0", "", 0},
		{"static:ordinal", "frond-3", 3},
		{"static:ordinal", "my-frond-set-12", 12},
		{"static:ordinal+100", "frond-3", 103},
	} {
		if got, err := Node(c.spec, c.host); err != nil || got != c.want {
			t.Errorf("Node(%q, %q) = %d, %v; want %d", c.spec, c.host, got, err, c.want)
		}
	}
	for _, c := range [][2]string{
		{"static:", "h"}, {"static:-1", "h"}, {"static:x", "h"}, {"static:7+1", "h"},
		{"static:ordinal", "frond"}, {"static:ordinal", "frond-"}, {"static:ordinal", "frond-x"},
		{"static:ordinal+-1", "frond-1"}, {"static:ordinal+y", "frond-1"}, {"file", "frond-1"},
	} {
		if _, err := Node(c[0], c[1]); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Node(%q, %q) = %v, want ErrInvalidArgument", c[0], c[1], err)
		}
	}
}

func FuzzNode(f *testing.F) {
	f.Add("static:ordinal+5", "frond-2")
	f.Add("static:12", "")
	f.Fuzz(func(t *testing.T, spec, host string) {
		n, err := Node(spec, host)
		if err == nil && n < 0 {
			t.Fatalf("Node(%q, %q) = %d", spec, host, n)
		}
	})
}
