// Package sqlregistry is the snowflake worker registry on a SQL database
// (MySQL or MariaDB, PostgreSQL, SQLite), built on Baidu UidGenerator's
// WORKER_NODE table: every start of a node inserts a row, and the row's
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
// worker ID in use: the holder (owner "host:port" and a random token), a
// lease (lease_until, in microseconds of the database server's clock) and
// the latest time saved (last_ns, the node's clock).
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
// frond_mode=reuse first takes back the ID of this node's host:port when its
// lease has expired (at once after a clean stop; within lease_ttl after a
// crash), as the ZooKeeper, etcd and Redis registries do.
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
	"errors"
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

var (
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
)

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

// Registry is a SQL worker registry.
type Registry struct {
	db       *sqldb.DB
	o        registry.Options
	table    string // WORKER_NODE
	side     string // {table}_frond
	mode     string
	file     string // SQLite: the database file, whose directory Acquire creates
	nodeType int

	mu     sync.Mutex // held across Acquire, Save, Release and Close
	ready  bool       // the tables exist
	hold   *hold
	closed bool
}

// hold is one holding of an ID under one token.
type hold struct {
	*registry.Hold
	token string
}

// Open parses rawURL and opens a connection pool. It does not contact the
// database.
func Open(rawURL string, o registry.Options) (*Registry, error) {
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
	r := &Registry{o: o, table: DefaultTable, mode: ModeNew, file: p.File(), nodeType: detectType()}
	if v, ok := p.Params["frond_table"]; ok {
		if !tableName.MatchString(v) {
			return nil, fmt.Errorf("%w: frond_table=%q: letters, digits and underscores, at most 57", frond.ErrInvalidArgument, v)
		}
		r.table = v
	}
	r.side = r.table + "_frond"
	if v, ok := p.Params["frond_mode"]; ok {
		if v != ModeNew && v != ModeReuse {
			return nil, fmt.Errorf("%w: frond_mode=%q: new or reuse", frond.ErrInvalidArgument, v)
		}
		r.mode = v
	}
	timeout, conns := DefaultTimeout, DefaultMaxConns
	if v, ok := p.Params["frond_timeout"]; ok {
		if timeout, err = sqldb.Duration("frond_timeout", v); err != nil {
			return nil, err
		}
	}
	if v, ok := p.Params["frond_max_conns"]; ok {
		if conns, err = strconv.Atoi(v); err != nil || conns < 1 {
			return nil, fmt.Errorf("%w: frond_max_conns=%q: 1 or more", frond.ErrInvalidArgument, v)
		}
	}
	if r.db, err = sqldb.Open(p, sqldb.Options{Timeout: timeout, MaxOpenConns: conns}); err != nil {
		return nil, err
	}
	return r, nil
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

// String names the registry without secrets.
func (r *Registry) String() string { return r.db.Where + " table " + r.table }

// q rebinds query's placeholders and puts in the table names ({t}, {s})
// and the database clock in microseconds ({now}).
func (r *Registry) q(query string) string {
	query = strings.NewReplacer("{t}", r.table, "{s}", r.side, "{now}", nowMicros(r.db.Kind)).Replace(query)
	return r.db.Kind.Rebind(query)
}

// nowMicros is the database server's clock in microseconds since 1970.
func nowMicros(k sqldb.Kind) string {
	switch k {
	case sqldb.MySQL:
		return "CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(6)) * 1000000 AS SIGNED)"
	case sqldb.Postgres:
		return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"
}

func (r *Registry) ddl() []string {
	idCol, engine, ts, bin := "ID INTEGER PRIMARY KEY AUTOINCREMENT", "", "TIMESTAMP", ""
	switch r.db.Kind {
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
		r.q(`CREATE TABLE IF NOT EXISTS {t} (
  ` + idCol + `,
  HOST_NAME VARCHAR(64) NOT NULL,
  PORT VARCHAR(64) NOT NULL,
  TYPE INT NOT NULL,
  LAUNCH_DATE DATE NOT NULL,
  MODIFIED ` + ts + ` NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CREATED ` + ts + ` NOT NULL DEFAULT CURRENT_TIMESTAMP
)` + engine),
		r.q(`CREATE TABLE IF NOT EXISTS {s} (
  worker_id BIGINT NOT NULL PRIMARY KEY,
  owner VARCHAR(200)` + bin + ` NOT NULL,
  token VARCHAR(64)` + bin + ` NOT NULL,
  lease_until BIGINT NOT NULL,
  last_ns BIGINT NOT NULL
)` + engine),
	}
}

// setup creates the tables once.
func (r *Registry) setup(ctx context.Context) error {
	if r.ready {
		return nil
	}
	if r.file != "" {
		if err := os.MkdirAll(filepath.Dir(r.file), 0o755); err != nil {
			return fmt.Errorf("worker registry: %w: %v", frond.ErrStoreUnavailable, err)
		}
	}
	for _, stmt := range r.ddl() {
		_, err := r.db.ExecContext(ctx, stmt)
		if err != nil && r.db.Kind.CreateRace(err) { // another node created it at the same moment
			_, err = r.db.ExecContext(ctx, stmt)
		}
		if err != nil {
			return r.fail("create the worker tables", err)
		}
	}
	r.ready = true
	return nil
}

func (r *Registry) fail(op string, err error) error {
	return fmt.Errorf("worker registry: %w", r.db.Fail(op, err))
}

func (r *Registry) ttlMicros() int64 { return max(r.o.LeaseTTL.Microseconds(), 1) }

// errRace: another node changed the row between our read and our claim.
var errRace = errors.New("claim lost a race")

// Acquire implements frond.WorkerRegistry.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return frond.Worker{}, fmt.Errorf("worker registry: %w", frond.ErrClosed)
	}
	if h := r.hold; h != nil && !h.IsLost() {
		return h.Worker(), nil
	}
	r.dropLocked(true)
	if maxNode < 0 {
		return frond.Worker{}, fmt.Errorf("%w: layout with no worker IDs (max %d)", frond.ErrNoWorkerID, maxNode)
	}
	ctx, cancel := r.db.Bound(ctx)
	defer cancel()
	if err := r.setup(ctx); err != nil {
		return frond.Worker{}, err
	}
	token := registry.NewToken()
	for range 10 {
		sent := time.Now()
		id, last, err := r.claim(ctx, maxNode, token)
		if errors.Is(err, errRace) {
			continue
		}
		if err != nil {
			return frond.Worker{}, err
		}
		h := &hold{Hold: registry.NewHold(id, last), token: token}
		h.Renew(sent, r.o.LeaseTTL, r.db.Timeout, r.o.Logger, func(ctx context.Context) (bool, error) {
			// Only a lease still running in the database's clock is
			// renewed: once it has run out another node may be recycling it.
			res, err := r.db.ExecContext(ctx, r.q(`UPDATE {s} SET lease_until = {now} + ? WHERE worker_id = ? AND token = ? AND lease_until >= {now}`), r.ttlMicros(), id, token)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		})
		r.hold = h
		r.o.Logger.Info("worker ID held in a database", "worker", id, "owner", r.o.Identity(), "mode", r.mode, "db", r.String())
		return h.Worker(), nil
	}
	return frond.Worker{}, fmt.Errorf("worker registry: %w: other nodes kept taking the IDs this node chose; try again", frond.ErrStoreUnavailable)
}

