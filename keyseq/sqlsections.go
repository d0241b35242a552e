package keyseq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/store/sqlstore"
)

// SQLSections is a SectionStore on a table of its own in a SQL database
// (SQLite, MySQL/MariaDB, PostgreSQL), one row a section:
//
//	frond_seq_section(space, section, max_seq)
//
// Raise raises any number of sections of a space in one transaction: an
// INSERT of the rows not yet there, one UPDATE of them all, one SELECT. So
// an owner that takes a thousand sections at once loads them in one round
// trip of three statements, not a thousand.
type SQLSections struct {
	db      *sqldb.DB
	retries int
}

var _ SectionStore = (*SQLSections)(nil)

// OpenSQL opens the table in the database of rawURL (a frond store URL:
// sqlite://, mysql://, postgres://, with their frond_* parameters) and
// creates it when it is missing.
func OpenSQL(ctx context.Context, rawURL string) (*SQLSections, error) {
	p, opts, err := sqlstore.ParseURL(rawURL, sqlstore.Options{})
	if err != nil {
		return nil, err
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: opts.Timeout, MaxOpenConns: opts.MaxOpenConns, MakeDir: true})
	if err != nil {
		return nil, err
	}
	ddl := `CREATE TABLE IF NOT EXISTS frond_seq_section (
  space VARCHAR(128) NOT NULL,
  section INTEGER NOT NULL,
  max_seq BIGINT NOT NULL,
  PRIMARY KEY (space, section)
)`
	if db.Kind == sqldb.MySQL {
		ddl = "CREATE TABLE IF NOT EXISTS `frond_seq_section` (\n" +
			"  `space` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
			"  `section` int NOT NULL,\n" +
			"  `max_seq` bigint NOT NULL,\n" +
			"  PRIMARY KEY (`space`, `section`)\n" +
			") ENGINE=InnoDB"
	}
	c, cancel := db.Bound(ctx)
	defer cancel()
	if err := db.ExecDDL(c, ddl); err != nil {
		db.Close()
		return nil, db.Fail("create table frond_seq_section", err)
	}
	return &SQLSections{db: db, retries: opts.Retries}, nil
}

// Raise implements SectionStore: one transaction that locks every
// section's row in the order of the primary key, whatever the order asked
// (two raises never wait for each other in a circle), and raises them in
// one UPDATE. Sections never raised get their rows first, in a statement
// of their own (an INSERT that keeps rows there already), so that the
// raise itself takes only its rows' exclusive locks.
func (q *SQLSections) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if step < 1 {
		return nil, fmt.Errorf("%w: step %d", frond.ErrInvalidArgument, step)
	}
	sorted := slices.Sorted(slices.Values(sections))
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return nil, fmt.Errorf("%w: space %q: a section named twice in one raise", frond.ErrInvalidArgument, space)
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	got, err := q.raise(c, space, sorted, step)
	if errors.Is(err, errMissing) {
		if err = q.create(c, space, sorted); err == nil {
			got, err = q.raise(c, space, sorted, step)
		}
	}
	if errors.Is(err, errMissing) {
		return nil, fmt.Errorf("%w: space %q: sections made and not found", frond.ErrStoreUnavailable, space)
	}
	if errors.Is(err, errExhausted) {
		return nil, fmt.Errorf("space %q: a section's maximum would pass 2^63-1: %w", space, frond.ErrTagExhausted)
	}
	if err != nil {
		return nil, q.db.Fail(fmt.Sprintf("raise %d sections of %q", len(sections), space), err)
	}
	out := make([]frond.Range, len(sections))
	for i, s := range sections {
		m, ok := got[s]
		if !ok {
			return nil, fmt.Errorf("%w: space %q section %d: raised but not read back", frond.ErrStoreUnavailable, space, s)
		}
		out[i] = frond.Range{Start: m - step, End: m, Stride: 1}
	}
	return out, nil
}

// errMissing: a section's row is not made yet; errExhausted: one is too
// high to raise by the step.
var (
	errMissing   = errors.New("sections missing")
	errExhausted = errors.New("sections exhausted")
)

// raise runs the raise's transaction over sorted sections: the rows
// locked in the order of the primary key (SELECT ... ORDER BY ... FOR
// UPDATE: an UPDATE alone locks in its scan's order, which PostgreSQL
// changes as rows move, and two raises then deadlock), then raised.
func (q *SQLSections) raise(ctx context.Context, space string, sorted []int, step int64) (map[int]int64, error) {
	in := strings.Repeat("?, ", len(sorted)-1) + "?"
	args := make([]any, 0, 1+len(sorted))
	args = append(args, space)
	for _, s := range sorted {
		args = append(args, s)
	}
	lock := " FOR UPDATE"
	if q.db.Kind == sqldb.SQLite {
		lock = "" // one writer at a time
	}
	got := map[int]int64{}
	err := q.db.InTx(ctx, q.retries, func(tx *sql.Tx) error {
		clear(got)
		r, err := tx.QueryContext(ctx, q.db.Kind.Rebind("SELECT section, max_seq FROM frond_seq_section WHERE space = ? AND section IN ("+in+") ORDER BY section"+lock), args...)
		if err != nil {
			return err
		}
		for r.Next() {
			var s int
			var m int64
			if err := r.Scan(&s, &m); err != nil {
				r.Close()
				return err
			}
			got[s] = m
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		if len(got) != len(sorted) {
			return errMissing
		}
		for _, m := range got {
			if m > math.MaxInt64-step {
				return errExhausted
			}
		}
		res, err := tx.ExecContext(ctx, q.db.Kind.Rebind("UPDATE frond_seq_section SET max_seq = max_seq + ? WHERE space = ? AND section IN ("+in+")"),
			append([]any{step}, args...)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(sorted)) {
			return fmt.Errorf("%w: %d of %d sections raised in a transaction that locked them all", frond.ErrStoreUnavailable, n, len(sorted))
		}
		for s, m := range got {
			got[s] = m + step
		}
		return nil
	})
	return got, err
}

// create makes the rows of sections not made yet (max_seq 1), keeping
// those there.
func (q *SQLSections) create(ctx context.Context, space string, sorted []int) error {
	insert := "INSERT INTO frond_seq_section (space, section, max_seq) VALUES " + strings.Repeat("(?, ?, 1), ", len(sorted)-1) + "(?, ?, 1)"
	if q.db.Kind == sqldb.MySQL {
		insert = strings.Replace(insert, "INSERT", "INSERT IGNORE", 1)
	} else {
		insert += " ON CONFLICT (space, section) DO NOTHING"
	}
	rows := make([]any, 0, 2*len(sorted))
	for _, s := range sorted {
		rows = append(rows, space, s)
	}
	return q.db.Retry(ctx, q.retries, func(ctx context.Context) error {
		_, err := q.db.ExecContext(ctx, q.db.Kind.Rebind(insert), rows...)
		return err
	})
}

// Close releases the connections.
func (q *SQLSections) Close() error { return q.db.Close() }
