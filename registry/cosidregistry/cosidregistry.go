// Package cosidregistry is the snowflake worker registry on CosId's
// machine-ID storage (Ahoo-Wang/CosId 3.2.1, cosid-jdbc's
// JdbcMachineIdDistributor): its table
//
//	cosid_machine(name, namespace, machine_id, last_timestamp, instance_id, distribute_time, revert_time)
//
// on MySQL/MariaDB (CosId's DDL) and PostgreSQL (the same columns), so that
// frond's nodes and CosId's applications take machine IDs from one
// namespace and never hold the same one. A registry.Backend: frond's
// protocol (registry.Protocol) mapped onto CosId's fields.
//
// # The mapping
//
// CosId writes one row per machine ID, name "{namespace}.{id, 8 digits}";
// instance_id is its holder ("host:port", or "" once a non-stable
// instance reverted it) and last_timestamp (ms) both its holder's guard
// (renewed every minute) and the time its IDs may have reached. An
// instance takes a row only when instance_id is "" or last_timestamp is at
// least the safe guard (5 minutes) old, and then waits for its clock to pass
// last_timestamp.
//
// A frond node's instance_id is "{host:port}#{token}" (frond's claim), and
// it keeps the row as CosId's guard does: while it holds the ID it raises
// last_timestamp to its clock every lease_ttl/3 and to every reserved time
// it saves, so the row is live to CosId for the safe guard after the
// node's last renewal; the ID's last time is last_timestamp. Among frond's
// nodes the claim lives by a lease in the database's clock, in a table of
// frond's beside CosId's, cosid_machine_frond(name, token, lease_until), as
// the SQL registry's does: a frond node takes a frond node's ID once that
// lease has run out (and recycle_after has passed its last time), and a
// CosId application's once CosId's own rule lets it (reverted, or not
// guarded within the safe guard). A clean stop records the exact last
// time and ends the lease, and keeps instance_id (as a stable CosId
// instance reverts): the same process takes its ID back at once from that
// time, other frond nodes once recycle_after has passed it, and CosId's
// applications once the safe guard has.
//
// # What must agree
//
//   - The layout: CosId's (snowflake layout cosid: 41+10+12, ms, from
//     2019-12-24T16:00Z); a node of another layout is refused.
//   - The safe guard (frond_safe_guard, default CosId's 5m) is the one
//     CosId's applications are configured with
//     (cosid.machine.guarder.safe-guard-duration); clocks within a fifth of
//     it of each other.
//   - recycle_after at most four fifths of the safe guard: a frond node
//     that lost the database issues from its local record up to its last
//     confirmed time + recycle_after, and CosId takes the row once the safe
//     guard has passed its last renewal. lease_ttl likewise (a holder gives
//     the ID up when it has not renewed for lease_ttl).
//
// URL: cosid+mysql://user:pass@host:3306/db or cosid+postgres://..., with
// frond_namespace (CosId's machine namespace, default cosid),
// frond_safe_guard (default 5m), frond_timeout (5s), frond_max_conns (2).
package cosidregistry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/snowflake"
)

// Defaults of the URL parameters.
const (
	DefaultNamespace = "cosid"
	DefaultSafeGuard = 5 * time.Minute // CosId's MachineProperties.Guarder.safeGuardDuration
	DefaultTimeout   = 5 * time.Second
	DefaultMaxConns  = 2
)

// Schemes are the URL schemes of the registry.
var Schemes = []string{"cosid+mysql", "cosid+postgres", "cosid+postgresql", "cosid+redis", "cosid+rediss"}

var (
	_ registry.Backend        = (*Backend)(nil)
	_ registry.LayoutRecorder = (*Backend)(nil)
)

// Backend is CosId's cosid_machine table as a registry backend.
type Backend struct {
	common
	db *sqldb.DB

	mu    sync.Mutex
	ready bool
}

// Layout is the fingerprint of CosId's layout (snowflake preset cosid).
func Layout() string {
	l, _ := snowflake.Preset(snowflake.CosId)
	return l.Fingerprint()
}

