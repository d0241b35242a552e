// Package sqldb opens frond's SQL databases from URLs, for the segment store
// (store/sqlstore) and the worker registry (registry/sqlregistry): the URL
// forms, the drivers' DSNs, the connection pool, and which errors mean the
// database is unavailable.
//
// URLs:
//
//	mysql://user:pass@host:3306/db[?driver params]                (MySQL, MariaDB)
//	postgres://user:pass@host:5432/db[?sslmode=disable...]        (also postgresql://)
//	sqlite:///abs/path.db, sqlite://relative/path.db
//
// Opening never contacts the server: database/sql connects on first use.
package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/deadline"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Kind is a family of databases with one SQL dialect.
type Kind string

// The kinds frond knows.
const (
	MySQL    Kind = "mysql" // MySQL and MariaDB
	Postgres Kind = "postgres"
	SQLite   Kind = "sqlite"
)

// URL is a parsed database URL whose frond parameters have been taken out.
type URL struct {
	Kind Kind
	// Params holds the parameters named to Parse that the URL set; they are
	// no longer in the query the driver sees.
	Params map[string]string
	u      *url.URL
}

// Parse parses rawURL and moves the query parameters named in keys into
// Params. Other parameters stay for the driver (see Unknown).
func Parse(rawURL string, keys ...string) (*URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	var k Kind
	switch u.Scheme {
	case "sqlite":
		k = SQLite
	case "mysql":
		k = MySQL
	case "postgres", "postgresql":
		k = Postgres
	default:
		return nil, fmt.Errorf("%w: scheme %q: frond knows sqlite, mysql, postgres", frond.ErrInvalidArgument, u.Scheme)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: query: %v", frond.ErrInvalidArgument, err)
	}
	p := &URL{Kind: k, Params: map[string]string{}, u: u}
	for _, key := range keys {
		if q.Has(key) {
			p.Params[key] = q.Get(key)
			q.Del(key)
		}
	}
	u.RawQuery = q.Encode()
	return p, nil
}