// claim takes an ID: this identity's own (reuse mode), else a new one,
// else a recycled one. It returns the ID and its last time in ns.
func (r *Registry) claim(ctx context.Context, maxNode int64, token string) (int64, int64, error) {
	if r.mode == ModeReuse {
		id, last, ok, err := r.claimOwn(ctx, maxNode, token)
		if err != nil || ok {
			return id, last, err
		}
	}
	id, ok, err := r.claimNew(ctx, maxNode, token)
	if err != nil || ok {
		return id, 0, err
	}
	id, ok, err = r.claimGap(ctx, maxNode, token)
	if err != nil || ok {
		return id, 0, err
	}
	return r.recycle(ctx, maxNode, token)
}

// claimOwn takes back the ID this identity held, if its lease has expired.
func (r *Registry) claimOwn(ctx context.Context, maxNode int64, token string) (id, last int64, ok bool, err error) {
	var left int64
	err = r.db.QueryRowContext(ctx, r.q(`SELECT worker_id, last_ns, lease_until - {now} FROM {s} WHERE owner = ? AND worker_id <= ? ORDER BY worker_id LIMIT 1`),
		r.o.Identity(), maxNode).Scan(&id, &last, &left)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, r.fail("find this node's worker ID", err)
	}
	if left >= 0 {
		return 0, 0, false, registry.HeldElsewhere(fmt.Sprintf("worker ID %d of %s (its lease expires within %v)", id, r.o.Identity(), time.Duration(left+1)*time.Microsecond))
	}
	res, err := r.db.ExecContext(ctx, r.q(`UPDATE {s} SET token = ?, lease_until = {now} + ? WHERE worker_id = ? AND owner = ? AND lease_until < {now} AND last_ns = ?`),
		token, r.ttlMicros(), id, r.o.Identity(), last)
	if err != nil {
		return 0, 0, false, r.fail("take back the worker ID", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, 0, false, errRace
	}
	r.touch(ctx, id, false)
	return id, last, true, nil
}

