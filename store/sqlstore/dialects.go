package sqlstore

import "github.com/frond-id/frond/internal/sqldb"

// dialect holds what differs between databases. Queries use ? placeholders;
// q turns them into $1, $2, ... for PostgreSQL.
type dialect struct {
	kind        sqldb.Kind
	createTable string
	createModes string // frond_tag_mode: the mode of each tag that is not a segment tag
	// createMappings: frond_tag_mapping, the mapping of each tag whose
	// numbers are not plain (frond.Tag.Mapping)
	createMappings string
	createMarks    string // frond_mark: frond's own values beside the tags (the store's place)
	insertMark     string // args: name, value; a mark already set is kept
	// allocate raises max_id; with returning set it is one statement with
	// args (step, step, tag, step, step, tag) returning max_id, step;
	// otherwise it runs in a transaction followed by selectAlloc. {guard}
	// stands for segmentGuard or sequenceGuard.
	allocate    string
	returning   bool
	selectAlloc string
	forUpdate   string // suffix that locks the row in a transaction
	forShare    string // suffix that takes a shared lock on the row in a transaction
	// lockMarks, when set, runs in SwapPlace's transaction before its
	// UPDATE: a table lock that queues new allocations behind the swap.
	// PostgreSQL lets a new FOR SHARE locker join the row's shared lockers
	// ahead of an UPDATE waiting for them, so under a steady stream of
	// allocations the UPDATE alone can wait without end (issue 42); its
	// table locks are granted in order, so an EXCLUSIVE lock waits only for
	// the allocations in flight, and later ones (ROW SHARE) wait for it.
	// InnoDB queues a waiting exclusive record lock ahead of later shared
	// ones by itself.
	lockMarks string
	insert    string // args: tag, max_id, step, description; conflict: 0 rows or duplicate()
	duplicate func(error) bool
	// takeIDs takes n IDs of a sequence tag from Leaf's row in one
	// statement (mysqlTake); empty: allocate's UPDATE.
	takeIDs string
	// seq are the database's sequence objects (sequence.go); nil: none.
	seq *sequences
}

var dialects = map[sqldb.Kind]*dialect{
	sqldb.MySQL:    mysqlDialect,
	sqldb.Postgres: postgresDialect,
	sqldb.SQLite:   sqliteDialect,
}

const cols = "biz_tag, max_id, step, description, update_time"

// The guards of an allocation (args: tag): a segment is taken only of a
// segment tag, a sequence tag's IDs only of a sequence tag, so that a node
// that has the mode of a tag wrong is refused rather than served from the
// wrong source (a sequence tag's IDs may come from a sequence object).
const (
	segmentGuard  = "AND NOT EXISTS (SELECT 1 FROM frond_tag_mode WHERE biz_tag = ?)"
	sequenceGuard = "AND EXISTS (SELECT 1 FROM frond_tag_mode WHERE biz_tag = ? AND mode = 'sequence')"
)

// Leaf's own script (scripts/leaf_alloc.sql), with one change: biz_tag has a
// binary collation, so that tags differing only in case (Case and case) are
// two tags, as on every other store. Leaf's script leaves it to the server's
// default, case-insensitive on MySQL and MariaDB.
const leafMySQLDDL = "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n" +
	"  `biz_tag` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256)  DEFAULT NULL,\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

// The modes of tags (frond.Tag.Mode) live beside Leaf's table, which stays as
// Leaf made it: a row only for a tag that is not a segment tag, so a Leaf
// table reads as all segment tags.
const modesMySQLDDL = "CREATE TABLE IF NOT EXISTS `frond_tag_mode` (\n" +
	"  `biz_tag` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
	"  `mode` varchar(16) NOT NULL,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

// The mappings of tags (frond.Tag.Mapping), as their modes: a row only for
// a tag whose numbers are not plain.
const mappingsMySQLDDL = "CREATE TABLE IF NOT EXISTS `frond_tag_mapping` (\n" +
	"  `biz_tag` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
	"  `mapping` varchar(16) NOT NULL,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

