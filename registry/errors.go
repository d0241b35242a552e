package registry

import (
	"fmt"
	"time"

	"github.com/frond-id/frond"
)

// RecycleLater is Acquire's error when every worker ID is held or was used
// too recently to recycle, the first freeing at frees. all names the IDs
// ("all 1024 worker IDs (0..1023) of …"). It wraps frond.ErrNoWorkerID and,
// because waiting fixes it, frond.ErrWorkerLost: the service keeps retrying
// instead of refusing to start (a rolling restart on a small layout), and
// the local record (package cache) does not stand in for the registry,
// which has answered.
func RecycleLater(all string, frees time.Time, after time.Duration) error {
	return &recycleLater{fmt.Sprintf("worker registry: %v: %s are held or were used too recently to recycle (the first frees at %s, recycle_after %v)",
		frond.ErrNoWorkerID, all, frees.UTC().Format(time.RFC3339), after)}
}

type recycleLater struct{ msg string }

func (e *recycleLater) Error() string { return e.msg }

func (e *recycleLater) Unwrap() []error {
	return []error{frond.ErrNoWorkerID, frond.ErrWorkerLost}
}

// HeldElsewhere is Acquire's error when the ID this node's identity holds
// in the registry is still held under another token (an earlier run of
// this node that did not release it, or a second process with the same
// identity): what says which ID and until when. It wraps
// frond.ErrWorkerLost, not frond.ErrStoreUnavailable: the registry has
// answered, so the local record must not stand in for it; the service
// retries until the other holder's lease ends.
func HeldElsewhere(what string) error {
	return fmt.Errorf("worker registry: %w: %s is still held by another process (an earlier run of this node that did not release it, or a second process with the same host:port)",
		frond.ErrWorkerLost, what)
}
