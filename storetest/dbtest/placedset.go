package dbtest

import (
	"context"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
)

// URLOpener opens a store by URL (PlacedSet).
type URLOpener func(ctx context.Context, url string) (frond.SegmentStore, error)

// PlacedSet gives t a set of stores of its own: a fresh database on the
// server of each SQL URL of urls (FreshDatabase), placed as one set in
// that order (segment.ChangeSet, as frond stores set does), and returns
// their URLs. A set's places are the whole database's, so a test that
// placed the shared test databases would make every other test using them
// refuse to allocate, as a node must.
func PlacedSet(t testing.TB, open URLOpener, urls ...string) []string {
	t.Helper()
	out := make([]string, len(urls))
	stores := make([]frond.SegmentStore, len(urls))
	for i, u := range urls {
		out[i] = FreshDatabase(t, u)
		s, err := open(context.Background(), out[i])
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	if _, err := segment.ChangeSet(context.Background(), stores, nil, segment.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}
