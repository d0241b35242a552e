package sqldb

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/lazystore"
	"github.com/go-sql-driver/mysql"
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
