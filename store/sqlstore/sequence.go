package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
)

// Sequence tags (frond.ModeSequence) take their IDs one store call at a time
// (frond.SequenceStore). Each database serves them with its own mechanism:
//
//   - PostgreSQL: a sequence per tag (CACHE 1), nextval k times in one
//     statement. nextval does not wait for other sessions' transactions, as
//     the UPDATE of a row does, and PostgreSQL gives the statement a
//     transaction ID so its WAL is flushed before the answer.
//   - MariaDB (10.3 and later): a SEQUENCE per tag. Its cache (CACHE 1000)
//     is the server's, shared by every connection, so values still increase
//     in the order they are taken; a restart of the server skips what was
//     cached.
//   - MySQL: Flickr's ticket server, on Leaf's row (mysqlTake).
//   - SQLite: the UPDATE of Leaf's row.
//
// The sequence is created on demand, by the first call that finds it
// missing, starting at the row's max_id. From then on it is the tag's only
// source of IDs: Allocate refuses sequence tags everywhere (frond.ErrNotLeasable),
// Tag reports the sequence's next value as max_id, UpdateTag raises the
// sequence, DeleteTag drops it. Which mechanism serves a database is decided
// by the server itself (its kind and version), never by a node's
// configuration, so every node sharing a database uses the same one.

// mariaDBSequenceCache is the CACHE of a MariaDB sequence (see above).
const mariaDBSequenceCache = 1000

// seqName is the name of tag's sequence object: a hash, since tag names may
// hold characters an identifier may not, and may differ only in case.
func seqName(tag string) string {
	h := sha256.Sum256([]byte(tag))
	return "frond_seq_" + hex.EncodeToString(h[:12])
}

// hasSequences reports whether a server whose VERSION() is version has
// sequence objects: MariaDB from 10.3 on (MySQL has none).
func hasSequences(version string) bool {
	v := strings.TrimPrefix(version, "5.5.5-") // MariaDB's old replication prefix
	if !strings.Contains(strings.ToLower(v), "mariadb") {
		return false
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimLeftFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > 10 || major == 10 && minor >= 3
}

// detectSequences sets s.native from the server.
func (s *Store) detectSequences(ctx context.Context) error {
	switch s.d.kind {
	case sqldb.Postgres:
		s.native = true
	case sqldb.MySQL:
		var v string
		if err := s.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
			return err
		}
		s.native = hasSequences(v)
	}
	return nil
}

// AllocateIDs implements frond.SequenceStore: AllocateIDsAt a store alone.
func (s *Store) AllocateIDs(ctx context.Context, tag string, n int64) ([]frond.Range, error) {
	return s.AllocateIDsAt(ctx, frond.Place{}, tag, n)
}

// AllocateIDsAt implements frond.PlacedStore: n IDs of a sequence tag, from
// its sequence object where the database has them, else from Leaf's row,
// in one statement guarded by the place check (placeCheck).
func (s *Store) AllocateIDsAt(ctx context.Context, at frond.Place, tag string, n int64) ([]frond.Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d IDs: at least 1", frond.ErrInvalidArgument, n)
	}
	if err := frond.CheckPlace(at.String(), at); err != nil {
		return nil, err // a place during a change: never asked at
	}
	if !s.native {
		r, err := s.rowIDs(ctx, at, tag, n)
		if err != nil {
			return nil, err
		}
		return []frond.Range{r}, nil
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	for made := false; ; made = true {
		vals, err := s.nextvals(c, at, tag, n)
		if err == nil && len(vals) == 0 { // the place check let nothing through
			if err := s.wrongPlace(ctx, tag, at); err != nil {
				return nil, err
			}
			err = fmt.Errorf("the sequence answered no value of %d", n)
		}
		if err == nil {
			return toRanges(vals), nil
		}
		switch {
		case s.exhausted(err):
			return nil, fmt.Errorf("allocate %q: %d more IDs: %w", tag, n, frond.ErrTagExhausted)
		case !s.missing(err, tag) || made:
			return nil, s.fail(fmt.Sprintf("allocate %q", tag), err)
		}
		if err := s.makeSequence(c, tag); err != nil {
			return nil, err
		}
	}
}

