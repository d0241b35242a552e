package cosidplay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JDBCMachine is cosid-jdbc's JdbcMachineIdDistributor (3.2.1) on the table
// cosid_machine: distributeRemote (by self, by revert, new), guardRemote
// and revertRemote, with its statements and without a transaction, as
// CosId runs them (autocommit).
type JDBCMachine struct {
	DB         *sql.DB
	Rebind     func(string) string
	Namespace  string
	MachineBit int
	SafeGuard  time.Duration
	Now        func() time.Time // nil: time.Now (System.currentTimeMillis)
}

// The statements of JdbcMachineIdDistributor.java.
const (
	getMachineState              = "select machine_id, last_timestamp from cosid_machine where namespace=? and instance_id=? and last_timestamp>?"
	getRevertMachineState        = "select machine_id, last_timestamp from cosid_machine where namespace=? and (instance_id='' or last_timestamp<=?)"
	distributeRevertMachineState = "update cosid_machine set instance_id=?,last_timestamp=?,distribute_time=? where name=? and (instance_id='' or last_timestamp<=?)"
	nextMachineID                = "select max(machine_id)+1 as next_machine_id from cosid_machine where namespace=?"
	distributeMachine            = "insert into cosid_machine (name, namespace, machine_id, last_timestamp, instance_id, distribute_time, revert_time) values (?,?,?,?,?,?,0)"
	revertMachineState           = "update cosid_machine set instance_id=?,last_timestamp=?,revert_time=? where namespace=? and instance_id=?"
	guardMachineState            = "update cosid_machine set last_timestamp=? where namespace=? and instance_id=? and machine_id=?"
)

// Errors of CosId's machine distributor.
var (
	ErrMachineOverflow = errors.New("MachineIdOverflowException")
	ErrMachineLost     = errors.New("MachineIdLostException")
)

func (m JDBCMachine) now() int64 {
	if m.Now != nil {
		return m.Now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// safeGuardAt is MachineIdDistributor.getSafeGuardAt.
func (m JDBCMachine) safeGuardAt(stable bool) int64 {
	if stable {
		return 0
	}
	return max(m.now()-m.SafeGuard.Milliseconds(), 0)
}

func (m JDBCMachine) name(id int64) string { return fmt.Sprintf("%s.%08d", m.Namespace, id) }

// Distribute is distributeRemote: the machine ID and the last timestamp
// the instance must pass.
func (m JDBCMachine) Distribute(ctx context.Context, instance string, stable bool) (int64, int64, error) {
	at := m.safeGuardAt(stable)
	var id, last int64
	err := m.DB.QueryRowContext(ctx, m.Rebind(getMachineState), m.Namespace, instance, at).Scan(&id, &last)
	if err == nil { // by self
		last = max(last, m.now())
		return id, last, m.Guard(ctx, instance, id, last)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, err
	}
	rows, err := m.DB.QueryContext(ctx, m.Rebind(getRevertMachineState), m.Namespace, at)
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
	for _, s := range reverts { // by revert: the first row the UPDATE takes
		now := m.now()
		res, err := m.DB.ExecContext(ctx, m.Rebind(distributeRevertMachineState), instance, now, now, m.name(s.id), at)
		if err != nil {
			return 0, 0, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return s.id, s.last, nil
		}
	}
	for { // new
		var next sql.NullInt64
		if err := m.DB.QueryRowContext(ctx, m.Rebind(nextMachineID), m.Namespace).Scan(&next); err != nil {
			return 0, 0, err
		}
		if next.Int64 > int64(^(-1 << m.MachineBit)) {
			return 0, 0, fmt.Errorf("%w: InstanceId:[%s] - distribution failed - totalMachineIds:[%d]", ErrMachineOverflow, instance, 1<<m.MachineBit)
		}
		now := m.now()
		_, err := m.DB.ExecContext(ctx, m.Rebind(distributeMachine), m.name(next.Int64), m.Namespace, next.Int64, now, instance, now)
		if err == nil {
			return next.Int64, now, nil
		}
		if !strings.Contains(strings.ToLower(err.Error()), "duplicate") { // SQLIntegrityConstraintViolationException: again
			return 0, 0, err
		}
	}
}

// Guard is guardRemote: 0 rows is MachineIdLostException.
func (m JDBCMachine) Guard(ctx context.Context, instance string, id, last int64) error {
	res, err := m.DB.ExecContext(ctx, m.Rebind(guardMachineState), last, m.Namespace, instance, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: The machine id[%d] bound to the instance[%s]@[%s] has been lost!.", ErrMachineLost, id, instance, m.Namespace)
	}
	return nil
}

// Revert is revertRemote: a stable instance keeps its binding.
func (m JDBCMachine) Revert(ctx context.Context, instance string, stable bool, last int64) error {
	keep := ""
	if stable {
		keep = instance
	}
	_, err := m.DB.ExecContext(ctx, m.Rebind(revertMachineState), keep, last, m.now(), m.Namespace, instance)
	return err
}
