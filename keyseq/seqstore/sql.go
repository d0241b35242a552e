package seqstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/store/sqlstore"
)

// SQLSections is a keyseq.SectionStore and a keyseq.LeaseStore on tables of their own in
// a SQL database (SQLite, MySQL/MariaDB, PostgreSQL), one row a section
// and one a node:
//
//	frond_keyseq_section(space, section, max_seq, owner, addr, lease_until)
//	frond_keyseq_member(space, owner, addr, lease_until)
//
// lease_until is in microseconds of the database's clock, the one clock
// every node's leases are counted on. A raise, a take, a renewal raises or
// extends any number of sections of a space in one transaction: a node
// that takes a thousand sections at once loads them in one round trip of a
// few statements, not a thousand.
//
// The store's place is the segment store's row of frond_mark on the same
// database (sqlstore.PlaceRow): every raise and take reads it in its
// transaction, and is refused while it is fenced for lost data.
type SQLSections struct {
	db      *sqldb.DB
	retries int
	place   *sqlstore.PlaceRow
}

var (
	_ keyseq.SectionStore = (*SQLSections)(nil)
	_ keyseq.SpaceStore   = (*SQLSections)(nil)
	_ frond.PlaceKeeper   = (*SQLSections)(nil)
)

// Place implements frond.PlaceKeeper.
func (q *SQLSections) Place(ctx context.Context) (frond.Place, error) { return q.place.Place(ctx) }

// SwapPlace implements frond.PlaceKeeper.
func (q *SQLSections) SwapPlace(ctx context.Context, old, p frond.Place) error {
	return q.place.SwapPlace(ctx, old, p)
}

// sectionDDL is the tables' DDL in the database's dialect.
func sectionDDL(k sqldb.Kind) []string {
	if k == sqldb.MySQL {
		return []string{"CREATE TABLE IF NOT EXISTS `frond_keyseq_section` (\n" +
			"  `space` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
			"  `section` int NOT NULL,\n" +
			"  `max_seq` bigint NOT NULL,\n" +
			"  `owner` varchar(64) NOT NULL DEFAULT '',\n" +
			"  `addr` varchar(255) NOT NULL DEFAULT '',\n" +
			"  `lease_until` bigint NOT NULL DEFAULT 0,\n" +
			"  PRIMARY KEY (`space`, `section`)\n" +
			") ENGINE=InnoDB",
			"CREATE TABLE IF NOT EXISTS `frond_keyseq_space` (\n" +
				"  `name` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
				"  `step` bigint NOT NULL,\n" +
				"  `sections` int NOT NULL,\n" +
				"  `slots` int NOT NULL,\n" +
				"  PRIMARY KEY (`name`)\n" +
				") ENGINE=InnoDB",
			"CREATE TABLE IF NOT EXISTS `frond_keyseq_peer` (\n" +
				"  `name` varchar(64) NOT NULL,\n" +
				"  `value` varchar(255) NOT NULL,\n" +
				"  PRIMARY KEY (`name`)\n" +
				") ENGINE=InnoDB",
			"CREATE TABLE IF NOT EXISTS `frond_keyseq_member` (\n" +
				"  `space` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
				"  `owner` varchar(64) NOT NULL,\n" +
				"  `addr` varchar(255) NOT NULL,\n" +
				"  `lease_until` bigint NOT NULL,\n" +
				"  PRIMARY KEY (`space`, `owner`)\n" +
				") ENGINE=InnoDB"}
	}
	return []string{`CREATE TABLE IF NOT EXISTS frond_keyseq_section (
  space VARCHAR(128) NOT NULL,
  section INTEGER NOT NULL,
  max_seq BIGINT NOT NULL,
  owner VARCHAR(64) NOT NULL DEFAULT '',
  addr VARCHAR(255) NOT NULL DEFAULT '',
  lease_until BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (space, section)
)`, `CREATE TABLE IF NOT EXISTS frond_keyseq_space (
  name VARCHAR(128) NOT NULL PRIMARY KEY,
  step BIGINT NOT NULL,
  sections INTEGER NOT NULL,
  slots INTEGER NOT NULL
)`, `CREATE TABLE IF NOT EXISTS frond_keyseq_peer (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  value VARCHAR(255) NOT NULL
)`, `CREATE TABLE IF NOT EXISTS frond_keyseq_member (
  space VARCHAR(128) NOT NULL,
  owner VARCHAR(64) NOT NULL,
  addr VARCHAR(255) NOT NULL,
  lease_until BIGINT NOT NULL,
  PRIMARY KEY (space, owner)
)`}
}

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
	c, cancel := db.Bound(ctx)
	defer cancel()
	for _, ddl := range sectionDDL(db.Kind) {
		if err := db.ExecDDL(c, ddl); err != nil {
			db.Close()
			return nil, db.Fail("create the keyed sequence tables", err)
		}
	}
	place, err := sqlstore.OpenPlaceRow(ctx, db, opts.Retries)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &SQLSections{db: db, retries: opts.Retries, place: place}, nil
}

