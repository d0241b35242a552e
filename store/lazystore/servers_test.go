package lazystore_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/lazystore"
	"github.com/frond-id/frond/store/redisstore"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
)

func param(raw, p string) string {
	if strings.Contains(raw, "?") {
		return raw + "&" + p
	}
	return raw + "?" + p
}

func withPassword(t *testing.T, raw, pw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

func withDatabase(t *testing.T, raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u.String()
}

// What the real stores' Open returns when the server is unreachable (a
// closed port, a network that swallows packets) is an outage, retried; a
// server's refusal (a wrong password, an unknown database) is not, and the
// node refuses to start.
func TestUnreachable_RealStores(t *testing.T) {
	type opener func(ctx context.Context, raw string) error
	sqlOpen := func(ctx context.Context, raw string) error {
		s, err := sqlstore.Open(ctx, param(raw, "frond_timeout=1s"), sqlstore.Options{})
		if err == nil {
			s.Close()
		}
		return err
	}
	redisOpen := func(ctx context.Context, raw string) error {
		s, err := redisstore.Open(ctx, param(raw, "frond_timeout=1s&frond_allow_volatile=true"))
		if err == nil {
			s.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name, env, port string
		open            opener
		sql             bool
	}{
		{"mysql", "FROND_TEST_MYSQL_URL", "3306", sqlOpen, true},
		{"postgres", "FROND_TEST_POSTGRES_URL", "5432", sqlOpen, true},
		{"redis", "FROND_TEST_REDIS_URL", "6379", redisOpen, false}, // the test Redis has no password
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := testenv.Getenv(t, tc.env)
			check := func(what, raw string, want bool) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
				defer cancel()
				err := tc.open(ctx, raw)
				if err == nil || lazystore.Unreachable(err) != want {
					t.Errorf("%s: Unreachable(%v) = %v, want %v", what, err, !want, want)
				}
				t.Logf("%s: %v", what, err)
			}
			check("closed port", storetest.WithHost(t, raw, "127.0.0.1:1"), true)
			p := storetest.StartProxy(t, storetest.HostOf(t, raw, tc.port))
			p.Cut()
			check("cut network", storetest.WithHost(t, raw, p.Addr()), true)
			if tc.sql {
				check("unknown database", withDatabase(t, raw, "frond_no_such_database"), false)
			}
			if tc.name == "mysql" { // the test PostgreSQL trusts local connections
				check("wrong password", withPassword(t, raw, "not-the-password"), false)
			}
		})
	}
}
