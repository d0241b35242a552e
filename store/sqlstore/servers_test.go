package sqlstore_test

import (
	"context"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/sqlstore"
	"github.com/frond-id/frond/storetest"
)

// Real-server tests: FROND_TEST_MYSQL_URL (MySQL or MariaDB) and
// FROND_TEST_POSTGRES_URL. They skip when unset, and fail instead when
// FROND_TEST_REQUIRE=1 (CI).

func opener(url string) storetest.Opener {
	return func(t *testing.T) frond.SegmentStore {
		s, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func TestMySQL_Conformance(t *testing.T) {
	storetest.RunSegmentStore(t, opener(storetest.SkipUnlessSet(t, "FROND_TEST_MYSQL_URL")))
}

func TestPostgres_Conformance(t *testing.T) {
	storetest.RunSegmentStore(t, opener(storetest.SkipUnlessSet(t, "FROND_TEST_POSTGRES_URL")))
}
