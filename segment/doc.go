// Package segment hands out IDs from ranges ("segments") that a
// frond.SegmentStore allocates per business tag: Meituan Leaf's segment mode,
// with its double buffer and adaptive step, made safer.
//
// # How it works
//
// Each tag has a Buffer with two segments. IDs come from the current one by
// an atomic add: no lock and no store call on the hot path. Once Threshold
// (10%) of it is used, the next segment is loaded in the background; when
// the current one runs out, the next takes its place. A caller waits on the
// store only when both are empty, and then no longer than its context allows.
//
// The first two loads of a tag ask for the tag's configured step, as Leaf's
// do. Later loads adapt it (Leaf's rule): if the previous segment lasted less
// than 15 minutes the step doubles (up to 1,000,000), more than 30 minutes it
// halves, never below the tag's step. A segment of about 600 times the peak
// rate covers ten minutes of store outage (seed 003); the adaptive step
// reaches that on its own for rates up to MaxStep/900 per second.
//
// A failed background load is retried with exponential backoff while the
// buffer still holds IDs. When both buffers are empty, callers get an error
// wrapping frond.ErrStoreUnavailable; for FailFast (1 s) after a failure they
// get it at once instead of waiting on a store that is down.
//
// # Guarantees
//
//   - Unique: every ID comes from exactly one Allocate call, and each
//     position of a segment is handed out once (atomic add).
//   - Ordered: IDs of one tag from one Engine increase in the order the calls
//     take effect; segments are used in the order they were allocated. Across
//     engines (nodes) IDs are only trend-increasing: each node holds its own
//     segment. With Multi, a fail-over to a store whose max_id is behind may
//     step back once (see Multi).
//   - Nothing lost in the engine: a segment is switched out only when every
//     ID of it has been handed out. IDs still buffered when the process
//     stops are skipped (never reissued), as in Leaf.
//
// # Errors
//
// frond.ErrTagNotFound when the store does not know the tag (the buffer is
// dropped, so a tag created later is seen at once); frond.ErrStoreUnavailable
// (wrapping the cause, or ctx.Err()) when both buffers are empty and the
// store does not deliver; frond.ErrInvalidArgument for a bad tag name or
// count; frond.ErrTagExhausted when max_id would overflow.
package segment
