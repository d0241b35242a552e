package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest/dbtest"
)

// taken are the IDs real nodes answered in a lost-data test, with who
// answered each: an ID answered twice fails the test.
type taken map[int64]string

// take asks s for count IDs of tag, 1,000 at a time, until one request
// fails; it returns that request's body ("" when all were answered).
func (tk taken) take(t *testing.T, s *server, tag string, count int, who string) string {
	t.Helper()
	for done := 0; done < count; done += 1000 {
		code, body := s.get(fmt.Sprintf("/v1/segment/%s?n=%d", tag, min(1000, count-done)))
		if code != 200 {
			return body
		}
		var out struct{ IDs []int64 }
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		for _, id := range out.IDs {
			if prev, ok := tk[id]; ok {
				t.Fatalf("ID %d answered twice: %s, then %s", id, prev, who)
			}
			tk[id] = who
		}
	}
	return ""
}

// takeAfterRearm is take on a node that refused the store until a moment
// ago: its last failed load is answered for a moment (segment.Settings
// FailFast) and its retries back off, so it serves again within seconds.
func (tk taken) takeAfterRearm(t *testing.T, s *server, tag string, count int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		body := tk.take(t, s, tag, count, "after the re-arm")
		if body == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after the re-arm: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantLost checks that a request failed with store_lost_data.
func wantLost(t *testing.T, what, body string) {
	t.Helper()
	if !strings.Contains(body, `"store_lost_data"`) {
		t.Fatalf("%s: %q, want store_lost_data", what, body)
	}
}

// rearm runs frond stores floors on each data directory and frond stores
// rearm with them, as docs/operations.md says.
func rearm(t *testing.T, store string, dirs ...string) string {
	t.Helper()
	args := []string{"stores", "rearm", "--store", store}
	for i, d := range dirs {
		out, err := exec.Command(binary, "stores", "floors", "--data-dir", d).Output()
		if err != nil {
			t.Fatalf("frond stores floors: %v", err)
		}
		f := filepath.Join(t.TempDir(), fmt.Sprintf("node%d.json", i))
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--floors", f)
	}
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("frond stores rearm: %v\n%s", err, out)
	}
	return string(out)
}

// The table of issue 67 with real frond serve processes on MariaDB: 3,000
// IDs, a mysqldump, 60,000 more, the dump restored (with the node killed
// and restarted on its data directory, or under the running node), then
// 30,000 more asked: main answered 30,000 and 29,000 of them twice. Now
// none: the node refuses with store_lost_data, a node with a new data
// directory is refused too, and after frond stores floors and frond stores
// rearm both serve again above every ID answered.
func TestE2E_StoreGoesBack_MariaDB(t *testing.T) {
	base := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	dump := testenv.Tool(t, "apt-get install mariadb-client", "mariadb-dump", "mysqldump")
	client := testenv.Tool(t, "apt-get install mariadb-client", "mariadb", "mysql")
	for _, running := range []bool{false, true} {
		t.Run(map[bool]string{false: "restored while the node was down", true: "restored under the running node"}[running], func(t *testing.T) {
			store := dbtest.FreshDatabase(t, base)
			u, _ := url.Parse(store)
			pw, _ := u.User.Password()
			db := strings.TrimPrefix(u.Path, "/")
			mysqlArgs := []string{"-h", u.Hostname(), "-P", u.Port(), "-u", u.User.Username(), "-p" + pw}
			dir, tk := t.TempDir(), taken{}
			s := mustStart(t, dir, "--store", store)
			if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":1000}`); code != 201 && code != 200 {
				t.Fatalf("create: %d %s", code, body)
			}
			if body := tk.take(t, s, "order", 3000, "before the dump"); body != "" {
				t.Fatal(body)
			}
			backup, err := exec.Command(dump, append(mysqlArgs, "--single-transaction", db)...).Output()
			if err != nil {
				t.Fatalf("%s: %v", dump, err)
			}
			if body := tk.take(t, s, "order", 60000, "after the dump"); body != "" {
				t.Fatal(body)
			}
			if !running {
				s.stop(syscall.SIGKILL)
			}
			restore := exec.Command(client, append(mysqlArgs, db)...)
			restore.Stdin = strings.NewReader(string(backup))
			if out, err := restore.CombinedOutput(); err != nil {
				t.Fatalf("restore: %v\n%s", err, out)
			}
			if !running {
				s = mustStart(t, dir, "--store", store)
			}
			// The IDs the node holds are its own (up to two segments of its
			// adaptive step): it serves them, then refuses the next load.
			body := tk.take(t, s, "order", 300000, "after the restore")
			wantLost(t, "after the restore", body)
			if code, r, _ := s.readyz(); code == 200 && r.Status == "ready" {
				t.Fatalf("readyz after the finding: %d %+v", code, r)
			}
			if _, detail := s.readyz2(); !strings.Contains(detail, "lost") {
				t.Fatalf("the store check says: %q", detail)
			}
			other := mustStart(t, t.TempDir(), "--store", store)
			wantLost(t, "a node with a new data directory", tk.take(t, other, "order", 1000, "a new node"))
			// The tag is raised to the node's floor, unless the refused
			// allocation (its adaptive step) took it past it already.
			out := rearm(t, store, dir)
			if !strings.Contains(out, "its fence (") || !strings.Contains(out, "1 tags raised") && !strings.Contains(out, "1 already above") {
				t.Fatalf("rearm: %s", out)
			}
			for _, n := range []*server{s, other} {
				tk.takeAfterRearm(t, n, "order", 5000)
			}
		})
	}
}

