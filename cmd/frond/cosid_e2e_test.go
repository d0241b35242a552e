package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frond-id/frond/internal/cosidplay"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/internal/testenv"
)

// CosId side by side (issue 48): two frond nodes serve CosId's segment
// table on MariaDB while two CosId applications use it through their JDBC
// distributor and a third through frond's proxy routes; one frond node is
// killed and started again, CosId's applications restart. No ID is handed
// out twice.
func TestE2E_CosIdSideBySide(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	store := "cosid+" + raw
	p, err := sqldb.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{Timeout: 10 * time.Second, MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t.Setenv("FROND_SEGMENT__FIXED_STEP", "true")
	a := mustStart(t, t.TempDir(), "--store", store, "--node", "1")
	b := mustStart(t, t.TempDir(), "--store", store, "--node", "2")
	ns, name := "e2e", fmt.Sprintf("order-%d", rand.Int64N(1<<40))
	tag := ns + "." + name // CosId's segment name, frond's tag
	jdbc := func() cosidplay.Distributor {
		return cosidplay.JDBC{DB: db.DB, Name: tag, Rebind: db.Kind.Rebind, MySQL: true}
	}
	apps := []*cosidplay.App{
		{D: jdbc(), Step: 10},
		{D: jdbc(), Step: 3},
		{D: cosidplay.Proxy{Base: b.url, Namespace: ns, Name: name, Step: 20}, Step: 20},
		// As docs/cosid.md writes cosid.proxy.host, a token in the base
		// URL with no trailing slash: Spring joins the relative paths to it
		// as "/cosid/TOKENsegments/..." (issue 60).
		{D: cosidplay.Proxy{Base: b.url + "/cosid/e2etoken", Namespace: ns, Name: name, Step: 20}, Step: 20},
	}
	c := testenv.Ctx(t)
	for _, app := range apps {
		if err := app.Start(c); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var dups []string
	record := func(who string, id int64) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := seen[id]; ok || id <= 0 {
			dups = append(dups, fmt.Sprintf("%d from %s and %s", id, prev, who))
		}
		seen[id] = who
	}
	var wg sync.WaitGroup
	for i, app := range apps {
		wg.Go(func() {
			for k := range 600 {
				if k == 300 {
					if err := app.Start(c); err != nil { // a restart: its segment is dropped
						t.Error(err)
						return
					}
				}
				id, err := app.Next(c)
				if err != nil {
					t.Errorf("CosId application %d: %v", i, err)
					return
				}
				record(fmt.Sprintf("CosId application %d", i), id)
			}
		})
	}
	frondIDs := func(s *server, who string, rounds int) {
		for range rounds {
			code, body := s.get("/v1/segment/" + tag + "?n=5")
			if code != 200 {
				t.Errorf("%s: %d %s", who, code, body)
				return
			}
			var out struct{ IDs []int64 }
			if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.IDs) != 5 {
				t.Errorf("%s: %s", who, body)
				return
			}
			for _, id := range out.IDs {
				record(who, id)
			}
		}
	}
	wg.Go(func() { frondIDs(b, "frond b", 120) })
	frondIDs(a, "frond a", 60)
	if err := a.stop(syscall.SIGKILL); err == nil {
		t.Fatal("frond a was killed but exited cleanly")
	}
	a = mustStart(t, t.TempDir(), "--store", store, "--node", "1")
	frondIDs(a, "frond a, restarted", 60)
	wg.Wait()
	if len(dups) > 0 {
		t.Fatalf("%d IDs handed out twice: %s", len(dups), strings.Join(dups[:min(5, len(dups))], "; "))
	}
	if want := len(apps)*600 + 240*5; len(seen) != want {
		t.Fatalf("%d IDs, want %d", len(seen), want)
	}
	var last int64
	err = db.QueryRowContext(context.Background(), "SELECT last_max_id FROM cosid WHERE name = ?", tag).Scan(&last)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	for id := range seen {
		if id > last {
			t.Fatalf("ID %d above CosId's last_max_id %d", id, last)
		}
	}
}

// A frond node takes its worker ID from CosId's machine table in CosId's
// layout, and serves CosId proxy's machine routes on the same table: a
// CosId application distributed through it gets another machine ID.
func TestE2E_CosIdMachines(t *testing.T) {
	raw := testenv.Getenv(t, "FROND_TEST_MYSQL_URL")
	ns := fmt.Sprintf("e2e_%d", rand.Int64N(1<<40))
	t.Setenv("FROND_WORKER__RECYCLE_AFTER", "4m")
	s := mustStart(t, t.TempDir(), "--layout", "cosid", "--registry", "cosid+"+raw+"?frond_namespace="+ns)
	var decoded struct{ Node int64 }
	id := s.batch("/v1/snowflake?n=1")[0]
	code, body := s.get("/v1/decode/" + strconv.FormatInt(id, 10))
	if code != 200 || json.Unmarshal([]byte(body), &decoded) != nil || !strings.Contains(body, `"layout":"cosid"`) {
		t.Fatalf("decode: %d %s", code, body)
	}
	code, body = s.req("POST", "/machines/"+ns+"?machineBit=10&instanceId=10.1.1.1:8080&stable=false&safeGuardDuration=PT5M", "")
	var state struct{ MachineID, LastTimeStamp int64 }
	if code != 200 || json.Unmarshal([]byte(body), &state) != nil {
		t.Fatalf("distribute: %d %s", code, body)
	}
	if state.MachineID == decoded.Node {
		t.Fatalf("the CosId application got machine ID %d, the frond node's", state.MachineID)
	}
	if code, body := s.req("PATCH", "/machines/"+ns+"?instanceId=10.1.1.1:8080&stable=false&safeGuardDuration=PT5M", ""); code != 200 {
		t.Fatalf("guard: %d %s", code, body)
	}
	if code, body := s.req("DELETE", "/machines/"+ns+"?instanceId=10.1.1.1:8080&stable=false", ""); code != 200 {
		t.Fatalf("revert: %d %s", code, body)
	}
	if code, body := s.req("PATCH", "/machines/"+ns+"?instanceId=10.1.1.1:8080&stable=false&safeGuardDuration=PT5M", ""); code != 400 || !strings.Contains(body, `"M-03"`) {
		t.Fatalf("guard after revert: %d %s, want 400 M-03", code, body)
	}
}
