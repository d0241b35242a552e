package sqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
	_ "github.com/go-sql-driver/mysql"
)

// mysqlDB opens the database of a mysql:// URL with the driver itself.
func mysqlDB(t *testing.T, raw string) *sql.DB {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pass, u.Host, u.Path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lockDatabase holds a named lock on the server until the test ends:
// FROND_TEST_MYSQL_URL_B is shared with cmd/frond's Leaf drop-in test,
// which drops and creates leaf_alloc too, in a test binary that may run at
// the same time.
func lockDatabase(t *testing.T, db *sql.DB) {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(context.Background(), "SELECT GET_LOCK('frond_test_b', 120)").Scan(&got); err != nil || got.Int64 != 1 {
		conn.Close()
		t.Fatalf("GET_LOCK: %v, %v", got, err)
	}
	t.Cleanup(func() {
		conn.ExecContext(context.Background(), "DO RELEASE_LOCK('frond_test_b')")
		conn.Close()
	})
}

func bizTagCollation(t *testing.T, db *sql.DB) string {
	t.Helper()
	var coll sql.NullString
	if err := db.QueryRow(`SELECT COLLATION_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leaf_alloc' AND COLUMN_NAME = 'biz_tag'`).Scan(&coll); err != nil {
		t.Fatal(err)
	}
	return coll.String
}

// The table frond creates on MySQL/MariaDB keeps tags that differ only in
// case apart, as every other store does; a table created by Leaf's script
// (the server's case-insensitive default) is used as it is, with a warning
// in the log and in Warnings.
func TestMySQL_TagCase(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL_B")
	db := mysqlDB(t, raw)
	lockDatabase(t, db)
	ctx := context.Background()
	open := func(t *testing.T) (*sqlstore.Store, string) {
		t.Helper()
		var logs bytes.Buffer
		s, err := sqlstore.Open(ctx, raw, sqlstore.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, logs.String()
	}

	t.Run("CreatedByFrond", func(t *testing.T) {
		if _, err := db.Exec("DROP TABLE IF EXISTS leaf_alloc"); err != nil {
			t.Fatal(err)
		}
		s, logs := open(t)
		if coll := bizTagCollation(t, db); coll != "utf8mb4_bin" {
			t.Fatalf("frond created biz_tag with collation %q, want utf8mb4_bin", coll)
		}
		if logs != "" || len(s.Warnings()) != 0 {
			t.Fatalf("logs %q, warnings %v", logs, s.Warnings())
		}
		if _, err := s.CreateTag(ctx, frond.Tag{Name: "Case", MaxID: 1000, Step: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTag(ctx, frond.Tag{Name: "case", MaxID: 5000, Step: 10}); err != nil {
			t.Fatalf("CreateTag(case) after CreateTag(Case): %v", err)
		}
		a, err := s.Allocate(ctx, "Case", 0)
		if err != nil || a.Range.Start != 1000 {
			t.Fatalf("Allocate(Case) = %+v, %v", a, err)
		}
		if a, err = s.Allocate(ctx, "case", 0); err != nil || a.Range.Start != 5000 {
			t.Fatalf("Allocate(case) = %+v, %v", a, err)
		}
	})

	t.Run("LeafTable", func(t *testing.T) {
		for _, stmt := range []string{"DROP TABLE IF EXISTS leaf_alloc", storetest.LeafDDL} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		coll := bizTagCollation(t, db)
		if !strings.HasSuffix(coll, "_ci") {
			t.Skipf("the database's default collation %q is not case-insensitive", coll)
		}
		s, logs := open(t)
		if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, coll) || !strings.Contains(logs, "Case and case") {
			t.Fatalf("no warning naming the collation in the log: %q", logs)
		}
		if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], coll) {
			t.Fatalf("warnings %v", w)
		}
		t.Logf("logged: %s", logs)
		// As documented: the two names are one tag on such a table.
		if _, err := s.CreateTag(ctx, frond.Tag{Name: "Case", MaxID: 1000, Step: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTag(ctx, frond.Tag{Name: "case", MaxID: 5000, Step: 10}); !errors.Is(err, frond.ErrTagExists) {
			t.Fatalf("CreateTag(case) on a case-insensitive table: %v, want ErrTagExists", err)
		}
		if a, err := s.Allocate(ctx, "case", 0); err != nil || a.Range.Start != 1000 {
			t.Fatalf("Allocate(case) = %+v, %v: want Case's range", a, err)
		}
		if _, err := db.Exec("DROP TABLE leaf_alloc"); err != nil {
			t.Fatal(err)
		}
	})
}
