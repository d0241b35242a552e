package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
)

// Opener of a store by URL (ClearResidueMarks).
type URLOpener func(ctx context.Context, url string) (frond.SegmentStore, error)

// ClearResidueMarks removes the residue marks of the stores at urls
// (segment.Multi marks each store with its place) now and when t ends.
// Tests share their databases: the marks a multi-store test leaves would
// make the next test that uses one of them alone refuse it, as a node
// must.
func ClearResidueMarks(t testing.TB, open URLOpener, urls ...string) {
	t.Helper()
	if err := UnmarkResidues(open, urls...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := UnmarkResidues(open, urls...); err != nil {
			t.Error(err)
		}
	})
}

// UnmarkResidues removes the residue marks of the stores at urls (a test
// binary's start: a run cut short may have left them).
func UnmarkResidues(open URLOpener, urls ...string) error {
	var errs []error
	for _, u := range urls {
		if u == "" {
			continue
		}
		s, err := open(context.Background(), u)
		if err != nil {
			errs = append(errs, fmt.Errorf("clear the residue mark of %s: %w", u, err))
			continue
		}
		if _, err := segment.ClearResidueMark(context.Background(), s); err != nil {
			errs = append(errs, fmt.Errorf("clear the residue mark of %s: %w", u, err))
		}
		s.Close()
	}
	return errors.Join(errs...)
}
