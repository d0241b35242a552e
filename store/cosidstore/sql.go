package cosidstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/store/sqlstore"
)

// sqlStore is the store on CosId's JDBC table.
type sqlStore struct {
	db      *sqldb.DB
	d       *sqlDialect
	o       settings
	retries int
}

var (
	_ frond.SegmentStore = (*sqlStore)(nil)
	_ frond.Pinger       = (*sqlStore)(nil)
)

// sqlDialect holds what differs between MySQL and PostgreSQL.
type sqlDialect struct {
	createTable string // CosId's table
	createMeta  string // frond's record of each tag's step and description
	// The statements of cosid-jdbc 3.2.1, JdbcIdSegmentDistributor and
	// JdbcIdSegmentInitializer, with frond's guard against int64
	// overflow appended to the UPDATE. Args: step, name, highest-step.
	increment string
	fetch     string // args: name
	insert    string // args: name, offset
	now       string // the epoch seconds of last_fetch_time
	forUpdate string
}

// CosId's INIT_COSID_TABLE_SQL (JdbcIdSegmentInitializer.java), verbatim.
const cosidMySQLDDL = `create table if not exists cosid
(
    name            varchar(100) not null comment '{namespace}.{name}',
    last_max_id     bigint unsigned not null default 0,
    last_fetch_time bigint unsigned not null default 0,
    constraint cosid_pk
        primary key (name)
) engine = InnoDB`

// The name column has CosId's collation (the server's default), so that
// the two tables join.
const metaMySQLDDL = `create table if not exists frond_cosid_tag
(
    name        varchar(100) not null,
    step        bigint       not null,
    description varchar(256) default null,
    constraint frond_cosid_tag_pk
        primary key (name)
) engine = InnoDB`

// CosId's table in PostgreSQL's types (CosId ships no PostgreSQL DDL;
// PostgreSQL has no unsigned bigint).
const cosidPostgresDDL = `CREATE TABLE IF NOT EXISTS cosid (
    name            VARCHAR(100) NOT NULL,
    last_max_id     BIGINT NOT NULL DEFAULT 0,
    last_fetch_time BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT cosid_pk PRIMARY KEY (name)
)`

const metaPostgresDDL = `CREATE TABLE IF NOT EXISTS frond_cosid_tag (
    name        VARCHAR(100) NOT NULL,
    step        BIGINT NOT NULL,
    description VARCHAR(256) DEFAULT NULL,
    CONSTRAINT frond_cosid_tag_pk PRIMARY KEY (name)
)`

var sqlDialects = map[sqldb.Kind]*sqlDialect{
	sqldb.MySQL: {
		createTable: cosidMySQLDDL,
		createMeta:  metaMySQLDDL,
		increment:   "update cosid set last_max_id=(last_max_id + ?),last_fetch_time=unix_timestamp() where name = ? and last_max_id <= ?",
		fetch:       "select last_max_id from cosid where name = ?",
		insert:      "insert into cosid (name, last_max_id,last_fetch_time) value (?, ?,unix_timestamp())",
		now:         "unix_timestamp()",
		forUpdate:   " for update",
	},
	sqldb.Postgres: {
		createTable: cosidPostgresDDL,
		createMeta:  metaPostgresDDL,
		increment:   "UPDATE cosid SET last_max_id = (last_max_id + ?), last_fetch_time = CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) WHERE name = ? AND last_max_id <= ?",
		fetch:       "SELECT last_max_id FROM cosid WHERE name = ?",
		insert:      "INSERT INTO cosid (name, last_max_id, last_fetch_time) VALUES (?, ?, CAST(EXTRACT(EPOCH FROM now()) AS BIGINT))",
		now:         "CAST(EXTRACT(EPOCH FROM now()) AS BIGINT)",
		forUpdate:   " FOR UPDATE OF c", // the join's nullable side cannot be locked
	},
}

func checkSQL(server string) error {
	p, _, err := sqlstore.ParseURL(server, sqlstore.Options{})
	switch {
	case err != nil:
		return err
	case sqlDialects[p.Kind] == nil:
		return fmt.Errorf("%w: CosId's table is on MySQL, MariaDB or PostgreSQL, not %s", frond.ErrInvalidArgument, p.Kind)
	case len(p.Unknown()) > 0:
		return fmt.Errorf("%w: store URL parameter %s: unknown (frond_step, frond_timeout, frond_max_conns, frond_retries)", frond.ErrInvalidArgument, p.Unknown()[0])
	}
	return nil
}

