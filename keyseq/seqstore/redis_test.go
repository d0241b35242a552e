package seqstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/frond-id/frond/internal/testenv"
	"github.com/frond-id/frond/keyseq/seqstore"
)

// Issue 58, item 6: the keyed sequences' Redis store reads the server's
// persistence again at Ping (as the segment and CosId Redis stores do), so
// that a server that stops persisting after frond opened it is said.
func TestRedisSections_PingRechecksPersistence(t *testing.T) {
	u := testenv.Getenv(t, "FROND_TEST_REDIS_URL")
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	s, err := seqstore.OpenRedis(context.Background(), fmt.Sprintf("%s%sfrond_prefix=seqstoretest:%d:", u, sep, time.Now().UnixNano()))
	if err != nil && strings.Contains(err.Error(), "frond_allow_volatile") {
		// The test server keeps nothing on disk: refused unless allowed,
		// and the re-check is what this test is about.
		s, err = seqstore.OpenRedis(context.Background(), fmt.Sprintf("%s%sfrond_allow_volatile=true&frond_prefix=seqstoretest:%d:", u, sep, time.Now().UnixNano()))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	why := ""
	s.SetPersistenceCheck(0, func(context.Context, *goredis.Client) (string, error) { return why, nil })
	if err := s.Ping(context.Background()); err != nil || len(s.Warnings()) != 0 {
		t.Fatalf("persisting now: %v, %v", s.Warnings(), err)
	}
	why = "does not persist (appendonly no)"
	if err := s.Ping(context.Background()); err != nil || len(s.Warnings()) != 1 || !strings.Contains(s.Warnings()[0], "appendonly no") || !strings.Contains(s.Warnings()[0], "changed since") {
		t.Fatalf("stopped persisting: %v, %v", s.Warnings(), err)
	}
}
