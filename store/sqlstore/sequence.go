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
	if s.d.seq == nil {
		return nil
	}
	var err error
	s.native, err = s.d.seq.available(ctx, s.db)
	return err
}

// sequences are a database's sequence objects: what differs between
// PostgreSQL and MariaDB, as facts and primitives. When a sequence is
// made, raised or dropped is written once, in Store's methods.
type sequences struct {
	// inTx: the database runs DDL inside a transaction (PostgreSQL), so a
	// sequence is made, raised and dropped atomically with the rows, under
	// the row's lock. Otherwise DDL commits the transaction (MariaDB): the
	// sequence changes after the rows, in an order that lets no value out
	// twice (makeSequence, UpdateTag, DeleteTag).
	inTx bool
	// available reports whether the server has sequence objects.
	available func(ctx context.Context, q execer) (bool, error)
	// nextvals is a query that takes n values of the sequence name, to
	// which the place check (placeCheck) and its arguments are appended.
	nextvals func(name string, n int64) (query string, args []any)
	// create makes the sequence name, starting at start, unless it exists.
	create func(name string, start int64) string
	// next is the next value the sequence would hand out (on MariaDB, the
	// first value not cached yet: the next value any restart would start
	// from), and whether it exists.
	next func(ctx context.Context, q execer, name string) (int64, bool, error)
	// raise makes the sequence hand out nothing below maxID; it never
	// lowers it, and leaves a sequence not made yet.
	raise func(ctx context.Context, q execer, name string, maxID int64) error
	// lock, when set, blocks nextval on the sequence until tx ends, so that
	// a read and a raise in tx are atomic.
	lock func(ctx context.Context, tx *sql.Tx, name string) error
	// missing reports whether err says that the sequence name does not
	// exist; exhausted, that it reached its maximum.
	missing   func(err error, name string) bool
	exhausted func(err error) bool
}

var postgresSequences = &sequences{
	inTx:      true,
	available: func(context.Context, execer) (bool, error) { return true, nil },
	nextvals: func(name string, n int64) (string, []any) {
		return "SELECT nextval(?::regclass) FROM generate_series(1, ?::bigint) WHERE TRUE", []any{name, n}
	},
	create: func(name string, start int64) string {
		return fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 0 MAXVALUE 9223372036854775806 START WITH %d CACHE 1", name, start)
	},
	next: postgresNext,
	// q holds the sequence's lock (lock), so no nextval runs between the
	// read and the setval.
	raise: func(ctx context.Context, q execer, name string, maxID int64) error {
		next, ok, err := postgresNext(ctx, q, name)
		if err != nil || !ok || next >= maxID {
			return err
		}
		_, err = q.ExecContext(ctx, "SELECT setval($1::regclass, $2, false)", name, maxID)
		return err
	},
	// ALTER SEQUENCE takes a lock that conflicts with nextval's.
	lock: func(ctx context.Context, tx *sql.Tx, name string) error {
		var reg sql.NullString
		if err := tx.QueryRowContext(ctx, "SELECT to_regclass($1)::text", name).Scan(&reg); err != nil || !reg.Valid {
			return err
		}
		_, err := tx.ExecContext(ctx, "ALTER SEQUENCE "+name+" INCREMENT BY 1")
		return err
	},
	missing: func(err error, _ string) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "42P01" // undefined_table
	},
	exhausted: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "2200H" // sequence_generator_limit_exceeded
	},
}

// postgresNext is sequences.next on PostgreSQL. It checks for the sequence
// first: q must be a transaction that did not fail, or the pool.
func postgresNext(ctx context.Context, q execer, name string) (int64, bool, error) {
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

// mariaDBSequences serve MariaDB from 10.3 on; MySQL has none (available
// is false there, and Flickr's ticket server on Leaf's row serves it).
var mariaDBSequences = &sequences{
	available: func(ctx context.Context, q execer) (bool, error) {
		var v string
		if err := q.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
			return false, err
		}
		return hasSequences(v), nil
	},
	nextvals: func(name string, n int64) (string, []any) {
		// MariaDB's SEQUENCE engine provides seq_1_to_<n>.
		return fmt.Sprintf("SELECT NEXTVAL(%s) FROM seq_1_to_%d WHERE TRUE", name, n), nil
	},
	create: func(name string, start int64) string {
		return fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s MINVALUE 0 START WITH %d CACHE %d", name, start, mariaDBSequenceCache)
	},
	next: func(ctx context.Context, q execer, name string) (int64, bool, error) {
		var next int64
		err := q.QueryRowContext(ctx, "SELECT next_not_cached_value FROM "+name).Scan(&next)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 {
			return 0, false, nil
		}
		return next, err == nil, err
	},
	// SETVAL never lowers a sequence.
	raise: func(ctx context.Context, q execer, name string, maxID int64) error {
		if maxID < 1 {
			return nil
		}
		_, err := q.ExecContext(ctx, fmt.Sprintf("SELECT SETVAL(%s, %d)", name, maxID-1))
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1146 || me.Number == 4091) { // no such table / sequence
			return nil // not made yet: makeSequence reads the row after creating it
		}
		return err
	},
	missing: func(err error, name string) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1146 && strings.Contains(me.Message, name)
	},
	exhausted: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 4084 // ER_SEQUENCE_RUN_OUT
	},
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
		case s.d.seq.exhausted(err):
			return nil, fmt.Errorf("allocate %q: %d more IDs: %w", tag, n, frond.ErrTagExhausted)
		case !s.d.seq.missing(err, seqName(tag)) || made:
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
	query, args := s.d.seq.nextvals(seqName(tag), n)
	rows, err := s.db.QueryContext(ctx, s.d.q(query+s.d.placeCheck()), append(args, at.String(), at.String(), placeMark)...)
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

// rowIDs takes n IDs of a sequence tag from Leaf's row: one statement on
// MySQL (mysqlTake), Allocate's UPDATE elsewhere.
func (s *Store) rowIDs(ctx context.Context, at frond.Place, tag string, n int64) (frond.Range, error) {
	if s.d.takeIDs == "" {
		a, err := s.allocate(ctx, at, tag, n, true)
		return a.Range, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var res sql.Result
	err := s.retry(c, func(c context.Context) (err error) {
		res, err = s.db.ExecContext(c, s.d.takeIDs+s.d.placeCheck(), n, tag, n, tag, at.String(), at.String(), placeMark)
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
	if s.d.seq.inTx {
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
			_, err = tx.ExecContext(ctx, s.d.seq.create(name, maxID))
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
	// DDL commits the transaction (MariaDB), so no lock is held across it. Read the
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
		_, err = s.db.ExecContext(ctx, s.d.seq.create(name, maxID))
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
	if s.d.seq.inTx {
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

// seqNext is the next value tag's sequence would hand out, and whether
// the sequence exists (sequences.next).
func (s *Store) seqNext(ctx context.Context, q execer, tag string) (int64, bool, error) {
	return s.d.seq.next(ctx, q, seqName(tag))
}

// raiseSequence makes tag's sequence hand out nothing below maxID
// (sequences.raise).
func (s *Store) raiseSequence(ctx context.Context, q execer, tag string, maxID int64) error {
	return s.d.seq.raise(ctx, q, seqName(tag), maxID)
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
