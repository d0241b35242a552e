package etcdconn

import (
	"errors"
	"fmt"
	"strings"
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

// Issue 43, item 8: the user of an etcd URL is etcd's authentication,
// never part of an endpoint: the client names its endpoints in its errors
// ("[http://user:pw@host]"), which reached /v1/info, /readyz, RESP, gRPC
// and the log. Every error of a client is masked with the URL's secrets.
func TestParse_User(t *testing.T) {
	u, err := Parse("etcd://frond:zq%23pw9@127.0.0.1:1,127.0.0.2:1?frond_prefix=/x/", "frond_prefix")
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "frond" || u.Password != "zq#pw9" || len(u.Endpoints) != 2 || u.Endpoints[0] != "http://127.0.0.1:1" {
		t.Fatalf("%+v", u)
	}
	for _, e := range u.Endpoints {
		if strings.Contains(e, "@") {
			t.Fatalf("an endpoint with the user: %q", e)
		}
	}
	if msg := u.Mask(fmt.Errorf("dial [http://frond:zq%%23pw9@127.0.0.1:1] zq#pw9")).Error(); strings.Contains(msg, "zq") {
		t.Fatalf("masked: %q", msg)
	}
	for _, bad := range []string{"etcd://:zqpw9@h:1", "etcd://frond:zq%zzpw9@h:1", "etcd://a@b@h:1,x@y:2"} {
		if _, err := Parse(bad); err == nil || strings.Contains(err.Error(), "zq") || strings.Contains(err.Error(), "pw9") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}
