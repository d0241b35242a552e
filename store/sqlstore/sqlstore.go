// Package sqlstore is the frond.SegmentStore on SQL databases, using Leaf's
// table unchanged so an existing Leaf database works as is:
//
//	leaf_alloc(biz_tag, max_id, step, description, update_time)
//
// The table is created when absent (with Leaf's own DDL on MySQL/MariaDB, but
// a binary collation for biz_tag) and never altered. Tag names are
// case-sensitive; a table created by Leaf's script has the server's default
// collation, case-insensitive on MySQL and MariaDB (Case and case are one
// row): Open detects it, logs a warning and reports it in Warnings. Each segment is one atomic change of max_id: one UPDATE ...
// RETURNING on PostgreSQL and SQLite, Leaf's transaction (UPDATE, then SELECT)
// on MySQL/MariaDB. Any number of frond processes can share one database.
//
// URLs:
//
//	mysql://user:pass@host:3306/db[?driver params]
//	postgres://user:pass@host:5432/db[?sslmode=disable...]   (also postgresql://)
//	sqlite:///abs/path.db, sqlite://relative/path.db
//
// frond's own parameters, removed before the URL reaches the driver:
// frond_timeout (per statement, default 5s), frond_max_conns (pool size,
// default 4), frond_retries (retries on deadlock or busy, after a random wait that
// doubles, default 6).
package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
)

var (
	_ frond.PlacedStore  = (*Store)(nil)
	_ frond.SegmentStore = (*Store)(nil)
	_ frond.Pinger       = (*Store)(nil)
	_ frond.Warner       = (*Store)(nil)
)

// Options tune a Store. The zero value is usable; URL parameters override it.
type Options struct {
	// Timeout bounds each statement (and the dial) when the caller's context
	// has no earlier deadline. Zero means 5 s.
	Timeout time.Duration
	// MaxOpenConns caps the connection pool. Zero means 4.
	MaxOpenConns int
	// Retries is how many times a statement that hit a deadlock or a busy
	// database is retried, after a random wait that doubles with each
	// attempt. Zero means 6; negative means none.
	Retries int
	// Logger receives Open's warnings (a case-insensitive leaf_alloc). Nil
	// means none; Warnings reports them either way.
	Logger *slog.Logger
}

// Store is a SQL segment store.
type Store struct {
	db       *sqldb.DB
	d        *dialect
	opts     Options
	warnings []string
	native   bool // sequence tags use sequence objects (sequence.go)
}

// Check parses rawURL as Open does, without contacting the database.
func Check(rawURL string) error {
	_, _, err := ParseURL(rawURL, Options{})
	return err
}

// ParseURL parses rawURL as Open does: the database's URL without frond's
// parameters, and opts with them applied and the defaults filled in. A
// store on another table (store/cosidstore) takes the same parameters.
func ParseURL(rawURL string, opts Options) (*sqldb.URL, Options, error) {
	p, err := sqldb.Parse(rawURL, "frond_timeout", "frond_max_conns", "frond_retries")
	if err != nil {
		return nil, opts, fmt.Errorf("store URL: %w", err)
	}
	if err := takeOptions(p.Params, &opts); err != nil {
		return nil, opts, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.MaxOpenConns == 0 {
		opts.MaxOpenConns = 4
	}
	if opts.Retries == 0 {
		opts.Retries = 6
	}
	return p, opts, nil
}

// Open connects to the database of rawURL and creates Leaf's table if it is
// absent.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	p, opts, err := ParseURL(rawURL, opts)
	if err != nil {
		return nil, err
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: opts.Timeout, MaxOpenConns: opts.MaxOpenConns, MakeDir: true})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, d: dialects[p.Kind], opts: opts}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	for _, t := range []struct{ name, ddl string }{{"leaf_alloc", s.d.createTable}, {"frond_tag_mode", s.d.createModes}, {"frond_tag_mapping", s.d.createMappings}, {"frond_mark", s.d.createMarks}} {
		if err := s.db.ExecDDL(c, t.ddl); err != nil { // other nodes may create it at the same moment
			s.db.Close()
			return nil, s.fail("create table "+t.name, err)
		}
	}
	// The place row, "" (alone) unless a change of the set wrote another
	// (placeMark: allocations lock it, so it must exist).
	if _, err := s.db.ExecContext(c, s.d.q(s.d.insertMark), placeMark, ""); err != nil && !s.d.duplicate(err) {
		s.db.Close()
		return nil, s.fail("record the store's place", err)
	}
	if err := s.detectSequences(c); err != nil {
		s.db.Close()
		return nil, s.fail("read the server version", err)
	}
	if s.d.kind == sqldb.MySQL {
		var coll sql.NullString
		err := s.db.QueryRowContext(c, `SELECT COLLATION_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'leaf_alloc' AND COLUMN_NAME = 'biz_tag'`).Scan(&coll)
		if err != nil {
			s.db.Close()
			return nil, s.fail("read the collation of leaf_alloc.biz_tag", err)
		}
		if w := collationWarning(coll.String); w != "" {
			s.warnings = append(s.warnings, w)
			if opts.Logger != nil {
				opts.Logger.Warn("TAGS IGNORE CASE: "+w, "store", s.db.Where, "collation", coll.String)
			}
		}
	}
	return s, nil
}