// claimNew inserts a WORKER_NODE row and takes its ID if it fits the layout.
func (r *Registry) claimNew(ctx context.Context, maxNode int64, token string) (int64, bool, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, r.fail("begin", err)
	}
	defer tx.Rollback()
	insert := `INSERT INTO {t} (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (?, ?, ?, CURRENT_DATE, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`
	args := []any{r.o.Host, strconv.Itoa(r.o.Port), r.nodeType}
	var rowID int64
	if r.db.Kind == sqldb.MySQL {
		res, err := tx.ExecContext(ctx, r.q(insert), args...)
		if err == nil {
			rowID, err = res.LastInsertId()
		}
		if err != nil {
			return 0, false, r.fail("insert a worker node", err)
		}
	} else if err := tx.QueryRowContext(ctx, r.q(insert+" RETURNING ID"), args...).Scan(&rowID); err != nil {
		return 0, false, r.fail("insert a worker node", err)
	}
	id := rowID - 1
	if id < 0 || id > maxNode {
		return 0, false, nil // rolled back: the rows' IDs have passed the layout's
	}
	_, err = tx.ExecContext(ctx, r.q(`INSERT INTO {s} (worker_id, owner, token, lease_until, last_ns) VALUES (?, ?, ?, {now} + ?, 0)`),
		id, r.o.Identity(), token, r.ttlMicros())
	if err != nil {
		if r.db.Kind.Duplicate(err) { // a row left by another layout or a reset counter
			return 0, false, nil
		}
		return 0, false, r.fail("claim a new worker ID", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, false, r.fail("commit a new worker ID", err)
	}
	return id, true, nil
}

// claimGap takes the lowest ID of the layout that no frond node has used
// (none in the side table), once the rows' IDs have passed the layout: an
// existing UidGenerator table with more rows than the layout has IDs, or
// row IDs that skipped values (auto_increment_increment, rolled-back
// inserts, sequence caches). The ID's WORKER_NODE row, if there is one, is
// rewritten for this node; the side table is what holds the ID.
func (r *Registry) claimGap(ctx context.Context, maxNode int64, token string) (int64, bool, error) {
	var free sql.NullInt64
	err := r.db.QueryRowContext(ctx, r.q(`SELECT MIN(c) FROM (
  SELECT 0 AS c FROM (SELECT 1 AS one) z WHERE NOT EXISTS (SELECT 1 FROM {s} WHERE worker_id = 0)
  UNION ALL
  SELECT a.worker_id + 1 AS c FROM {s} a
  WHERE a.worker_id >= 0 AND a.worker_id < ? AND NOT EXISTS (SELECT 1 FROM {s} b WHERE b.worker_id = a.worker_id + 1)
) f`), maxNode).Scan(&free)
	if err != nil {
		return 0, false, r.fail("find an unused worker ID", err)
	}
	if !free.Valid {
		return 0, false, nil // every ID of the layout was used once
	}
	_, err = r.db.ExecContext(ctx, r.q(`INSERT INTO {s} (worker_id, owner, token, lease_until, last_ns) VALUES (?, ?, ?, {now} + ?, 0)`),
		free.Int64, r.o.Identity(), token, r.ttlMicros())
	if err != nil {
		if r.db.Kind.Duplicate(err) {
			return 0, false, errRace
		}
		return 0, false, r.fail("claim an unused worker ID", err)
	}
	r.touch(ctx, free.Int64, true)
	return free.Int64, true, nil
}

