// Package dbtest gives tests databases of their own on the CI's servers:
// a fresh database per test (FreshDatabase), and a placed set of stores
// (PlacedSet). It is apart from storetest so that code importing storetest
// (clienttest, the contrib modules' tests) does not link an SQL driver.
package dbtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/sqldb"
)

// FreshDatabase creates a database of t's own on the server of rawURL
// (MySQL, MariaDB or PostgreSQL), drops it when t ends, and returns its
// URL. Tests that change what is the whole store's (its place in a set of
// stores) use one: the shared test database is used by other packages'
// tests at the same time. The user needs the right to create databases
// named frond_t_* (.ci/services.sh grants it).
func FreshDatabase(t testing.TB, rawURL string) string {
	t.Helper()
	p, err := sqldb.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: 10 * time.Second, MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("frond_t_%d_%d", time.Now().UnixNano()%1e12, rand.IntN(1e6))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("create a database of the test's own on %s: %v (the user needs the right to create databases frond_t_*: see .ci/services.sh)", db.Where, err)
	}
	t.Cleanup(func() {
		defer db.Close()
		drop := "DROP DATABASE IF EXISTS " + name
		if p.Kind == sqldb.Postgres {
			drop += " WITH (FORCE)"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, drop); err != nil {
			t.Errorf("drop the test's database %s: %v", name, err)
		}
	})
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