// collationWarning says what a case-insensitive collation of biz_tag (an
// existing Leaf table with the server's default) means, or "" for a
// case-sensitive one. MySQL and MariaDB name case-insensitive collations
// *_ci; a binary column has none.
func collationWarning(collation string) string {
	if !strings.HasSuffix(strings.ToLower(collation), "_ci") {
		return ""
	}
	return fmt.Sprintf("leaf_alloc.biz_tag has the case-insensitive collation %s: tags that differ only in case (Case and case) are one tag here, "+
		"with one max_id (every other store keeps them apart); to make them two, "+
		"ALTER TABLE leaf_alloc MODIFY biz_tag varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ''", collation)
}

// Warnings implements frond.Warner: a case-insensitive leaf_alloc.
func (s *Store) Warnings() []string { return slices.Clone(s.warnings) }

// takeOptions sets opts from the frond_* parameters of the URL.
func takeOptions(params map[string]string, opts *Options) error {
	for key, set := range map[string]func(string) error{
		"frond_timeout": func(v string) (err error) { opts.Timeout, err = time.ParseDuration(v); return err },
		"frond_max_conns": func(v string) (err error) {
			opts.MaxOpenConns, err = strconv.Atoi(v)
			if err == nil && opts.MaxOpenConns < 1 {
				err = errors.New("must be at least 1")
			}
			return err
		},
		"frond_retries": func(v string) (err error) { opts.Retries, err = strconv.Atoi(v); return err },
	} {
		v, ok := params[key]
		if !ok {
			continue
		}
		if err := set(v); err != nil {
			return fmt.Errorf("%w: store URL parameter %s=%q: %v", frond.ErrInvalidArgument, key, v, err)
		}
	}
	return nil
}

// fail wraps a database error: an outage unless it is a known answer.
func (s *Store) fail(op string, err error) error { return s.db.Fail(op, err) }

// retry runs op, again when it fails with a transient error (sqldb.DB.Retry).
func (s *Store) retry(ctx context.Context, op func(ctx context.Context) error) error {
	return s.db.Retry(ctx, s.opts.Retries, op)
}

// inTx runs op in a transaction, committed if op returns nil (sqldb.DB.InTx).
func (s *Store) inTx(ctx context.Context, op func(tx *sql.Tx) error) error {
	return s.db.InTx(ctx, s.opts.Retries, op)
}

// seqOp changes a sequence object along with rows (inTxSeq).
type seqOp func(ctx context.Context, q execer) error

// inTxSeq runs body in a transaction (inTx), then the sequence change it
// returns, if any: in the transaction where the database runs DDL there
// (sequences.inTx), else once it has committed.
func (s *Store) inTxSeq(ctx context.Context, body func(tx *sql.Tx) (seqOp, error)) error {
	var after seqOp
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		after = nil
		op, err := body(tx)
		if err != nil || op == nil {
			return err
		}
		if s.d.seq.inTx {
			return op(ctx, tx)
		}
		after = op
		return nil
	})
	if err == nil && after != nil {
		err = after(ctx, s.db)
	}
	return err
}

// Allocate implements frond.SegmentStore: AllocateAt a store alone.
func (s *Store) Allocate(ctx context.Context, tag string, step int64) (frond.Allocation, error) {
	return s.AllocateAt(ctx, frond.Place{}, tag, step)
}

// AllocateAt implements frond.PlacedStore. It refuses a sequence tag
// (frond.ErrNotLeasable): see AllocateIDs.
func (s *Store) AllocateAt(ctx context.Context, at frond.Place, tag string, step int64) (frond.Allocation, error) {
	return s.allocate(ctx, at, tag, step, false)
}

// placeMark is the row of frond_mark that holds the store's place
// (frond.Place.String; "" for a store alone). Open makes sure it exists.
const placeMark = "place"

