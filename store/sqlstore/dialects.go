package sqlstore

import (
	"errors"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect holds what differs between databases. Queries use ? placeholders;
// rebind turns them into $1, $2, ... for PostgreSQL.
type dialect struct {
	name        string
	driver      string
	createTable string
	// allocate raises max_id; with returning set it is one statement with
	// args (step, step, tag, step, step) returning max_id, step; otherwise it
	// runs in a transaction followed by selectAlloc.
	allocate    string
	returning   bool
	selectAlloc string
	forUpdate   string // suffix that locks the row in a transaction
	insert      string // args: tag, max_id, step, description; conflict: 0 rows or duplicate()
	duplicate   func(error) bool
	transient   func(error) bool // worth retrying at once: deadlock, serialization failure, busy
	dollar      bool
}

const cols = "biz_tag, max_id, step, description, update_time"

// Leaf's own script (scripts/leaf_alloc.sql), unchanged.
const leafMySQLDDL = "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n" +
	"  `biz_tag` varchar(128)  NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256)  DEFAULT NULL,\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

// portableDDL is Leaf's table without MySQL's dialect (backquotes, display
// widths, ON UPDATE, ENGINE), for PostgreSQL and SQLite; frond sets
// update_time itself there.
const portableDDL = `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag VARCHAR(128) NOT NULL DEFAULT '',
  max_id BIGINT NOT NULL DEFAULT 1,
  step INT NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
)`

var mysqlDialect = &dialect{
	name:        "mysql",
	driver:      "mysql",
	createTable: leafMySQLDDL,
	allocate: `UPDATE leaf_alloc SET max_id = max_id + IF(? > 0, ?, step)
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - IF(? > 0, ?, step)`,
	selectAlloc: `SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?`,
	forUpdate:   " FOR UPDATE",
	insert:      `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)`,
	duplicate: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1062
	},
	transient: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
	},
}

var postgresDialect = &dialect{
	name:        "postgres",
	driver:      "pgx",
	createTable: portableDDL,
	allocate: `UPDATE leaf_alloc SET max_id = max_id + (CASE WHEN ?::bigint > 0 THEN ?::bigint ELSE step END), update_time = now() AT TIME ZONE 'UTC'
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - (CASE WHEN ?::bigint > 0 THEN ?::bigint ELSE step END)
RETURNING max_id, step`,
	returning: true,
	forUpdate: " FOR UPDATE",
	insert:    `INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) VALUES (?, ?, ?, ?, now() AT TIME ZONE 'UTC') ON CONFLICT (biz_tag) DO NOTHING`,
	duplicate: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505"
	},
	transient: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
	},
	dollar: true,
}

var sqliteDialect = &dialect{
	name:        "sqlite",
	driver:      "sqlite",
	createTable: portableDDL,
	allocate: `UPDATE leaf_alloc SET max_id = max_id + (CASE WHEN ? > 0 THEN ? ELSE step END), update_time = CURRENT_TIMESTAMP
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - (CASE WHEN ? > 0 THEN ? ELSE step END)
RETURNING max_id, step`,
	returning: true,
	insert:    `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?) ON CONFLICT (biz_tag) DO NOTHING`,
	duplicate: func(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY },
	transient: func(err error) bool {
		c := sqliteCode(err) & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	},
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// q returns query with the dialect's placeholders.
func (d *dialect) q(query string) string {
	if !d.dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
