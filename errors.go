package frond

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by the engines, the stores and the front ends. Match
// them with errors.Is; every layer wraps them with the operation and the tag.
var (
	// ErrTagNotFound means the tag does not exist in the store.
	ErrTagNotFound = errors.New("tag not found")

	// ErrTagExists means a tag of that name already exists.
	ErrTagExists = errors.New("tag already exists")

	// ErrStoreUnavailable means the store could not be reached or did not
	// answer in time, and no buffered IDs were left to serve the request.
	// The operation may be retried.
	ErrStoreUnavailable = errors.New("store unavailable")

	// ErrStoreLostData means a segment store lost acknowledged writes: it
	// answered an allocation below a range it gave a node before (a
	// fail-over to a replica behind, a restored backup, a Redis restarted
	// empty or from an older file), or a node that found so fenced it
	// (Place.Lost). Nothing is handed out from it until an operator
	// re-arms it above every ID handed out (frond stores rearm). It wraps
	// ErrStoreUnavailable: the other stores of a set carry on.
	ErrStoreLostData = fmt.Errorf("%w: the store lost acknowledged writes", ErrStoreUnavailable)

	// ErrInvalidArgument means the caller passed a value out of range: a bad
	// tag name, a step below 1, a count below 1, a negative max_id.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrWouldReissue means a change was refused because it would let IDs
	// be issued twice, for example lowering a tag's max_id.
	ErrWouldReissue = errors.New("change would reissue IDs")

	// ErrTagExhausted means the tag's max_id cannot be raised by the step
	// without overflowing 63 bits.
	ErrTagExhausted = errors.New("tag ID space exhausted")

	// ErrNoWorkerID means a worker registry has no free worker ID, or the
	// configured one is out of range or held by another process.
	ErrNoWorkerID = errors.New("no worker ID available")

	// ErrWorkerLost means this node does not hold a snowflake worker ID at
	// the moment: its lease or session expired, another node took the ID, or
	// no ID has been acquired yet. Snowflake IDs stop until one is held again.
	ErrWorkerLost = errors.New("worker ID not held")

	// ErrClosed means the engine or store was closed.
	ErrClosed = errors.New("closed")

	// ErrForbidden means the caller's tag token does not allow the tag
	// (servers configured with tokens).
	ErrForbidden = errors.New("token does not allow this tag")

	// ErrNotLeasable means the tag is a sequence tag (ModeSequence): every
	// ID is taken from the store when it is asked for, so no range of it
	// can be leased to a client to hand out later.
	ErrNotLeasable = errors.New("IDs cannot be leased")

	// ErrFormNotCarried means the tag answers in a form (its configured
	// default: an operator's decision to hide or shorten its IDs) that the
	// API asked cannot carry: ranges and leases are plain numbers, and
	// Leaf's, TinyID's and RESP INCR's answers are numbers. Such a request
	// is refused rather than answered plain numbers the form was to hide.
	ErrFormNotCarried = errors.New("form not carried by this API")

	// ErrNotSequence means a sequence tag's store call was made for a tag
	// that is not a sequence tag: a node's knowledge of the tag's mode was
	// out of date (the tag was deleted and created again).
	ErrNotSequence = errors.New("not a sequence tag")

	// ErrOverloaded means the node holds as many answers built and not
	// yet written to their clients as its answer budget allows
	// (limits.answer_budget): the request is refused before any ID is
	// taken, and a retry (or another node) may succeed.
	ErrOverloaded = errors.New("overloaded")
)