// Check parses rawURL as Open does, without contacting the database.
func Check(rawURL string, o registry.Options) error { return registry.CheckIn(rawURL, o, Open) }

// Open parses rawURL and opens a connection pool (a Redis client for
// cosid+redis://: redis.go); it does not contact the server.
func Open(rawURL string, o registry.Options) (*registry.Protocol, error) {
	rest, ok := strings.CutPrefix(rawURL, "cosid+")
	if !ok {
		return nil, fmt.Errorf("%w: a CosId registry URL starts with cosid+ (cosid+mysql://, cosid+postgres://, cosid+redis://)", frond.ErrInvalidArgument)
	}
	if strings.HasPrefix(rest, "redis://") || strings.HasPrefix(rest, "rediss://") {
		return openRedis(rest, o)
	}
	p, err := sqldb.Parse(rest, "frond_namespace", "frond_safe_guard", "frond_timeout", "frond_max_conns")
	if err != nil {
		return nil, fmt.Errorf("registry URL: %w", err)
	}
	if p.Kind != sqldb.MySQL && p.Kind != sqldb.Postgres {
		return nil, fmt.Errorf("%w: CosId's machine table is on MySQL, MariaDB or PostgreSQL, not %s", frond.ErrInvalidArgument, p.Kind)
	}
	if u := p.Unknown(); len(u) > 0 {
		return nil, fmt.Errorf("%w: registry URL parameter %s: unknown (frond_namespace, frond_safe_guard, frond_timeout, frond_max_conns)", frond.ErrInvalidArgument, u[0])
	}
	c, o, err := parseCommon(p.Params, o)
	if err != nil {
		return nil, err
	}
	b := &Backend{common: c}
	pool, err := sqldb.Pool(p.Params, DefaultTimeout, DefaultMaxConns)
	if err != nil {
		return nil, err
	}
	if b.db, err = sqldb.Open(p, pool); err != nil {
		return nil, err
	}
	return registry.NewProtocol(b, o), nil
}

// common is what CosId's two layouts share: the namespace, the safe
// guard, and this node's options.
type common struct {
	o         registry.Options
	ns        string
	safeGuard time.Duration
}

// parseCommon reads frond_namespace and frond_safe_guard and checks the
// node's options against the safe guard; o comes back with its defaults.
func parseCommon(params map[string]string, o registry.Options) (common, registry.Options, error) {
	if err := o.Validate(); err != nil {
		return common{}, o, fmt.Errorf("%w: %v", frond.ErrInvalidArgument, err)
	}
	o = o.WithDefaults()
	c := common{o: o, ns: DefaultNamespace, safeGuard: DefaultSafeGuard}
	if v, ok := params["frond_namespace"]; ok {
		if frond.ValidateTagName(v) != nil || len(v) > 80 {
			return c, o, fmt.Errorf("%w: frond_namespace=%q: 1 to 80 letters, digits, '-', '_', '.', ':' or '@'", frond.ErrInvalidArgument, v)
		}
		c.ns = v
	}
	c.ns += o.DatacenterSuffix("_dc") // a datacenter's own machine IDs
	if v, ok := params["frond_safe_guard"]; ok {
		var err error
		if c.safeGuard, err = sqldb.Duration("frond_safe_guard", v); err != nil {
			return c, o, err
		}
	}
	if most := c.safeGuard - c.skew(); o.RecycleAfter > most || o.LeaseTTL > most {
		return c, o, fmt.Errorf("%w: recycle_after %v and lease_ttl %v must be at most %v with CosId's safe guard of %v (frond_safe_guard): "+
			"CosId's applications take a machine ID once the safe guard has passed its holder's last renewal, and a frond node cut off from the database "+
			"issues up to recycle_after past its last confirmed time; set worker.recycle_after and worker.lease_ttl (docs/cosid.md)",
			frond.ErrInvalidArgument, o.RecycleAfter, o.LeaseTTL, most, c.safeGuard)
	}
	if n := len(c.instance(strings.Repeat("0", 32))); n > 100 {
		return c, o, fmt.Errorf("%w: this node's instance_id (%s and a claim) is %d characters; CosId's column holds 100", frond.ErrInvalidArgument, o.Identity(), n)
	}
	return c, o, nil
}

