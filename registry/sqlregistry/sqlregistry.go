// Package sqlregistry is the snowflake worker registry on a SQL database
// (MySQL or MariaDB, PostgreSQL, SQLite), a registry.Backend built on Baidu
// UidGenerator's WORKER_NODE table: every start of a node inserts a row, and the row's
// auto-increment ID gives the worker ID (worker ID = ID - 1, so the first
// row is worker 0) while it fits the layout; after that (or past skipped
// row IDs) the lowest ID no frond node has used, then recycled ones.
//
// # Tables
//
// The table (frond_table, default WORKER_NODE) has UidGenerator's columns,
// so an existing UidGenerator table can be pointed at:
//
//	ID           BIGINT auto-increment   the worker ID + 1
//	HOST_NAME    VARCHAR(64)             the node's host (registry.Options.Host)
//	PORT         VARCHAR(64)             the node's port
//	TYPE         INT                     1 in a container (Kubernetes, Docker), 2 on a machine
//	LAUNCH_DATE  DATE                    the day the node took the ID
//	MODIFIED, CREATED TIMESTAMP
//
// A side table, {table}_frond, holds what UidGenerator lacks, one row per
// worker ID in use: the holder (owner "host:port" and the random token of
// the last claim), a lease (lease_until, in microseconds of the database
// server's clock; 0 after a release) and the latest time saved (last_ns,
// the node's clock).
//
// # Modes
//
// frond_mode=new (the default, UidGenerator's way) takes a new ID on every
// start: its row's, or, once the rows' IDs have passed the layout (an
// existing UidGenerator table, say), the lowest ID not in the side table.
// Once every ID of the layout has been handed out, a start recycles
// the ID whose lease has expired and whose last time is the oldest,
// provided that last time plus registry.Options.RecycleAfter is before the
// node's clock; the recycled ID's WORKER_NODE row is rewritten for the new
// holder. A restart therefore never reuses its earlier ID while new ones are
// left: no node ever waits for its own clock to pass its last time.
//
// frond_mode=reuse first takes back the ID of this node's host:port, as the
// ZooKeeper, etcd and Redis registries do (registry.Protocol's rules: at
// once, from its exact time, for the process whose local record names its
// last claim; for any other, once its last time + RecycleAfter has passed).
//
// # Guarantees
//
//   - Every claim is one conditional statement (an insert of a fresh
//     primary key, or an UPDATE whose WHERE requires the lease to have
//     expired and the row, token and last time, to be unchanged), so two
//     live nodes never hold one ID. Renewals and saves require the lease to
//     be running in the database's clock, so a holder paused past its lease
//     cannot raise the last time under a node recycling the ID. Lease times are the database server's clock, compared inside the
//     statements: node clocks that disagree cannot break the lease.
//   - A goroutine renews the lease every LeaseTTL/3 (comparing the token).
//     When the token was taken, or no renewal succeeded for LeaseTTL
//     (counted on the node's monotonic clock from when the last successful
//     one was sent, so before the database considers the lease expired),
//     Worker.Lost is closed and Save fails with frond.ErrWorkerLost.
//   - IDs never wrap around: with every ID held or used too recently,
//     Acquire fails with frond.ErrNoWorkerID.
//
// Open does not contact the database; the first Acquire creates the tables
// if they are missing.
//
// URL: the database URLs of the segment store (mysql://, postgres://,
// sqlite://) with frond_table=WORKER_NODE, frond_mode=new|reuse,
// frond_timeout=5s, frond_max_conns=2.
package sqlregistry

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/registry"
)

var _ registry.Backend = (*Backend)(nil)

// Modes of frond_mode.
const (
	ModeNew   = "new"
	ModeReuse = "reuse"
)

// Defaults of the URL parameters.
const (
	DefaultTable    = "WORKER_NODE"
	DefaultTimeout  = 5 * time.Second
	DefaultMaxConns = 2
)

