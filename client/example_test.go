package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clientmetrics"
	"github.com/frond-id/frond/client/clienttest"
)

// The snippets of docs/client.md, word for word (TestDocs_GoSnippetsAreCode
// in the root package checks that they are here): compiled by go test;
// those that need a server of their own are not run.

// docs/client.md, the first snippet.
func useTheClient(ctx context.Context) error {
	c, err := client.New(client.Options{Servers: []string{"id-1:9090", "id-2:9090"}})
	if err != nil {
		return err
	}
	defer c.Close()

	id, err := c.Next(ctx, "order")        // from the lease: no network call
	ids, err := c.NextN(ctx, "order", 100) // a batch, in order
	rs, err := c.NextRanges(ctx, "order", 1_000_000)
	tag, _ := c.Tag("order") // a handle: skips the tag lookup
	id, err = tag.Next(ctx)

	sf, err := c.Snowflake(ctx, 10)
	us, err := c.UUIDs(ctx, 7, 3)                         // versions 1, 4, 6 and 7
	u5, err := c.NameUUID(ctx, 5, "dns", "example.com")   // versions 3 and 5: always the same
	ts, err := c.TypeIDs(ctx, "user", 2)                  // user_01h455vb4pex5vsknk084sn02q, ...
	fs, err := c.SnowflakeStrings(ctx, "friendly", "", 1) // 20261126081530123-5-16
	ps, err := c.Serials(ctx, "pay", 1)
	fmt.Println(id, ids, rs, sf, us, u5, ts, fs, ps)
	return err
}

// docs/client.md, a tag whose form is text, and the metrics.
func textAndMetrics(ctx context.Context, c *client.Client) error {
	ids, err := c.NextStrings(ctx, "order", 3) // ["3kP0fQ1x2Zb", ...] in the tag's form
	prometheus.MustRegister(clientmetrics.New(c))
	fmt.Println(ids)
	return err
}

// docs/client.md, a tag with shard bits.
func geneIDs(ctx context.Context, c *client.Client) error {
	id, err := c.NextForKey(ctx, "orders", "user-42") // id % 16 == 13 with shard:4: user-42's shard
	id, err = c.NextShard(ctx, "orders", 5)           // id % 16 == 5
	fmt.Println(id)
	return err
}

var _, _, _ = useTheClient, textAndMetrics, geneIDs

// docs/client.md, "Testing your code": run.
func TestDocs_Clienttest(t *testing.T) {
	srv := clienttest.Start(t) // a real frond server in process, memory store
	srv.CreateTag(t, "order", 1000)
	c, _ := client.New(client.Options{Servers: []string{srv.Addr}})
	defer c.Close()
	if id, err := c.Next(context.Background(), "order"); err != nil || id != 1 {
		t.Fatalf("the first ID of order: %d, %v", id, err)
	}
}
