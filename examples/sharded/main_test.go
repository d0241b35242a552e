package main

import (
	"database/sql"
	"fmt"
	"net/url"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clienttest"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/storetest/dbtest"
)

// The example end to end: a frond server, the Go client, two MariaDB
// databases as the shards. Every order lies on its user's shard (a join on
// each shard finds every order's user), every user has all their orders
// there, and both shards hold rows.
func TestSharded_OrdersOnTheirUsersShard(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	ctx := testenv.Ctx(t)
	srv := clienttest.Start(t)
	for _, tag := range []string{"users", "orders"} {
		if _, err := srv.Service.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1, Step: 100, Mapping: frond.ShardMapping(1)}); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := client.New(client.Options{Servers: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ids.Close()
	var shards []*sql.DB
	for range 2 {
		db, err := sql.Open("mysql", dsn(t, dbtest.FreshDatabase(t, raw)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		shards = append(shards, db)
	}
	if err := Schema(ctx, shards); err != nil {
		t.Fatal(err)
	}
	const users, each = 60, 4
	if err := Populate(ctx, ids, shards, users, each); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, db := range shards {
		var u, o, stray, short int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM orders),
			(SELECT COUNT(*) FROM orders o LEFT JOIN users u ON u.id = o.user_id WHERE u.id IS NULL),
			(SELECT COUNT(*) FROM users u WHERE (SELECT COUNT(*) FROM orders o WHERE o.user_id = u.id) <> ?)`, each).Scan(&u, &o, &stray, &short); err != nil {
			t.Fatal(err)
		}
		t.Logf("shard %d: %d users, %d orders", i, u, o)
		if stray != 0 || short != 0 {
			t.Fatalf("shard %d: %d orders whose user is on the other shard, %d users without all their %d orders here", i, stray, short, each)
		}
		if u == 0 || o != u*each {
			t.Fatalf("shard %d: %d users and %d orders: want rows on both shards, %d orders each", i, u, o, each)
		}
		var wrong int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM users WHERE id % 2 <> ?) + (SELECT COUNT(*) FROM orders WHERE id % 2 <> ?)`, i, i).Scan(&wrong); err != nil || wrong != 0 {
			t.Fatalf("shard %d: %d rows whose id %% 2 names the other shard (%v)", i, wrong, err)
		}
		// The key's shard: the documented hash, the same in every client.
		rows, err := db.QueryContext(ctx, `SELECT name FROM users`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var key string
			rows.Scan(&key)
			if frond.ShardOf(key, 1) != int64(i) {
				t.Fatalf("user %s on shard %d: its key's shard is %d", key, i, frond.ShardOf(key, 1))
			}
		}
		rows.Close()
		total += u
	}
	if total != users {
		t.Fatalf("%d users in all, want %d", total, users)
	}
}

// dsn is go-sql-driver's DSN of a mysql:// URL (the tests' form).
func dsn(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pass, u.Host, u.Path)
}