// skew is how far apart the clocks of frond's nodes and CosId's
// applications may be: a fifth of the safe guard.
func (c common) skew() time.Duration { return c.safeGuard / 5 }

// instance is frond's instance_id of a claim: "host:port#token".
func (c common) instance(token string) string { return c.o.Identity() + "#" + token }

// rowName is CosId's name of a machine ID (MachineIdDistributor.namespacedMachineId).
func (c common) rowName(id int64) string { return fmt.Sprintf("%s.%08d", c.ns, id) }

// Where implements registry.Backend.
func (b *Backend) Where() string { return "cosid+" + b.db.Where + " namespace " + b.ns }

// Policy implements registry.Backend: a node takes back its own ID first,
// as CosId's instances do; gone holders' IDs are recycled.
func (common) Policy() registry.Policy { return registry.Policy{OwnFirst: true, Recycle: true} }

// q rebinds query's placeholders and puts in the database's clock in µs
// ({now}).
func (b *Backend) q(query string) string {
	return b.db.Kind.Rebind(strings.ReplaceAll(query, "{now}", b.db.Kind.NowMicros()))
}

func (b *Backend) ttlMicros() int64 { return max(b.o.LeaseTTL.Microseconds(), 1) }

func (b *Backend) fail(op string, err error) error {
	if errors.Is(err, registry.ErrRace) {
		return err
	}
	return b.db.Fail(op, err)
}

// nowMs is this node's clock in ms, as CosId's System.currentTimeMillis.
func (c common) nowMs() int64 { return c.o.Now().UnixMilli() }

// afterMs is the millisecond after the one of a time in ns: what frond
// writes in last_timestamp for a time it may have issued up to. CosId
// issues from last_timestamp's own millisecond on (its clock sync waits
// only while last_timestamp is ahead), so the millisecond frond used must
// be before it.
func afterMs(ns int64) int64 { return ns/int64(time.Millisecond) + 1 }

// CosId's INIT_COSID_MACHINE_TABLE_SQL (JdbcMachineIdInitializer.java), verbatim.
const machineMySQLDDL = `create table if not exists cosid_machine
(
    name            varchar(100)     not null comment '{namespace}.{machine_id}',
    namespace       varchar(100)     not null,
    machine_id      integer unsigned not null default 0,
    last_timestamp  bigint unsigned  not null default 0,
    instance_id     varchar(100)     not null default '',
    distribute_time bigint unsigned  not null default 0,
    revert_time     bigint unsigned  not null default 0,
    constraint cosid_machine_pk
        primary key (name),
    key idx_namespace (namespace),
    key idx_instance_id (instance_id)
) engine = InnoDB`

var machinePostgresDDL = []string{`CREATE TABLE IF NOT EXISTS cosid_machine (
    name            VARCHAR(100) NOT NULL,
    namespace       VARCHAR(100) NOT NULL,
    machine_id      INTEGER NOT NULL DEFAULT 0,
    last_timestamp  BIGINT NOT NULL DEFAULT 0,
    instance_id     VARCHAR(100) NOT NULL DEFAULT '',
    distribute_time BIGINT NOT NULL DEFAULT 0,
    revert_time     BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT cosid_machine_pk PRIMARY KEY (name)
)`, `CREATE INDEX IF NOT EXISTS cosid_machine_namespace ON cosid_machine (namespace)`,
	`CREATE INDEX IF NOT EXISTS cosid_machine_instance_id ON cosid_machine (instance_id)`}

