package frond_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	_ "modernc.org/sqlite"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/snowflake"
	"github.com/frond-id/frond/store/memstore"
)

// Segment IDs for a tag, Leaf style: the store hands out ranges, the engine
// serves them from memory.
func Example_segment() {
	ctx := context.Background()
	store := memstore.New(nil)
	store.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 2000})

	e, _ := segment.New(store, segment.Settings{})
	defer e.Close()
	id, _ := e.Next(ctx, "order")
	batch, _ := e.NextN(ctx, "order", 5)
	fmt.Println(id, batch[0].Start, batch[0].End)
	// Output: 1 2 7
}

// Snowflake IDs for worker 42 on the twitter (Leaf) layout.
func Example_snowflake() {
	g, _ := snowflake.New(snowflake.Settings{Node: 42})
	a, _ := g.Next()
	b, _ := g.Next()
	p, _ := g.Layout().Decompose(b)
	fmt.Println(b > a, p.Node)
	// Output: true 42
}

// A frond ID in a table and in JSON: it is stored as a BIGINT, scanned
// back, and sent to a browser as a string (JavaScript's numbers lose
// integers past 2^53).
func ExampleID() {
	db, err := sql.Open("sqlite", "file:example?mode=memory")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE orders (id BIGINT PRIMARY KEY, item TEXT NOT NULL)`)

	id := frond.ID(2124376161118060544) // from frond: client.Next, /v1/snowflake, ...
	if _, err := db.Exec(`INSERT INTO orders (id, item) VALUES (?, ?)`, id, "tea"); err != nil {
		panic(err)
	}
	var order struct {
		ID   frond.ID `json:"id"`
		Item string   `json:"item"`
	}
	if err := db.QueryRow(`SELECT id, item FROM orders WHERE id = ?`, id).Scan(&order.ID, &order.Item); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(order) // {"id":"2124376161118060544","item":"tea"}
	fmt.Println(string(b))
	fmt.Println(order.ID.Base62())
	// Output:
	// {"id":"2124376161118060544","item":"tea"}
	// 2WvfFcwgYuO
}

// The README's snowflake snippet ("The engines, as a library"), word for
// word (TestDocs_GoSnippetsAreCode).
func Example_readmeSnowflake() {
	g, err := snowflake.New(snowflake.Settings{Node: 42}) // zero value: twitter/Leaf layout
	id, err := g.Next()                                   // or g.NextN(n), g.AppendN(dst, n)
	parts, err := g.Layout().Decompose(id)                // time, node, sequence
	fmt.Println(parts.Node, err)
	// Output: 42 <nil>
}

// The README's segment snippet, word for word: it creates the tag it asks
// for, on the memory store.
func Example_readmeSegment() {
	ctx := context.Background()
	store := memstore.New(nil)                                                     // or sqlstore.Open, redisstore.Open, ...: any frond.SegmentStore
	_, err := store.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 1000}) // once, as frond tag create does
	e, err := segment.New(store, segment.Settings{})
	id, err := e.Next(ctx, "order")           // waits on the store only if both buffers are empty
	ranges, err := e.NextN(ctx, "order", 500) // crosses segment boundaries; []frond.Range
	buf, err := e.Buffer("order")             // keep the handle: buf.Next(ctx) skips the tag lookup
	stats := e.Stats()                        // per tag: both buffers, step, loads, rate, horizon
	defer e.Close()
	next, _ := buf.Next(ctx)
	fmt.Println(id, ranges[0].Start, ranges[len(ranges)-1].End, next, len(stats), err)
	// Output: 1 2 502 502 1 <nil>
}
