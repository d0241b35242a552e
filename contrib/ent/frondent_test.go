package frondent_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "modernc.org/sqlite"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clienttest"
	frondent "github.com/frond-id/frond/contrib/ent"
	"github.com/frond-id/frond/contrib/ent/internal/testent"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/storetest/dbtest"
)

// databases opens a database of the test's own on each server: SQLite
// always (pure Go), MySQL and PostgreSQL from the CI's variables
// (FROND_TEST_REQUIRE=1 turns a missing one into a failure).
func databases(t testing.TB) map[string]func() *entsql.Driver {
	t.Helper()
	out := map[string]func() *entsql.Driver{
		"sqlite": func() *entsql.Driver {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "ids.db")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return entsql.OpenDB(dialect.SQLite, db)
		},
	}
	if raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL"); raw != "" {
		out["mysql"] = func() *entsql.Driver { return open(t, dbtest.FreshDatabase(t, raw), dialect.MySQL) }
	}
	if raw := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"); raw != "" {
		out["postgres"] = func() *entsql.Driver { return open(t, dbtest.FreshDatabase(t, raw), dialect.Postgres) }
	}
	return out
}

// open opens a database URL with frond's own opener (internal/sqldb: the
// drivers' DSNs from frond's URLs), for ent.
func open(t testing.TB, rawURL, dialectName string) *entsql.Driver {
	t.Helper()
	p, err := sqldb.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return entsql.OpenDB(dialectName, db.DB)
}

// setup starts frond in process and gives an ent client on drv the hook,
// its schema created.
func setup(t *testing.T, drv *entsql.Driver) (*clienttest.Server, *testent.Client) {
	t.Helper()
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 1000)
	src, err := client.New(client.Options{Servers: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	db := testent.NewClient(testent.Driver(drv))
	db.Use(frondent.Hook(src, frondent.Options{Snowflake: []string{"Event"}}))
	if err := db.Schema.Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	return srv, db
}

func TestHook(t *testing.T) {
	for name, drv := range databases(t) {
		t.Run(name, func(t *testing.T) {
			d := drv()
			_, db := setup(t, d)
			ctx := context.Background()
			o, err := db.Order.Create().SetItem("tea").Save(ctx)
			if err != nil || o.ID != 1 {
				t.Fatalf("an order: %+v, %v", o, err)
			}
			kept, err := db.Order.Create().SetID(500_000).SetItem("set by the code").Save(ctx)
			if err != nil || kept.ID != 500_000 {
				t.Fatalf("an ID set by the code: %+v, %v", kept, err)
			}
			bulk, err := db.Order.CreateBulk(db.Order.Create().SetItem("a"), db.Order.Create().SetItem("b")).Save(ctx)
			if err != nil || len(bulk) != 2 || bulk[0].ID != 2 || bulk[1].ID != 3 {
				t.Fatalf("a bulk create: %v, %v", bulk, err)
			}
			e, err := db.Event.Create().SetName("login").Save(ctx)
			if err != nil || e.ID < 1<<22 {
				t.Fatalf("a snowflake ID: %+v, %v", e, err)
			}
			// ent's own IDs are left alone.
			n, err := db.Note.Create().SetText("hello").Save(ctx)
			if err != nil || n.ID != 1 {
				t.Fatalf("an auto-increment ID: %+v, %v", n, err)
			}
			back, err := db.Order.Get(ctx, 3)
			if err != nil || back.Item != "b" {
				t.Fatalf("read back: %+v, %v", back, err)
			}
			// The column holds what frond.ID scans.
			var id frond.ID
			if err := d.DB().QueryRowContext(ctx, "SELECT id FROM orders WHERE item = 'b'").Scan(&id); err != nil || id != 3 {
				t.Fatalf("scan into frond.ID: %v, %v", id, err)
			}
		})
	}
}

// When frond cannot give the ID, Save fails with its error and nothing is
// inserted.
func TestHook_Errors(t *testing.T) {
	for name, drv := range databases(t) {
		t.Run(name, func(t *testing.T) {
			d := drv()
			srv, db := setup(t, d)
			ctx := context.Background()
			src, _ := client.New(client.Options{Servers: []string{srv.Addr}})
			defer src.Close()
			db2 := testent.NewClient(testent.Driver(d))
			db2.Use(frondent.Hook(src, frondent.Options{Tags: map[string]string{"Order": "no-such-tag"}}))
			_, err := db2.Order.Create().SetItem("x").Save(ctx)
			if !errors.Is(err, frond.ErrTagNotFound) || !strings.Contains(err.Error(), `frond: the ID of a new Order (a segment ID of tag "no-such-tag")`) {
				t.Fatalf("a missing tag: %v", err)
			}
			if n, _ := db.Order.Query().Count(ctx); n != 0 {
				t.Fatalf("%d orders inserted", n)
			}
			srv.Stop()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := db.Order.Create().SetItem("y").Save(cctx); err == nil || !strings.Contains(err.Error(), "frond: the ID of a new Order") {
				t.Fatalf("frond down: %v", err)
			}
		})
	}
}

// Goroutines creating orders at once: every ID once.
func TestHook_Concurrent(t *testing.T) {
	for name, drv := range databases(t) {
		t.Run(name, func(t *testing.T) {
			_, db := setup(t, drv())
			ctx := context.Background()
			const workers, each = 8, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Go(func() {
					for range each {
						if _, err := db.Order.Create().SetItem("x").Save(ctx); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			ids, err := db.Order.Query().IDs(ctx)
			seen := map[int64]bool{}
			for _, id := range ids {
				seen[id] = true
			}
			if err != nil || len(ids) != workers*each || len(seen) != len(ids) {
				t.Fatalf("%d orders, %d distinct IDs, %v", len(ids), len(seen), err)
			}
		})
	}
}

// Issue 44, item 11: ent made IDMixin's key an identity on PostgreSQL
// (AUTO_INCREMENT on MySQL) although frond supplies the IDs, and its
// migration failed on a table GORM or sqlc had created with a plain BIGINT
// key ("unexpected attribute change (expect IDENTITY)"). The key is
// declared not incremental: ent migrates such a table, creates none of its
// own, and the IDs still come from frond.
func TestIDMixin_NotIncremental(t *testing.T) {
	for name, drv := range databases(t) {
		t.Run(name, func(t *testing.T) {
			d := drv()
			ctx := context.Background()
			// The table as GORM creates it for the same model.
			if _, err := d.DB().ExecContext(ctx, `CREATE TABLE orders (id BIGINT NOT NULL PRIMARY KEY, item VARCHAR(255) NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			_, db := setup(t, d) // ent's migration
			o, err := db.Order.Create().SetItem("tea").Save(ctx)
			if err != nil || o.ID != 1 {
				t.Fatalf("an order on the table ent migrated: %+v, %v", o, err)
			}
			// The events table is ent's own: no identity, no AUTO_INCREMENT.
			var q string
			switch name {
			case "postgres":
				q = `SELECT COUNT(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'id' AND (is_identity = 'YES' OR column_default IS NOT NULL)`
			case "mysql":
				q = `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'events' AND column_name = 'id' AND extra LIKE '%auto_increment%'`
			default:
				return // SQLite: an INTEGER PRIMARY KEY is the rowid whatever ent says
			}
			var n int
			if err := d.DB().QueryRowContext(ctx, q).Scan(&n); err != nil || n != 0 {
				t.Fatalf("the events table's id is incremental (%d), %v", n, err)
			}
		})
	}
}
