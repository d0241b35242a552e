// Package worker holds a worker ID from a frond.WorkerRegistry and issues
// snowflake IDs with it, never past the time the registry has recorded. It
// is the second half of the argument that no snowflake ID is issued twice;
// the first half, how a node comes to hold an ID and what time it starts
// from, is package registry's (registry/protocol.go). Together the two
// packages hold the whole argument and can be reviewed without the rest of
// frond.
//
// # Reservations
//
// An Issuer issues IDs of one worker ID, from one snowflake.Generator, and
// only up to a time the registry has recorded (a reservation):
//
//  1. The generator starts past the worker ID's last recorded time
//     (frond.Worker.LastIssued) and past every time an earlier generator of
//     this process used (a lost and re-acquired ID), and is created
//     Reserved: it issues nothing until a reservation is recorded.
//  2. Every PersistEvery the supervisor records now + 2 x PersistEvery +
//     MaxLead (Settings.PersistEvery) with Save, and only once Save has
//     returned lets the generator issue up to that time (SetLimit). A Save
//     that fails or hangs leaves the limit where it was: IDs stop there
//     (registry_behind), they never run past what is recorded. A crash
//     therefore leaves the registry holding a time at or after every ID
//     issued; the next holder starts past it.
//  3. When the registry takes the ID back (Worker.Lost: a lease or session
//     expired), the generator is sealed: no call in flight issues after the
//     time it returns, which a later generator of this process starts past
//     even if the registry answers a re-acquisition with an older time.
//  4. A clean stop seals the generator and records the exact time of its
//     last ID (frond.Releaser, else Save), so the next start need not wait
//     for the reservation. An answer lost on the way is safe: the registry
//     holds that time or the later reservation, and a local record was
//     lowered to that time before the release was sent (registry/cache).
//  5. A worker ID from the local record (the registry unreachable at
//     start-up, registry/cache) is used only as far as the record allows;
//     once the registry answers again, the Issuer holds the ID there, and
//     if the registry gives another ID, or the same with a later time, the
//     generator is sealed and a new one starts past the registry's time.
//
// The clock: a generator refuses to issue while the clock is behind the
// time it must start past by more than MaxBackward (ClockBehindError), and
// with a registry that sees its live peers (frond.PeerClock) an Issuer
// whose clock is further than MaxPeerSkew from their average holds its ID
// and issues nothing (PeerSkewError) until a retry finds it within.
//
// An Issuer that cannot hold an ID (the registry unreachable, every ID
// taken for now) answers frond.ErrWorkerLost and retries every RetryEvery;
// it never stops a node from serving other kinds of ID.
package worker
