package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/storetest"
	_ "github.com/go-sql-driver/mysql"
)

const leafSample = "insert into leaf_alloc(biz_tag, max_id, step, description) values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')"

func mysqlDSN(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	return fmt.Sprintf("%s:%s@tcp(%s)%s?parseTime=true", u.User.Username(), pass, u.Host, u.Path)
}

type leafRow struct {
	maxID, step int64
	desc        string
	updated     time.Time
}

func readLeafRow(t *testing.T, db *sql.DB) leafRow {
	t.Helper()
	var r leafRow
	if err := db.QueryRow("SELECT max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag = 'leaf-segment-test'").Scan(&r.maxID, &r.step, &r.desc, &r.updated); err != nil {
		t.Fatal(err)
	}
	return r
}

// A database prepared exactly as Leaf's README says works unchanged: frond
// hands out the IDs Leaf would and leaves the table as Leaf would.
func TestE2E_LeafDropIn(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL_B") // a database of its own: the test drops leaf_alloc
	db, err := sql.Open("mysql", mysqlDSN(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// store/sqlstore's TestMySQL_TagCase drops and creates leaf_alloc in the
	// same database, from a test binary that may run at the same time.
	lock, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	var locked sql.NullInt64
	if err := lock.QueryRowContext(t.Context(), "SELECT GET_LOCK('frond_test_b', 120)").Scan(&locked); err != nil || locked.Int64 != 1 {
		t.Fatalf("GET_LOCK: %v, %v", locked, err)
	}
	defer lock.ExecContext(context.Background(), "DO RELEASE_LOCK('frond_test_b')")
	for _, stmt := range []string{"DROP TABLE IF EXISTS leaf_alloc", storetest.LeafDDL, leafSample} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	dir := t.TempDir()
	s := mustStart(t, dir, "--store", raw)
	// Leaf's script leaves biz_tag to the server's case-insensitive default:
	// the node says that Case and case are one tag there.
	if l := s.log(); !strings.Contains(l, "TAGS IGNORE CASE") || !strings.Contains(l, "Case and case") {
		t.Errorf("no warning about the case-insensitive biz_tag in the log:\n%s", l)
	}
	// Leaf's first segment of the sample row is [1, 2001): IDs 1, 2, 3, ...
	for want := int64(1); want <= 300; want++ {
		if got := s.id("/api/segment/get/leaf-segment-test"); got != want {
			t.Fatalf("ID %d, want %d (Leaf's range)", got, want)
		}
	}
	// Past 10% of the segment the next one is loaded, with the tag's step
	// (Leaf's second load does not adapt the step): max_id 1 -> 2001 -> 4001.
	deadline := time.Now().Add(10 * time.Second)
	var row leafRow
	for row = readLeafRow(t, db); row.maxID != 4001 && time.Now().Before(deadline); row = readLeafRow(t, db) {
		time.Sleep(20 * time.Millisecond)
	}
	if row.maxID != 4001 || row.step != 2000 || row.desc != "Test leaf Segment Mode Get Id" {
		t.Fatalf("table after 300 IDs: %+v; Leaf leaves max_id 4001, step 2000", row)
	}
	if d := time.Since(row.updated); d > time.Hour || d < -time.Hour {
		t.Fatalf("update_time %v not touched", row.updated)
	}
	// Leaf's table is unchanged: frond never alters an existing one.
	var name, ddl string
	db.QueryRow("SHOW CREATE TABLE leaf_alloc").Scan(&name, &ddl)
	var cols int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leaf_alloc'").Scan(&cols)
	if cols != 5 {
		t.Fatalf("leaf_alloc has %d columns:\n%s", cols, ddl)
	}
	// A clean restart gives the unused IDs back (Leaf #15: Leaf's restart
	// skips the rest of its buffered segments, 3,700 IDs here): max_id goes
	// back to 301 and the next node goes on from there.
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if row := readLeafRow(t, db); row.maxID != 301 {
		t.Fatalf("max_id after a clean stop: %d, want 301", row.maxID)
	}
	s2 := mustStart(t, dir, "--store", raw)
	if got := s2.id("/api/segment/get/leaf-segment-test"); got != 301 {
		t.Fatalf("after a clean restart %d, want 301", got)
	}
	// A crash gives nothing back: the next node starts above everything
	// the crashed one had taken.
	if err := s2.stop(syscall.SIGKILL); err != nil && !strings.Contains(err.Error(), "killed") {
		t.Fatal(err)
	}
	row = readLeafRow(t, db)
	s3 := mustStart(t, dir, "--store", raw)
	if got := s3.id("/api/segment/get/leaf-segment-test"); got != row.maxID || got <= 301 {
		t.Fatalf("after a crash %d, want max_id %d", got, row.maxID)
	}
}
