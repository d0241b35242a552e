package main

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
	"github.com/frond-id/frond/storetest/dbtest"
)

// createTagIn creates tag directly in the store of raw.
func createTagIn(t *testing.T, raw, tag string, maxID, step int64) {
	t.Helper()
	s, err := sqlstore.Open(context.Background(), raw, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// At the store's place: a store of a set takes tag administration
	// at its place only (tests build copies a store at a time).
	at, err := s.Place(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTagAt(context.Background(), at, frond.Tag{Name: tag, MaxID: maxID, Step: step}); err != nil {
		t.Fatal(err)
	}
}

type readyz struct {
	Status string
	Checks []struct {
		Name   string
		OK     bool
		Detail string
	}
}

func (s *server) readyz() (int, readyz, string) {
	s.t.Helper()
	code, body := s.get("/readyz")
	var r readyz
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		s.t.Fatalf("readyz: %v: %s", err, body)
	}
	return code, r, body
}

func (r readyz) store() (ok bool, detail string) {
	for _, c := range r.Checks {
		if c.Name == "store" {
			return c.OK, c.Detail
		}
	}
	return false, ""
}

func tagName(prefix string) string {
	return prefix + "-" + strings.ReplaceAll(time.Now().UTC().Format("150405.000000000"), ".", "-")
}

// A node restarted while its only store is cut starts anyway: snowflake IDs
// are served, segment IDs answer 503 store_unavailable, /readyz names the
// store; once the store is back, segment IDs work within seconds.
func TestE2E_StoreDownAtStart(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	tag := tagName("down-at-start")
	createTagIn(t, raw, tag, 1, 100)
	p := storetest.StartProxy(t, storetest.HostOf(t, raw, "3306"))
	p.Cut()
	store := storetest.WithHost(t, raw, p.Addr()) + "?frond_timeout=1s"
	t.Setenv("FROND_SEGMENT__FAIL_FAST", "200ms")
	start := time.Now()
	s := mustStart(t, t.TempDir(), "--store", store)
	t.Logf("started in %v with the store cut", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(s.log(), "STORE DOWN AT START") {
		t.Errorf("no warning in the log:\n%s", s.log())
	}

	if code, body := s.get("/api/snowflake/get/x"); code != 200 {
		t.Fatalf("snowflake with the store down: %d %s", code, body)
	}
	if code, body := s.get("/v1/segment/" + tag); code != 503 || !strings.Contains(body, `"code":"store_unavailable"`) {
		t.Fatalf("segment with the store down: %d %s", code, body)
	}
	// The overall status depends on the readiness policy (snowflake IDs are
	// served); the store check must fail and name the store.
	_, r, body := s.readyz()
	if ok, detail := r.store(); ok || !strings.Contains(detail, p.Addr()) || !strings.Contains(detail, "not open") {
		t.Fatalf("readyz with the store down: %s", body)
	}
	if code, body := s.get("/readyz/segment"); code != 503 {
		t.Fatalf("/readyz/segment with the only store down: %d %s", code, body)
	}
	if code, body := s.get("/readyz/snowflake"); code != 200 {
		t.Fatalf("/readyz/snowflake with the store down: %d %s", code, body)
	}

	p.Restore()
	restored := time.Now()
	for {
		code, body := s.get("/v1/segment/" + tag)
		if code == 200 {
			break
		}
		if time.Since(restored) > 10*time.Second {
			t.Fatalf("segment IDs 10 s after the store came back: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("segment IDs %v after the store came back", time.Since(restored).Round(time.Millisecond))
	if !strings.Contains(s.log(), "store opened") {
		t.Errorf("no line saying the store opened:\n%s", s.log())
	}
	if code, r, body := s.readyz(); code != 200 || r.Status != "ready" {
		t.Fatalf("readyz with the store back: %d %s", code, body)
	}
}

// A MariaDB+PostgreSQL node started while PostgreSQL is cut serves segment
// IDs from MariaDB's residue, and snowflake IDs; /readyz stays 200 and
// names the store that is down, until it is back.
func TestE2E_MultiStore_OneDownAtStart(t *testing.T) {
	my := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	pg := testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")
	set := dbtest.PlacedSet(t, openSQL, my, pg) // databases of the test's own, placed as residues 0 and 1
	my, pg = set[0], set[1]
	tag := tagName("multi-down")
	createTagIn(t, my, tag, 1, 40)
	createTagIn(t, pg, tag, 1, 40)
	p := storetest.StartProxy(t, storetest.HostOf(t, pg, "5432"))
	p.Cut()
	pgCut := storetest.WithHost(t, pg, p.Addr()) + "&frond_timeout=1s"
	s := mustStart(t, t.TempDir(), "--store", my+" "+pgCut)

	// Before any segment was loaded: MariaDB answers, so segment IDs can be
	// served, and the segment page says so.
	if code, body := s.get("/readyz/segment"); code != 200 || !strings.Contains(body, "some stores are down") {
		t.Fatalf("/readyz/segment with one of two stores down: %d %s", code, body)
	}
	ids := s.batch("/v1/segment/" + tag + "?n=30")
	for _, id := range ids {
		if id%2 != 0 {
			t.Fatalf("ID %d is not MariaDB's residue (0 mod 2): %v", id, ids)
		}
	}
	if code, body := s.get("/api/snowflake/get/x"); code != 200 {
		t.Fatalf("snowflake: %d %s", code, body)
	}
	// Segment IDs are served: 200. (Whether the store check itself passes
	// when degraded is the readiness policy's call: segment.ErrDegraded.)
	code, r, body := s.readyz()
	if _, detail := r.store(); code != 200 || !strings.Contains(detail, "some stores are down") ||
		!strings.Contains(detail, "store 1 (postgres://") || !strings.Contains(detail, p.Addr()) || strings.Contains(detail, "store 0") {
		t.Fatalf("readyz with PostgreSQL down: %d %s", code, body)
	}
	if u, _ := url.Parse(pg); u.User != nil {
		if pw, ok := u.User.Password(); ok && strings.Contains(body, ":"+pw+"@") {
			t.Fatalf("readyz shows the password: %s", body)
		}
	}

	p.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, r, body := s.readyz()
		if ok, detail := r.store(); ok && detail == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz 10 s after PostgreSQL came back: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A store that answers and refuses (a wrong password) is a configuration
// error, not an outage: the node still refuses to start.
func TestE2E_StoreRefusedAtStart(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	s, err := startServer(t, t.TempDir(), "--store", u.String())
	if err == nil {
		t.Fatal("frond started with a wrong store password")
	}
	if !strings.Contains(s.log(), "Access denied") || s.err == nil {
		t.Fatalf("exit %v, log:\n%s", s.err, s.log())
	}
}

// Issue 44, item 4: frond health --ready printed "/readyz: ok" and exited 0
// while /readyz said degraded (a store down, segment IDs answering 503). It
// says degraded, names the failing check and exits 4; a kind that cannot be
// served is "not ready", exit 1.
func TestE2E_HealthReadyDegraded(t *testing.T) {
	t.Setenv("FROND_SEGMENT__FAIL_FAST", "100ms")
	s := mustStart(t, t.TempDir(), "--store", "redis://127.0.0.1:1/0?frond_timeout=300ms")
	for _, c := range []struct {
		argv []string
		code int
		want []string
	}{
		{[]string{"--ready"}, exitDegraded, []string{"/readyz: degraded", "store: ", "127.0.0.1:1"}},
		{[]string{"--ready=segment"}, exitError, []string{"/readyz/segment: not ready", "segment: "}},
		{[]string{"--ready=snowflake"}, exitOK, []string{"/readyz/snowflake: ok"}},
		{nil, exitOK, []string{"/healthz: ok"}},
	} {
		// --server as a bare host:port (issue 44, item 7: "unsupported
		// protocol scheme") and as a URL.
		server := s.url
		if c.argv == nil {
			server = strings.TrimPrefix(s.url, "http://")
		}
		code, out, errs := runCLI(t, nil, append([]string{"health", "--server", server}, c.argv...)...)
		if code != c.code {
			t.Errorf("health %v: exit %d, want %d\n%s%s", c.argv, code, c.code, out, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("health %v: no %q in\n%s", c.argv, w, out)
			}
		}
	}
}

// Issue 44, item 5: a node listing several stores never made a set started
// healthy, created tags, and then failed every segment request with a long
// store_unavailable error. It says so at start in one line with the
// command, /readyz says it, and tag creation is refused in the same words;
// once frond stores set has run, the same node serves.
func TestE2E_StoresNeverASet(t *testing.T) {
	dir := t.TempDir()
	stores := "sqlite://" + filepath.Join(dir, "a.db") + " sqlite://" + filepath.Join(dir, "b.db")
	s := mustStart(t, dir, "--store", stores)
	const words = "never made a set: run frond stores set once"
	if log := s.log(); !strings.Contains(log, "STORES NOT A SET") || !strings.Contains(log, words) {
		t.Fatalf("no clear line at start:\n%s", log)
	}
	_, r, body := s.readyz()
	if ok, detail := r.store(); ok || !strings.Contains(detail, words) {
		t.Fatalf("readyz: %s", body)
	}
	code, body := s.req("POST", "/v1/tags", `{"name":"order","step":100}`)
	if code == 201 || !strings.Contains(body, words) {
		t.Fatalf("tag creation through a node whose stores are not a set: %d %s", code, body)
	}
	if code, out, errs := runCLI(t, nil, "stores", "set", "--data-dir", dir, "--store", stores); code != exitOK {
		t.Fatalf("frond stores set: exit %d\n%s%s", code, out, errs)
	}
	if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":100}`); code != 201 {
		t.Fatalf("tag creation once the stores are a set: %d %s", code, body)
	}
	if id := s.id("/api/segment/get/order"); id <= 0 {
		t.Fatalf("segment ID %d", id)
	}
}