// frond's claims beside CosId's rows: the lease in the database's clock
// (µs), which CosId's client-clock last_timestamp cannot be.
const sideMySQLDDL = `create table if not exists cosid_machine_frond
(
    name        varchar(100) not null,
    token       varchar(64)  not null,
    lease_until bigint       not null,
    constraint cosid_machine_frond_pk
        primary key (name)
) engine = InnoDB`

const sidePostgresDDL = `CREATE TABLE IF NOT EXISTS cosid_machine_frond (
    name        VARCHAR(100) NOT NULL,
    token       VARCHAR(64) NOT NULL,
    lease_until BIGINT NOT NULL,
    CONSTRAINT cosid_machine_frond_pk PRIMARY KEY (name)
)`

// Prepare implements registry.Backend: CosId's table, created when missing.
func (b *Backend) Prepare(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready {
		return nil
	}
	if err := createTables(ctx, b.db); err != nil {
		return b.fail("create table cosid_machine", err)
	}
	b.ready = true
	return nil
}

// createTables creates CosId's table and frond's beside it when missing.
func createTables(ctx context.Context, db *sqldb.DB) error {
	ddl := []string{machineMySQLDDL, sideMySQLDDL}
	if db.Kind == sqldb.Postgres {
		ddl = append(slices.Clip(machinePostgresDDL), sidePostgresDDL)
	}
	c, cancel := db.Bound(ctx)
	defer cancel()
	for _, stmt := range ddl {
		if err := db.ExecDDL(c, stmt); err != nil {
			return err
		}
	}
	return nil
}

// RecordLayout implements registry.LayoutRecorder: CosId's machine IDs
// serve CosId's layout, whatever was asked.
func (common) RecordLayout(context.Context, string) (string, error) { return Layout(), nil }

// rev is a row as read: what Claim compares.
type rev struct {
	instance string
	last     int64
}

// slots reads the namespace's rows within 0..maxNode, with frond's claims
// beside them.
func (b *Backend) slots(ctx context.Context, op string, maxNode int64) ([]registry.Slot, error) {
	c, cancel := b.db.Bound(ctx)
	defer cancel()
	rows, err := b.db.QueryContext(c, b.q(`SELECT m.machine_id, m.instance_id, m.last_timestamp, COALESCE(f.token, ''), COALESCE(f.lease_until, 0) - {now}
FROM cosid_machine m LEFT JOIN cosid_machine_frond f ON f.name = m.name WHERE m.namespace = ? AND m.machine_id <= ? ORDER BY m.machine_id`), b.ns, maxNode)
	if err != nil {
		return nil, b.fail(op, err)
	}
	defer rows.Close()
	now := b.nowMs()
	var out []registry.Slot
	for rows.Next() {
		var id, last, left int64
		var instance, token string
		if err := rows.Scan(&id, &instance, &last, &token, &left); err != nil {
			return nil, b.fail(op, err)
		}
		out = append(out, b.slot(id, instance, last, now, token, left >= 0))
	}
	if err := rows.Err(); err != nil {
		return nil, b.fail(op, err)
	}
	return out, nil
}

// slot is frond's view of a row at now (ms): held by a frond node while
// its lease runs (token, leased: frond's record beside the row), by a
// CosId application while CosId's rule says so.
func (c common) slot(id int64, instance string, last, now int64, token string, leased bool) registry.Slot {
	owner, claim, frondRow := strings.Cut(instance, "#")
	// The ID's last time: frond's rows hold the millisecond after the
	// last frond used (afterMs); CosId's the last it may have used
	// (revert and guard write its clock), so frond starts after it.
	lastMs := last
	if !frondRow {
		lastMs++
	}
	s := registry.Slot{ID: id, Last: lastMs * int64(time.Millisecond), Owner: instance, Rev: rev{instance, last}}
	switch {
	case frondRow && claim == token:
		s.Owner, s.Claim = owner, claim
		if leased {
			s.Holder = claim
		}
	case instance != "" && last > now-c.safeGuard.Milliseconds():
		// A CosId application's (or a frond claim without its record: by
		// CosId's rule too).
		s.Holder = "cosid:" + instance
		if frondRow {
			s.Owner, s.Claim = owner, claim
		}
	case frondRow:
		s.Owner, s.Claim = owner, claim
	}
	return s
}

