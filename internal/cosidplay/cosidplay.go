// Package cosidplay plays CosId's side in frond's compatibility tests:
// what CosId 3.2.1 (Ahoo-Wang/CosId, tag v3.2.1, commit a4fb287) does to
// its segment storage, statement by statement and key by key, written from
// its source (docs/research/cosid-3.2.1.md quotes each file). CosId's jars
// cannot be fetched here; these players stand for its applications.
package cosidplay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Distributor is CosId's IdSegmentDistributor for one segment name: the
// initialisation an application runs when it starts, and nextMaxId.
type Distributor interface {
	// Init is the distributor factory's initialisation of the name at
	// offset; a name that exists is left as it is.
	Init(ctx context.Context, offset int64) error
	// NextMaxID raises the name's max by step and returns it: the segment
	// (max-step, max] is the application's.
	NextMaxID(ctx context.Context, step int64) (int64, error)
}

// JDBC is cosid-jdbc's distributor on a table cosid: Rebind turns its ?
// placeholders into the database's (PostgreSQL's $1...; CosId itself has
// MySQL's statements only).
type JDBC struct {
	DB     *sql.DB
	Name   string // {namespace}.{name}
	Rebind func(string) string
	// MySQL: CosId's own statements; false: the same in PostgreSQL's
	// dialect (unix_timestamp() and "value" are MySQL's).
	MySQL bool
}

// The statements of JdbcIdSegmentDistributor.java and
// JdbcIdSegmentInitializer.java (cosid-jdbc 3.2.1), verbatim for MySQL.
const (
	incrementMaxIDSQL = "update cosid set last_max_id=(last_max_id + ?),last_fetch_time=unix_timestamp() where name = ?;"
	fetchMaxIDSQL     = "select last_max_id from cosid where name = ?;"
	initIDSegmentSQL  = "insert into cosid (name, last_max_id,last_fetch_time) value (?, ?,unix_timestamp());"

	pgIncrementMaxIDSQL = "update cosid set last_max_id=(last_max_id + ?),last_fetch_time=CAST(EXTRACT(EPOCH FROM now()) AS BIGINT) where name = ?"
	pgFetchMaxIDSQL     = "select last_max_id from cosid where name = ?"
	pgInitIDSegmentSQL  = "insert into cosid (name, last_max_id,last_fetch_time) values (?, ?,CAST(EXTRACT(EPOCH FROM now()) AS BIGINT))"
)

func (j JDBC) q(mysql, pg string) string {
	if j.MySQL {
		return mysql
	}
	return j.Rebind(pg)
}

// Init is JdbcIdSegmentInitializer.tryInitIdSegment: the INSERT at offset,
// every failure (a duplicate key) swallowed, as CosId logs it and goes on.
func (j JDBC) Init(ctx context.Context, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("offset:[%d] must be greater than or equal to 0", offset)
	}
	j.DB.ExecContext(ctx, j.q(initIDSegmentSQL, pgInitIDSegmentSQL), j.Name, offset)
	return nil
}

// ErrMissing is SegmentNameMissingException.
var ErrMissing = errors.New("segment name missing")

// NextMaxID is JdbcIdSegmentDistributor.nextMaxId: autocommit off, the
// UPDATE (0 rows: SegmentNameMissingException), the SELECT, one commit; an
// error closes the connection without a commit (no explicit rollback:
// closing rolls back).
func (j JDBC) NextMaxID(ctx context.Context, step int64) (int64, error) {
	if step <= 0 {
		return 0, fmt.Errorf("step:[%d] must be greater than 0!", step)
	}
	tx, err := j.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, j.q(incrementMaxIDSQL, pgIncrementMaxIDSQL), step, j.Name)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, fmt.Errorf("%w: name:[%s] missing.", ErrMissing, j.Name)
	}
	var maxID int64
	if err := tx.QueryRowContext(ctx, j.q(fetchMaxIDSQL, pgFetchMaxIDSQL), j.Name).Scan(&maxID); err != nil {
		return 0, fmt.Errorf("%s:not found max id : %w", j.Name, err)
	}
	return maxID, tx.Commit()
}

// Redis is cosid-spring-redis's SpringRedisIdSegmentDistributor: the key
// "cosid:" + "{" + namespacedName + "}" + ".adder".
type Redis struct {
	C    *redis.Client
	Name string // {namespace}.{name}
}

