package cosidregistry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
)

// Distributor is CosId's JDBC machine-ID distributor (cosid-jdbc 3.2.1,
// JdbcMachineIdDistributor.distributeRemote, guardRemote and revertRemote)
// run by frond for CosId applications that use CosId proxy's machine
// routes (MachineApi): on the cosid_machine table frond's own nodes use, so
// that those applications, CosId's JDBC applications and frond's nodes
// take machine IDs from one namespace and never hold the same one. It
// keeps nothing in memory (any frond node answers any request): a guard
// finds the instance's row by its instance_id.
type Distributor struct {
	db  *sqldb.DB
	now func() time.Time

	mu    sync.Mutex
	ready bool
}

// HasTable reports whether rawURL is a CosId registry on CosId's table
// (cosid+mysql://, cosid+postgres://), which OpenDistributor serves.
func HasTable(rawURL string) bool {
	for _, p := range []string{"cosid+mysql://", "cosid+postgres://", "cosid+postgresql://"} {
		if strings.HasPrefix(strings.ToLower(rawURL), p) {
			return true
		}
	}
	return false
}

// OpenDistributor opens the distributor on the database of a CosId
// registry URL (cosid+mysql://, cosid+postgres://; the namespace and safe
// guard come with each request). It does not contact the database.
func OpenDistributor(rawURL string) (*Distributor, error) {
	rest, ok := strings.CutPrefix(rawURL, "cosid+")
	if !ok {
		return nil, fmt.Errorf("%w: a CosId registry URL starts with cosid+", frond.ErrInvalidArgument)
	}
	p, err := sqldb.Parse(rest, "frond_namespace", "frond_safe_guard", "frond_timeout", "frond_max_conns")
	if err != nil {
		return nil, fmt.Errorf("registry URL: %w", err)
	}
	if p.Kind != sqldb.MySQL && p.Kind != sqldb.Postgres {
		return nil, fmt.Errorf("%w: CosId's machine table is on MySQL, MariaDB or PostgreSQL, not %s", frond.ErrInvalidArgument, p.Kind)
	}
	timeout := DefaultTimeout
	if v, ok := p.Params["frond_timeout"]; ok {
		if timeout, err = sqldb.Duration("frond_timeout", v); err != nil {
			return nil, err
		}
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: timeout, MaxOpenConns: 4})
	if err != nil {
		return nil, err
	}
	return &Distributor{db: db, now: time.Now}, nil
}

// Errors of the distributor, as CosId's proxy answers them.
var (
	// ErrMachineOverflow is MachineIdOverflowException (M-01): every
	// machine ID of machineBit is held.
	ErrMachineOverflow = fmt.Errorf("%w: MachineIdOverflowException", frond.ErrNoWorkerID)
	// ErrMachineLost is MachineIdLostException (M-03): the instance no
	// longer holds a machine ID.
	ErrMachineLost = fmt.Errorf("%w: MachineIdLostException", frond.ErrWorkerLost)
)

func (d *Distributor) prepare(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ready {
		return nil
	}
	if err := createTables(ctx, d.db); err != nil {
		return d.db.Fail("create table cosid_machine", err)
	}
	d.ready = true
	return nil
}

func (d *Distributor) q(s string) string { return d.db.Kind.Rebind(s) }

func (d *Distributor) nowMs() int64 { return d.now().UnixMilli() }

func checkRequest(ns string, machineBit int, instance string) error {
	switch {
	case ns == "" || len(ns) > 80 || frond.ValidateTagName(ns) != nil:
		return fmt.Errorf("%w: namespace %q: 1 to 80 letters, digits, '-', '_', '.', ':' or '@'", frond.ErrInvalidArgument, ns)
	case instance == "" || len(instance) > 100 || strings.Contains(instance, "#"):
		return fmt.Errorf("%w: instanceId %q: 1 to 100 characters, without '#' (frond's own instances)", frond.ErrInvalidArgument, instance)
	case machineBit < 1 || machineBit > 31:
		return fmt.Errorf("%w: machineBit:[%d] must be between 1 and 31", frond.ErrInvalidArgument, machineBit)
	}
	return nil
}

// Distribute is CosId's distribute for an instance: its own row (by
// self), else the first reverted or unguarded row it can take (by revert),
// else a new machine ID (the namespace's largest + 1). It returns the
// machine ID and the last timestamp (ms) the instance must pass before it
// issues IDs.
func (d *Distributor) Distribute(ctx context.Context, ns string, machineBit int, instance string, stable bool, safeGuard time.Duration) (int64, int64, error) {
	if err := checkRequest(ns, machineBit, instance); err != nil {
		return 0, 0, err
	}
	if err := d.prepare(ctx); err != nil {
		return 0, 0, err
	}
	c, cancel := d.db.Bound(ctx)
	defer cancel()
	id, last, err := d.distribute(c, ns, machineBit, instance, stable, safeGuard)
	if err != nil && !errors.Is(err, frond.ErrInvalidArgument) && !errors.Is(err, ErrMachineOverflow) {
		return 0, 0, d.db.Fail("distribute a machine ID", err)
	}
	return id, last, err
}

