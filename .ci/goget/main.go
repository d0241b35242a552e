// A program outside frond's repository, built by .ci/run from a release
// resolved by version from a module proxy (scripts/release.sh --proxy), as a
// user's go get resolves it: the root module (a segment engine over the
// memory store), the client (snowflake IDs from the release's own frond
// serve, whose gRPC address is its argument), and each contrib module
// (GORM's plugin and ent's hook over that client). It prints what it got
// and exits non-zero on any error. (.ci is not part of ./...: Go skips
// directories whose names begin with a dot.)
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	frondent "github.com/frond-id/frond/contrib/ent"
	frondgorm "github.com/frond-id/frond/contrib/gorm"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/memstore"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "goget:", err)
		os.Exit(1)
	}
}

func run(server string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	store := memstore.New(nil)
	if _, err := store.CreateTag(ctx, frond.Tag{Name: "order", MaxID: 1, Step: 1000}); err != nil {
		return err
	}
	e, err := segment.New(store, segment.Settings{})
	if err != nil {
		return err
	}
	defer e.Close()
	ids, err := e.NextN(ctx, "order", 3)
	if err != nil {
		return err
	}

	c, err := client.New(client.Options{Servers: []string{server}})
	if err != nil {
		return err
	}
	defer c.Close()
	flakes, err := c.Snowflake(ctx, 2)
	if err != nil {
		return err
	}
	if len(flakes) != 2 || flakes[1] <= flakes[0] {
		return fmt.Errorf("snowflake IDs %v", flakes)
	}

	var src frond.IDSource = c
	plugin := frondgorm.New(src, frondgorm.Options{PrimaryKeys: true})
	hook := frondent.Hook(src, frondent.Options{})
	if plugin.Name() != "frond" || hook == nil {
		return fmt.Errorf("contrib: plugin %q, hook %v", plugin.Name(), hook)
	}
	fmt.Printf("segment IDs %v from the engine, snowflake IDs %v from %s, GORM plugin %q and ent hook ready\n", ids, flakes, server, plugin.Name())
	return nil
}
