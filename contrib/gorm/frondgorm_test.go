package frondgorm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	"github.com/frond-id/frond/client/clienttest"
	frondgorm "github.com/frond-id/frond/contrib/gorm"
	"github.com/frond-id/frond/internal/testenv"
)

type Order struct {
	ID     frond.ID `gorm:"primaryKey;autoIncrement:false" frond:"segment:order"`
	Number frond.ID `frond:"segment:invoice"` // not a key: filled too
	Event  int64    `frond:"snowflake"`
	Item   string
}

type Plain struct { // no frond tag: Options.PrimaryKeys
	ID   uint64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

type Line struct { // a composite key: PrimaryKeys leaves it alone
	OrderID int64 `gorm:"primaryKey;autoIncrement:false"`
	No      int   `gorm:"primaryKey;autoIncrement:false"`
	Item    string
}

// counting is an IDSource that counts the calls.
type counting struct {
	frond.IDSource
	calls atomic.Int64
}

func (c *counting) Next(ctx context.Context, tag string) (int64, error) {
	c.calls.Add(1)
	return c.IDSource.Next(ctx, tag)
}

func (c *counting) NextN(ctx context.Context, tag string, n int) ([]int64, error) {
	c.calls.Add(1)
	return c.IDSource.NextN(ctx, tag, n)
}

func (c *counting) Snowflake(ctx context.Context, n int) ([]int64, error) {
	c.calls.Add(1)
	return c.IDSource.Snowflake(ctx, n)
}

// databases opens the databases the tests run on: SQLite always (pure Go),
// MySQL and PostgreSQL from the CI's variables (FROND_TEST_REQUIRE=1 turns a
// missing one into a failure).
func databases(t testing.TB) map[string]gorm.Dialector {
	t.Helper()
	out := map[string]gorm.Dialector{"sqlite": sqlite.Open(filepath.Join(t.TempDir(), "ids.db") + "?_pragma=busy_timeout(5000)")}
	if raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL"); raw != "" {
		out["mysql"] = mysql.Open(mysqlDSN(t, raw))
	}
	if raw := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"); raw != "" {
		out["postgres"] = postgres.Open(raw)
	}
	return out
}

// mysqlDSN turns mysql://user:pass@host:port/db into the driver's DSN.
func mysqlDSN(t testing.TB, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)%s?parseTime=true", u.User.Username(), pass, u.Host, u.Path)
}

// open opens d with the plugin on src, the tables made anew.
func open(t testing.TB, d gorm.Dialector, src frond.IDSource, o frondgorm.Options, models ...any) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(d, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		t.Cleanup(func() { sqlDB.Close() })
	}
	if err := db.Use(frondgorm.New(src, o)); err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		if err := db.Migrator().DropTable(m); err != nil {
			t.Fatal(err)
		}
		if err := db.AutoMigrate(m); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// server starts frond in process with the tags the tests use, and its