// sqlBatch is how many sections one call takes or raises: two variables
// each in the statement that makes missing rows, well under SQLite's bound
// of 32,766 variables in a statement (PostgreSQL's and MySQL's: 65,535),
// and a transaction short enough for the store's timeout on a busy
// machine (8,000 rows of SQLite took over 5 s under the race detector).
const sqlBatch = 2000

// MaxSections implements keyseq.SectionBatcher.
func (q *SQLSections) MaxSections() int { return sqlBatch }

// Raise implements keyseq.SectionStore: one transaction that locks every
// section's row in the order of the primary key, whatever the order asked
// (two raises never wait for each other in a circle), and raises them in
// one UPDATE. Sections never raised get their rows first, in a statement
// of their own (an INSERT that keeps rows there already), so that the
// raise itself takes only its rows' exclusive locks. It ignores leases:
// for an Engine that owns every section alone.
func (q *SQLSections) Raise(ctx context.Context, space string, sections []int, step int64) ([]frond.Range, error) {
	return q.raiseAll(ctx, space, sections, step, nil)
}

// RaiseOwned implements keyseq.LeaseStore: Raise, in the same transaction as a
// check that me's live lease holds every section.
func (q *SQLSections) RaiseOwned(ctx context.Context, space string, sections []int, step int64, me keyseq.Owner) ([]frond.Range, error) {
	return q.raiseAll(ctx, space, sections, step, &me)
}

func (q *SQLSections) raiseAll(ctx context.Context, space string, sections []int, step int64, me *keyseq.Owner) ([]frond.Range, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	got, err := q.run(ctx, space, sections, step, func(rows map[int]row, now int64) ([]int, error) {
		if me != nil {
			for _, s := range sections {
				if r := rows[s]; r.owner != me.Token || r.until <= now {
					return nil, fmt.Errorf("space %q section %d: %w", space, s, keyseq.ErrNotOwner)
				}
			}
		}
		return sections, nil
	}, nil, 0)
	if err != nil {
		return nil, err
	}
	out := make([]frond.Range, len(sections))
	for i, s := range sections {
		r, ok := got[s]
		if !ok {
			return nil, fmt.Errorf("%w: space %q section %d: raised but not read back", frond.ErrStoreUnavailable, space, s)
		}
		out[i] = r
	}
	return out, nil
}

// Take implements keyseq.LeaseStore: one transaction that locks the sections'
// rows (made first if missing), keeps those whose lease has run out by
// the database's clock or is me's, and raises them with me's lease in one
// UPDATE.
func (q *SQLSections) Take(ctx context.Context, space string, sections []int, me keyseq.Owner, ttl time.Duration, step int64) ([]keyseq.Taken, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	if err := keyseq.CheckSections(space, sections, step); err != nil {
		return nil, err
	}
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	got, err := q.run(ctx, space, sections, step, func(rows map[int]row, now int64) ([]int, error) {
		var take []int
		for _, s := range slices.Sorted(slices.Values(sections)) {
			if r := rows[s]; r.owner == "" || r.until <= now || r.owner == me.Token {
				take = append(take, s)
			}
		}
		return take, nil
	}, &me, ttl)
	if err != nil {
		return nil, err
	}
	out := make([]keyseq.Taken, 0, len(got))
	for _, s := range slices.Sorted(maps.Keys(got)) {
		out = append(out, keyseq.Taken{Section: s, Range: got[s]})
	}
	return out, nil
}

// row is a section's row as a transaction read it.
type row struct {
	max   int64
	owner string
	until int64 // µs, the database's clock
}

