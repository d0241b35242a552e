package memstore_test

import (
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/store/memstore"
	"github.com/frond-id/frond/storetest"
)

// client shares one Store between the suite's clients; closing a client
// does not close the store.
type client struct{ *memstore.Store }

func (client) Close() error { return nil }

func TestConformance(t *testing.T) {
	shared := memstore.New(nil)
	storetest.RunSegmentStore(t, func(t *testing.T) frond.SegmentStore { return client{shared} })
}

func TestPlacedStore(t *testing.T) {
	storetest.RunPlacedStore(t, func(t *testing.T) storetest.Opener {
		s := memstore.New(nil)
		return func(t *testing.T) frond.SegmentStore { return client{s} }
	})
}
