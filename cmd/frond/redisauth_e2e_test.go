package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/redisregistry"
	"github.com/frond-id/frond/store/redisstore"
)

// A Redis that refuses the URL's credentials (an ACL user that does not
// exist) says so, and where they go, from the segment store and the worker
// registry alike, with or without frond_allow_volatile: Redis's own
// "WRONGPASS invalid username-password pair" names neither, and the store
// took it for a server that hides its configuration ("does not say whether
// it persists data ... accept the risk with frond_allow_volatile=true").
func TestRedis_RefusedCredentialsExplained(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, allow := range []string{"true", "false"} {
		bad := *u
		bad.User = url.UserPassword("nobody", "wrong")
		q := bad.Query()
		q.Set("frond_allow_volatile", allow)
		bad.RawQuery = q.Encode()
		_, err := redisstore.Open(context.Background(), bad.String())
		if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "frond_allow_volatile") || strings.Contains(err.Error(), "wrong@") {
			t.Errorf("store, frond_allow_volatile=%s: %v", allow, err)
		}
		p, err := redisregistry.Open(bad.String(), registry.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Acquire(testenv.Ctx(t), 3)
		p.Close()
		if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "frond_allow_volatile") {
			t.Errorf("registry, frond_allow_volatile=%s: %v", allow, err)
		}
	}
}
