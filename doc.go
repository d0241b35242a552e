// Package frond holds the domain of the frond ID service: tags, ranges of
// IDs, the sentinel errors every layer shares, and the small interfaces that
// backends implement.
//
// # What lives here
//
//   - [Tag] and [TagUpdate]: a business tag as a segment store keeps it
//     (Leaf's leaf_alloc row: biz_tag, max_id, step, description, update_time).
//   - [Range] and [Allocation]: IDs handed out in bulk.
//   - [SegmentStore]: the contract of every segment backend (SQL, Redis,
//     etcd, memory). Each method documents which sentinel error it returns.
//   - [Clock]: the time source, injected everywhere so tests never sleep.
//
// The package imports the standard library only. Engines (snowflake,
// segment) and backends (store/...) import it; it imports none of them.
//
// # Guarantees
//
// A segment store is the source of truth for uniqueness: every call to
// [SegmentStore.Allocate] that succeeds returns IDs that no other call, from
// any process, ever returned for the same tag. Everything above the store
// only hands those IDs out and never invents new ones.
package frond