// errMissing: a section's row is not made yet; errExhausted: one is too
// high to raise by the step.
var (
	errMissing   = errors.New("sections missing")
	errExhausted = errors.New("sections exhausted")
)

// run is the transaction of a raise or a take over sections of space:
// their rows locked in the order of the primary key (SELECT ... ORDER BY
// ... FOR UPDATE: an UPDATE alone locks in its scan's order, which
// PostgreSQL changes as rows move, and two raises then deadlock) with the
// database's clock read in the same statement; pick chooses the sections
// to raise, which one UPDATE raises by step (and, with me, gives me's
// lease of ttl). Rows missing are made in a statement of their own first.
func (q *SQLSections) run(ctx context.Context, space string, sections []int, step int64,
	pick func(rows map[int]row, now int64) ([]int, error), me *keyseq.Owner, ttl time.Duration) (map[int]frond.Range, error) {
	sorted := slices.Sorted(slices.Values(sections))
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	got, err := q.tx(c, space, sorted, step, pick, me, ttl)
	if errors.Is(err, errMissing) {
		if err = q.create(c, space, sorted); err == nil {
			got, err = q.tx(c, space, sorted, step, pick, me, ttl)
		}
	}
	switch {
	case errors.Is(err, errMissing):
		return nil, fmt.Errorf("%w: space %q: sections made and not found", frond.ErrStoreUnavailable, space)
	case errors.Is(err, errExhausted):
		return nil, fmt.Errorf("space %q: a section's maximum would pass 2^63-1: %w", space, frond.ErrTagExhausted)
	case errors.Is(err, keyseq.ErrNotOwner), errors.Is(err, keyseq.ErrStoreLostData):
		return nil, err
	case err != nil:
		return nil, q.db.Fail(fmt.Sprintf("raise %d sections of %q", len(sections), space), err)
	}
	return got, nil
}

// inBatches runs do over sections sqlBatch at a time, in order (within
// the caller's transaction): a statement's variables stay under the
// database's bound (issue 69: SQLite's "too many SQL variables").
func inBatches(sections []int, do func([]int) error) error {
	for len(sections) > 0 {
		k := min(sqlBatch, len(sections))
		if err := do(sections[:k]); err != nil {
			return err
		}
		sections = sections[k:]
	}
	return nil
}

// in is the placeholders of n values in an IN list.
func in(n int) string { return strings.Repeat("?, ", n-1) + "?" }

// spaceArgs is space followed by sections, as arguments.
func spaceArgs(space string, sections []int) []any {
	args := make([]any, 0, 1+len(sections))
	args = append(args, space)
	for _, s := range sections {
		args = append(args, s)
	}
	return args
}

// lock is the row lock of a SELECT that locks what it reads.
func (q *SQLSections) lock() string {
	if q.db.Kind == sqldb.SQLite {
		return "" // one writer at a time
	}
	return " FOR UPDATE"
}