// Unknown returns the frond_* parameters left in the query, sorted: the
// ones the caller did not name to Parse.
func (p *URL) Unknown() []string {
	var out []string
	for k := range p.u.Query() {
		if strings.HasPrefix(k, "frond_") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Duration parses a positive duration parameter.
func Duration(key, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d <= 0 {
		err = errors.New("must be positive")
	}
	if err != nil {
		return 0, fmt.Errorf("%w: URL parameter %s=%q: %v", frond.ErrInvalidArgument, key, v, err)
	}
	return d, nil
}

// Options configure Open.
type Options struct {
	// Timeout is the dial timeout (the connect timeout of PostgreSQL, at
	// least 1 s; SQLite's busy timeout, at least 1 s) and the statement
	// timeout of Bound. It must be positive.
	Timeout time.Duration
	// MaxOpenConns caps the pool (and the idle connections kept). It must be
	// at least 1.
	MaxOpenConns int
	// MakeDir creates the directory of a SQLite file when it is missing.
	// Without it a missing directory is an outage, reported on first use.
	MakeDir bool
}

// DB is a pool on one database.
type DB struct {
	*sql.DB
	Kind Kind
	// Where names the database for messages, without secrets.
	Where   string
	Timeout time.Duration
	// writers queues this process's transactions on one SQLite file (nil
	// for other kinds): see InTx.
	writers chan struct{}
}

// sqliteWriters holds one queue of writers per SQLite file this process
// opened, whatever pool or store opened it.
var sqliteWriters sync.Map // absolute path -> chan struct{}

func writersOf(path string) chan struct{} {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	q, _ := sqliteWriters.LoadOrStore(path, make(chan struct{}, 1))
	return q.(chan struct{})
}

// Open opens a pool on the database of p. It does not contact the server.
func Open(p *URL, o Options) (*DB, error) {
	var (
		db    *sql.DB
		where string
		err   error
	)
	switch p.Kind {
	case SQLite:
		db, where, err = openSQLite(p.u, o)
	case MySQL:
		db, where, err = openMySQL(p.u, o)
	case Postgres:
		db, where, err = openPostgres(p.u, o)
	default:
		err = fmt.Errorf("%w: database kind %q", frond.ErrInvalidArgument, p.Kind)
	}
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(o.MaxOpenConns)
	db.SetMaxIdleConns(o.MaxOpenConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	d := &DB{DB: db, Kind: p.Kind, Where: where, Timeout: o.Timeout}
	if p.Kind == SQLite {
		d.writers = writersOf(SQLitePath(p.u))
	}
	return d, nil
}

// File is the database file of a sqlite URL ("" for other kinds).
func (p *URL) File() string {
	if p.Kind != SQLite {
		return ""
	}
	return SQLitePath(p.u)
}

// SQLitePath is the file of a sqlite URL: sqlite:///abs is "/abs",
// sqlite://rel/x.db is "rel/x.db".
func SQLitePath(u *url.URL) string { return u.Host + u.Path }

func openSQLite(u *url.URL, o Options) (*sql.DB, string, error) {
	path := SQLitePath(u)
	if path == "" {
		return nil, "", fmt.Errorf("%w: sqlite URL %q has no file path", frond.ErrInvalidArgument, u.String())
	}
	if o.MakeDir {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, "", fmt.Errorf("%w: sqlite: %v", frond.ErrStoreUnavailable, err)
		}
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, o.Timeout))
	if err != nil {
		return nil, "", fmt.Errorf("%w: sqlite: %v", frond.ErrStoreUnavailable, err)
	}
	return db, "sqlite:" + path, nil
}

// sqliteDSN: WAL lets readers run beside the writer; busy_timeout makes a
// second process wait for the write lock instead of failing; immediate
// transactions take the write lock up front.
func sqliteDSN(path string, timeout time.Duration) string {
	busy := max(timeout.Milliseconds(), 1000)
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate", path, busy)
}

// mysqlConfig turns a mysql:// URL into the driver's configuration.
func mysqlConfig(u *url.URL, timeout time.Duration) (*mysql.Config, string, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	pass, _ := u.User.Password()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)%s", u.User.Username(), pass, host, u.EscapedPath())
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, "", fmt.Errorf("%w: mysql URL: %v", frond.ErrInvalidArgument, err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.ClientFoundRows = true // rows affected = rows matched
	cfg.Timeout = timeout      // dial
	// Sessions in UTC: TIMESTAMP columns read back as the UTC times they
	// are (cfg.Loc), and UNIX_TIMESTAMP(CURRENT_TIMESTAMP(6)) is not
	// ambiguous at a daylight saving change.
	if _, ok := cfg.Params["time_zone"]; !ok {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["time_zone"] = "'+00:00'"
	}
	return cfg, "mysql://" + host + u.Path, nil
}

func openMySQL(u *url.URL, o Options) (*sql.DB, string, error) {
	cfg, where, err := mysqlConfig(u, o.Timeout)
	if err != nil {
		return nil, "", err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("%w: mysql: %v", frond.ErrInvalidArgument, err)
	}
	return sql.OpenDB(conn), where, nil
}

// postgresDSN is the URL pgx receives: connect_timeout defaults to the
// timeout.
func postgresDSN(u *url.URL, timeout time.Duration) string {
	q := u.Query()
	if !q.Has("connect_timeout") {
		q.Set("connect_timeout", strconv.Itoa(max(int(timeout.Seconds()), 1)))
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func openPostgres(u *url.URL, o Options) (*sql.DB, string, error) {
	db, err := sql.Open("pgx", postgresDSN(u, o.Timeout))
	if err != nil {
		return nil, "", fmt.Errorf("%w: postgres: %v", frond.ErrInvalidArgument, err)
	}
	return db, "postgres://" + u.Host + u.Path, nil
}

// Bound applies the statement timeout unless ctx ends sooner.
func (d *DB) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return deadline.Within(ctx, d.Timeout)
}

// Fail wraps a database error of operation op: frond.ErrClosed when the pool
// was closed, else frond.ErrStoreUnavailable (callers handle the answers
// they expect, such as a duplicate key, before calling Fail). A connection
// the MySQL driver lost mid-statement (mysql.ErrInvalidConn, a plain error
// value) also wraps driver.ErrBadConn, so that callers which tell an outage
// from a server's answer (lazystore.Unreachable) see it as an outage.
func (d *DB) Fail(op string, err error) error {
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("%s on %s: %w", op, d.Where, frond.ErrClosed)
	}
	if errors.Is(err, mysql.ErrInvalidConn) && !errors.Is(err, driver.ErrBadConn) {
		err = fmt.Errorf("%w (%w)", err, driver.ErrBadConn)
	}
	if refusedCredentials(err) {
		return fmt.Errorf("%s on %s: %w: the database refused the credentials (check the user and password in the URL, and the user's grants): %w",
			op, d.Where, frond.ErrStoreUnavailable, err)
	}
	return fmt.Errorf("%s on %s: %w: %w", op, d.Where, frond.ErrStoreUnavailable, err)
}

// refusedCredentials reports whether err is the database refusing the
// user or its password: MySQL's access denied (1044, 1045, 1698),
// PostgreSQL's invalid authorization or password (28000, 28P01).
func refusedCredentials(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1044 || me.Number == 1045 || me.Number == 1698
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "28000" || pe.Code == "28P01")
}

