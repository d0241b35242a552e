package frondent_test

import (
	"context"

	"entgo.io/ent/dialect"

	"github.com/frond-id/frond/client"
	frondent "github.com/frond-id/frond/contrib/ent"
	ent "github.com/frond-id/frond/contrib/ent/internal/testent"
)

// useEnt is docs/integrations.md's ent snippet, word for word (the root
// package's TestDocs_GoSnippetsAreCode checks that it is here), over the
// client ent generated from the tests' schema (the docs' schema snippet is
// internal/testent/schema): compiled by go test, not run (it needs its
// servers).
func useEnt(ctx context.Context, dsn string) error {
	ids, err := client.New(client.Options{Servers: []string{"id-1:9090"}})
	db, err := ent.Open(dialect.MySQL, dsn)
	db.Use(frondent.Hook(ids, frondent.Options{
		Tags:      map[string]string{"Order": "order"}, // else the type's name in lower case
		Snowflake: []string{"Event"},                   // these types take snowflake IDs
	}))
	o, err := db.Order.Create().SetItem("tea").Save(ctx) // o.ID from tag "order"
	_ = o
	return err
}

var _ = useEnt
