// Package sqlstore is the frond.SegmentStore on SQL databases, using Leaf's
// table unchanged so an existing Leaf database works as is:
//
//	leaf_alloc(biz_tag, max_id, step, description, update_time)
//
// The table is created when absent and never altered. Each segment is one
// atomic statement (UPDATE ... SET max_id = max_id + step ... RETURNING), so
// any number of frond processes can share one database.
//
// Dialects: SQLite (modernc.org/sqlite, pure Go, the embedded default). The
// dialect is chosen by the URL scheme: sqlite:///abs/path.db or
// sqlite://relative/path.db.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frond-id/frond"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

var (
	_ frond.SegmentStore = (*Store)(nil)
	_ frond.Pinger       = (*Store)(nil)
)

// Options tune a Store. The zero value is usable.
type Options struct {
	// Timeout bounds each statement when the caller's context has no
	// earlier deadline. Zero means 5 s.
	Timeout time.Duration
	// MaxOpenConns caps the connection pool. Zero means 4.
	MaxOpenConns int
	// Clock stamps update_time. Nil means the system clock.
	Clock frond.Clock
}

// Store is a SQL segment store.
type Store struct {
	db    *sql.DB
	d     *dialect
	opts  Options
	where string // for messages: the database, without secrets
}

// dialect holds the SQL that differs between databases.
type dialect struct {
	name        string
	createTable string
	allocate    string // args: step, now, tag; returns max_id, step
	get         string // args: tag
	list        string
	insert      string // args: tag, max_id, step, description, now; affects 0 rows if the tag exists
	update      string // args: step, description, max_id, now, tag; returns the row
	delete      string // args: tag
}

const cols = "biz_tag, max_id, step, description, update_time"

var sqlite = &dialect{
	name: "sqlite",
	// Leaf's columns with SQLite types; update_time is set by frond.
	createTable: `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag VARCHAR(128) NOT NULL DEFAULT '',
  max_id BIGINT NOT NULL DEFAULT 1,
  step INT NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
)`,
	allocate: `UPDATE leaf_alloc
SET max_id = max_id + (CASE WHEN ?1 > 0 THEN ?1 ELSE step END), update_time = ?2
WHERE biz_tag = ?3 AND max_id <= 9223372036854775807 - (CASE WHEN ?1 > 0 THEN ?1 ELSE step END)
RETURNING max_id, step`,
	get:    `SELECT ` + cols + ` FROM leaf_alloc WHERE biz_tag = ?1`,
	list:   `SELECT ` + cols + ` FROM leaf_alloc ORDER BY biz_tag`,
	insert: `INSERT INTO leaf_alloc (` + cols + `) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (biz_tag) DO NOTHING`,
	update: `UPDATE leaf_alloc
SET step = COALESCE(?1, step), description = COALESCE(?2, description), max_id = COALESCE(?3, max_id), update_time = ?4
WHERE biz_tag = ?5 AND (?3 IS NULL OR ?3 >= max_id)
RETURNING ` + cols,
	delete: `DELETE FROM leaf_alloc WHERE biz_tag = ?1`,
}

// Open connects to the database of rawURL and creates Leaf's table if it is
// absent.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxOpenConns == 0 {
		opts.MaxOpenConns = 4
	}
	if opts.Clock == nil {
		opts.Clock = frond.SystemClock{}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", frond.ErrInvalidArgument, err)
	}
	var s *Store
	switch u.Scheme {
	case "sqlite":
		s, err = openSQLite(u, opts)
	default:
		return nil, fmt.Errorf("%w: store URL scheme %q: sqlstore knows sqlite", frond.ErrInvalidArgument, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.db.ExecContext(c, s.d.createTable); err != nil {
		s.db.Close()
		return nil, s.fail("create table leaf_alloc", err)
	}
	return s, nil
}

func openSQLite(u *url.URL, opts Options) (*Store, error) {
	path := u.Host + u.Path // sqlite:///abs -> "/abs"; sqlite://rel/x.db -> "rel/x.db"
	if path == "" {
		return nil, fmt.Errorf("%w: sqlite URL %q has no file path", frond.ErrInvalidArgument, u.String())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%w: sqlite: %v", frond.ErrStoreUnavailable, err)
	}
	// WAL lets readers run beside the writer; busy_timeout makes a second
	// process wait for the write lock instead of failing; immediate
	// transactions take the write lock up front.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: sqlite: %v", frond.ErrStoreUnavailable, err)
	}
	db.SetMaxOpenConns(opts.MaxOpenConns)
	return &Store{db: db, d: sqlite, opts: opts, where: "sqlite:" + path}, nil
}

// bound applies the statement timeout unless ctx ends sooner.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < s.opts.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.opts.Timeout)
}