func (q *SQLSections) tx(ctx context.Context, space string, sorted []int, step int64,
	pick func(rows map[int]row, now int64) ([]int, error), me *keyseq.Owner, ttl time.Duration) (map[int]frond.Range, error) {
	k := q.db.Kind
	got := map[int]frond.Range{}
	err := q.db.InTx(ctx, q.retries, func(tx *sql.Tx) error {
		clear(got)
		place, err := q.place.InTx(ctx, tx)
		if err != nil {
			return err
		}
		if err := keyseq.Fenced(space, place); err != nil {
			return err
		}
		r, err := tx.QueryContext(ctx, k.Rebind("SELECT section, max_seq, owner, lease_until, "+k.NowMicros()+
			" FROM frond_keyseq_section WHERE space = ? AND section IN ("+in(len(sorted))+") ORDER BY section"+q.lock()), spaceArgs(space, sorted)...)
		if err != nil {
			return err
		}
		rows := map[int]row{}
		var now int64
		for r.Next() {
			var s int
			var w row
			if err := r.Scan(&s, &w.max, &w.owner, &w.until, &now); err != nil {
				r.Close()
				return err
			}
			rows[s] = w
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		if len(rows) != len(sorted) {
			return errMissing
		}
		raise, err := pick(rows, now)
		if err != nil || len(raise) == 0 {
			return err
		}
		for _, s := range raise {
			if rows[s].max > math.MaxInt64-step {
				return errExhausted
			}
		}
		set, args := "max_seq = max_seq + ?", []any{step}
		if me != nil {
			set += ", owner = ?, addr = ?, lease_until = " + k.NowMicros() + " + ?"
			args = append(args, me.Token, me.Addr, ttl.Microseconds())
		}
		res, err := tx.ExecContext(ctx, k.Rebind("UPDATE frond_keyseq_section SET "+set+" WHERE space = ? AND section IN ("+in(len(raise))+")"),
			append(args, spaceArgs(space, raise)...)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(raise)) {
			return fmt.Errorf("%w: %d of %d sections raised in a transaction that locked them all", frond.ErrStoreUnavailable, n, len(raise))
		}
		for _, s := range raise {
			got[s] = frond.Range{Start: rows[s].max, End: rows[s].max + step, Stride: 1}
		}
		return nil
	})
	return got, err
}

// create makes the rows of sections not made yet (max_seq 1), keeping
// those there.
func (q *SQLSections) create(ctx context.Context, space string, sorted []int) error {
	insert := "INSERT INTO frond_keyseq_section (space, section, max_seq) VALUES " + strings.Repeat("(?, ?, 1), ", len(sorted)-1) + "(?, ?, 1)"
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

// Renew implements keyseq.LeaseStore: one transaction that locks me's sections
// whose lease is live (in the order of the primary key), extends them,
// drops the space's members whose lease ran out, and makes or extends
// me's membership.
func (q *SQLSections) Renew(ctx context.Context, space string, me keyseq.Owner, ttl time.Duration) ([]int, error) {
	if err := keyseq.CheckOwner(me, ttl); err != nil {
		return nil, err
	}
	k := q.db.Kind
	upsert := "INSERT INTO frond_keyseq_member (space, owner, addr, lease_until) VALUES (?, ?, ?, " + k.NowMicros() + " + ?)"
	if k == sqldb.MySQL {
		upsert += " ON DUPLICATE KEY UPDATE addr = VALUES(addr), lease_until = VALUES(lease_until)"
	} else {
		upsert += " ON CONFLICT (space, owner) DO UPDATE SET addr = excluded.addr, lease_until = excluded.lease_until"
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	var held []int
	err := q.db.InTx(c, q.retries, func(tx *sql.Tx) error {
		var err error
		if held, err = q.lockOwned(c, tx, space, nil, me, true); err != nil || len(held) == 0 {
			return err
		}
		return inBatches(held, func(b []int) error {
			_, err := tx.ExecContext(c, k.Rebind("UPDATE frond_keyseq_section SET lease_until = "+k.NowMicros()+" + ? WHERE space = ? AND section IN ("+in(len(b))+")"),
				append([]any{ttl.Microseconds()}, spaceArgs(space, b)...)...)
			return err
		})
	})
	if err == nil {
		// Membership in a transaction of its own: the member rows are
		// locked by every node's renewal, the sections only by their owner's.
		err = q.db.InTx(c, q.retries, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(c, k.Rebind("DELETE FROM frond_keyseq_member WHERE space = ? AND lease_until < "+k.NowMicros()), space); err != nil {
				return err
			}
			_, err := tx.ExecContext(c, k.Rebind(upsert), space, me.Token, me.Addr, ttl.Microseconds())
			return err
		})
	}
	if err != nil {
		return nil, q.db.Fail(fmt.Sprintf("renew the leases of %q", space), err)
	}
	return held, nil
}

// lockOwned locks, in the order of the primary key, me's rows of space
// among sections (all when nil), only those whose lease is live when
// live, and returns their sections.
func (q *SQLSections) lockOwned(ctx context.Context, tx *sql.Tx, space string, sections []int, me keyseq.Owner, live bool) ([]int, error) {
	k := q.db.Kind
	query, args := "SELECT section FROM frond_keyseq_section WHERE space = ? AND owner = ?", []any{space, me.Token}
	if live {
		query += " AND lease_until > " + k.NowMicros()
	}
	if sections != nil {
		query += " AND section IN (" + in(len(sections)) + ")"
		args = append(args, spaceArgs("", sections)[1:]...)
	}
	r, err := tx.QueryContext(ctx, k.Rebind(query+" ORDER BY section"+q.lock()), args...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []int
	for r.Next() {
		var s int
		if err := r.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, r.Err()
}

// Release implements keyseq.LeaseStore: in one transaction, each section
// given whose row is still me's at the maximum given (in the order of the
// primary key), or every row of me's with give nil.
func (q *SQLSections) Release(ctx context.Context, space string, give []keyseq.Given, me keyseq.Owner) error {
	if give != nil && len(give) == 0 {
		return nil
	}
	k := q.db.Kind
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	give = slices.SortedFunc(slices.Values(give), func(a, b keyseq.Given) int { return a.Section - b.Section })
	err := q.db.InTx(c, q.retries, func(tx *sql.Tx) error {
		if give == nil {
			mine, err := q.lockOwned(c, tx, space, nil, me, false)
			if err != nil || len(mine) == 0 {
				return err
			}
			return inBatches(mine, func(b []int) error {
				_, err := tx.ExecContext(c, k.Rebind("UPDATE frond_keyseq_section SET owner = '', addr = '', lease_until = 0 WHERE space = ? AND section IN ("+in(len(b))+")"),
					spaceArgs(space, b)...)
				return err
			})
		}
		for _, g := range give {
			if _, err := tx.ExecContext(c, k.Rebind("UPDATE frond_keyseq_section SET owner = '', addr = '', lease_until = 0 WHERE space = ? AND section = ? AND owner = ? AND max_seq = ?"),
				space, g.Section, me.Token, g.Max); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && give == nil {
		err = q.db.Retry(c, q.retries, func(ctx context.Context) error {
			_, err := q.db.ExecContext(ctx, k.Rebind("DELETE FROM frond_keyseq_member WHERE space = ? AND owner = ?"), space, me.Token)
			return err
		})
	}
	if err != nil {
		return q.db.Fail(fmt.Sprintf("give back sections of %q", space), err)
	}
	return nil
}

// Read implements keyseq.LeaseStore.
func (q *SQLSections) Read(ctx context.Context, space string, sections int) (keyseq.Table, error) {
	k := q.db.Kind
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	t := keyseq.Table{Owners: make([]keyseq.Owner, sections), Untils: make([]int64, sections), Holders: make([]string, sections), Maxima: make([]int64, sections)}
	err := q.db.Retry(c, q.retries, func(ctx context.Context) error {
		clear(t.Owners)
		clear(t.Untils)
		clear(t.Holders)
		clear(t.Maxima)
		t.Members = t.Members[:0]
		var err error
		if t.Fence, err = q.place.Read(ctx, q.db); err != nil {
			return err
		}
		r, err := q.db.QueryContext(ctx, k.Rebind("SELECT section, owner, addr, lease_until, max_seq, "+k.NowMicros()+" FROM frond_keyseq_section WHERE space = ?"), space)
		if err != nil {
			return err
		}
		for r.Next() {
			var s int
			var o keyseq.Owner
			var until, maxSeq, now int64
			if err := r.Scan(&s, &o.Token, &o.Addr, &until, &maxSeq, &now); err != nil {
				r.Close()
				return err
			}
			if s >= 0 && s < sections {
				t.Maxima[s] = maxSeq
			}
			if o.Token != "" && s >= 0 && s < sections {
				t.Untils[s], t.Holders[s] = until, o.Token
				if until > now {
					t.Owners[s] = o
				}
			}
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		r, err = q.db.QueryContext(ctx, k.Rebind("SELECT owner, addr FROM frond_keyseq_member WHERE space = ? AND lease_until > "+k.NowMicros()+" ORDER BY owner"), space)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var o keyseq.Owner
			if err := r.Scan(&o.Token, &o.Addr); err != nil {
				return err
			}
			t.Members = append(t.Members, o)
		}
		return r.Err()
	})
	if err != nil {
		return keyseq.Table{}, q.db.Fail(fmt.Sprintf("read the owners of %q", space), err)
	}
	return t, nil
}

// CreateSpace implements keyseq.SpaceStore.
func (q *SQLSections) CreateSpace(ctx context.Context, sp keyseq.Space) error {
	sp = sp.WithDefaults()
	if err := sp.Validate(); err != nil {
		return err
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	err := q.db.Retry(c, q.retries, func(ctx context.Context) error {
		_, err := q.db.ExecContext(ctx, q.db.Kind.Rebind("INSERT INTO frond_keyseq_space (name, step, sections, slots) VALUES (?, ?, ?, ?)"),
			sp.Name, sp.Step, sp.Sections, sp.Slots)
		return err
	})
	if err != nil && q.db.Kind.Duplicate(err) {
		return fmt.Errorf("keyed sequence space %q: %w", sp.Name, frond.ErrTagExists)
	}
	if err != nil {
		return q.db.Fail(fmt.Sprintf("create space %q", sp.Name), err)
	}
	return nil
}

// Rearm implements keyseq.SpaceStore: the rows of every section made (a
// thousand at a time), then every maximum below above raised to it.
func (q *SQLSections) Rearm(ctx context.Context, sp keyseq.Space, above int64) error {
	sp = sp.WithDefaults()
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	for from := 0; from < sp.Sections; from += 1000 {
		var chunk []int
		for i := from; i < min(from+1000, sp.Sections); i++ {
			chunk = append(chunk, i)
		}
		if err := q.create(c, sp.Name, chunk); err != nil {
			return q.db.Fail(fmt.Sprintf("re-arm %q", sp.Name), err)
		}
	}
	err := q.db.Retry(c, q.retries, func(ctx context.Context) error {
		_, err := q.db.ExecContext(ctx, q.db.Kind.Rebind("UPDATE frond_keyseq_section SET max_seq = ? WHERE space = ? AND max_seq < ?"), above, sp.Name, above)
		return err
	})
	if err != nil {
		return q.db.Fail(fmt.Sprintf("re-arm %q", sp.Name), err)
	}
	return nil
}

// PeerKey implements keyseq.SpaceStore: the row "key" of frond_keyseq_peer,
// inserted if absent (a concurrent insert is kept), then read.
func (q *SQLSections) PeerKey(ctx context.Context) ([]byte, error) {
	insert := "INSERT INTO frond_keyseq_peer (name, value) VALUES ('key', ?)"
	if q.db.Kind == sqldb.MySQL {
		insert = strings.Replace(insert, "INSERT", "INSERT IGNORE", 1)
	} else {
		insert += " ON CONFLICT (name) DO NOTHING"
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	var v string
	err := q.db.Retry(c, q.retries, func(ctx context.Context) error {
		if _, err := q.db.ExecContext(ctx, q.db.Kind.Rebind(insert), hex.EncodeToString(keyseq.NewPeerKey())); err != nil {
			return err
		}
		return q.db.QueryRowContext(ctx, "SELECT value FROM frond_keyseq_peer WHERE name = 'key'").Scan(&v)
	})
	if err != nil {
		return nil, q.db.Fail("read the keyed sequence peer key", err)
	}
	return keyseq.DecodePeerKey(v)
}

// LookupSpace implements keyseq.SpaceStore.
func (q *SQLSections) LookupSpace(ctx context.Context, name string) (keyseq.Space, error) {
	sps, err := q.spaces(ctx, name)
	if err != nil {
		return keyseq.Space{}, err
	}
	if len(sps) == 0 {
		return keyseq.Space{}, keyseq.SpaceNotFound(name)
	}
	return sps[0], nil
}

// ListSpaces implements keyseq.SpaceStore.
func (q *SQLSections) ListSpaces(ctx context.Context) ([]keyseq.Space, error) {
	return q.spaces(ctx, "")
}

// spaces reads the space named, or every space when name is "".
func (q *SQLSections) spaces(ctx context.Context, name string) ([]keyseq.Space, error) {
	query, args := "SELECT name, step, sections, slots FROM frond_keyseq_space", []any(nil)
	if name != "" {
		query, args = query+" WHERE name = ?", []any{name}
	}
	c, cancel := q.db.Bound(ctx)
	defer cancel()
	var out []keyseq.Space
	err := q.db.Retry(c, q.retries, func(ctx context.Context) error {
		out = out[:0]
		r, err := q.db.QueryContext(ctx, q.db.Kind.Rebind(query+" ORDER BY name"), args...)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var sp keyseq.Space
			if err := r.Scan(&sp.Name, &sp.Step, &sp.Sections, &sp.Slots); err != nil {
				return err
			}
			out = append(out, sp)
		}
		return r.Err()
	})
	if err != nil {
		return nil, q.db.Fail("read the keyed sequence spaces", err)
	}
	return out, nil
}

// Close releases the connections.
func (q *SQLSections) Close() error { return q.db.Close() }