func openSQL(ctx context.Context, server string, o settings) (*sqlStore, error) {
	if err := checkSQL(server); err != nil {
		return nil, err
	}
	p, opts, _ := sqlstore.ParseURL(server, sqlstore.Options{})
	db, err := sqldb.Open(p, sqldb.Options{Timeout: opts.Timeout, MaxOpenConns: opts.MaxOpenConns})
	if err != nil {
		return nil, err
	}
	s := &sqlStore{db: db, d: sqlDialects[p.Kind], o: o, retries: opts.Retries}
	c, cancel := db.Bound(ctx)
	defer cancel()
	for _, t := range []struct{ name, ddl string }{{"cosid", s.d.createTable}, {"frond_cosid_tag", s.d.createMeta}} {
		if err := db.ExecDDL(c, t.ddl); err != nil {
			db.Close()
			return nil, s.fail("create table "+t.name, err)
		}
	}
	return s, nil
}

func (s *sqlStore) q(query string) string { return s.db.Kind.Rebind(query) }

func (s *sqlStore) fail(op string, err error) error { return s.db.Fail(op, err) }

// stepOf reads frond's step of tag: its record, else the URL's.
func (s *sqlStore) stepOf(ctx context.Context, tx *sql.Tx, tag string) (int64, error) {
	var step sql.NullInt64
	err := tx.QueryRowContext(ctx, s.q("SELECT step FROM frond_cosid_tag WHERE name = ?"), tag).Scan(&step)
	if errors.Is(err, sql.ErrNoRows) {
		return s.o.step, nil
	}
	if err == nil && (!step.Valid || step.Int64 < 1) {
		return s.o.step, nil
	}
	return step.Int64, err
}

// Allocate implements frond.SegmentStore as CosId's
// JdbcIdSegmentDistributor.nextMaxId does: in one transaction the UPDATE
// that raises last_max_id by the step, and the SELECT that reads it back.
func (s *sqlStore) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	if err := checkName(tag); err != nil {
		return frond.Allocation{}, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	name := tag // CosId's segment name
	var last, tagStep, used int64
	var refused error
	err := s.db.InTx(c, s.retries, func(tx *sql.Tx) error {
		refused = nil
		var err error
		if tagStep, err = s.stepOf(c, tx, tag); err != nil {
			return err
		}
		used = step
		if used <= 0 {
			used = tagStep
		}
		res, err := tx.ExecContext(c, s.q(s.d.increment), used, name, highest-used)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			// No row, or one too high to raise by step.
			switch err := tx.QueryRowContext(c, s.q(s.d.fetch), name).Scan(&last); {
			case errors.Is(err, sql.ErrNoRows):
				refused = missing(tag)
			case err != nil:
				return err
			default:
				refused = fmt.Errorf("allocate %q: last_max_id %d of %s and step %d: %w", tag, last, name, used, frond.ErrTagExhausted)
			}
			return refused
		}
		return tx.QueryRowContext(c, s.q(s.d.fetch), name).Scan(&last)
	})
	if refused != nil {
		return frond.Allocation{}, refused
	}
	if err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	return frond.Allocation{Range: segment(last, used), Step: tagStep}, nil
}

// tagCols reads a tag: CosId's row and frond's record beside it.
const tagCols = "c.name, c.last_max_id, c.last_fetch_time, m.step, m.description FROM cosid c LEFT JOIN frond_cosid_tag m ON m.name = c.name"

// scanTag reads a row of tagCols: the tag, and CosId's name of it.
func (s *sqlStore) scanTag(r interface{ Scan(...any) error }) (frond.Tag, string, error) {
	var (
		name          string
		last, fetched int64
		step          sql.NullInt64
		desc          sql.NullString
	)
	if err := r.Scan(&name, &last, &fetched, &step, &desc); err != nil {
		return frond.Tag{}, "", err
	}
	t := frond.Tag{Name: name, MaxID: maxIDOf(min(last, highest)), Step: s.o.step, Description: desc.String}
	if step.Valid && step.Int64 >= 1 {
		t.Step = step.Int64
	}
	if fetched > 0 {
		t.UpdatedAt = time.Unix(fetched, 0).UTC()
	}
	return t, name, nil
}

