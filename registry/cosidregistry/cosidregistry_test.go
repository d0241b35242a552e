package cosidregistry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/cosidregistry"
	"github.com/frond-id/frond/registry/registrytest"
)

// Real-server tests: FROND_TEST_MYSQL_URL (MySQL or MariaDB) and
// FROND_TEST_POSTGRES_URL. They skip when unset, and fail instead when
// FROND_TEST_REQUIRE=1 (CI).

type target struct{ name, url, down string }

func targets(t *testing.T) []target {
	return []target{
		{"mysql", testenv.Getenv(t, "FROND_TEST_MYSQL_URL"), "mysql://frond:frond@127.0.0.1:1/frond_test"},
		{"postgres", testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"), "postgres://frond:frond@127.0.0.1:1/frond_test?sslmode=disable"},
	}
}

func with(rawURL, params string) string {
	if strings.Contains(rawURL, "?") {
		return rawURL + "&" + params
	}
	return rawURL + "?" + params
}

// raw is a plain pool on the test database, to look at and change rows.
func raw(t testing.TB, rawURL string) *sqldb.DB {
	t.Helper()
	p, err := sqldb.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: 5 * time.Second, MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The suite's recycle_after (10 minutes by default) needs a safe guard of
// at least 12.5 minutes, and some of its tests an hour (recycle_after is at most four fifths of it).
const testSafeGuard = "2h"

func TestRegistry_Conformance(t *testing.T) {
	for _, db := range targets(t) {
		t.Run(db.name, func(t *testing.T) {
			sql := raw(t, db.url)
			open := func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
				u := db.url
				if down {
					u = db.down
				}
				r, err := cosidregistry.Open(with("cosid+"+u, "frond_timeout=3s&frond_safe_guard="+testSafeGuard+"&frond_namespace="+ns), o)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			registrytest.Run(t, registrytest.Config{
				Open:            open,
				Recycles:        true,
				SameIDOnRestart: true,
				Layout:          cosidregistry.Layout(),
				// A CosId application takes the ID (its revert-and-take
				// UPDATE, as on a row whose guard it saw lapse).
				Lose: func(t *testing.T, wr frond.WorkerRegistry) {
					h := wr.(*registry.Protocol).Held()
					if h == nil {
						t.Fatal("no hold")
					}
					res, err := sql.Exec(sql.Kind.Rebind("UPDATE cosid_machine SET instance_id = ?, last_timestamp = ? WHERE instance_id LIKE ?"),
						"10.9.9.9:8080", time.Now().UnixMilli(), "%#"+h.Token)
					if err != nil {
						t.Fatal(err)
					}
					if n, _ := res.RowsAffected(); n != 1 {
						t.Fatalf("%d rows of the claim", n)
					}
				},
			})
		})
	}
}

// redisURL is the registry's URL on the test Redis, which keeps nothing on
// disk.
func redisURL(t *testing.T) string {
	return with("cosid+"+testenv.Getenv(t, "FROND_TEST_REDIS_URL"), "frond_allow_volatile=true")
}

func redisClient(t *testing.T) *goredis.Client {
	opts, err := goredis.ParseURL(testenv.Getenv(t, "FROND_TEST_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// CosId's Redis machine layout through the conformance suite.
func TestRedis_Conformance(t *testing.T) {
	c := redisClient(t)
	registrytest.Run(t, registrytest.Config{
		Open: func(t *testing.T, ns string, o registry.Options, down bool) frond.WorkerRegistry {
			u := redisURL(t)
			if down {
				u = "cosid+redis://127.0.0.1:1/0?frond_allow_volatile=true"
			}
			r, err := cosidregistry.Open(with(u, "frond_timeout=3s&frond_safe_guard="+testSafeGuard+"&frond_namespace="+ns), o)
			if err != nil {
				t.Fatal(err)
			}
			return r
		},
		Recycles:        true,
		SameIDOnRestart: true,
		Layout:          cosidregistry.Layout(),
		// A CosId application takes the ID: its field replaces the claim's
		// (moveRecyclableToCurrent).
		Lose: func(t *testing.T, wr frond.WorkerRegistry) {
			h := wr.(*registry.Protocol).Held()
			if h == nil {
				t.Fatal("no hold")
			}
			ctx := testenv.Ctx(t)
			iter := c.Scan(ctx, 0, "cosid:{*}:itc_idx", 1000).Iterator()
			for iter.Next(ctx) {
				fields, err := c.HGetAll(ctx, iter.Val()).Result()
				if err != nil {
					t.Fatal(err)
				}
				for f, v := range fields {
					if strings.HasSuffix(f, "#"+h.Token) {
						c.HDel(ctx, iter.Val(), f)
						c.HSet(ctx, iter.Val(), "10.9.9.9:8080", v)
						return
					}
				}
			}
			t.Fatal("the claim's field was not found")
		},
	})
}

// Open refuses what would let CosId's applications and frond's nodes meet:
// a recycle_after or lease_ttl past four fifths of the safe guard, and URLs
// that are not a CosId registry's.
func TestOpen_Refuses(t *testing.T) {
	for _, c := range []struct {
		url string
		o   registry.Options
	}{
		{"cosid+mysql://u@h/db", registry.Options{}}, // recycle_after 10m > 4m
		{"cosid+mysql://u@h/db?frond_safe_guard=10m", registry.Options{RecycleAfter: 9 * time.Minute}},
		{"cosid+mysql://u@h/db?frond_safe_guard=10m", registry.Options{RecycleAfter: time.Minute, LeaseTTL: 9 * time.Minute}},
		{"mysql://u@h/db", registry.Options{RecycleAfter: time.Minute}},
		{"cosid+sqlite:///tmp/x.db", registry.Options{RecycleAfter: time.Minute}},
		{"cosid+mysql://u@h/db?frond_bogus=1", registry.Options{RecycleAfter: time.Minute}},
		{"cosid+mysql://u@h/db?frond_namespace=a%20b", registry.Options{RecycleAfter: time.Minute}},
		{"cosid+mysql://u@h/db?frond_safe_guard=soon", registry.Options{RecycleAfter: time.Minute}},
	} {
		if _, err := cosidregistry.Open(c.url, c.o); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Open(%q, recycle_after %v, lease_ttl %v) = %v, want ErrInvalidArgument", c.url, c.o.RecycleAfter, c.o.LeaseTTL, err)
		}
	}
	r, err := cosidregistry.Open("cosid+postgres://u@h/db?frond_safe_guard=10m", registry.Options{RecycleAfter: 8 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
