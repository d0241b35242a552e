package keyseq

import (
	"context"
	"database/sql"
	"fmt"
	"math"
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

// Raise implements SectionStore in one transaction.
func (q *SQLSections) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if step < 1 {
		return nil, fmt.Errorf("%w: step %d", frond.ErrInvalidArgument, step)
	}
	in := strings.Repeat("?, ", len(sections)-1) + "?"
	args := make([]any, 0, 2+len(sections))
	args = append(args, space)
	for _, s := range sections {
		args = append(args, s)
	}
	insert := "INSERT INTO frond_seq_section (space, section, max_seq) VALUES " + strings.Repeat("(?, ?, 1), ", len(sections)-1) + "(?, ?, 1)"
	switch q.db.Kind {
	case sqldb.MySQL:
		insert = strings.Replace(insert, "INSERT", "INSERT IGNORE", 1)
	default:
		insert += " ON CONFLICT (space, section) DO NOTHING"
	}
	rows := make([]any, 0, 2*len(sections))
	for _, s := range sections {
		rows = append(rows, space, s)
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	got := map[int]int64{}
	var exhausted bool
	err := q.db.InTx(c, q.retries, func(tx *sql.Tx) error {
		clear(got)
		exhausted = false
		if _, err := tx.ExecContext(c, q.db.Kind.Rebind(insert), rows...); err != nil {
			return err
		}
		res, err := tx.ExecContext(c, q.db.Kind.Rebind("UPDATE frond_seq_section SET max_seq = max_seq + ? WHERE space = ? AND section IN ("+in+") AND max_seq <= ?"),
			append(append([]any{step}, args...), int64(math.MaxInt64)-step)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(sections)) {
			exhausted = true
			return errExhausted
		}
		r, err := tx.QueryContext(c, q.db.Kind.Rebind("SELECT section, max_seq FROM frond_seq_section WHERE space = ? AND section IN ("+in+")"), args...)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var s int
			var m int64
			if err := r.Scan(&s, &m); err != nil {
				return err
			}
			got[s] = m
		}
		return r.Err()
	})
	if exhausted {
		return nil, fmt.Errorf("space %q: a section's maximum would pass 2^63-1, or a section was named twice: %w", space, frond.ErrTagExhausted)
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

var errExhausted = fmt.Errorf("exhausted")

// Close releases the connections.
func (q *SQLSections) Close() error { return q.db.Close() }