// placeCheck is the condition every allocation statement carries: the
// store's place, read with a shared
// lock (FOR SHARE, LOCK IN SHARE MODE; SQLite's writes are exclusive), is
// the one asked at. The lock is held until the statement's transaction
// ends, and SwapPlace's UPDATE of the row waits for it (or it for
// SwapPlace, and then reads the new place: a locking read sees the latest
// committed row), so an allocation is before a change of the place or
// after it. One statement, one round trip: the check costs no more.
//
// Args: the place asked at, twice, then placeMark (a set's only store, "0/1@g",
// also serves a node that asks as a store alone: frond.CheckPlace).
func (d *dialect) placeCheck() string {
	return " AND (SELECT CASE WHEN value = ? OR (? = '' AND value LIKE '0/1@%' AND value NOT LIKE '%>%' AND value NOT LIKE '%|%') THEN 1 ELSE 0 END" +
		" FROM frond_mark WHERE name = ?" + d.forShare + ") = 1"
}

// wrongPlace says why a statement guarded by placeCheck changed nothing, if
// the place is why: an error wrapping frond.ErrWrongPlace, else nil.
func (s *Store) wrongPlace(ctx context.Context, tag string, at frond.Place) error {
	got, err := s.Place(ctx)
	if err != nil {
		return err
	}
	if err := frond.CheckPlace(got.String(), at); err != nil {
		return fmt.Errorf("allocate %q on %s: %w", tag, s, err)
	}
	return nil
}