// leasing client.
func server(t testing.TB) (*clienttest.Server, *client.Client) {
	srv := clienttest.Start(t)
	srv.CreateTag(t, "order", 1000)
	srv.CreateTag(t, "invoice", 1000)
	srv.CreateTag(t, "plains", 1000)
	c, err := client.New(client.Options{Servers: []string{srv.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func TestPlugin(t *testing.T) {
	for name, d := range databases(t) {
		t.Run(name, func(t *testing.T) {
			_, c := server(t)
			src := &counting{IDSource: c}
			db := open(t, d, src, frondgorm.Options{}, &Order{})

			one := Order{Item: "tea"}
			if err := db.Create(&one).Error; err != nil {
				t.Fatal(err)
			}
			if one.ID != 1 || one.Number != 1 || one.Event <= 0 {
				t.Fatalf("one row: %+v", one)
			}
			// A slice: one call per source for all its rows.
			src.calls.Store(0)
			batch := make([]Order, 25)
			for i := range batch {
				batch[i].Item = fmt.Sprint("row ", i)
			}
			batch[3].ID = 500_000 // set by the code: kept
			if err := db.Create(&batch).Error; err != nil {
				t.Fatal(err)
			}
			if n := src.calls.Load(); n != 3 {
				t.Fatalf("%d calls to frond for a slice of 25 rows and 3 sources", n)
			}
			if batch[0].ID != 2 || batch[3].ID != 500_000 || batch[24].ID != 25 || batch[24].Number != 26 {
				t.Fatalf("the slice's IDs: %v ... %v", batch[0], batch[24])
			}
			// Read back: the ID round-trips through the column, and goes to
			// JSON as a string.
			var got Order
			if err := db.First(&got, "item = ?", "row 24").Error; err != nil {
				t.Fatal(err)
			}
			if got.ID != 25 || got.Number != 26 {
				t.Fatalf("read back %+v", got)
			}
			if b, _ := json.Marshal(got); !strings.Contains(string(b), `"ID":"25"`) {
				t.Fatalf("JSON %s", b)
			}
			var count int64
			db.Model(&Order{}).Count(&count)
			if count != 26 {
				t.Fatalf("%d rows", count)
			}
		})
	}
}

// When frond cannot give the IDs, nothing is inserted and the error says
// why; a wrong struct tag is an error before any ID is taken.
func TestPlugin_Errors(t *testing.T) {
	type Ticket struct {
		ID   frond.ID `gorm:"primaryKey;autoIncrement:false" frond:"segment:no-such-tag"`
		Item string
	}
	type Wrong struct {
		ID   string `gorm:"primaryKey" frond:"segment:order"`
		Item string
	}
	type Typo struct {
		ID   frond.ID `gorm:"primaryKey;autoIncrement:false" frond:"segmnt:order"`
		Item string
	}
	for name, d := range databases(t) {
		t.Run(name, func(t *testing.T) {
			srv, c := server(t)
			db := open(t, d, c, frondgorm.Options{}, &Ticket{}, &Order{}, &Wrong{}, &Typo{})
			err := db.Create(&Ticket{Item: "x"}).Error
			if !errors.Is(err, frond.ErrTagNotFound) || !strings.Contains(err.Error(), `frond: 1 segment IDs of tag "no-such-tag" for table tickets`) || !strings.Contains(err.Error(), "nothing was inserted") {
				t.Fatalf("a missing tag: %v", err)
			}
			var n int64
			db.Model(&Ticket{}).Count(&n)
			if n != 0 {
				t.Fatalf("%d rows inserted", n)
			}
			if err := db.Create(&Wrong{Item: "x"}).Error; err == nil || !strings.Contains(err.Error(), "frond IDs are integers") {
				t.Fatalf("a string field: %v", err)
			}
			if err := db.Create(&Typo{Item: "x"}).Error; err == nil || !strings.Contains(err.Error(), `write frond:"segment:TAG" or frond:"snowflake"`) {
				t.Fatalf("a typo: %v", err)
			}
			// frond gone (its leases not yet taken): the insert fails, clearly.
			srv.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), 3e9)
			defer cancel()
			err = db.WithContext(ctx).Create(&Order{Item: "x"}).Error
			if err == nil || !strings.Contains(err.Error(), "frond: 1 segment IDs of tag \"order\"") {
				t.Fatalf("frond down: %v", err)
			}
		})
	}
}

// Options.PrimaryKeys: every zero integer primary key, with the tag
// TagFor names.
func TestPlugin_PrimaryKeys(t *testing.T) {
	for name, d := range databases(t) {
		t.Run(name, func(t *testing.T) {
			_, c := server(t)
			db := open(t, d, c, frondgorm.Options{PrimaryKeys: true}, &Plain{})
			rows := []Plain{{Name: "a"}, {Name: "b"}}
			if err := db.Create(&rows).Error; err != nil || rows[0].ID != 1 || rows[1].ID != 2 {
				t.Fatalf("%+v, %v", rows, err)
			}
			db = open(t, d, c, frondgorm.Options{PrimaryKeys: true, TagFor: func(string) string { return "order" }}, &Plain{}, &Line{})
			p := Plain{Name: "c"}
			if err := db.Create(&p).Error; err != nil || p.ID != 1 {
				t.Fatalf("%+v, %v", p, err)
			}
			// Line 0 of order 7 is a line number, not an ID to make up.
			l := Line{OrderID: 7, Item: "tea"}
			if err := db.Create(&l).Error; err != nil || l.OrderID != 7 || l.No != 0 {
				t.Fatalf("a composite key: %+v, %v", l, err)
			}
		})
	}
}

// Many goroutines inserting rows and slices at once, through one client:
// every row is there, every ID once (the primary key would refuse a
// duplicate, and the count would fall short).
func TestPlugin_Concurrent(t *testing.T) {
	for name, d := range databases(t) {
		t.Run(name, func(t *testing.T) {
			_, c := server(t)
			db := open(t, d, c, frondgorm.Options{}, &Order{})
			const workers, each = 8, 30
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						var err error
						if i%3 == 0 {
							err = db.Create(&[]Order{{Item: "a"}, {Item: "b"}, {Item: "c"}}).Error
						} else {
							err = db.Create(&Order{Item: fmt.Sprint(w, i)}).Error
						}
						if err != nil {
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
			var n, distinct int64
			db.Model(&Order{}).Count(&n)
			db.Model(&Order{}).Distinct("number").Count(&distinct)
			want := int64(workers * (each/3*3 + each - each/3))
			if n != want || distinct != want {
				t.Fatalf("%d rows, %d distinct numbers; want %d", n, distinct, want)
			}
		})
	}
}
