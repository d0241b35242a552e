package etcdconn

import (
	"errors"
	"testing"

	"github.com/frond-id/frond"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379,h:1?frond_prefix=/x/&frond_timeout=2s", "etcd://", "etcd://a:1?frond_nope=1", "etcd://a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s, "frond_prefix", "frond_timeout")
		if err != nil {
			if !errors.Is(err, frond.ErrInvalidArgument) {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			return
		}
		if len(u.Endpoints) == 0 {
			t.Fatalf("Parse(%q) accepted no endpoints: %+v", s, u)
		}
	})
}