// allocate raises max_id by step, of a sequence tag if sequence is set,
// else of a segment tag, if the store is at at.
func (s *Store) allocate(ctx context.Context, at frond.Place, tag string, step int64, sequence bool) (frond.Allocation, error) {
	if err := frond.CheckPlace(at.String(), at); err != nil {
		return frond.Allocation{}, err // a place during a change: never asked at
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var maxID, tagStep int64
	args := []any{step, step, tag, step, step, tag, at.String(), at.String(), placeMark}
	guard := segmentGuard
	if sequence {
		guard = sequenceGuard
	}
	query := s.d.q(strings.Replace(s.d.allocate, "{guard}", guard+s.d.placeCheck(), 1))
	var mapping sql.NullString
	var err error
	if s.d.returning && sequence {
		// A sequence tag's mapping never changes (frond.TagUpdate.Mapping):
		// its IDs take one statement.
		err = s.retry(c, func(c context.Context) error {
			return s.db.QueryRowContext(c, query, args...).Scan(&maxID, &tagStep)
		})
	} else {
		err = s.inTx(c, func(tx *sql.Tx) error {
			if s.d.returning {
				if err := tx.QueryRowContext(c, query, args...).Scan(&maxID, &tagStep); err != nil {
					return err
				}
			} else {
				res, err := tx.ExecContext(c, query, args...)
				if err != nil {
					return err
				}
				if n, err := res.RowsAffected(); err != nil {
					return err
				} else if n == 0 {
					return sql.ErrNoRows
				}
				if err := tx.QueryRowContext(c, s.d.q(s.d.selectAlloc), tag).Scan(&maxID, &tagStep); err != nil {
					return err
				}
			}
			if sequence {
				return nil
			}
			// The segment's mapping, read after the raise in its
			// transaction, with a locking read (the latest committed row):
			// UpdateTag locks the tag's row before it changes the mapping,
			// so the raise waited for a change in flight or the change
			// waits for this transaction.
			mapping = sql.NullString{}
			err := tx.QueryRowContext(c, s.d.q("SELECT mapping FROM frond_tag_mapping WHERE biz_tag = ?"+s.d.forShare), tag).Scan(&mapping)
			if errors.Is(err, sql.ErrNoRows) {
				err = nil
			}
			return err
		})
	}
	if errors.Is(err, sql.ErrNoRows) {
		if err := s.wrongPlace(ctx, tag, at); err != nil {
			return frond.Allocation{}, err
		}
		return frond.Allocation{}, s.refusal(ctx, tag, step, sequence)
	}
	if err != nil {
		return frond.Allocation{}, s.fail(fmt.Sprintf("allocate %q", tag), err)
	}
	used := step
	if used <= 0 {
		used = tagStep
	}
	return frond.Allocation{Range: frond.Range{Start: maxID - used, End: maxID, Stride: 1}, Step: tagStep, Mapping: mapping.String}, nil
}

// mysqlTake raises max_id of a sequence tag by n and hands the new value
// back through LAST_INSERT_ID(expr), which MySQL returns with the UPDATE's
// answer: Flickr's ticket server in one statement and one round trip, on
// Leaf's row (Allocate needs a transaction and a SELECT besides, for the
// tag's step). Args: n, tag, n, tag.
const mysqlTake = `UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + ?)
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - ? ` + sequenceGuard

// ReturnTail implements frond.TailReturner: one UPDATE that matches only
// if max_id is still to, the mapping still mapping (and the tag is a
// segment tag).
func (s *Store) ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error) {
	if from >= to {
		return false, nil
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var res sql.Result
	err := s.retry(c, func(c context.Context) (err error) {
		res, err = s.db.ExecContext(c, s.d.q("UPDATE leaf_alloc SET max_id = ?, update_time = CURRENT_TIMESTAMP WHERE biz_tag = ? AND max_id = ? "+segmentGuard+
			" AND COALESCE((SELECT mapping FROM frond_tag_mapping WHERE biz_tag = ?), '') = ?"+
			" AND NOT EXISTS (SELECT 1 FROM frond_mark WHERE name = ? AND value <> '')"), // a store alone only
			from, tag, to, tag, tag, frond.StoredMapping(mapping), placeMark)
		return err
	})
	if err != nil {
		return false, s.fail(fmt.Sprintf("return the unused IDs of %q", tag), err)
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1, nil
}

// deletedMark is the row of frond_mark that counts the deletions of tag
// (frond.DeletionCounter): a digest of the name, which may be longer than
// the row's name.
func deletedMark(tag string) string {
	sum := sha256.Sum256([]byte(tag))
	return "deleted:" + hex.EncodeToString(sum[:12])
}

// countDeletion counts a deletion of tag in tx.
func (s *Store) countDeletion(ctx context.Context, tx *sql.Tx, tag string) error {
	name := deletedMark(tag)
	if _, err := tx.ExecContext(ctx, s.d.q(s.d.insertMark), name, "0"); err != nil && !s.d.duplicate(err) {
		return err
	}
	var v string
	if err := tx.QueryRowContext(ctx, s.d.q("SELECT value FROM frond_mark WHERE name = ?"+s.d.forUpdate), name).Scan(&v); err != nil {
		return err
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	_, err := tx.ExecContext(ctx, s.d.q("UPDATE frond_mark SET value = ? WHERE name = ?"), strconv.FormatInt(n+1, 10), name)
	return err
}

// RaiseDeletions implements frond.DeletionCounter: the row made when
// missing, then set to n where its count is below, in one transaction.
func (s *Store) RaiseDeletions(ctx context.Context, tag string, n int64) error {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	name := deletedMark(tag)
	err := s.inTx(c, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(c, s.d.q(s.d.insertMark), name, "0"); err != nil && !s.d.duplicate(err) {
			return err
		}
		var v string
		if err := tx.QueryRowContext(c, s.d.q("SELECT value FROM frond_mark WHERE name = ?"+s.d.forUpdate), name).Scan(&v); err != nil {
			return err
		}
		if cur, _ := strconv.ParseInt(v, 10, 64); cur >= n {
			return nil
		}
		_, err := tx.ExecContext(c, s.d.q("UPDATE frond_mark SET value = ? WHERE name = ?"), strconv.FormatInt(n, 10), name)
		return err
	})
	if err != nil {
		return s.fail(fmt.Sprintf("raise the deletions of %q", tag), err)
	}
	return nil
}

// Deletions implements frond.DeletionCounter.
func (s *Store) Deletions(ctx context.Context, tag string) (int64, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var v string
	err := s.db.QueryRowContext(c, s.d.q("SELECT value FROM frond_mark WHERE name = ?"), deletedMark(tag)).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.fail(fmt.Sprintf("read the deletions of %q", tag), err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: the deletions of %q in %s read %q", frond.ErrStoreUnavailable, tag, s, v)
	}
	return n, nil
}

// Place implements frond.PlacedStore: the row placeMark of frond_mark.
func (s *Store) Place(ctx context.Context) (frond.Place, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var got string
	err := s.db.QueryRowContext(c, s.d.q("SELECT value FROM frond_mark WHERE name = ?"), placeMark).Scan(&got)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return frond.Place{}, s.fail("read the store's place", err)
	}
	p, err := frond.ParsePlace(got)
	if err != nil {
		return frond.Place{}, fmt.Errorf("%w: the place recorded in %s: %v", frond.ErrWrongPlace, s, err)
	}
	return p, nil
}

// identityMark is the row of frond_mark that holds the store's identity
// (frond.PlacedStore.Identity), inserted by the first call.
const identityMark = "identity"

// Identity implements frond.PlacedStore: the row identityMark, inserted if
// absent (a concurrent insert is kept), then read.
func (s *Store) Identity(ctx context.Context) (string, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var id string
	err := s.retry(c, func(c context.Context) error {
		if _, err := s.db.ExecContext(c, s.d.q(s.d.insertMark), identityMark, frond.NewIdentity()); err != nil && !s.d.duplicate(err) {
			return err
		}
		return s.db.QueryRowContext(c, s.d.q("SELECT value FROM frond_mark WHERE name = ?"), identityMark).Scan(&id)
	})
	if err != nil {
		return "", s.fail("read the store's identity", err)
	}
	if !frond.ValidIdentity(id) {
		return "", fmt.Errorf("%w: the identity recorded in %s (frond_mark %q) reads %q", frond.ErrInvalidArgument, s, identityMark, id)
	}
	return id, nil
}

// SwapPlace implements frond.PlacedStore: one UPDATE of the row placeMark
// that matches only if it holds old. It waits for the allocations in
// flight, which hold a shared lock on the row (placeCheck), and later ones
// wait for it (dialect.lockMarks), so it ends in the time of the longest
// allocation in flight.
func (s *Store) SwapPlace(ctx context.Context, old, p frond.Place) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var res sql.Result
	update := s.d.q("UPDATE frond_mark SET value = ? WHERE name = ? AND value = ?")
	err := s.inTx(c, func(tx *sql.Tx) (err error) {
		if s.d.lockMarks != "" {
			if _, err := tx.ExecContext(c, s.d.lockMarks); err != nil {
				return err
			}
		}
		res, err = tx.ExecContext(c, update, p.String(), placeMark, old.String())
		return err
	})
	if err != nil {
		return s.fail("change the store's place", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.fail("change the store's place", err)
	} else if n == 0 {
		now, err := s.Place(ctx)
		if err != nil || now == old && old == p { // MySQL counts changed rows, not matched ones
			return err
		}
		return fmt.Errorf("%w: %s is %s, not %s", frond.ErrPlaceChanged, s, now.Describe(), old.Describe())
	}
	return nil
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
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	t, err := scanTag(s.db.QueryRowContext(c, s.d.q("SELECT "+cols+" FROM leaf_alloc WHERE biz_tag = ?"), name))
	if errors.Is(err, sql.ErrNoRows) {
		return frond.Tag{}, fmt.Errorf("tag %q: %w", name, frond.ErrTagNotFound)
	}
	if err == nil {
		// A query of its own, not a join: a Leaf table may compare biz_tag
		// without case, and MySQL refuses to compare two collations.
		var mode sql.NullString
		err = s.db.QueryRowContext(c, s.d.q("SELECT mode FROM frond_tag_mode WHERE biz_tag = ?"), name).Scan(&mode)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		t.Mode = mode.String
	}
	if err == nil {
		t.Mapping, err = s.mappingOf(c, s.db, name, "")
	}
	if err == nil {
		err = s.withSequence(c, s.db, &t)
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("read tag %q", name), err)
	}
	return t, nil
}

