package sqlc_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	_ "modernc.org/sqlite"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/examples/sqlc/db"
)

// createOrder is docs/integrations.md's sqlc snippet, word for word
// (TestDocs_GoSnippetsAreCode): compiled by go test.
func createOrder(ctx context.Context, ids *client.Client, q *db.Queries) error {
	n, err := ids.Next(ctx, "order") // ids: a *client.Client
	if err != nil {
		return err // frond unreachable and the lease used up: no insert
	}
	err = q.CreateOrder(ctx, db.CreateOrderParams{ID: frond.ID(n), Item: "tea"})
	return err
}

var _ = createOrder

// The key column is a frond.ID in sqlc's generated code: the insert takes
// one, the read gives one back, and JSON carries it as a string.
func Example() {
	ctx := context.Background()
	conn, err := sql.Open("sqlite", "file:sqlc-example?mode=memory")
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`CREATE TABLE orders (id BIGINT PRIMARY KEY, item TEXT NOT NULL)`); err != nil {
		panic(err)
	}
	q := db.New(conn)
	id := frond.ID(2124376161118060544) // from an IDSource: ids.Next(ctx, "order")
	if err := q.CreateOrder(ctx, db.CreateOrderParams{ID: id, Item: "tea"}); err != nil {
		panic(err)
	}
	o, err := q.GetOrder(ctx, id)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(o)
	fmt.Println(string(b))
	// Output: {"ID":"2124376161118060544","Item":"tea"}
}