// Tag implements frond.SegmentStore.
func (s *sqlStore) Tag(ctx context.Context, name string) (frond.Tag, error) {
	if err := checkName(name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	t, _, err := s.scanTag(s.db.QueryRowContext(c, s.q("SELECT "+tagCols+" WHERE c.name = ?"), name))
	if errors.Is(err, sql.ErrNoRows) {
		return frond.Tag{}, missing(name)
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	t.Name = name // the name asked (a MySQL table of CosId's compares names without case)
	return t, nil
}

// Tags implements frond.SegmentStore: every row of the table whose name
// is a tag name.
func (s *sqlStore) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(c, "SELECT "+tagCols)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	defer rows.Close()
	var out []frond.Tag
	for rows.Next() {
		t, _, err := s.scanTag(rows)
		if err != nil {
			return nil, s.fail("list tags", err)
		}
		if frond.ValidateTagName(t.Name) == nil { // a name frond cannot serve is not one of its tags
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list tags", err)
	}
	slices.SortFunc(out, func(a, b frond.Tag) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// setMeta records frond's step and description of the name in tx.
func (s *sqlStore) setMeta(ctx context.Context, tx *sql.Tx, name string, step int64, desc string) error {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM frond_cosid_tag WHERE name = ?"), name); err != nil {
		return err
	}
	var d any
	if desc != "" {
		d = desc
	}
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO frond_cosid_tag (name, step, description) VALUES (?, ?, ?)"), name, step, d)
	return err
}

// CreateTag implements frond.SegmentStore: CosId's INSERT of a new name
// with its offset (max_id - 1), and frond's record of the step and
// description, in one transaction. A name that has a row (CosId's
// initializer made it, or frond) is frond.ErrTagExists and stays as it is.
func (s *sqlStore) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if err := plainOnly(t); err != nil {
		return frond.Tag{}, err
	}
	if err := checkName(t.Name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	name := t.Name // CosId's segment name
	err := s.db.InTx(c, s.retries, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(c, s.q(s.d.insert), name, lastOf(t.MaxID)); err != nil {
			return err
		}
		return s.setMeta(c, tx, name, t.Step, t.Description)
	})
	if err != nil && s.db.Kind.Duplicate(err) {
		return frond.Tag{}, fmt.Errorf("create %q: %w (CosId's row %s)", t.Name, frond.ErrTagExists, name)
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("create tag %q", t.Name), err)
	}
	return s.Tag(ctx, t.Name)
}

// UpdateTag implements frond.SegmentStore: CosId's row locked, the update
// applied, in one transaction; a raise of max_id sets last_max_id to the
// new max_id - 1.
func (s *sqlStore) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := checkUpdate(name, u); err != nil {
		return frond.Tag{}, err
	}
	if err := checkName(name); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var refused error
	err := s.db.InTx(c, s.retries, func(tx *sql.Tx) error {
		refused = nil
		cur, _, err := s.scanTag(tx.QueryRowContext(c, s.q("SELECT "+tagCols+" WHERE c.name = ?"+s.d.forUpdate), name))
		if errors.Is(err, sql.ErrNoRows) {
			refused = missing(name)
			return refused
		}
		if err != nil {
			return err
		}
		cur.Name = name
		next, err := u.Apply(cur)
		if err != nil {
			refused = err
			return err
		}
		if next.MaxID != cur.MaxID {
			if _, err := tx.ExecContext(c, s.q("UPDATE cosid SET last_max_id = ?, last_fetch_time = "+s.d.now+" WHERE name = ?"), lastOf(next.MaxID), name); err != nil {
				return err
			}
		}
		return s.setMeta(c, tx, name, next.Step, next.Description)
	})
	if refused != nil {
		return frond.Tag{}, refused
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	return s.Tag(ctx, name)
}

// DeleteTag implements frond.SegmentStore: CosId's row and frond's record.
// CosId's applications then fail on the name ("name:[...] missing.") until
// their initializer inserts it again at their offset: deleting a name in
// use is an operator's decision.
func (s *sqlStore) DeleteTag(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var n int64
	err := s.db.InTx(c, s.retries, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(c, s.q("DELETE FROM cosid WHERE name = ?"), name)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(c, s.q("DELETE FROM frond_cosid_tag WHERE name = ?"), name)
		return err
	})
	if err != nil {
		return s.fail(fmt.Sprintf("delete tag %q", name), err)
	}
	if n == 0 {
		return missing(name)
	}
	return nil
}

// Ping implements frond.Pinger.
func (s *sqlStore) Ping(ctx context.Context) error {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var n int
	if err := s.db.QueryRowContext(c, "SELECT 1 FROM cosid LIMIT 1").Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s.fail("ping", err)
	}
	return nil
}

// Close implements frond.SegmentStore.
func (s *sqlStore) Close() error { return s.db.Close() }

// String names the database without secrets.
func (s *sqlStore) String() string { return "cosid+" + s.db.Where }
