package cosidstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/cosidplay"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/segment"
	"github.com/frond-id/frond/store/cosidstore"
	"github.com/frond-id/frond/storetest"
)

// Real-server tests: FROND_TEST_MYSQL_URL (MySQL or MariaDB),
// FROND_TEST_POSTGRES_URL and FROND_TEST_REDIS_URL. They skip when unset,
// and fail instead when FROND_TEST_REQUIRE=1 (CI).

// with appends URL parameters.
func with(raw string, params ...string) string {
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	return raw + sep + strings.Join(params, "&")
}

// cosidURL is the store's URL on the server of the environment variable
// env.
func cosidURL(t *testing.T, env string) string {
	raw := testenv.Getenv(t, env)
	if strings.HasPrefix(raw, "redis") {
		return with("cosid+"+raw, "frond_allow_volatile=true") // the test server keeps nothing on disk
	}
	return "cosid+" + raw
}

func opener(raw string) storetest.Opener {
	return func(t *testing.T) frond.SegmentStore {
		s, err := cosidstore.Open(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// caseSensitive makes CosId's table compare names by bytes, as the
// conformance suite expects (CosId's DDL leaves the server's default
// collation, which ignores case on MySQL and MariaDB: TestMySQL_Case).
func caseSensitive(t *testing.T, raw string) {
	db := sqlDB(t, raw)
	for _, table := range []string{"cosid", "frond_cosid_tag"} {
		if _, err := db.Exec("ALTER TABLE " + table + " MODIFY name varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMySQL_Conformance(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_MYSQL_URL")
	opener(raw)(t).Close()
	caseSensitive(t, raw)
	storetest.RunPlainSegmentStore(t, opener(raw))
}

func TestPostgres_Conformance(t *testing.T) {
	storetest.RunPlainSegmentStore(t, opener(cosidURL(t, "FROND_TEST_POSTGRES_URL")))
}

func TestRedis_Conformance(t *testing.T) {
	storetest.RunPlainSegmentStore(t, opener(cosidURL(t, "FROND_TEST_REDIS_URL")))
}

func outageOpener(env string) storetest.OutageOpener {
	return func(t *testing.T, addr string, timeout time.Duration) frond.SegmentStore {
		raw := storetest.WithHost(t, cosidURL(t, env), addr)
		s, err := cosidstore.Open(context.Background(), with(raw, "frond_timeout="+timeout.String()))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestMySQL_Outage(t *testing.T) {
	storetest.RunOutage(t, storetest.HostOf(t, testenv.Getenv(t, "FROND_TEST_MYSQL_URL"), "3306"), outageOpener("FROND_TEST_MYSQL_URL"))
}

func TestPostgres_Outage(t *testing.T) {
	storetest.RunOutage(t, storetest.HostOf(t, testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"), "5432"), outageOpener("FROND_TEST_POSTGRES_URL"))
}

func TestRedis_Outage(t *testing.T) {
	storetest.RunOutage(t, storetest.HostOf(t, testenv.Getenv(t, "FROND_TEST_REDIS_URL"), "6379"), outageOpener("FROND_TEST_REDIS_URL"))
}

// sqlDB opens the database of a cosid+ URL for CosId's side.
func sqlDB(t *testing.T, raw string) *sqldb.DB {
	t.Helper()
	server, _, _ := strings.Cut(strings.TrimPrefix(raw, "cosid+"), "?")
	if strings.HasPrefix(server, "postgres") {
		server += "?sslmode=disable"
	}
	p, err := sqldb.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: 10 * time.Second, MaxOpenConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// side is one server's CosId side: a distributor of a name.
type side func(t *testing.T, name string) cosidplay.Distributor

func jdbcSide(raw string) side {
	return func(t *testing.T, name string) cosidplay.Distributor {
		db := sqlDB(t, raw)
		return cosidplay.JDBC{DB: db.DB, Name: name, Rebind: db.Kind.Rebind, MySQL: db.Kind == sqldb.MySQL}
	}
}

func redisSide(raw string) side {
	return func(t *testing.T, name string) cosidplay.Distributor {
		opts, err := redis.ParseURL(testenv.Getenv(t, "FROND_TEST_REDIS_URL"))
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(opts)
		t.Cleanup(func() { c.Close() })
		return cosidplay.Redis{C: c, Name: name}
	}
}

// The boundary: a segment CosId raises to M is (M-step, M]; frond's
// allocation after it starts at M+1, and CosId's next after frond's starts
// above frond's last ID.
func testBoundary(t *testing.T, raw string, play side) {
	c := testenv.Ctx(t)
	s := opener(raw)(t)
	defer s.Close()
	tag := fmt.Sprintf("sbs.boundary-%d", rand.Int64()) // CosId's namespace sbs, its name boundary-N
	app := &cosidplay.App{D: play(t, tag), Step: 10, Offset: 0}
	if err := app.Start(c); err != nil {
		t.Fatal(err)
	}
	if id, err := app.Next(c); err != nil || id != 1 {
		t.Fatalf("CosId's first ID at offset 0: %d, %v; want 1", id, err)
	}
	got, err := s.Tag(c, tag)
	if err != nil || got.MaxID != 11 || got.Step != cosidstore.DefaultStep {
		t.Fatalf("frond reads CosId's segment (0, 10] as %+v, %v; want max_id 11, the default step", got, err)
	}
	a, err := s.Allocate(c, tag, 5)
	if err != nil || a.Range != (frond.Range{Start: 11, End: 16, Stride: 1}) {
		t.Fatalf("frond's segment after CosId's (0, 10]: %+v, %v; want [11, 16)", a, err)
	}
	for want := int64(2); want <= 10; want++ { // the rest of CosId's segment, then its next one
		if id, err := app.Next(c); err != nil || id != want {
			t.Fatalf("CosId's ID %d: %d, %v", want, id, err)
		}
	}
	if id, err := app.Next(c); err != nil || id != 16 {
		t.Fatalf("CosId's next segment after frond's [11, 16): first ID %d, %v; want 16", id, err)
	}
	_, err = s.Allocate(c, "never-created", 0)
	if !errors.Is(err, frond.ErrTagNotFound) || !strings.Contains(err.Error(), "name:[never-created] missing.") {
		t.Fatalf("a name missing from CosId's storage: %v", err)
	}
	// frond's creation is CosId's initialisation: the offset is max_id-1,
	// and CosId's own initialisation after it changes nothing.
	mine := tag + "-frond"
	if _, err := s.CreateTag(c, frond.Tag{Name: mine, MaxID: 1001, Step: 100}); err != nil {
		t.Fatal(err)
	}
	late := &cosidplay.App{D: play(t, mine), Step: 10, Offset: 0}
	if err := late.Start(c); err != nil {
		t.Fatal(err)
	}
	if id, err := late.Next(c); err != nil || id != 1001 {
		t.Fatalf("CosId's first ID of a name frond created at max_id 1001: %d, %v", id, err)
	}
	if _, err := s.CreateTag(c, frond.Tag{Name: tag, MaxID: 1, Step: 10}); !errors.Is(err, frond.ErrTagExists) {
		t.Fatalf("creating a name CosId made: %v, want ErrTagExists", err)
	}
}

func TestMySQL_Boundary(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_MYSQL_URL")
	testBoundary(t, raw, jdbcSide(raw))
}

func TestPostgres_Boundary(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_POSTGRES_URL")
	testBoundary(t, raw, jdbcSide(raw))
}

func TestRedis_Boundary(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_REDIS_URL")
	testBoundary(t, raw, redisSide(raw))
}

// frondNode is a frond node on the store: the segment engine over its own
// client, reaching the server through a proxy that can cut it.
type frondNode struct {
	t     *testing.T
	raw   string
	proxy *storetest.Proxy
	mu    sync.Mutex
	s     frond.SegmentStore
	e     *segment.Engine
}

func (n *frondNode) start() {
	raw := n.raw
	if n.proxy != nil {
		raw = storetest.WithHost(n.t, raw, n.proxy.Addr())
	}
	s, err := cosidstore.Open(context.Background(), with(raw, "frond_timeout=2s"))
	if err != nil {
		n.t.Error(err)
		return
	}
	e, err := segment.New(s, segment.Settings{})
	if err != nil {
		n.t.Error(err)
		return
	}
	n.mu.Lock()
	n.s, n.e = s, e
	n.mu.Unlock()
}

// restart is kill and start: the engine's segments are dropped unused.
func (n *frondNode) restart() {
	n.mu.Lock()
	e, s := n.e, n.s
	n.mu.Unlock()
	e.Close()
	s.Close()
	n.start()
}

func (n *frondNode) next(ctx context.Context, tag string) (int64, error) {
	n.mu.Lock()
	e := n.e
	n.mu.Unlock()
	return e.Next(ctx, tag)
}

// testSideBySide: three CosId applications with different steps and two
// frond nodes with their own steps take IDs of one name at once, with
// restarts on both sides and a cut of one frond node's connection: no ID
// is handed out twice.
func testSideBySide(t *testing.T, raw string, play side, target string, frondFirst bool) {
	c := testenv.Ctx(t)
	tag := fmt.Sprintf("sbs.together-%d", rand.Int64())
	name := tag
	apps := []*cosidplay.App{{D: play(t, name), Step: 10}, {D: play(t, name), Step: 7}, {D: play(t, name), Step: 100}}
	nodes := []*frondNode{{t: t, raw: with(raw, "frond_step=50")}, {t: t, raw: raw, proxy: storetest.StartProxy(t, target)}}
	if frondFirst {
		admin := opener(raw)(t)
		if _, err := admin.CreateTag(c, frond.Tag{Name: tag, MaxID: 1, Step: 30}); err != nil {
			t.Fatal(err)
		}
		admin.Close()
	}
	for _, a := range apps {
		if err := a.Start(c); err != nil { // CosId's initialisation: the row at offset 0, or nothing
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		n.start()
		defer func() { n.e.Close(); n.s.Close() }()
	}
	if t.Failed() {
		t.FailNow()
	}

	const perWorker = 1500
	var mu sync.Mutex
	seen := map[int64]string{}
	var dups []string
	record := func(who string, id int64) {
		mu.Lock()
		defer mu.Unlock()
		if id <= 0 {
			dups = append(dups, fmt.Sprintf("%s handed out %d", who, id))
		}
		if prev, ok := seen[id]; ok {
			dups = append(dups, fmt.Sprintf("ID %d from %s and %s", id, prev, who))
		}
		seen[id] = who
	}
	var wg sync.WaitGroup
	var unavailable int
	for i, a := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := fmt.Sprintf("cosid app %d (step %d)", i, a.Step)
			for k := range perWorker {
				if k%500 == 499 {
					if err := a.Start(c); err != nil { // a restart: the segment it had is lost
						t.Error(err)
						return
					}
				}
				id, err := a.Next(c)
				if err != nil {
					t.Errorf("%s: %v", who, err)
					return
				}
				record(who, id)
			}
		}()
	}
	for i, n := range nodes {
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				who := fmt.Sprintf("frond node %d", i)
				for k := range perWorker {
					if g == 0 && k == perWorker/2 {
						if n.proxy != nil {
							n.proxy.Cut() // a store cut: calls fail, nothing is handed out twice after it
							time.AfterFunc(300*time.Millisecond, n.proxy.Restore)
						} else {
							n.restart()
						}
					}
					id, err := n.next(c, tag)
					if errors.Is(err, frond.ErrClosed) { // the node restarting under this caller
						continue
					}
					if errors.Is(err, frond.ErrStoreUnavailable) {
						mu.Lock()
						unavailable++
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", who, err)
						return
					}
					record(who, id)
				}
			}()
		}
	}
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("%d IDs handed out twice, first: %s", len(dups), strings.Join(dups[:min(5, len(dups))], "; "))
	}
	t.Logf("%d IDs from %d CosId applications and %d frond nodes, none twice (%d calls refused during the cut)", len(seen), len(apps), len(nodes), unavailable)
	if len(seen) < len(apps)*perWorker+perWorker {
		t.Fatalf("only %d IDs handed out", len(seen))
	}
}

func TestMySQL_SideBySide(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_MYSQL_URL")
	target := storetest.HostOf(t, os.Getenv("FROND_TEST_MYSQL_URL"), "3306")
	t.Run("CosIdFirst", func(t *testing.T) { testSideBySide(t, raw, jdbcSide(raw), target, false) })
	t.Run("FrondFirst", func(t *testing.T) { testSideBySide(t, raw, jdbcSide(raw), target, true) })
}

func TestPostgres_SideBySide(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_POSTGRES_URL")
	target := storetest.HostOf(t, os.Getenv("FROND_TEST_POSTGRES_URL"), "5432")
	t.Run("CosIdFirst", func(t *testing.T) { testSideBySide(t, raw, jdbcSide(raw), target, false) })
	t.Run("FrondFirst", func(t *testing.T) { testSideBySide(t, raw, jdbcSide(raw), target, true) })
}

func TestRedis_SideBySide(t *testing.T) {
	raw := cosidURL(t, "FROND_TEST_REDIS_URL")
	target := storetest.HostOf(t, os.Getenv("FROND_TEST_REDIS_URL"), "6379")
	t.Run("CosIdFirst", func(t *testing.T) { testSideBySide(t, raw, redisSide(raw), target, false) })
	t.Run("FrondFirst", func(t *testing.T) { testSideBySide(t, raw, redisSide(raw), target, true) })
}

// Check refuses a URL that is not a CosId store's, or has a bad parameter.
func TestURL(t *testing.T) {
	for _, bad := range []string{"mysql://x/db", "cosid+sqlite:///tmp/x.db", "cosid+mysql://x/db?frond_step=0", "cosid+mysql://x/db?frond_step=-5",
		"cosid+mysql://x/db?frond_bogus=1", "cosid+redis://x?frond_bogus=1", "cosid+http://x"} {
		if err := cosidstore.Check(bad); !errors.Is(err, frond.ErrInvalidArgument) {
			t.Errorf("Check(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	for _, good := range []string{"cosid+mysql://root@127.0.0.1:3306/test", "cosid+postgres://u@h/db?sslmode=disable&frond_step=5000",
		"cosid+redis://127.0.0.1:6379/0?frond_timeout=2s"} {
		if err := cosidstore.Check(good); err != nil {
			t.Errorf("Check(%q) = %v", good, err)
		}
	}
}