// Rebind returns query with the kind's placeholders: ? as written, or $1,
// $2, ... for PostgreSQL.
func (k Kind) Rebind(query string) string {
	if k != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Duplicate reports whether err is a duplicate primary or unique key.
func (k Kind) Duplicate(err error) bool {
	switch k {
	case MySQL:
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1062
	case Postgres:
		return pgCode(err) == "23505"
	case SQLite:
		c := sqliteCode(err)
		return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
	}
	return false
}

// Transient reports whether err is worth retrying at once: a deadlock, a
// lock wait timeout, a serialization failure, a busy database.
func (k Kind) Transient(err error) bool {
	switch k {
	case MySQL:
		var me *mysql.MySQLError
		return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
	case Postgres:
		c := pgCode(err)
		return c == "40001" || c == "40P01"
	case SQLite:
		c := sqliteCode(err) & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// ExecDDL runs a CREATE ... IF NOT EXISTS statement, again while it fails
// with CreateRace (several nodes starting at once on an empty database:
// each wave of concurrent creators can lose the race once) or a transient
// error (SQLite answers SQLITE_BUSY at once, without its busy timeout,
// when two connections creating tables on a new file upgrade their locks
// together); up to 10 tries, 10 ms apart and more.
func (d *DB) ExecDDL(ctx context.Context, stmt string) error {
	_, err := d.ExecContext(ctx, stmt)
	for try := 1; err != nil && (d.Kind.CreateRace(err) || d.Kind.Transient(err)) && try < 10; try++ {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 10 * time.Millisecond):
		}
		_, err = d.ExecContext(ctx, stmt)
	}
	return err
}

// CreateRace reports whether err is PostgreSQL's answer to two sessions
// running CREATE TABLE IF NOT EXISTS at once (a duplicate catalog key or
// relation): the table exists now and the statement can be run again.
func (k Kind) CreateRace(err error) bool {
	if k != Postgres {
		return false
	}
	c := pgCode(err)
	return c == "23505" || c == "42P07" || c == "42710"
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// Retry runs op, again when it fails with a transient error (deadlock,
// serialization failure, busy database), up to retries times, after a
// random wait that doubles with each attempt (up to 1, 2, 4, ... ms):
// transactions that deadlocked and were retried at once met again, and
// under load every retry deadlocked (CI's busy step: MySQL error 1213 out
// of AllocateIDs with 8 callers).
func (d *DB) Retry(ctx context.Context, retries int, op func(ctx context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil || attempt >= retries || !d.Kind.Transient(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 10))))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// InTx runs op in a transaction, committed if op returns nil, again as
// Retry does.
//
// On SQLite the transactions of this process on one file wait their turn in
// one queue, first come first served, before they ask for the file's write
// lock: SQLite's busy handler polls for the lock at growing intervals and
// serves no one in order, so a writer beside eight callers allocating flat
// out waited past its 30 s deadline (CI, a change of the store's place under
// load). Other processes on the file still meet the busy handler.
func (d *DB) InTx(ctx context.Context, retries int, op func(tx *sql.Tx) error) error {
	return d.Retry(ctx, retries, func(ctx context.Context) error {
		if d.writers != nil {
			select {
			case d.writers <- struct{}{}:
				defer func() { <-d.writers }()
			case <-ctx.Done():
				return fmt.Errorf("%w: waiting for the other writers of %s: %v", frond.ErrStoreUnavailable, d.Where, ctx.Err())
			}
		}
		tx, err := d.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := op(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// NowMicros is an SQL expression of the database server's clock in
// microseconds since 1970: the one clock every node of a registry's leases
// reads alike.
func (k Kind) NowMicros() string {
	switch k {
	case MySQL:
		return "CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(6)) * 1000000 AS SIGNED)"
	case Postgres:
		return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"
}

// Pool reads the pool's parameters of a URL: frond_timeout and
// frond_max_conns, with their defaults.
func Pool(params map[string]string, timeout time.Duration, conns int) (Options, error) {
	o := Options{Timeout: timeout, MaxOpenConns: conns}
	var err error
	if v, ok := params["frond_timeout"]; ok {
		if o.Timeout, err = Duration("frond_timeout", v); err != nil {
			return o, err
		}
	}
	if v, ok := params["frond_max_conns"]; ok {
		if o.MaxOpenConns, err = strconv.Atoi(v); err != nil || o.MaxOpenConns < 1 {
			return o, fmt.Errorf("%w: frond_max_conns=%q: 1 or more", frond.ErrInvalidArgument, v)
		}
	}
	return o, nil
}
