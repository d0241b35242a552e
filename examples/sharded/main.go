// Command sharded is an example of gene IDs (docs/kinds.md#shard-bits-gene-ids):
// users and their orders on two MariaDB (or MySQL) databases, the shards,
// each row routed by its ID alone, id % 2, with no lookup table.
//
// The tags users and orders have one shard bit (frond tag create users
// --mapping shard:1, the same for orders). A user's ID and each of their
// orders' IDs come from the Go client's NextForKey with the user's key: the
// shard of the key (frond.ShardOf, the low bit of its hash) is the low bit
// of every one of them, so the user's row and their orders' rows land on one
// shard, and a join of a user and their orders never leaves it.
//
//	frond tag create users --mapping shard:1
//	frond tag create orders --mapping shard:1
//	go run ./examples/sharded -frond localhost:9090 \
//	    -shard 'root@tcp(127.0.0.1:3306)/shop_0' -shard 'root@tcp(127.0.0.1:3306)/shop_1' -users 100
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	_ "github.com/go-sql-driver/mysql"

	"github.com/frond-id/frond/client"
)

// IDs is what the example takes from frond: the next ID of a tag with
// shard bits on a key's shard (*client.Client's NextForKey).
type IDs interface {
	NextForKey(ctx context.Context, tag, key string) (int64, error)
}

// Shard routes a row by its ID alone: id % len(shards).
func Shard(shards []*sql.DB, id int64) *sql.DB { return shards[id%int64(len(shards))] }

// Schema creates the tables on every shard.
func Schema(ctx context.Context, shards []*sql.DB) error {
	for _, db := range shards {
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS users (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, item VARCHAR(64) NOT NULL, KEY (user_id))`,
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
	}
	return nil
}

// Populate creates users users, each with ordersEach orders: every row on
// the shard its ID names.
func Populate(ctx context.Context, ids IDs, shards []*sql.DB, users, ordersEach int) error {
	for u := range users {
		key := fmt.Sprintf("user-%d", u) // the sharding key: a login, a tenant, a shop
		userID, err := ids.NextForKey(ctx, "users", key)
		if err != nil {
			return err
		}
		if _, err := Shard(shards, userID).ExecContext(ctx, `INSERT INTO users (id, name) VALUES (?, ?)`, userID, key); err != nil {
			return err
		}
		for o := range ordersEach {
			orderID, err := ids.NextForKey(ctx, "orders", key) // the user's shard, from the key alone
			if err != nil {
				return err
			}
			_, err = Shard(shards, orderID).ExecContext(ctx, `INSERT INTO orders (id, user_id, item) VALUES (?, ?, ?)`,
				orderID, userID, fmt.Sprintf("item-%d", o))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

type shardFlags []string

func (s *shardFlags) String() string     { return strings.Join(*s, ",") }
func (s *shardFlags) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var dsns shardFlags
	servers := flag.String("frond", "localhost:9090", "frond servers' gRPC addresses, comma-separated")
	users := flag.Int("users", 100, "users to create")
	orders := flag.Int("orders", 3, "orders per user")
	flag.Var(&dsns, "shard", "a shard's database (go-sql-driver DSN), once per shard: two for id % 2")
	flag.Parse()
	if len(dsns) != 2 {
		fmt.Fprintln(os.Stderr, "give two -shard databases: with one shard bit, id % 2 names one of them")
		os.Exit(2)
	}
	ctx := context.Background()
	ids, err := client.New(client.Options{Servers: strings.Split(*servers, ",")})
	if err != nil {
		log.Fatal(err)
	}
	defer ids.Close()
	var shards []*sql.DB
	for _, dsn := range dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			log.Fatal(err)
		}
		defer db.Close()
		shards = append(shards, db)
	}
	if err := Schema(ctx, shards); err != nil {
		log.Fatal(err)
	}
	if err := Populate(ctx, ids, shards, *users, *orders); err != nil {
		log.Fatal(err)
	}
	for i, db := range shards {
		var u, o int
		db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM users), (SELECT COUNT(*) FROM orders)`).Scan(&u, &o)
		fmt.Printf("shard %d: %d users, %d orders\n", i, u, o)
	}
}
