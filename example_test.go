package frond_test

import (
	"context"
	"fmt"

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