// Key is CosId's adder key of the name.
func (r Redis) Key() string { return "cosid:{" + r.Name + "}.adder" }

// Init is SpringRedisIdSegmentDistributorFactory's ensureOffset: SETNX.
func (r Redis) Init(ctx context.Context, offset int64) error {
	return r.C.SetNX(ctx, r.Key(), offset, 0).Err()
}

// NextMaxID is nextMaxId: INCRBY (a missing key starts at 0, as in CosId).
func (r Redis) NextMaxID(ctx context.Context, step int64) (int64, error) {
	if step <= 0 {
		return 0, fmt.Errorf("step:[%d] must be greater than 0!", step)
	}
	return r.C.IncrBy(ctx, r.Key(), step).Result()
}

// App is a CosId application's segment ID (DefaultSegmentId over a
// DefaultIdSegment): IDs (max-step, max] one by one, a new segment from
// the distributor when they run out. It checks, as SegmentChainId does,
// that each new segment lies above the last (NextIdSegmentExpiredException).
type App struct {
	D      Distributor
	Step   int64
	Offset int64

	mu        sync.Mutex
	seq, last int64 // the last ID handed out and the segment's max
	started   bool
}

// Start is the application starting: the distributor's initialisation,
// and no segment yet (a restart forgets the segment it had).
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started, a.seq, a.last = true, 0, 0
	return a.D.Init(ctx, a.Offset)
}

// Next hands out the next ID.
func (a *App) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		return 0, errors.New("cosidplay: the application has not started")
	}
	if a.seq >= a.last {
		maxID, err := a.D.NextMaxID(ctx, a.Step)
		if err != nil {
			return 0, err
		}
		if a.last != 0 && maxID <= a.last {
			return 0, fmt.Errorf("NextIdSegmentExpiredException: new max %d not above the last segment's %d", maxID, a.last)
		}
		a.seq, a.last = maxID-a.Step, maxID
	}
	a.seq++
	return a.seq, nil
}

// Proxy is cosid-proxy's ProxyIdSegmentDistributor: its SegmentClient's
// requests (SegmentApi 3.2.1) to the server at Base ("http://host:8688",
// CosId's cosid.proxy.host), for the segment Namespace.Name.
type Proxy struct {
	Client          *http.Client
	Base            string
	Namespace, Name string
	Step            int64 // the application's step, sent with the distributor's definition
}

// Init is ProxyIdSegmentDistributorFactory.create: POST
// /segments/distributor/{namespace}/{name}?offset=&step=.
func (p Proxy) Init(ctx context.Context, offset int64) error {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "step": {strconv.FormatInt(max(p.Step, 1), 10)}}
	_, err := p.do(ctx, http.MethodPost, "segments/distributor/"+url.PathEscape(p.Namespace)+"/"+url.PathEscape(p.Name)+"?"+q.Encode())
	return err
}

// NextMaxID is ProxyIdSegmentDistributor.nextMaxId: PATCH
// /segments/{namespace}/{name}?step=, the body a JSON long.
func (p Proxy) NextMaxID(ctx context.Context, step int64) (int64, error) {
	body, err := p.do(ctx, http.MethodPatch, "segments/"+url.PathEscape(p.Namespace)+"/"+url.PathEscape(p.Name)+"?step="+strconv.FormatInt(step, 10))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(body), 10, 64)
}

func (p Proxy) do(ctx context.Context, method, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, springJoin(p.Base, path), nil)
	if err != nil {
		return "", err
	}
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	return string(b), nil
}

// springJoin joins CosId's relative proxy path to the base URL as Spring's
// UriComponentsBuilder does (CosId's proxy client: baseUrl, then
// .path("segments/...")): the base's path and the relative path
// concatenated with no slash between them, a slash after the host only
// (so "http://frond:8080/cosid/TOKEN" gives "/cosid/TOKENsegments/...", which
// frond serves: issue 60).
func springJoin(base, rel string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base + rel
	}
	relPath, query, hasQuery := strings.Cut(rel, "?")
	path := u.EscapedPath() + relPath // both escaped already
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	out := u.Scheme + "://" + u.Host + path
	if hasQuery {
		out += "?" + query
	}
	return out
}