// nextvals takes n values of tag's sequence in one statement, guarded by
// the place check (placeCheck): none when the store is not at at.
func (s *Store) nextvals(ctx context.Context, at frond.Place, tag string, n int64) ([]int64, error) {
	var rows *sql.Rows
	var err error
	if s.d.kind == sqldb.Postgres {
		rows, err = s.db.QueryContext(ctx, s.d.q("SELECT nextval(?::regclass) FROM generate_series(1, ?::bigint) WHERE TRUE"+s.d.placeCheck()), seqName(tag), n, at.String(), at.String(), placeMark)
	} else {
		// MariaDB's SEQUENCE engine provides seq_1_to_<n>.
		rows, err = s.db.QueryContext(ctx, fmt.Sprintf("SELECT NEXTVAL(%s) FROM seq_1_to_%d WHERE TRUE", seqName(tag), n)+s.d.placeCheck(), at.String(), at.String(), placeMark)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vals := make([]int64, 0, n)
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vals = append(vals, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(vals) > 0 && int64(len(vals)) != n {
		return nil, fmt.Errorf("the sequence answered %d values of %d", len(vals), n)
	}
	return vals, nil
}

// toRanges sorts vals and joins consecutive values into ranges.
func toRanges(vals []int64) []frond.Range {
	slices.Sort(vals)
	var out []frond.Range
	for _, v := range vals {
		if k := len(out) - 1; k >= 0 && out[k].End == v {
			out[k].End++
			continue
		}
		out = append(out, frond.Range{Start: v, End: v + 1, Stride: 1})
	}
	return out
}

// missing reports whether err says that tag's sequence does not exist.
func (s *Store) missing(err error, tag string) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "42P01" // undefined_table
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146 && strings.Contains(me.Message, seqName(tag))
}

// exhausted reports whether err says that the sequence reached its maximum.
func (s *Store) exhausted(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "2200H" // sequence_generator_limit_exceeded
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 4084 // ER_SEQUENCE_RUN_OUT
}

// rowIDs takes n IDs of a sequence tag from Leaf's row: one statement on
// MySQL (mysqlTake), Allocate's UPDATE elsewhere.
func (s *Store) rowIDs(ctx context.Context, at frond.Place, tag string, n int64) (frond.Range, error) {
	if s.d.kind != sqldb.MySQL {
		a, err := s.allocate(ctx, at, tag, n, true)
		return a.Range, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var res sql.Result
	err := s.retry(c, func(c context.Context) (err error) {
		res, err = s.db.ExecContext(c, mysqlTake+s.d.placeCheck(), n, tag, n, tag, at.String(), at.String(), placeMark)
		return err
	})
	if err != nil {
		return frond.Range{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	if rows, err := res.RowsAffected(); err == nil && rows == 0 {
		if err := s.wrongPlace(ctx, tag, at); err != nil {
			return frond.Range{}, err
		}
		return frond.Range{}, s.refusal(ctx, tag, n, true)
	}
	maxID, err := res.LastInsertId()
	if err != nil || maxID < n {
		return frond.Range{}, s.fail(fmt.Sprintf("allocate %q", tag), fmt.Errorf("LAST_INSERT_ID() answered %d: %v", maxID, err))
	}
	return frond.Range{Start: maxID - n, End: maxID, Stride: 1}, nil
}

// refusal says why an allocation of n IDs changed no row: the tag does not
// exist, has the other mode, or would overflow.
func (s *Store) refusal(ctx context.Context, tag string, n int64, sequence bool) error {
	t, err := s.Tag(ctx, tag)
	switch {
	case err != nil:
		return err
	case sequence && t.Mode != frond.ModeSequence:
		return fmt.Errorf("allocate %q: %w", tag, frond.ErrNotSequence)
	case !sequence && t.Mode == frond.ModeSequence:
		return fmt.Errorf("allocate %q: %w: it is a sequence tag, whose IDs are taken one store call at a time", tag, frond.ErrNotLeasable)
	}
	if n <= 0 {
		n = t.Step
	}
	return fmt.Errorf("allocate %q: max_id %d + %d: %w", tag, t.MaxID, n, frond.ErrTagExhausted)
}

// tagRow reads tag's max_id and mode, the row locked on PostgreSQL, and
// says why a sequence cannot be made for it.
func (s *Store) tagRow(ctx context.Context, q execer, tag string, lock bool) (int64, error) {
	var maxID int64
	query := "SELECT max_id FROM leaf_alloc WHERE biz_tag = ?"
	if lock {
		query += s.d.forUpdate
	}
	err := q.QueryRowContext(ctx, s.d.q(query), tag).Scan(&maxID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("allocate %q: %w", tag, frond.ErrTagNotFound)
	}
	if err != nil {
		return 0, err
	}
	var mode sql.NullString
	err = q.QueryRowContext(ctx, s.d.q("SELECT mode FROM frond_tag_mode WHERE biz_tag = ?"), tag).Scan(&mode)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if mode.String != frond.ModeSequence {
		return 0, fmt.Errorf("allocate %q: %w", tag, frond.ErrNotSequence)
	}
	return maxID, nil
}

// parkedRow says what a row read parked means to makeSequence: nil when
// tag's sequence exists (another node made it and parked the row), else
// the tag is exhausted (a row at 2^63-1 with no sequence: no ID left, or
// the sequence was dropped behind frond's back and its place is unknown).
func (s *Store) parkedRow(ctx context.Context, q execer, tag string) error {
	_, ok, err := s.seqNext(ctx, q, tag)
	if err != nil || ok {
		return err
	}
	return fmt.Errorf("allocate %q: max_id %d and no sequence: %w", tag, int64(parked), frond.ErrTagExhausted)
}

// refused reports whether err is an answer about the tag rather than an
// outage.
func refused(err error) bool {
	return errors.Is(err, frond.ErrTagNotFound) || errors.Is(err, frond.ErrNotSequence) || errors.Is(err, frond.ErrTagExhausted)
}

// makeSequence creates tag's sequence, starting at the row's max_id, if it
// does not exist yet.
func (s *Store) makeSequence(ctx context.Context, tag string) error {
	name := seqName(tag)
	if s.d.kind == sqldb.Postgres {
		// The row stays locked until the sequence exists: UpdateTag waits,
		// and a second creator finds it made.
		var why error
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			maxID, err := s.tagRow(ctx, tx, tag, true)
			if refused(err) {
				why = err
				return err
			}
			if err != nil {
				return err
			}
			if maxID == parked {
				why = s.parkedRow(ctx, tx, tag)
				return why
			}
			_, err = tx.ExecContext(ctx, fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 0 MAXVALUE 9223372036854775806 START WITH %d CACHE 1", name, maxID))
			if err == nil {
				err = s.park(ctx, tx, tag)
			}
			return err
		})
		if why != nil {
			return why
		}
		if err != nil {
			return s.fail(fmt.Sprintf("create the sequence of %q", tag), err)
		}
		return nil
	}
	// MariaDB commits before DDL, so no lock is held across it. Read the
	// row, create, then read the row again and raise the sequence to it: an
	// UpdateTag that committed before the second read is seen here, one
	// after it finds the sequence and raises it itself. If the tag was
	// deleted meanwhile, the sequence made for it goes too.
	maxID, err := s.tagRow(ctx, s.db, tag, false)
	if refused(err) {
		return err
	}
	if err == nil && maxID == parked {
		return s.parkedRow(ctx, s.db, tag)
	}
	if err == nil {
		_, err = s.db.ExecContext(ctx, fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s MINVALUE 0 START WITH %d CACHE %d", name, maxID, mariaDBSequenceCache))
	}
	if err == nil {
		maxID, err = s.tagRow(ctx, s.db, tag, false)
		if refused(err) {
			s.db.ExecContext(ctx, "DROP SEQUENCE IF EXISTS "+name)
			return err
		}
		if err == nil && maxID == parked {
			return nil // another node made it too, raised it to the row and parked the row
		}
	}
	if err == nil {
		err = s.raiseSequence(ctx, s.db, tag, maxID)
	}
	if err == nil {
		err = s.park(ctx, s.db, tag)
	}
	if err != nil {
		return s.fail(fmt.Sprintf("create the sequence of %q", tag), err)
	}
	return nil
}

// parked is the max_id of Leaf's row of a sequence tag once its sequence
// object exists (PostgreSQL, MariaDB): the sequence is the tag's only
// source of IDs from then on, and the row must not offer the IDs the
// sequence hands out to anything else that reads Leaf's table (Leaf
// itself, or an older frond, in the drop-in and rolling-upgrade setups).
// At 2^63-1, Leaf's UPDATE max_id = max_id + step overflows and fails
// (PostgreSQL always, MySQL and MariaDB in strict mode, their default),
// and an older frond finds the tag exhausted. frond reads such a tag's
// max_id from its sequence.
const parked = math.MaxInt64

// park sets the row of tag to parked (see there).
func (s *Store) park(ctx context.Context, q execer, tag string) error {
	_, err := q.ExecContext(ctx, s.d.q("UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ?"), int64(parked), tag)
	return err
}

// reattach deals with a sequence left by an earlier tag of the name (one
// deleted outside frond, or whose drop failed after its delete) when a
// sequence tag is created, in the transaction that inserts its row: the
// leftover would otherwise serve the new tag as it is, below its max_id.
// PostgreSQL drops it in the transaction (the next call makes it again
// from max_id); MariaDB, whose DDL would commit the transaction, raises it
// to max_id (SETVAL never lowers it).
func (s *Store) reattach(ctx context.Context, tx *sql.Tx, tag string, maxID int64) error {
	if s.d.kind == sqldb.Postgres {
		_, err := tx.ExecContext(ctx, "DROP SEQUENCE IF EXISTS "+seqName(tag))
		return err
	}
	if err := s.raiseSequence(ctx, tx, tag, maxID); err != nil {
		return err
	}
	if _, ok, err := s.seqNext(ctx, tx, tag); err != nil || !ok {
		return err
	}
	return s.park(ctx, tx, tag) // the leftover serves the tag from now on: Leaf's row is parked
}

// execer runs statements: the pool or a transaction.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// seqNext is the next value tag's sequence would hand out (on MariaDB, the
// first value not cached yet: the next value any restart would start
// from), and whether the sequence exists. On PostgreSQL it must run in a
// transaction that did not fail: it checks for the sequence first.
func (s *Store) seqNext(ctx context.Context, q execer, tag string) (int64, bool, error) {
	name := seqName(tag)
	if s.d.kind == sqldb.Postgres {
		var reg sql.NullString
		if err := q.QueryRowContext(ctx, "SELECT to_regclass($1)::text", name).Scan(&reg); err != nil || !reg.Valid {
			return 0, false, err
		}
		var last int64
		var called bool
		if err := q.QueryRowContext(ctx, "SELECT last_value, is_called FROM "+name).Scan(&last, &called); err != nil {
			return 0, false, err
		}
		if called && last < 1<<63-1 {
			last++
		}
		return last, true, nil
	}
	var next int64
	err := q.QueryRowContext(ctx, "SELECT next_not_cached_value FROM "+name).Scan(&next)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1146 {
		return 0, false, nil
	}
	return next, err == nil, err
}

// raiseSequence makes tag's sequence hand out nothing below maxID. MariaDB's
// SETVAL never lowers a sequence. On PostgreSQL, q is a transaction that
// holds the sequence's lock (lockSequence), so no nextval runs between the
// read and the setval.
func (s *Store) raiseSequence(ctx context.Context, q execer, tag string, maxID int64) error {
	if s.d.kind == sqldb.Postgres {
		next, ok, err := s.seqNext(ctx, q, tag)
		if err != nil || !ok || next >= maxID {
			return err
		}
		_, err = q.ExecContext(ctx, "SELECT setval($1::regclass, $2, false)", seqName(tag), maxID)
		return err
	}
	if maxID < 1 {
		return nil
	}
	_, err := q.ExecContext(ctx, fmt.Sprintf("SELECT SETVAL(%s, %d)", seqName(tag), maxID-1))
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1146 || me.Number == 4091) { // no such table / sequence
		return nil // not made yet: makeSequence reads the row after creating it
	}
	return err
}

// lockSequence blocks nextval on tag's sequence until tx ends (PostgreSQL:
// ALTER SEQUENCE takes a lock that conflicts with nextval's). It reports
// whether the sequence exists.
func (s *Store) lockSequence(ctx context.Context, tx *sql.Tx, tag string) (bool, error) {
	var reg sql.NullString
	if err := tx.QueryRowContext(ctx, "SELECT to_regclass($1)::text", seqName(tag)).Scan(&reg); err != nil || !reg.Valid {
		return false, err
	}
	_, err := tx.ExecContext(ctx, "ALTER SEQUENCE "+seqName(tag)+" INCREMENT BY 1")
	return err == nil, err
}

// withSequence sets t.MaxID to its sequence's next value when that is
// higher (a native sequence tag).
func (s *Store) withSequence(ctx context.Context, q execer, t *frond.Tag) error {
	if !s.native || t.Mode != frond.ModeSequence {
		return nil
	}
	next, ok, err := s.seqNext(ctx, q, t.Name)
	if err == nil && ok {
		if t.MaxID == parked {
			t.MaxID = next // the row is parked: the sequence holds the tag's max_id
		} else {
			t.MaxID = max(t.MaxID, next)
		}
	}
	return err
}