// Tags implements frond.SegmentStore.
func (s *Store) Tags(ctx context.Context) ([]frond.Tag, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(c, "SELECT "+cols+" FROM leaf_alloc ORDER BY biz_tag")
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	out, err := scanTags(rows)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	modes, err := s.modes(c, "frond_tag_mode", "mode")
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	mappings, err := s.modes(c, "frond_tag_mapping", "mapping")
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	for i := range out {
		out[i].Mode = modes[out[i].Name]
		out[i].Mapping = mappings[out[i].Name]
		if err := s.withSequence(c, s.db, &out[i]); err != nil {
			return nil, s.fail("list tags", err)
		}
	}
	// By bytes, as the contract says: the database's collation may ignore
	// case (MySQL's default) or follow a locale (PostgreSQL).
	slices.SortFunc(out, func(a, b frond.Tag) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// TagsAfter implements frond.TagPager: one indexed range of leaf_alloc's
// primary key, in the database's collation of biz_tag (bytes for SQLite;
// MySQL's may ignore case, PostgreSQL's follow a locale), the same for the
// range and its order, so that pages follow one another.
func (s *Store) TagsAfter(ctx context.Context, after string, limit int) ([]frond.Tag, error) {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	rows, err := s.db.QueryContext(c, s.d.q("SELECT "+cols+" FROM leaf_alloc WHERE biz_tag > ? ORDER BY biz_tag LIMIT ?"), after, limit)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	out, err := scanTags(rows)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The modes of this page's range only (the same comparison as the
	// page's, not a join: see Tag).
	modes, err := s.modesIn(c, "frond_tag_mode", "mode", after, out[len(out)-1].Name)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	mappings, err := s.modesIn(c, "frond_tag_mapping", "mapping", after, out[len(out)-1].Name)
	if err != nil {
		return nil, s.fail("list tags", err)
	}
	for i := range out {
		out[i].Mode = modes[out[i].Name]
		out[i].Mapping = mappings[out[i].Name]
		if err := s.withSequence(c, s.db, &out[i]); err != nil {
			return nil, s.fail("list tags", err)
		}
	}
	return out, nil
}

// modesIn reads a table of tags' modes or mappings (table and its column:
// frond_tag_mode and mode, frond_tag_mapping and mapping), of the tags
// after after, up to last.
func (s *Store) modesIn(ctx context.Context, table, col, after, last string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q("SELECT biz_tag, "+col+" FROM "+table+" WHERE biz_tag > ? AND biz_tag <= ?"), after, last)
	if err != nil {
		return nil, err
	}
	return scanModes(rows)
}

// scanTags reads the rows of a query of cols, and closes them.
func scanTags(rows *sql.Rows) ([]frond.Tag, error) {
	defer rows.Close()
	var out []frond.Tag
	for rows.Next() {
		t, err := scanTag(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// modes reads a table of tags' modes or mappings whole (see modesIn):
// the tags that are not segment tags, or whose numbers are not plain.
func (s *Store) modes(ctx context.Context, table, col string) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT biz_tag, "+col+" FROM "+table)
	if err != nil {
		return nil, err
	}
	return scanModes(rows)
}

func scanModes(rows *sql.Rows) (map[string]string, error) {
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var tag, mode string
		if err := rows.Scan(&tag, &mode); err != nil {
			return nil, err
		}
		out[tag] = mode
	}
	return out, rows.Err()
}

// mappingOf reads the mapping of tag (frond.Tag.Mapping), with lock
// appended to the query (a locking read, or "").
func (s *Store) mappingOf(ctx context.Context, q execer, tag, lock string) (string, error) {
	var m sql.NullString
	err := q.QueryRowContext(ctx, s.d.q("SELECT mapping FROM frond_tag_mapping WHERE biz_tag = ?"+lock), tag).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return m.String, err
}

// setMapping records the mapping of tag in tx: no row for plain numbers.
// A row left by a tag deleted outside frond is replaced.
func (s *Store) setMapping(ctx context.Context, tx *sql.Tx, tag, mapping string) error {
	if _, err := tx.ExecContext(ctx, s.d.q("DELETE FROM frond_tag_mapping WHERE biz_tag = ?"), tag); err != nil || mapping == "" {
		return err
	}
	_, err := tx.ExecContext(ctx, s.d.q("INSERT INTO frond_tag_mapping (biz_tag, mapping) VALUES (?, ?)"), tag, mapping)
	return err
}

// Leaf's step column is an INT.
func checkStep(step int64) error {
	if step > math.MaxInt32 {
		return fmt.Errorf("%w: step %d: Leaf's step column holds at most %d", frond.ErrInvalidArgument, step, math.MaxInt32)
	}
	return nil
}

// CreateTag implements frond.SegmentStore: CreateTagAt a store alone.
func (s *Store) CreateTag(ctx context.Context, t frond.Tag) (frond.Tag, error) {
	return s.CreateTagAt(ctx, frond.Place{}, t)
}

// tagPlace checks, in tx, that tag administration at at may go on: the
// store's place, read with placeCheck's shared lock (held until tx ends,
// so a SwapPlace is before it or after it), and taken after the tag's row
// as an allocation takes them. It returns the refusal (wrapping
// frond.ErrWrongPlace) or the error of the read.
func (s *Store) tagPlace(c context.Context, tx *sql.Tx, at frond.Place, what string) error {
	var got string
	err := tx.QueryRowContext(c, s.d.q("SELECT value FROM frond_mark WHERE name = ?"+s.d.forShare), placeMark).Scan(&got)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err := frond.CheckTagPlace(got, at); err != nil {
		return fmt.Errorf("%s on %s: %w", what, s, err)
	}
	return nil
}

// CreateTagAt implements frond.PlacedStore.
func (s *Store) CreateTagAt(ctx context.Context, at frond.Place, t frond.Tag) (frond.Tag, error) {
	if err := t.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if err := checkStep(t.Step); err != nil {
		return frond.Tag{}, err
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var desc any
	if t.Description != "" {
		desc = t.Description
	}
	mode := frond.StoredMode(t.Mode)
	exists := errors.New("exists")
	var refused error
	// The row and its mode in one transaction. A mode row left by a tag
	// deleted outside frond (Leaf deletes only its own row) is replaced.
	err := s.inTx(c, func(tx *sql.Tx) error {
		refused = nil
		res, err := tx.ExecContext(c, s.d.q(s.d.insert), t.Name, t.MaxID, t.Step, desc)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return exists
		}
		if refused = s.tagPlace(c, tx, at, fmt.Sprintf("create %q", t.Name)); refused != nil {
			return refused
		}
		if _, err := tx.ExecContext(c, s.d.q("DELETE FROM frond_tag_mode WHERE biz_tag = ?"), t.Name); err != nil {
			return err
		}
		if mode != "" {
			_, err = tx.ExecContext(c, s.d.q("INSERT INTO frond_tag_mode (biz_tag, mode) VALUES (?, ?)"), t.Name, mode)
		}
		if err == nil {
			err = s.setMapping(c, tx, t.Name, frond.StoredMapping(t.Mapping))
		}
		if err == nil && mode == frond.ModeSequence && s.native {
			err = s.reattach(c, tx, t.Name, t.MaxID)
		}
		return err
	})
	if refused != nil && errors.Is(refused, frond.ErrWrongPlace) {
		return frond.Tag{}, refused
	}
	if errors.Is(err, exists) || err != nil && s.d.duplicate(err) {
		return frond.Tag{}, fmt.Errorf("create %q: %w", t.Name, frond.ErrTagExists)
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("create tag %q", t.Name), err)
	}
	return s.Tag(ctx, t.Name)
}

// UpdateTag implements frond.SegmentStore: UpdateTagAt a store alone.
func (s *Store) UpdateTag(ctx context.Context, name string, u frond.TagUpdate) (frond.Tag, error) {
	return s.UpdateTagAt(ctx, frond.Place{}, name, u)
}

// UpdateTagAt implements frond.PlacedStore: read the row locked, check the
// place, apply, write, in one transaction.
func (s *Store) UpdateTagAt(ctx context.Context, at frond.Place, name string, u frond.TagUpdate) (frond.Tag, error) {
	if err := u.Validate(); err != nil {
		return frond.Tag{}, err
	}
	if u.Step != nil {
		if err := checkStep(*u.Step); err != nil {
			return frond.Tag{}, err
		}
	}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var refused error
	err := s.inTxSeq(c, func(tx *sql.Tx) (seqOp, error) {
		refused = nil
		cur, err := scanTag(tx.QueryRowContext(c, s.d.q("SELECT "+cols+" FROM leaf_alloc WHERE biz_tag = ?"+s.d.forUpdate), name))
		if errors.Is(err, sql.ErrNoRows) {
			refused = fmt.Errorf("update %q: %w", name, frond.ErrTagNotFound)
			return nil, refused
		}
		if err != nil {
			return nil, err
		}
		if err := s.tagPlace(c, tx, at, fmt.Sprintf("update %q", name)); err != nil {
			if errors.Is(err, frond.ErrWrongPlace) {
				refused = err
			}
			return nil, err
		}
		// A native sequence tag's max_id is its sequence's: where the
		// database can (PostgreSQL) the sequence is locked against nextval
		// until the transaction ends, so the raise is atomic with the check.
		var mode sql.NullString
		if err := tx.QueryRowContext(c, s.d.q("SELECT mode FROM frond_tag_mode WHERE biz_tag = ?"), name).Scan(&mode); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		cur.Mode = mode.String
		if cur.Mapping, err = s.mappingOf(c, tx, name, s.d.forUpdate); err != nil {
			return nil, err
		}
		if s.native && cur.Mode == frond.ModeSequence && s.d.seq.lock != nil {
			if err := s.d.seq.lock(c, tx, seqName(name)); err != nil {
				return nil, err
			}
		}
		wasParked := cur.MaxID == parked
		if err := s.withSequence(c, tx, &cur); err != nil {
			return nil, err
		}
		next, err := u.Apply(cur)
		if err != nil {
			refused = err
			return nil, err
		}
		sequence := s.native && next.Mode == frond.ModeSequence
		var desc any
		if next.Description != "" {
			desc = next.Description
		}
		rowMax := next.MaxID
		if wasParked && sequence {
			rowMax = parked // the row stays parked; the raise goes to the sequence
		}
		_, err = tx.ExecContext(c, s.d.q("UPDATE leaf_alloc SET max_id = ?, step = ?, description = ?, update_time = CURRENT_TIMESTAMP WHERE biz_tag = ?"),
			rowMax, next.Step, desc, name)
		if err == nil && next.Mapping != cur.Mapping {
			// In the transaction that holds the tag's row (locked above),
			// with the raise: an allocation is of the old mapping and below
			// the raise, or of the new one and above it (allocate).
			err = s.setMapping(c, tx, name, next.Mapping)
		}
		if err != nil || !sequence {
			return nil, err
		}
		// Raised after the row (after its commit where DDL commits), so
		// that a sequence made meanwhile (makeSequence) is raised by one
		// of the two.
		return func(ctx context.Context, q execer) error { return s.raiseSequence(ctx, q, name, next.MaxID) }, nil
	})
	if refused != nil {
		return frond.Tag{}, refused
	}
	if err != nil {
		return frond.Tag{}, s.fail(fmt.Sprintf("update tag %q", name), err)
	}
	return s.Tag(ctx, name)
}

// DeleteTag implements frond.SegmentStore: DeleteTagAt a store alone.
func (s *Store) DeleteTag(ctx context.Context, name string) error {
	return s.DeleteTagAt(ctx, frond.Place{}, name)
}

// DeleteTagAt implements frond.PlacedStore.
func (s *Store) DeleteTagAt(ctx context.Context, at frond.Place, name string) error {
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	var n int64
	var refused error
	err := s.inTxSeq(c, func(tx *sql.Tx) (seqOp, error) {
		refused = nil
		res, err := tx.ExecContext(c, s.d.q("DELETE FROM leaf_alloc WHERE biz_tag = ?"), name)
		if err != nil {
			return nil, err
		}
		if n, err = res.RowsAffected(); err != nil {
			return nil, err
		}
		if err := s.tagPlace(c, tx, at, fmt.Sprintf("delete %q", name)); err != nil {
			if errors.Is(err, frond.ErrWrongPlace) {
				refused = err
			}
			return nil, err
		}
		_, err = tx.ExecContext(c, s.d.q("DELETE FROM frond_tag_mode WHERE biz_tag = ?"), name)
		if err == nil {
			err = s.setMapping(c, tx, name, "")
		}
		if err == nil && n > 0 {
			err = s.countDeletion(c, tx, name)
		}
		if err != nil || !s.native {
			return nil, err
		}
		// Dropped with the rows, or after them where DDL commits: then no
		// node makes the sequence again (makeSequence finds no tag).
		return func(ctx context.Context, q execer) error {
			_, err := q.ExecContext(ctx, "DROP SEQUENCE IF EXISTS "+seqName(name))
			return err
		}, nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return s.fail(fmt.Sprintf("delete tag %q", name), err)
	}
	if n == 0 {
		return fmt.Errorf("delete %q: %w", name, frond.ErrTagNotFound)
	}
	return nil
}

// Ping implements frond.Pinger.
func (s *Store) Ping(ctx context.Context) error {
	c, cancel := s.db.Bound(ctx)
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
func (s *Store) String() string { return s.db.Where }

// PlaceRow is the store's place (the row placeMark of frond_mark) for
// another of frond's stores on the same database, the keyed sequence
// spaces (keyseq/seqstore): a lost-data fence (frond.Place.Lost) written
// by either is refused by both (issue 68).
type PlaceRow struct{ s *Store }

// OpenPlaceRow makes frond_mark and its place row on db where they are
// missing (as Open does), and returns the place.
func OpenPlaceRow(ctx context.Context, db *sqldb.DB, retries int) (*PlaceRow, error) {
	s := &Store{db: db, d: dialects[db.Kind], opts: Options{Retries: retries}}
	c, cancel := s.db.Bound(ctx)
	defer cancel()
	if err := s.db.ExecDDL(c, s.d.createMarks); err != nil {
		return nil, s.fail("create table frond_mark", err)
	}
	if _, err := s.db.ExecContext(c, s.d.q(s.d.insertMark), placeMark, ""); err != nil && !s.d.duplicate(err) {
		return nil, s.fail("record the store's place", err)
	}
	return &PlaceRow{s: s}, nil
}

// Place implements frond.PlaceKeeper.
func (r *PlaceRow) Place(ctx context.Context) (frond.Place, error) { return r.s.Place(ctx) }

// SwapPlace implements frond.PlaceKeeper: as Store.SwapPlace, it waits for
// the transactions that read the place with InTx.
func (r *PlaceRow) SwapPlace(ctx context.Context, old, p frond.Place) error {
	return r.s.SwapPlace(ctx, old, p)
}

// InTx reads the place (frond.Place.String) in tx with a shared lock held
// to its end, as every allocation's check does (placeCheck): SwapPlace's
// UPDATE waits for the transaction, or the transaction for it.
func (r *PlaceRow) InTx(ctx context.Context, tx *sql.Tx) (string, error) {
	var v string
	err := tx.QueryRowContext(ctx, r.s.d.q("SELECT value FROM frond_mark WHERE name = ?"+r.s.d.forShare), placeMark).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// Read reads the place (frond.Place.String) without a lock, as part of a
// read of other rows ("" when the row is missing).
func (r *PlaceRow) Read(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, r.s.d.q("SELECT value FROM frond_mark WHERE name = ?"), placeMark).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}