// Own implements registry.Backend: the rows of this node's claims.
func (b *Backend) Own(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	all, err := b.slots(ctx, "find this node's machine ID", maxNode)
	return slices.DeleteFunc(all, func(s registry.Slot) bool { return s.Claim == "" || s.Owner != b.o.Identity() }), err
}

// Idle implements registry.Backend: the rows no live claim holds: a
// reverted row, a CosId application's not guarded within the safe guard
// (GET_REVERT_MACHINE_STATE), a frond node's whose lease has run out.
func (b *Backend) Idle(ctx context.Context, maxNode int64) ([]registry.Slot, error) {
	all, err := b.slots(ctx, "find a machine ID to recycle", maxNode)
	return slices.DeleteFunc(all, registry.Slot.Held), err
}

// New implements registry.Backend as CosId's distributeRemote does past
// its own and reverted rows: the namespace's largest machine ID + 1
// (NEXT_MACHINE_ID), inserted (DISTRIBUTE_MACHINE); a concurrent insert of
// the same ID is a race, tried again.
func (b *Backend) New(ctx context.Context, maxNode int64, h *registry.Hold) (int64, bool, error) {
	c, cancel := b.db.Bound(ctx)
	defer cancel()
	var next sql.NullInt64
	if err := b.db.QueryRowContext(c, b.q("SELECT MAX(machine_id) + 1 FROM cosid_machine WHERE namespace = ?"), b.ns).Scan(&next); err != nil {
		return 0, false, b.fail("find a new machine ID", err)
	}
	id := next.Int64 // no rows: 0, as CosId's getInt of NULL
	if id > maxNode {
		return 0, false, nil
	}
	now := b.nowMs()
	err := b.db.InTx(c, 0, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(c, b.q(`INSERT INTO cosid_machine (name, namespace, machine_id, last_timestamp, instance_id, distribute_time, revert_time) VALUES (?, ?, ?, ?, ?, ?, 0)`),
			b.rowName(id), b.ns, id, now, b.instance(h.Token), now)
		if err != nil {
			return err
		}
		return b.lease(c, tx, id, h.Token)
	})
	if err != nil {
		if b.db.Kind.Duplicate(err) {
			return 0, false, registry.ErrRace
		}
		return 0, false, b.fail("claim a new machine ID", err)
	}
	h.ID = id
	return 0, true, nil
}

// lease records h's claim on the row of id beside it, its lease running
// from now in the database's clock.
func (b *Backend) lease(ctx context.Context, tx *sql.Tx, id int64, token string) error {
	if _, err := tx.ExecContext(ctx, b.q(`DELETE FROM cosid_machine_frond WHERE name = ?`), b.rowName(id)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, b.q(`INSERT INTO cosid_machine_frond (name, token, lease_until) VALUES (?, ?, {now} + ?)`), b.rowName(id), token, b.ttlMicros())
	return err
}

// Claim implements registry.Backend: in one transaction, an UPDATE of
// CosId's row whose WHERE requires the row as read (its holder and last
// time: a row that was free when read is free while unchanged), then the
// lease beside it. last_timestamp becomes the later of floor and now: the
// row is live to CosId from this moment.
func (b *Backend) Claim(ctx context.Context, s registry.Slot, floor int64, h *registry.Hold) error {
	c, cancel := b.db.Bound(ctx)
	defer cancel()
	r, _ := s.Rev.(rev)
	now := b.nowMs()
	err := b.db.InTx(c, 0, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(c, b.q(`UPDATE cosid_machine SET instance_id = ?, last_timestamp = ?, distribute_time = ? WHERE name = ? AND instance_id = ? AND last_timestamp = ?`),
			b.instance(h.Token), max(now, afterMs(floor)), now, b.rowName(s.ID), r.instance, r.last)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return registry.ErrRace
		}
		return b.lease(c, tx, s.ID, h.Token)
	})
	if err != nil {
		return b.fail("claim machine ID "+strconv.FormatInt(s.ID, 10), err)
	}
	return nil
}