// fail wraps a database error: an outage unless it is a known answer.
func (s *Store) fail(op string, err error) error {
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("%s on %s: %w", op, s.where, frond.ErrClosed)
	}
	return fmt.Errorf("%s on %s: %w: %w", op, s.where, frond.ErrStoreUnavailable, err)
}

// Allocate implements frond.SegmentStore.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	var maxID, tagStep int64
	err := s.db.QueryRowContext(c, s.d.allocate, step, s.opts.Clock.Now().UTC(), tag).Scan(&maxID, &tagStep)
	if errors.Is(err, sql.ErrNoRows) {
		t, gerr := s.Tag(ctx, tag)
		if gerr != nil {
			return frond.Allocation{}, gerr
		}
		used := step
		if used <= 0 {
			used = t.Step
		}
		return frond.Allocation{}, fmt.Errorf("allocate %q: max_id %d + step %d: %w", tag, t.MaxID, used, frond.ErrTagExhausted)
	}
	if err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	used := step
	if used <= 0 {
		used = tagStep
	}
	return frond.Allocation{Range: frond.Range{Start: maxID - used, End: maxID, Stride: 1}, Step: tagStep}, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanTag(r scanner) (frond.Tag, error) {
	var t frond.Tag
	var desc sql.NullString
	if err := r.Scan(&t.Name, &t.MaxID, &t.Step, &desc, &t.UpdatedAt); err != nil {
		return frond.Tag{}, err
	}
	t.Description = desc.String
	t.UpdatedAt = t.UpdatedAt.UTC()
	return t, nil
}

// Tag implements frond.SegmentStore.
func (s *Store) Tag(ctx context.Context, name string) (frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	t, err := scanTag(s.db.QueryRowContext(c, s.d.get, name))
	if errors.Is(err, sql.ErrNoRows) {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, frond.ErrTagNotFound)
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	return t, nil
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(c, s.d.list)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	defer rows.Close()
	var out []frond.Tag
	for rows.Next() {
		t, err := scanTag(rows)
		if err != nil {
			return nil, s.fail("list tags", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list tags", err)
	}
	return out, nil
}

func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// CreateTag implements frond.SegmentStore.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if t.Step > math.MaxInt32 {
		return frond.Tag{}, fmt.Errorf("%w: step %d: Leaf's step column holds at most %d", frond.ErrInvalidArgument, t.Step, math.MaxInt32)
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	t.UpdatedAt = s.opts.Clock.Now().UTC().Truncate(time.Second)
	res, err := s.db.ExecContext(c, s.d.insert, t.Name, t.MaxID, t.Step, t.Description, t.UpdatedAt)
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("create tag %q", t.Name), err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return frond.Tag{}, fmt.Errorf("create %q: %w", t.Name, frond.ErrTagExists)
	}
	return t, nil
}

// UpdateTag implements frond.SegmentStore.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := u.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if u.Step != nil && *u.Step > math.MaxInt32 {
		return frond.Tag{}, fmt.Errorf("%w: step %d: Leaf's step column holds at most %d", frond.ErrInvalidArgument, *u.Step, math.MaxInt32)
	}
	c, cancel := s.bound(ctx)
	defer cancel()
	now := s.opts.Clock.Now().UTC()
	t, err := scanTag(s.db.QueryRowContext(c, s.d.update, nullInt(u.Step), nullString(u.Description), nullInt(u.MaxID), now, name))
	if errors.Is(err, sql.ErrNoRows) {
		cur, gerr := s.Tag(ctx, name)
		if gerr != nil {
			return frond.Tag{}, fmt.Errorf("update %q: %w", name, gerr)
		}
		_, aerr := u.Apply(cur) // explains the refusal: max_id would go down
		if aerr == nil {
			aerr = fmt.Errorf("%w: update of %q raced with a concurrent change; retry", frond.ErrStoreUnavailable, name)
		}
		return frond.Tag{}, aerr
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	return t, nil
}

// DeleteTag implements frond.SegmentStore.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	res, err := s.db.ExecContext(c, s.d.delete, name)
	if err != nil {
		return s.fail(fmt.Sprintf("delete tag %q", name), err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("delete %q: %w", name, frond.ErrTagNotFound)
	}
	return nil
}

// Ping implements frond.Pinger.
func (s *Store) Ping(ctx context.Context) error {
	c, cancel := s.bound(ctx)
	defer cancel()
	if err := s.db.PingContext(c); err != nil {
		return s.fail("ping", err)
	}
	var n int
	if err := s.db.QueryRowContext(c, "SELECT 1 FROM leaf_alloc LIMIT 1").Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s.fail("ping", err)
	}
	return nil
}

// Close implements frond.SegmentStore.
func (s *Store) Close() error { return s.db.Close() }

// String names the database without secrets.
func (s *Store) String() string { return s.where }
