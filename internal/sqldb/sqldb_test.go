package sqldb

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

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