const mappingsPortableDDL = `CREATE TABLE IF NOT EXISTS frond_tag_mapping (
  biz_tag VARCHAR(128) NOT NULL,
  mapping VARCHAR(16) NOT NULL,
  PRIMARY KEY (biz_tag)
)`

// frond's own values beside the tags: the row "place" holds the store's
// place in a set of stores (frond.Place).
const marksMySQLDDL = "CREATE TABLE IF NOT EXISTS `frond_mark` (\n" +
	"  `name` varchar(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,\n" +
	"  `value` varchar(255) NOT NULL,\n" +
	"  PRIMARY KEY (`name`)\n" +
	") ENGINE=InnoDB"

const marksPortableDDL = `CREATE TABLE IF NOT EXISTS frond_mark (
  name VARCHAR(64) NOT NULL,
  value VARCHAR(255) NOT NULL,
  PRIMARY KEY (name)
)`

const modesPortableDDL = `CREATE TABLE IF NOT EXISTS frond_tag_mode (
  biz_tag VARCHAR(128) NOT NULL,
  mode VARCHAR(16) NOT NULL,
  PRIMARY KEY (biz_tag)
)`

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
	kind:           sqldb.MySQL,
	createTable:    leafMySQLDDL,
	createModes:    modesMySQLDDL,
	createMappings: mappingsMySQLDDL,
	createMarks:    marksMySQLDDL,
	insertMark:     "INSERT IGNORE INTO frond_mark (name, value) VALUES (?, ?)",
	allocate: `UPDATE leaf_alloc SET max_id = max_id + IF(? > 0, ?, step)
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - IF(? > 0, ?, step) {guard}`,
	selectAlloc: `SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?`,
	forUpdate:   " FOR UPDATE",
	forShare:    " LOCK IN SHARE MODE", // MySQL 5.7 and 8, and MariaDB
	insert:      `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)`,
	duplicate:   sqldb.MySQL.Duplicate,
	takeIDs:     mysqlTake,
	seq:         mariaDBSequences,
}

var postgresDialect = &dialect{
	kind:           sqldb.Postgres,
	createTable:    portableDDL,
	createModes:    modesPortableDDL,
	createMappings: mappingsPortableDDL,
	createMarks:    marksPortableDDL,
	insertMark:     "INSERT INTO frond_mark (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
	allocate: `UPDATE leaf_alloc SET max_id = max_id + (CASE WHEN ?::bigint > 0 THEN ?::bigint ELSE step END), update_time = now() AT TIME ZONE 'UTC'
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - (CASE WHEN ?::bigint > 0 THEN ?::bigint ELSE step END) {guard}
RETURNING max_id, step`,
	returning: true,
	forUpdate: " FOR UPDATE",
	forShare:  " FOR SHARE",
	lockMarks: "LOCK TABLE frond_mark IN EXCLUSIVE MODE",
	insert:    `INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time) VALUES (?, ?, ?, ?, now() AT TIME ZONE 'UTC') ON CONFLICT (biz_tag) DO NOTHING`,
	duplicate: sqldb.Postgres.Duplicate,
	seq:       postgresSequences,
}

var sqliteDialect = &dialect{
	kind:           sqldb.SQLite,
	createTable:    portableDDL,
	createModes:    modesPortableDDL,
	createMappings: mappingsPortableDDL,
	createMarks:    marksPortableDDL,
	insertMark:     "INSERT INTO frond_mark (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
	allocate: `UPDATE leaf_alloc SET max_id = max_id + (CASE WHEN ? > 0 THEN ? ELSE step END), update_time = CURRENT_TIMESTAMP
WHERE biz_tag = ? AND max_id <= 9223372036854775807 - (CASE WHEN ? > 0 THEN ? ELSE step END) {guard}
RETURNING max_id, step`,
	returning: true,
	insert:    `INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?) ON CONFLICT (biz_tag) DO NOTHING`,
	duplicate: sqldb.SQLite.Duplicate,
}

// q returns query with the dialect's placeholders.
func (d *dialect) q(query string) string { return d.kind.Rebind(query) }
