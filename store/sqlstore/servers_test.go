package sqlstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/storetest/dbtest"
)

// Real-server tests: FROND_TEST_MYSQL_URL (MySQL or MariaDB) and
// FROND_TEST_POSTGRES_URL. They skip when unset, and fail instead when
// FROND_TEST_REQUIRE=1 (CI).

func opener(url string) storetest.Opener {
	return func(t *testing.T) frond.SegmentStore {
		s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestMySQL_Conformance(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	// The suite checks that tag names are case-sensitive. The shared test
	// database may hold a leaf_alloc made before frond gave biz_tag a binary
	// collation (or by Leaf's script): make it the table frond creates.
	opener(raw)(t).Close()
	db := mysqlDB(t, raw)
	if coll := bizTagCollation(t, db); coll != "utf8mb4_bin" {
		t.Logf("leaf_alloc.biz_tag has collation %s: altering it to utf8mb4_bin", coll)
		if _, err := db.Exec("ALTER TABLE leaf_alloc MODIFY biz_tag varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ''"); err != nil {
			t.Fatal(err)
		}
	}
	storetest.RunSegmentStore(t, opener(raw))
}

func TestPostgres_Conformance(t *testing.T) {
	storetest.RunSegmentStore(t, opener(testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")))
}

func outageOpener(scheme string) storetest.OutageOpener {
	return func(t *testing.T, addr string, timeout time.Duration) frond.SegmentStore {
		raw := storetest.WithHost(t, os.Getenv(scheme), addr)
		sep := "?"
		if strings.Contains(raw, "?") {
			sep = "&"
		}
		s, err := sqlstore.Open(context.Background(), raw+sep+"frond_timeout="+timeout.String(), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestMySQL_Outage(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	storetest.RunOutage(t, storetest.HostOf(t, raw, "3306"), outageOpener("FROND_TEST_MYSQL_URL"))
}

func TestPostgres_Outage(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
	storetest.RunOutage(t, storetest.HostOf(t, raw, "5432"), outageOpener("FROND_TEST_POSTGRES_URL"))
}

// The place of a store is the whole database's: each test of the suite
// gets a database of its own.
func TestMySQL_Placed(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener { return opener(dbtest.FreshDatabase(t, raw)) })
}

func TestPostgres_Placed(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener { return opener(dbtest.FreshDatabase(t, raw)) })
}

// Transactions that deadlocked and were retried at once met again: under
// load (CI's busy step, 8 callers of AllocateIDs on MySQL) every retry
// deadlocked and the allocation failed with error 1213. A store now waits
// a random, doubling moment between retries, and retries 6 times.
func TestRetry_DeadlocksWaitedOut(t *testing.T) {
	s, err := sqlstore.Open(context.Background(), testenv.Getenv(t, "FROND_TEST_MYSQL_URL"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
	var at []time.Time
	err = s.Retry(context.Background(), func(context.Context) error {
		at = append(at, time.Now())
		if len(at) <= 5 {
			return deadlock
		}
		return nil
	})
	if err != nil || len(at) != 6 {
		t.Fatalf("after 5 deadlocks: %v, %d attempts", err, len(at))
	}
	at = nil
	err = s.Retry(context.Background(), func(context.Context) error {
		at = append(at, time.Now())
		return deadlock
	})
	if !errors.Is(err, deadlock) || len(at) != 7 {
		t.Fatalf("a deadlock every time: %v after %d attempts, want 7", err, len(at))
	}
	if at[6].Sub(at[0]) <= 0 {
		t.Fatal("no wait between the attempts")
	}
}
