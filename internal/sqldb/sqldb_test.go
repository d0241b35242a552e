package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/lazystore"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// A MySQL connection lost mid-statement (seen when a node restarts while
// its MariaDB is cut: "create table leaf_alloc ...: invalid connection")
// must read as an outage, so that the node starts and keeps trying the
// store instead of exiting.
func TestFail_LostMySQLConnectionIsAnOutage(t *testing.T) {
	d := &DB{Kind: MySQL, Where: "mysql://db/test"}
	for _, cause := range []error{mysql.ErrInvalidConn, fmt.Errorf("exec: %w", mysql.ErrInvalidConn)} {
		err := d.Fail("create table leaf_alloc", cause)
		if !errors.Is(err, frond.ErrStoreUnavailable) || !errors.Is(err, mysql.ErrInvalidConn) {
			t.Errorf("Fail(%v) = %v: want ErrStoreUnavailable wrapping the cause", cause, err)
		}
		if !lazystore.Unreachable(err) {
			t.Errorf("Fail(%v) = %v: lazystore.Unreachable says it is not an outage", cause, err)
		}
	}
}

// A server's answer is not an outage: the node must refuse to start.
func TestFail_ServerAnswerIsNotAnOutage(t *testing.T) {
	d := &DB{Kind: MySQL, Where: "mysql://db/test"}
	err := d.Fail("create table leaf_alloc", &mysql.MySQLError{Number: 1044, Message: "Access denied"})
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		t.Errorf("Fail = %v: want ErrStoreUnavailable", err)
	}
	if lazystore.Unreachable(err) {
		t.Errorf("Fail = %v: an access denied reads as an outage", err)
	}
	if err := d.Fail("select", sql.ErrConnDone); !errors.Is(err, frond.ErrClosed) {
		t.Errorf("Fail(ErrConnDone) = %v: want ErrClosed", err)
	}
}

// A database that refuses the user or the password is said so (it read
// "store unavailable: Access denied" among other outages).
func TestFail_RefusedCredentials(t *testing.T) {
	d := &DB{Where: "mysql://db:3306/ids"}
	for _, err := range []error{
		&mysql.MySQLError{Number: 1045, Message: "Access denied for user 'frond'@'10.0.0.1' (using password: YES)"},
		fmt.Errorf("connect: %w", &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}),
		&pgconn.PgError{Code: "28000", Message: `role "nobody" does not exist`},
	} {
		got := d.Fail("create table leaf_alloc", err)
		if !errors.Is(got, frond.ErrStoreUnavailable) || !strings.Contains(got.Error(), "the database refused the credentials") {
			t.Errorf("%v: %v", err, got)
		}
	}
	for _, err := range []error{&mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, errors.New("connection refused")} {
		if got := d.Fail("x", err); strings.Contains(got.Error(), "credentials") {
			t.Errorf("%v: %v", err, got)
		}
	}
}

// Two pools of one process on one SQLite file: a transaction held longer
// than SQLite's busy timeout (1 s here) does not fail the other pool's
// transaction with "database is locked"; it waits its turn in the file's
// queue (a change of the store's place beside eight callers allocating flat
// out waited past its 30 s deadline in SQLite's busy handler). A writer
// whose context ends in the queue reads as an outage.
func TestInTx_SQLiteWritersQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	open := func() *DB {
		p, err := Parse("sqlite://" + path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Open(p, Options{Timeout: time.Second, MaxOpenConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(), open()
	ctx := context.Background()
	if _, err := a.ExecContext(ctx, "CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.InTx(ctx, 0, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := b.InTx(short, 0, func(tx *sql.Tx) error { return nil })
	cancel()
	if !errors.Is(err, frond.ErrStoreUnavailable) || !strings.Contains(err.Error(), "waiting for the other writers") {
		t.Fatalf("a writer whose context ends in the queue: %v", err)
	}
	second := make(chan error, 1)
	go func() {
		second <- b.InTx(ctx, 0, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (2)")
			return err
		})
	}()
	time.Sleep(2 * time.Second) // past the busy timeout: the old code's second writer failed here
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second writer, behind a transaction held past SQLite's busy timeout: %v", err)
	}
	var n int
	if err := a.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows = %d, %v: want both writers' rows", n, err)
	}
}
