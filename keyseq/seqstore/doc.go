// Package seqstore keeps keyed sequence spaces (package keyseq) in frond's
// stores: SQL databases (SQLite, MySQL/MariaDB, PostgreSQL), Redis and
// etcd, each a keyseq.SpaceStore whose section leases are counted on the
// store's own clock (docs/sequences.md). It is apart from keyseq so that a
// program that serves spaces from memory, or only uses the service layer,
// does not link every driver.
package seqstore
