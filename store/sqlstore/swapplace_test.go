package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/sqldb"
	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest/dbtest"
)

// Issue 42, item 4: on PostgreSQL a change of the place is not starved by
// a stream of allocations. An allocation begun while SwapPlace waits for
// one in flight queues behind the swap (and is then refused at the old
// place), where before it joined the row's shared lockers ahead of the
// swap's UPDATE, which then waited for as long as allocations overlapped.
func TestPostgres_SwapPlaceQueuesLaterAllocations(t *testing.T) {
	raw := dbtest.FreshDatabase(t, testenv.Getenv(t, "FROND_TEST_POSTGRES_URL"))
	ctx := testenv.Ctx(t)
	s, other := opener(raw)(t).(*sqlstore.Store), opener(raw)(t).(*sqlstore.Store)
	defer s.Close()
	defer other.Close()
	if _, err := s.CreateTag(ctx, frond.Tag{Name: "t", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	at := frond.Place{Residue: 1, Of: 2, Gen: 1, Change: "abcdefgh"}
	if err := s.SwapPlace(ctx, frond.Place{}, at); err != nil {
		t.Fatal(err)
	}
	p, err := sqldb.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqldb.Open(p, sqldb.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// waiting is how many lock requests of this database's sessions wait.
	waiting := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND a.datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// An allocation in flight: the place row held with a shared lock.
	held, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.ExecContext(ctx, "SELECT value FROM frond_mark WHERE name = 'place' FOR SHARE"); err != nil {
		t.Fatal(err)
	}
	fence := at
	fence.Next, fence.Move = 2, frond.Move{Change: "bcdefghi", Run: "cdefghij", Set: "aaaaaaaa,bbbbbbbb"}
	swapped := make(chan error, 1)
	go func() { swapped <- s.SwapPlace(ctx, at, fence) }()
	testenv.WaitFor(t, "the swap waiting for the allocation in flight", func() bool { return waiting() >= 1 })
	allocated := make(chan error, 1)
	go func() {
		_, err := other.AllocateAt(ctx, at, "t", 0)
		allocated <- err
	}()
	for waiting() < 2 {
		select {
		case err := <-allocated:
			t.Fatalf("an allocation begun after the swap was answered ahead of it (%v)", err)
		case <-time.After(time.Millisecond):
		}
	}
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	if err := <-allocated; !errors.Is(err, frond.ErrWrongPlace) {
		t.Fatalf("the allocation queued behind the swap: %v, want ErrWrongPlace", err)
	}
}