// Node types of the TYPE column (UidGenerator's WorkerNodeType).
const (
	TypeContainer = 1
	TypeActual    = 2
)

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,56}$`)

// Backend is the SQL backend of the worker registry.
type Backend struct {
	db       *sqldb.DB
	o        registry.Options
	table    string // WORKER_NODE
	side     string // {table}_frond
	base     string // the table without the datacenter's suffix: the row of frond_layout
	mode     string
	file     string // SQLite: the database file, whose directory Prepare creates
	nodeType int

	mu    sync.Mutex
	ready bool // the tables exist
}

// Check parses rawURL as Open does, without contacting the database.
func Check(rawURL string) error { return registry.CheckByOpen(rawURL, Open) }

// Open parses rawURL and opens a connection pool. It does not contact the
// database.
func Open(rawURL string, o registry.Options) (*registry.Protocol, error) {
	p, err := sqldb.Parse(rawURL, "frond_table", "frond_mode", "frond_timeout", "frond_max_conns")
	if err != nil {
		return nil, fmt.Errorf("registry URL: %w", err)
	}
	if u := p.Unknown(); len(u) > 0 {
		return nil, fmt.Errorf("%w: registry URL parameter %s: unknown (frond_table, frond_mode, frond_timeout, frond_max_conns)", frond.ErrInvalidArgument, u[0])
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	o = o.WithDefaults()
	if len(o.Host) > 64 {
		return nil, fmt.Errorf("%w: worker host %q is longer than WORKER_NODE.HOST_NAME (64 characters)", frond.ErrInvalidArgument, o.Host)
	}
	b := &Backend{o: o, table: DefaultTable, mode: ModeNew, file: p.File(), nodeType: detectType()}
	if v, ok := p.Params["frond_table"]; ok {
		if !tableName.MatchString(v) {
			return nil, fmt.Errorf("%w: frond_table=%q: letters, digits and underscores, at most 57", frond.ErrInvalidArgument, v)
		}
		b.table = v
	}
	b.base = b.table
	if sfx := o.DatacenterSuffix("_DC"); sfx != "" { // the datacenter's own worker IDs: WORKER_NODE_DC1
		if !tableName.MatchString(b.table + sfx) {
			return nil, fmt.Errorf("%w: frond_table=%q with datacenter %d is %s: at most 57 characters", frond.ErrInvalidArgument, b.table, o.Datacenter, b.table+sfx)
		}
		b.table += sfx
	}
	b.side = b.table + "_frond"
	if v, ok := p.Params["frond_mode"]; ok {
		if v != ModeNew && v != ModeReuse {
			return nil, fmt.Errorf("%w: frond_mode=%q: new or reuse", frond.ErrInvalidArgument, v)
		}
		b.mode = v
	}
	pool, err := sqldb.Pool(p.Params, DefaultTimeout, DefaultMaxConns)
	if err != nil {
		return nil, err
	}
	if b.db, err = sqldb.Open(p, pool); err != nil {
		return nil, err
	}
	return registry.NewProtocol(b, o), nil
}

// detectType tells a container (Kubernetes, Docker) from a machine, as
// UidGenerator records in TYPE.
func detectType() int {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return TypeContainer
	}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		return TypeContainer
	}
	return TypeActual
}

// Where implements registry.Backend.
func (b *Backend) Where() string { return b.db.Where + " table " + b.table }

// Policy implements registry.Backend.
func (b *Backend) Policy() registry.Policy {
	return registry.Policy{OwnFirst: b.mode == ModeReuse, Recycle: true}
}

// q rebinds query's placeholders and puts in the table names ({t}, {s})
// and the database clock in microseconds ({now}).
func (b *Backend) q(query string) string {
	query = strings.NewReplacer("{t}", b.table, "{s}", b.side, "{now}", b.db.Kind.NowMicros()).Replace(query)
	return b.db.Kind.Rebind(query)
}

func (b *Backend) ddl() []string {
	idCol, engine, ts, bin := "ID INTEGER PRIMARY KEY AUTOINCREMENT", "", "TIMESTAMP", ""
	switch b.db.Kind {
	case sqldb.MySQL:
		idCol, engine = "ID BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", " ENGINE=InnoDB"
		// owner and token are looked up by equality: compare them byte for
		// byte, as the other registries do, not by the server's default
		// (case-insensitive) collation.
		bin = " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
	case sqldb.Postgres:
		idCol = "ID BIGSERIAL PRIMARY KEY"
	}
	return []string{
		b.q(`CREATE TABLE IF NOT EXISTS {t} (
  ` + idCol + `,
  HOST_NAME VARCHAR(64) NOT NULL,
  PORT VARCHAR(64) NOT NULL,
  TYPE INT NOT NULL,
  LAUNCH_DATE DATE NOT NULL,
  MODIFIED ` + ts + ` NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CREATED ` + ts + ` NOT NULL DEFAULT CURRENT_TIMESTAMP
)` + engine),
		b.q(`CREATE TABLE IF NOT EXISTS {s} (
  worker_id BIGINT NOT NULL PRIMARY KEY,
  owner VARCHAR(200)` + bin + ` NOT NULL,
  token VARCHAR(64)` + bin + ` NOT NULL,
  lease_until BIGINT NOT NULL,
  last_ns BIGINT NOT NULL
)` + engine),
		`CREATE TABLE IF NOT EXISTS frond_layout (
  registry VARCHAR(64) NOT NULL PRIMARY KEY,
  layout VARCHAR(255) NOT NULL
)` + engine,
	}
}

var _ registry.LayoutRecorder = (*Backend)(nil)

// RecordLayout implements registry.LayoutRecorder: the row of the table
// frond_layout named after the registry's table (of every datacenter),
// inserted unless it exists (a concurrent insert is kept), then read.
func (b *Backend) RecordLayout(ctx context.Context, layout string) (string, error) {
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	_, err := b.db.ExecContext(ctx, b.db.Kind.Rebind("INSERT INTO frond_layout (registry, layout) VALUES (?, ?)"), b.base, layout)
	if err != nil && !b.db.Kind.Duplicate(err) {
		return "", b.fail("record the snowflake layout", err)
	}
	var got string
	if err := b.db.QueryRowContext(ctx, b.db.Kind.Rebind("SELECT layout FROM frond_layout WHERE registry = ?"), b.base).Scan(&got); err != nil {
		return "", b.fail("read the snowflake layout", err)
	}
	return got, nil
}

// Prepare implements registry.Backend: it creates the tables once.
func (b *Backend) Prepare(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		return nil
	}
	if b.file != "" {
		if err := os.MkdirAll(filepath.Dir(b.file), 0o755); err != nil {
			return fmt.Errorf("worker registry: %w: %v", frond.ErrStoreUnavailable, err)
		}
	}
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	for _, stmt := range b.ddl() {
		if err := b.db.ExecDDL(ctx, stmt); err != nil { // other nodes may create it at the same moment
			return b.fail("create the worker tables", err)
		}
	}
	b.ready = true
	return nil
}

func (b *Backend) fail(op string, err error) error {
	return fmt.Errorf("worker registry: %w", b.db.Fail(op, err))
}

func (b *Backend) ttlMicros() int64 { return max(b.o.LeaseTTL.Microseconds(), 1) }

// slots reads side-table rows (worker_id, owner, token, last_ns, lease time
// left in µs): held while the lease runs; the token is the last claim's.
func (b *Backend) slots(ctx context.Context, op, query string, args ...any) ([]registry.Slot, error) {
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	rows, err := b.db.QueryContext(ctx, b.q(query), args...)
	if err != nil {
		return nil, b.fail(op, err)
	}
	defer rows.Close()
	var out []registry.Slot
	for rows.Next() {
		var s registry.Slot
		var left int64
		if err := rows.Scan(&s.ID, &s.Owner, &s.Claim, &s.Last, &left); err != nil {
			return nil, b.fail(op, err)
		}
		if left >= 0 {
			s.Holder = s.Claim
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, b.fail(op, err)
	}
	return out, nil
}

// Own implements registry.Backend (frond_mode=reuse).
func (b *Backend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	return b.slots(ctx, "find this node's worker ID",
		`SELECT worker_id, owner, token, last_ns, lease_until - {now} FROM {s} WHERE owner = ? AND worker_id <= ? ORDER BY worker_id`, b.o.Identity(), maxNode)
}

// Idle implements registry.Backend.
func (b *Backend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	return b.slots(ctx, "find a worker ID to recycle",
		`SELECT worker_id, owner, token, last_ns, lease_until - {now} FROM {s} WHERE worker_id <= ? AND lease_until < {now} ORDER BY worker_id`, maxNode)
}

// New implements registry.Backend: a new WORKER_NODE row's ID while it fits
// the layout, else the lowest ID no frond node has used.
func (b *Backend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	if ok, err := b.claimNew(ctx, maxNode, h); err != nil || ok {
		return 0, ok, err
	}
	ok, err := b.claimGap(ctx, maxNode, h)
	return 0, ok, err
}

// claimNew inserts a WORKER_NODE row and takes its ID if it fits the layout.
func (b *Backend) claimNew(ctx context.Context, maxNode int64, h *registry.Hold) (bool, error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return false, b.fail("begin", err)
	}
	defer tx.Rollback()
	insert := `INSERT INTO {t} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (?, ?, ?, CURRENT_DATE, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`
	args := []any{b.o.Host, strconv.Itoa(b.o.Port), b.nodeType}
	var rowID int64
	if b.db.Kind == sqldb.MySQL {
		res, err := tx.ExecContext(ctx, b.q(insert), args...)
		if err == nil {
			rowID, err = res.LastInsertId()
		}
		if err != nil {
			return false, b.fail("insert a worker node", err)
		}
	} else if err := tx.QueryRowContext(ctx, b.q(insert+" RETURNING ID"), args...).Scan(&rowID); err != nil {
		return false, b.fail("insert a worker node", err)
	}
	id := rowID - 1
	if id < 0 || id > maxNode {
		return false, nil // rolled back: the rows' IDs have passed the layout's
	}
	_, err = tx.ExecContext(ctx, b.q(`INSERT INTO {s} (worker_id, owner, token, lease_until, last_ns) VALUES (?, ?, ?, {now} + ?, 0)`),
		id, b.o.Identity(), h.Token, b.ttlMicros())
	if err != nil {
		if b.db.Kind.Duplicate(err) { // a row left by another layout or a reset counter
			return false, nil
		}
		return false, b.fail("claim a new worker ID", err)
	}
	if err := tx.Commit(); err != nil {
		return false, b.fail("commit a new worker ID", err)
	}
	h.ID = id
	return true, nil
}

// claimGap takes the lowest ID of the layout that no frond node has used
// (none in the side table), once the rows' IDs have passed the layout: an
// existing UidGenerator table with more rows than the layout has IDs, or
// row IDs that skipped values (auto_increment_increment, rolled-back
// inserts, sequence caches). The ID's WORKER_NODE row, if there is one, is
// rewritten for this node; the side table is what holds the ID.
func (b *Backend) claimGap(ctx context.Context, maxNode int64, h *registry.Hold) (bool, error) {
	var free sql.NullInt64
	err := b.db.QueryRowContext(ctx, b.q(`SELECT MIN(c) FROM (
  SELECT 0 AS c FROM (SELECT 1 AS one) z WHERE NOT EXISTS (SELECT 1 FROM {s} WHERE worker_id = 0)
  UNION ALL
  SELECT a.worker_id + 1 AS c FROM {s} a
  WHERE a.worker_id >= 0 AND a.worker_id < ? AND NOT EXISTS (SELECT 1 FROM {s} b WHERE b.worker_id = a.worker_id + 1)
) f`), maxNode).Scan(&free)
	if err != nil {
		return false, b.fail("find an unused worker ID", err)
	}
	if !free.Valid {
		return false, nil // every ID of the layout was used once
	}
	_, err = b.db.ExecContext(ctx, b.q(`INSERT INTO {s} (worker_id, owner, token, lease_until, last_ns) VALUES (?, ?, ?, {now} + ?, 0)`),
		free.Int64, b.o.Identity(), h.Token, b.ttlMicros())
	if err != nil {
		if b.db.Kind.Duplicate(err) {
			return false, registry.ErrRace
		}
		return false, b.fail("claim an unused worker ID", err)
	}
	h.ID = free.Int64
	b.touch(ctx, h.ID, true)
	return true, nil
}

// Claim implements registry.Backend: one UPDATE whose WHERE requires the row
// as read (owner, last claim, last time) and the lease run out, or, for a
// takeover, the claim named.
func (b *Backend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	held := `lease_until < {now}`
	if s.Held() {
		held = `lease_until >= 0` // the token, compared already, is the claim's
	}
	res, err := b.db.ExecContext(ctx, b.q(`UPDATE {s} SET owner = ?, token = ?, lease_until = {now} + ?, last_ns = ?
WHERE worker_id = ? AND owner = ? AND token = ? AND last_ns = ? AND `+held),
		b.o.Identity(), h.Token, b.ttlMicros(), floor, s.ID, s.Owner, s.Claim, s.Last)
	if err != nil {
		return b.fail("claim worker ID "+strconv.FormatInt(s.ID, 10), err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return registry.ErrRace
	}
	b.touch(ctx, s.ID, s.Owner != b.o.Identity())
	return nil
}

// touch updates the ID's WORKER_NODE row for a new start: the launch date
// and, when the ID changed hands, the host, port and type. It is a record
// for people; a failure is logged, not returned.
func (b *Backend) touch(ctx context.Context, id int64, moved bool) {
	var err error
	if moved {
		_, err = b.db.ExecContext(ctx, b.q(`UPDATE {t} SET HOST_NAME = ?, PORT = ?, TYPE = ?, LAUNCH_DATE = CURRENT_DATE, MODIFIED = CURRENT_TIMESTAMP WHERE ID = ?`),
			b.o.Host, strconv.Itoa(b.o.Port), b.nodeType, id+1)
	} else {
		_, err = b.db.ExecContext(ctx, b.q(`UPDATE {t} SET LAUNCH_DATE = CURRENT_DATE, MODIFIED = CURRENT_TIMESTAMP WHERE ID = ?`), id+1)
	}
	if err != nil {
		b.o.Logger.Warn("worker registry: cannot update the worker node row", "worker", id, "err", err)
	}
}

// Keep implements registry.Backend: the lease is renewed every TTL/3, only
// while it still runs in the database's clock (once it has run out another
// node may be recycling the ID).
func (b *Backend) Keep(h *registry.Hold) {
	h.Renew(h.Sent, b.o.LeaseTTL, b.db.Timeout, b.o.Logger, func(ctx context.Context) (bool, error) {
		res, err := b.db.ExecContext(ctx, b.q(`UPDATE {s} SET lease_until = {now} + ? WHERE worker_id = ? AND token = ? AND lease_until >= {now}`), b.ttlMicros(), h.ID, h.Token)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	})
}

// Write implements registry.Backend. A save needs the lease running in the
// database's clock (a node paused past it must not raise the last time
// under a node that is recycling the ID); the exact time at a clean stop
// needs the token, and ends the lease.
func (b *Backend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	stmt := `UPDATE {s} SET last_ns = CASE WHEN last_ns < CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE last_ns END WHERE worker_id = ? AND token = ? AND lease_until >= {now}`
	args := []any{ns, ns, h.ID, h.Token}
	if exact {
		stmt = `UPDATE {s} SET last_ns = ?, lease_until = 0 WHERE worker_id = ? AND token = ?`
		args = args[1:]
	}
	if b.db.Kind == sqldb.MySQL {
		stmt = strings.ReplaceAll(stmt, "AS BIGINT", "AS SIGNED")
	}
	ctx, cancel := b.db.Bound(ctx)
	defer cancel()
	res, err := b.db.ExecContext(ctx, b.q(stmt), args...)
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	return n == 1, nil
}

// End implements registry.Backend: it ends the lease if it is still ours.
func (b *Backend) End(h *registry.Hold) {
	ctx, cancel := context.WithTimeout(context.Background(), b.db.Timeout)
	defer cancel()
	b.db.ExecContext(ctx, b.q(`UPDATE {s} SET lease_until = 0 WHERE worker_id = ? AND token = ?`), h.ID, h.Token)
}

// Close implements registry.Backend.
func (b *Backend) Close() error { return b.db.Close() }