// readyz2 is the store check of /readyz: ok, and its detail.
func (s *server) readyz2() (bool, string) {
	_, r, _ := s.readyz()
	return r.store()
}

// copyDir copies the files of dir (the AOF's) into a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

// The Redis rows of issue 67's table, with a real frond serve on a
// redis-server of the test's own (AOF, appendfsync always): restarted with
// an empty directory and the tag created again as the error advises (main
// answered 10,000 of 10,000 twice), and restarted from the AOF copied at
// the snapshot (30,000 of 30,000). Now none, and a re-arm serves again.
func TestE2E_StoreGoesBack_Redis(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(map[bool]string{true: "restarted empty, the tag created again", false: "restarted from an older AOF"}[empty], func(t *testing.T) {
			r := testenv.StartRedis(t)
			dir, tk := t.TempDir(), taken{}
			s := mustStart(t, dir, "--store", r.URL())
			if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":1000}`); code != 201 && code != 200 {
				t.Fatalf("create: %d %s", code, body)
			}
			if body := tk.take(t, s, "order", 3000, "before the snapshot"); body != "" {
				t.Fatal(body)
			}
			snapshot := copyDir(t, r.Dir)
			if body := tk.take(t, s, "order", 60000, "after the snapshot"); body != "" {
				t.Fatal(body)
			}
			r.Stop()
			os.RemoveAll(r.Dir)
			if empty {
				os.MkdirAll(r.Dir, 0o755)
			} else if out, err := exec.Command("cp", "-a", snapshot, r.Dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			r.Start()
			if empty {
				// The tag is gone: the node answers tag_not_found ("create
				// the tag first"), and the operator does.
				if body := tk.take(t, s, "order", 300000, "the emptied store"); !strings.Contains(body, "tag_not_found") {
					t.Fatalf("on the emptied store: %q", body)
				}
				if code, body := s.req("POST", "/v1/tags", `{"name":"order","step":1000}`); code != 201 && code != 200 {
					t.Fatalf("create again: %d %s", code, body)
				}
			}
			wantLost(t, "after the store went back", tk.take(t, s, "order", 300000, "after the store went back"))
			other := mustStart(t, t.TempDir(), "--store", r.URL())
			wantLost(t, "a node with a new data directory", tk.take(t, other, "order", 1000, "a new node"))
			if out := rearm(t, r.URL(), dir); !strings.Contains(out, "its fence (") || !strings.Contains(out, "1 tags raised") && !strings.Contains(out, "1 already above") {
				t.Fatalf("rearm: %s", out)
			}
			for _, n := range []*server{s, other} {
				tk.takeAfterRearm(t, n, "order", 5000)
			}
		})
	}
}

// The tail path of issue 67 with real frond serve processes on MariaDB: a
// node holds a plain segment of tag m; another node changes m to Mist
// (max_id goes down to the headroom) and the Mist counter climbs to the
// end of the plain segment held (a node of another step: the test takes
// the counters from the store itself); the first node stops cleanly. Main
// gave the plain tail back, setting max_id below the Mist counters handed
// out (999 counters twice); now max_id stays.
func TestE2E_TailNotAcrossMappingChange(t *testing.T) {
	store := dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_MYSQL_URL"))
	a := mustStart(t, t.TempDir(), "--store", store)
	const start, end = 1 << 20, 1<<20 + 1000
	if code, body := a.req("POST", "/v1/tags", fmt.Sprintf(`{"name":"m","step":1000,"max_id":%d}`, start)); code != 201 && code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	if id := a.batch("/v1/segment/m?n=1"); len(id) != 1 || id[0] != start {
		t.Fatalf("first ID: %v", id)
	}
	b := mustStart(t, t.TempDir(), "--store", store)
	if code, body := b.req("PATCH", "/v1/tags/m", `{"mapping":"mist"}`); code != 200 {
		t.Fatalf("change to Mist: %d %s", code, body)
	}
	s, err := sqlstore.Open(context.Background(), store, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tg, err := s.Tag(context.Background(), "m")
	if err != nil || tg.MaxID >= end || tg.Mapping != "mist" {
		t.Fatalf("after the change: %+v, %v", tg, err)
	}
	if al, err := s.Allocate(context.Background(), "m", end-tg.MaxID); err != nil || al.End != end {
		t.Fatalf("Mist counters up to %d: %+v, %v", end, al, err)
	}
	if err := a.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	if tg, err := s.Tag(context.Background(), "m"); err != nil || tg.MaxID != end {
		t.Fatalf("max_id after the clean stop: %d, %v; want %d (the Mist counters from it would be handed out again)", tg.MaxID, err, end)
	}
}
