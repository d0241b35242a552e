// Package snowflake issues 63-bit, time-ordered IDs without coordination:
// each node owns a worker ID and packs time, node and a sequence into one
// integer.
//
// # Layout
//
//	| 0 | time (TimeBits) | node (NodeBits) | sequence (SeqBits) |
//
// A Layout fixes the tick length (Unit), the three widths and the Epoch.
// Presets: twitter (Leaf's: 1+41+10+12, ms, epoch 1288834974657, until 2080),
// sonyflake (39 bits of 10 ms, 16 node, 8 sequence), uid-generator (Baidu's
// 28 bits of seconds, 22 node, 13 sequence, from 2025-01-01 until 2033) and
// javascript (38 bits of 10 ms, 6 node, 9 sequence: every ID below 2^53)
// and cosid (CosId's: 1+41+10+12, ms, from 2019-12-24T16:00Z).
// Layout.Validate checks a custom layout; Layout.Expires tells when its time
// field runs out.
//
// # Guarantees
//
// IDs of one Generator strictly increase. IDs of two generators of the same
// layout and epoch never collide if their node IDs differ. A restart is safe
// if the new generator is given the last time the old one issued
// (Settings.NotBefore; the worker registries persist it).
//
// # Clock policy
//
// The hot path is an atomic add on the packed time|sequence word within a
// tick and a compare-and-swap to a new tick; no mutex, and within a tick no
// retry however many cores call at once. The clock is read on every call
// (SystemClock: the monotonic clock plus a wall-clock anchor renewed every
// 10 ms, half the cost of time.Now).
//
//   - The clock behind the latest reading by at most MaxBackward (default
//     5 ms, as Leaf): the step is absorbed. The generator keeps issuing from
//     the last tick's remaining sequence and sleeps only if that runs out,
//     until the clock has caught up.
//   - Further behind: Next returns a *ClockError carrying the offset; it
//     matches ErrClockBackwards. Nothing is issued until the clock catches up.
//   - Sequence exhausted within a tick: with MaxLead > 0 the generator
//     borrows the next tick, at most MaxLead ahead of the clock; otherwise,
//     or at that limit, it waits for the clock.
//   - No wait is unbounded: a call that has waited MaxBackward + MaxLead +
//     two ticks without the clock advancing returns a *ClockError with
//     Stalled set. (Leaf's tilNextMillis spins forever when the clock steps
//     back while it waits.)
//
// # Caveats
//
// IDs are ordered by time only roughly across nodes: each node's clock
// decides its IDs' time field. Borrowing moves IDs' time field up to MaxLead
// into the future. The uid-generator preset lasts only 8.5 years.
package snowflake