// recycle takes the expired ID with the oldest last time, once that time
// plus RecycleAfter is behind this node's clock.
func (r *Registry) recycle(ctx context.Context, maxNode int64, token string) (int64, int64, error) {
	var (
		id, last int64
		old      string
	)
	err := r.db.QueryRowContext(ctx, r.q(`SELECT worker_id, token, last_ns FROM {s} WHERE worker_id <= ? AND lease_until < {now} ORDER BY last_ns, worker_id LIMIT 1`),
		maxNode).Scan(&id, &old, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("worker registry: %w: all %d worker IDs (0..%d) of %s are held", frond.ErrNoWorkerID, maxNode+1, maxNode, r.String())
	}
	if err != nil {
		return 0, 0, r.fail("find a worker ID to recycle", err)
	}
	if frees := time.Unix(0, last).Add(r.o.RecycleAfter); !r.o.Now().After(frees) {
		return 0, 0, registry.RecycleLater(fmt.Sprintf("all %d worker IDs (0..%d) of %s", maxNode+1, maxNode, r.String()), frees, r.o.RecycleAfter)
	}
	// Issue only past last + RecycleAfter, the earliest the old holder's
	// local record stops vouching (already behind this node's clock).
	// Recorded in the claim, so nobody starts from the old time again if
	// this node stops before its first save.
	floor := last
	if last != 0 {
		floor = time.Unix(0, last).Add(r.o.RecycleAfter).UnixNano()
	}
	res, err := r.db.ExecContext(ctx, r.q(`UPDATE {s} SET owner = ?, token = ?, lease_until = {now} + ?, last_ns = ? WHERE worker_id = ? AND token = ? AND lease_until < {now} AND last_ns = ?`),
		r.o.Identity(), token, r.ttlMicros(), floor, id, old, last)
	if err != nil {
		return 0, 0, r.fail("recycle a worker ID", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, 0, errRace
	}
	r.touch(ctx, id, true)
	r.o.Logger.Info("worker ID recycled", "worker", id, "last", time.Unix(0, last).UTC(), "recycle_after", r.o.RecycleAfter)
	return id, floor, nil
}

// touch updates the ID's WORKER_NODE row for a new start: the launch date
// and, when the ID changed hands, the host, port and type. It is a record
// for people; a failure is logged, not returned.
func (r *Registry) touch(ctx context.Context, id int64, moved bool) {
	var err error
	if moved {
		_, err = r.db.ExecContext(ctx, r.q(`UPDATE {t} SET HOST_NAME = ?, PORT = ?, TYPE = ?, LAUNCH_DATE = CURRENT_DATE, MODIFIED = CURRENT_TIMESTAMP WHERE ID = ?`),
			r.o.Host, strconv.Itoa(r.o.Port), r.nodeType, id+1)
	} else {
		_, err = r.db.ExecContext(ctx, r.q(`UPDATE {t} SET LAUNCH_DATE = CURRENT_DATE, MODIFIED = CURRENT_TIMESTAMP WHERE ID = ?`), id+1)
	}
	if err != nil {
		r.o.Logger.Warn("worker registry: cannot update the worker node row", "worker", id, "err", err)
	}
}

// Save implements frond.WorkerRegistry: the latest of the times saved,
// while this node holds the ID.
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, false)
}

// Release implements frond.Releaser: it records last exactly and ends the
// lease, so the ID can be taken again at once (by this identity in reuse
// mode; by another node once RecycleAfter has passed last).
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	return r.write(ctx, last, true)
}

func (r *Registry) write(ctx context.Context, last time.Time, exact bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hold
	if h == nil || h.IsLost() {
		return fmt.Errorf("worker registry: %w: no worker ID is held in the database", frond.ErrWorkerLost)
	}
	ns := max(last.UnixNano(), 0)
	// A save needs the lease running in the database's clock (a node
	// paused past it must not raise the last time under a node that is
	// recycling the ID); the exact time at a clean stop needs the token.
	stmt := `UPDATE {s} SET last_ns = CASE WHEN last_ns < CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE last_ns END WHERE worker_id = ? AND token = ? AND lease_until >= {now}`
	args := []any{ns, ns, h.ID, h.token}
	if exact {
		stmt = `UPDATE {s} SET last_ns = ?, lease_until = 0 WHERE worker_id = ? AND token = ?`
		args = args[1:]
	}
	if r.db.Kind == sqldb.MySQL {
		stmt = strings.ReplaceAll(stmt, "AS BIGINT", "AS SIGNED")
	}
	ctx, cancel := r.db.Bound(ctx)
	defer cancel()
	res, err := r.db.ExecContext(ctx, r.q(stmt), args...)
	if err != nil {
		return r.fail("save the last time", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return r.fail("save the last time", err)
	} else if n == 0 {
		h.MarkLost()
		return fmt.Errorf("worker registry: %w: worker ID %d was taken by another node", frond.ErrWorkerLost, h.ID)
	}
	if exact {
		h.Saved = ns
		r.dropLocked(false)
	} else {
		h.Saved = max(h.Saved, ns)
	}
	return nil
}

// dropLocked forgets the hold: it stops the renewal, closes Lost and, with
// end, ends the lease if it is still ours (best effort).
func (r *Registry) dropLocked(end bool) {
	h := r.hold
	if h == nil {
		return
	}
	r.hold = nil
	h.Stop()
	if end {
		ctx, cancel := context.WithTimeout(context.Background(), r.db.Timeout)
		defer cancel()
		r.db.ExecContext(ctx, r.q(`UPDATE {s} SET lease_until = 0 WHERE worker_id = ? AND token = ?`), h.ID, h.token)
	}
}

// Close implements frond.WorkerRegistry: it stops the renewal, ends the
// lease if it is still ours and closes the pool. It is idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.dropLocked(true)
	r.closed = true
	return r.db.Close()
}
