// Package apitest builds what the front ends' tests serve: a service over
// a store the test controls (storetest.Faulty), holding worker ID 3 from a
// file registry in the test's temporary directory.
package apitest

import (
	"context"
	"testing"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/registry/file"
	"github.com/frond-id/frond/service"
)

// Service starts a service on st with cfg (reservations an hour ahead
// unless cfg says otherwise) and creates tags through it; it is closed
// with the test.
func Service(t testing.TB, st frond.SegmentStore, cfg service.Config, tags ...frond.Tag) *service.Service {
	t.Helper()
	reg, err := file.Open(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Snowflake.PersistEvery == 0 {
		cfg.Snowflake.PersistEvery = time.Hour
	}
	svc, err := service.New(context.Background(), cfg, st, reg, nil)
	if err != nil {
		reg.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	for _, tag := range tags {
		if _, err := svc.CreateTag(context.Background(), tag); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}