func (d *Distributor) distribute(c context.Context, ns string, machineBit int, instance string, stable bool, safeGuard time.Duration) (int64, int64, error) {
	at := int64(0) // getSafeGuardAt: a stable instance takes only reverted rows
	if !stable {
		at = max(d.nowMs()-safeGuard.Milliseconds(), 0)
	}
	var id, last int64
	err := d.db.QueryRowContext(c, d.q("select machine_id, last_timestamp from cosid_machine where namespace=? and instance_id=? and last_timestamp>?"), ns, instance, at).Scan(&id, &last)
	if err == nil { // by self: guarded now
		last = max(last, d.nowMs())
		_, err := d.db.ExecContext(c, d.q("update cosid_machine set last_timestamp=? where namespace=? and instance_id=? and machine_id=?"), last, ns, instance, id)
		return id, last, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, err
	}
	rows, err := d.db.QueryContext(c, d.q("select machine_id, last_timestamp from cosid_machine where namespace=? and (instance_id='' or last_timestamp<=?)"), ns, at)
	if err != nil {
		return 0, 0, err
	}
	type state struct{ id, last int64 }
	var reverts []state
	for rows.Next() {
		var s state
		if err := rows.Scan(&s.id, &s.last); err != nil {
			rows.Close()
			return 0, 0, err
		}
		reverts = append(reverts, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	for _, s := range reverts { // by revert: the first row the UPDATE takes
		now := d.nowMs()
		res, err := d.db.ExecContext(c, d.q("update cosid_machine set instance_id=?,last_timestamp=?,distribute_time=? where name=? and (instance_id='' or last_timestamp<=?)"),
			instance, now, now, fmt.Sprintf("%s.%08d", ns, s.id), at)
		if err != nil {
			return 0, 0, err
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			return s.id, s.last, nil
		}
	}
	for range 10 { // new: a duplicate key is another distributor's insert: again
		var next sql.NullInt64
		if err := d.db.QueryRowContext(c, d.q("select max(machine_id)+1 as next_machine_id from cosid_machine where namespace=?"), ns).Scan(&next); err != nil {
			return 0, 0, err
		}
		if next.Int64 > int64(1)<<machineBit-1 {
			return 0, 0, fmt.Errorf("%w: InstanceId:[%s] - distribution failed - totalMachineIds:[%d]", ErrMachineOverflow, instance, int64(1)<<machineBit)
		}
		now := d.nowMs()
		_, err := d.db.ExecContext(c, d.q("insert into cosid_machine (name, namespace, machine_id, last_timestamp, instance_id, distribute_time, revert_time) values (?,?,?,?,?,?,0)"),
			fmt.Sprintf("%s.%08d", ns, next.Int64), ns, next.Int64, now, instance, now)
		if err == nil {
			return next.Int64, now, nil
		}
		if !d.db.Kind.Duplicate(err) {
			return 0, 0, err
		}
	}
	return 0, 0, fmt.Errorf("%w: other distributors kept taking the new machine IDs of %s", frond.ErrStoreUnavailable, ns)
}

// Guard is CosId's guard: the instance's row stamped with now. An instance
// that holds no row any more (another took it once its guard lapsed) is
// ErrMachineLost. stable and safeGuard are CosId's arguments, which its
// JDBC guard does not use either.
func (d *Distributor) Guard(ctx context.Context, ns, instance string, stable bool, safeGuard time.Duration) error {
	if err := checkRequest(ns, 1, instance); err != nil {
		return err
	}
	if err := d.prepare(ctx); err != nil {
		return err
	}
	c, cancel := d.db.Bound(ctx)
	defer cancel()
	// GUARD_MACHINE_STATE, never lowering the stamp.
	res, err := d.db.ExecContext(c, d.q("update cosid_machine set last_timestamp=GREATEST(last_timestamp, ?) where namespace=? and instance_id=?"), d.nowMs(), ns, instance)
	if err != nil {
		return d.db.Fail("guard a machine ID", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: The machine id bound to the instance[%s]@[%s] has been lost!.", ErrMachineLost, instance, ns)
	}
	return nil
}

// Revert is CosId's revert: the instance's row stamped with now, and
// freed for any instance unless stable.
func (d *Distributor) Revert(ctx context.Context, ns, instance string, stable bool) error {
	if err := checkRequest(ns, 1, instance); err != nil {
		return err
	}
	if err := d.prepare(ctx); err != nil {
		return err
	}
	c, cancel := d.db.Bound(ctx)
	defer cancel()
	keep := ""
	if stable {
		keep = instance
	}
	now := d.nowMs()
	_, err := d.db.ExecContext(c, d.q("update cosid_machine set instance_id=?,last_timestamp=?,revert_time=? where namespace=? and instance_id=?"), keep, now, now, ns, instance)
	if err != nil {
		return d.db.Fail("revert a machine ID", err)
	}
	return nil
}

// Close releases the connections.
func (d *Distributor) Close() error { return d.db.Close() }
