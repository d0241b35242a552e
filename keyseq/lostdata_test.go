package keyseq_test

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq"
	"github.com/frond-id/frond/storetest/dbtest"
)

// Issue 58, item 2: a store that lost acknowledged writes (here: a store
// that comes back empty, as a Redis restarted without its data) is
// refused, not served again from below: a node keeps the highest maximum
// it raised each section to in its data directory (FileFloors) and
// compares every take and raise with it, through a restart. The space is
// served again once re-armed above every value answered. On the code
// before, the keys' values restarted at 1 after 5 had been answered.
func TestSpaces_StoreLostData(t *testing.T) {
	stores := map[string]func(t *testing.T) keyseq.SpaceStore{
		"memory": func(t *testing.T) keyseq.SpaceStore { return &keyseq.MemLeases{} },
		"sqlite": func(t *testing.T) keyseq.SpaceStore {
			return openSQL(t, "sqlite://"+filepath.Join(t.TempDir(), fmt.Sprintf("seq%d.db", time.Now().UnixNano())))
		},
		"mysql": func(t *testing.T) keyseq.SpaceStore {
			return openSQL(t, dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_MYSQL_URL")))
		},
		"postgres": func(t *testing.T) keyseq.SpaceStore {
			return openSQL(t, dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_POSTGRES_URL")))
		},
		"redis": func(t *testing.T) keyseq.SpaceStore { return openRedis(t) }, // a prefix of its own each time: an empty store
		"etcd":  func(t *testing.T) keyseq.SpaceStore { return openEtcd(t) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := testenv.Ctx(t)
			dir := t.TempDir() // the node's data directory, kept through its restart
			sp := keyseq.Space{Name: "lost", Step: 10, Sections: 4, Slots: 16}
			quiet := slog.New(slog.DiscardHandler)
			node := func(st keyseq.SpaceStore, token string) (*keyseq.Spaces, *keyseq.FileFloors) {
				f := keyseq.NewFileFloors(dir)
				return keyseq.NewSpaces(st, keyseq.Owner{Token: token, Addr: "127.0.0.1:1"}, keyseq.NodeOptions{Logger: quiet, Floors: f}, nil), f
			}
			st := open(t)
			if err := st.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
			a, fa := node(st, "before")
			last := map[string]int64{}
			for round := range 5 {
				for k := range 8 {
					key := fmt.Sprint("k", k)
					v, _, err := a.Next(ctx, sp.Name, key, 1, false)
					if err != nil {
						t.Fatal(err)
					}
					if v <= last[key] {
						t.Fatalf("round %d: %s got %d after %d", round, key, v, last[key])
					}
					last[key] = v
				}
			}
			keyseq.KillSpaces(a) // kill -9: leases left to run out
			fa.Close()

			// The store comes back empty; the space is created again (by an
			// operator, or by a node that had it cached).
			st2 := open(t)
			if err := st2.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
			b, fb := node(st2, "after")
			defer func() { b.Close(ctx); fb.Close() }()
			for k := range 8 {
				key := fmt.Sprint("k", k)
				v, _, err := b.Next(ctx, sp.Name, key, 1, false)
				if err == nil {
					t.Fatalf("%s answered %d from a store that lost data, after %d had been answered", key, v, last[key])
				}
				if !errors.Is(err, keyseq.ErrStoreLostData) || !strings.Contains(err.Error(), "frond space rearm lost") {
					t.Fatalf("%s: %v, want ErrStoreLostData saying what to do", key, err)
				}
			}
			list, err := b.List(ctx)
			if err != nil || len(list) != 1 || list[0].Lost != sp.Sections || list[0].Floor < 2 {
				t.Fatalf("the node's view of the space: %+v, %v", list, err)
			}
			// Its rounds do not carry the refused sections up by taking them
			// again (each take raises): they wait for the re-arm.
			for range 3 {
				if err := keyseq.RoundSpace(ctx, b, sp.Name); err != nil {
					t.Fatal(err)
				}
			}
			if list, _ := b.List(ctx); list[0].Lost != sp.Sections {
				t.Fatalf("after rounds: %+v", list[0])
			}
			// Re-armed above the highest floor: served again, above every
			// value answered before.
			// (Its floors, gathered by the re-arm itself: no value given.)
			res, err := b.Rearm(ctx, sp.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Above < list[0].Floor || !res.Lifted || frond.LostFindingSpace(res.Fence) != sp.Name {
				t.Fatalf("re-armed: %+v, want above %d and the space's fence lifted", res, list[0].Floor)
			}
			for k := range 8 {
				key := fmt.Sprint("k", k)
				var v int64
				deadline := time.Now().Add(10 * time.Second)
				for {
					if v, _, err = b.Next(ctx, sp.Name, key, 1, false); err == nil || time.Now().After(deadline) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				if err != nil {
					t.Fatalf("%s after the re-arm: %v", key, err)
				}
				if v <= last[key] {
					t.Fatalf("%s after the re-arm: %d, not above %d", key, v, last[key])
				}
			}
		})
	}
}