// Keep implements registry.Backend, every lease_ttl/3: the lease renewed
// while it runs in the database's clock (once it has run out another frond
// node may be recycling the ID), and CosId's guard: the row's
// last_timestamp raised to now while the row is this claim's (a CosId
// application that took it ends the hold).
func (b *Backend) Keep(h *registry.Hold) {
	inst := b.instance(h.Token)
	h.Renew(h.Sent, b.o.LeaseTTL, b.db.Timeout, b.o.Logger, func(ctx context.Context) (bool, error) {
		ok, err := b.update(ctx, `UPDATE cosid_machine_frond SET lease_until = {now} + ? WHERE name = ? AND token = ? AND lease_until >= {now}`, b.ttlMicros(), b.rowName(h.ID), h.Token)
		if err != nil || !ok {
			return ok, err
		}
		return b.update(ctx, `UPDATE cosid_machine SET last_timestamp = GREATEST(last_timestamp, ?) WHERE name = ? AND instance_id = ?`, b.nowMs(), b.rowName(h.ID), inst)
	})
}

// update runs a statement on this claim's row and reports whether it was
// there.
func (b *Backend) update(ctx context.Context, stmt string, args ...any) (bool, error) {
	res, err := b.db.ExecContext(ctx, b.q(stmt), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Write implements registry.Backend. A save raises last_timestamp, and
// needs the lease running in the database's clock (a node paused past it
// must not raise the time under a node recycling the ID). The exact time
// at a clean stop replaces last_timestamp and ends the lease; instance_id
// stays (CosId's REVERT_MACHINE_STATE of a stable instance): CosId's
// applications take the ID once the safe guard has passed that time,
// when this node's local record no longer vouches for it.
func (b *Backend) Write(ctx context.Context, h *registry.Hold, ns int64, exact bool) (bool, error) {
	c, cancel := b.db.Bound(ctx)
	defer cancel()
	inst := b.instance(h.Token)
	var ok bool
	var err error
	if exact {
		err = b.db.InTx(c, 0, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(c, b.q(`UPDATE cosid_machine SET last_timestamp = ?, revert_time = ? WHERE name = ? AND instance_id = ?`),
				afterMs(ns), b.nowMs(), b.rowName(h.ID), inst)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if ok = n == 1; err != nil || !ok {
				return err
			}
			_, err = tx.ExecContext(c, b.q(`UPDATE cosid_machine_frond SET lease_until = 0 WHERE name = ? AND token = ?`), b.rowName(h.ID), h.Token)
			return err
		})
	} else {
		ok, err = b.update(c, `UPDATE cosid_machine SET last_timestamp = GREATEST(last_timestamp, ?) WHERE name = ? AND instance_id = ?
AND EXISTS (SELECT 1 FROM cosid_machine_frond f WHERE f.name = ? AND f.token = ? AND f.lease_until >= {now})`,
			afterMs(ns), b.rowName(h.ID), inst, b.rowName(h.ID), h.Token)
	}
	if err != nil {
		return false, b.fail("save the last time", err)
	}
	return ok, nil
}

// End implements registry.Backend: it ends the lease if it is still this
// claim's. CosId's row stays as it is: live to CosId's applications until
// the safe guard has passed its last renewal.
func (b *Backend) End(h *registry.Hold) {
	ctx, cancel := context.WithTimeout(context.Background(), b.db.Timeout)
	defer cancel()
	b.db.ExecContext(ctx, b.q(`UPDATE cosid_machine_frond SET lease_until = 0 WHERE name = ? AND token = ?`), b.rowName(h.ID), h.Token)
}

// Close implements registry.Backend.
func (b *Backend) Close() error { return b.db.Close() }
