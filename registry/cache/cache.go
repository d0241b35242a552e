// Package cache keeps a local record of a network registry's answer (the
// worker ID and its last times) in the data directory, so that a node
// restarts and keeps issuing snowflake IDs while its registry is down.
//
// The record holds the worker ID, the last time this node may have issued
// (LastIssued) and the last time the registry confirmed it recorded
// (Confirmed). Leaf's equivalent file holds the ID only; without the times a
// restart from it could reuse timestamps.
//
// The record is used only within a bound that keeps it safe: registries give
// a gone node's ID to another node only once that node's clock is past the
// ID's recorded time plus RecycleAfter (see package registry), so this node
// uses its record, and issues, only up to Confirmed + RecycleAfter (with a
// registry that is not a registry.Protocol, while the ID is held there,
// only up to Confirmed + LeaseTTL). Past that, Save fails and the service
// stops snowflake IDs until the registry answers.
//
// The record on disk keeps two rules, whatever fails and wherever a process
// is killed: it never lets a later start issue a time this run may have
// issued (LastIssued is written before a reservation is used), and it never
// vouches for a time the registry may no longer hold (at a clean stop it is
// lowered to the exact last time before the registry is told). A record
// that cannot be written is removed; when it cannot be removed either, the
// reservation is refused, or the exact release is not sent.
package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/atomicfile"
	"github.com/frond-id/frond/registry"
	"github.com/frond-id/frond/registry/file"
)

// File is the record's name in the data directory.
const File = "worker-cache.json"

// LockFile, beside the record, is locked (flock) while a Registry is open:
// two processes sharing a data directory (and so a record) could both issue
// with the recorded worker ID while the registry is down. It is the file
// registry's lock: one data directory, one frond process.
const LockFile = file.LockFile

// fallbackAcquireTimeout bounds an Acquire from the registry when a usable
// record exists, so a start with the registry down does not wait long.
const fallbackAcquireTimeout = 5 * time.Second

// ErrNotReleased is Release's error when the exact last time was not sent
// to the registry because the local record could not be lowered to it
// first: safe (the registry keeps the last reservation), and the next start
// may wait for that reservation to pass.
var ErrNotReleased = errors.New("worker cache: not released")

// errReleased answers a save or acquire after Release.
var errReleased = fmt.Errorf("worker cache: %w: the worker ID was released at shutdown", frond.ErrClosed)

var (
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
	_ frond.PeerClock      = (*Registry)(nil)
	_ frond.Warner         = (*Registry)(nil)
)

// Record is the file's content.
type Record struct {
	Key       string    `json:"key"` // the registry (URL without secrets) and the node's identity
	Node      int64     `json:"node"`
	LastNanos int64     `json:"last_issued_unix_nanos"` // latest time this node may have issued up to
	ConfNanos int64     `json:"confirmed_unix_nanos"`   // latest time the registry recorded
	Last      time.Time `json:"last_issued"`            // the same, readable
	Confirmed time.Time `json:"confirmed"`
	// Claim names the registry's claim this node held (frond.Worker.Claim):
	// the next start, holding the lock and so proving this run has ended,
	// continues it (registry.Protocol.Resume).
	Claim string `json:"claim,omitempty"`
}

// Resumer is what a registry offers to continue the claim of an earlier run
// of this process (registry.Protocol.Resume).
type Resumer interface{ Resume(claim string, id int64) }

// Registry wraps a registry with the local record.
type Registry struct {
	inner frond.WorkerRegistry
	path  string
	lock  *atomicfile.Locked
	key   string
	o     registry.Options
	disk  Disk

	mu        sync.Mutex
	rec       *Record // nil: none for this key
	held      bool
	fromCache bool
	released  bool  // Release was called: the record is not raised again
	degraded  error // the registry's last Save error while issuing from the record
}

// New wraps inner and locks the record's directory (LockFile) until Close:
// it fails with frond.ErrNoWorkerID when another process holds the lock.
// key names the registry and this node (it must change when either does); a
// record with another key is ignored and replaced.
func New(inner frond.WorkerRegistry, path, key string, o registry.Options) (*Registry, error) {
	lock, err := atomicfile.Lock(filepath.Join(filepath.Dir(path), LockFile))
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil, fmt.Errorf("%w: another process uses the data directory %s (%s is locked): two processes sharing one local record could issue with one worker ID; give each process its own data directory",
			frond.ErrNoWorkerID, filepath.Dir(path), LockFile)
	}
	if err != nil {
		return nil, fmt.Errorf("worker cache: %w", err)
	}
	r := &Registry{inner: inner, path: path, key: key, o: o.WithDefaults(), lock: lock, disk: OSDisk{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		lock.Unlock()
		return nil, fmt.Errorf("worker cache: %w", err)
	default:
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			r.o.Logger.Warn("worker cache: the local record is damaged; ignoring it", "path", path, "err", err)
		} else if rec.Key == key {
			r.rec = &rec
		}
	}
	// The lock is ours: the run that held the recorded claim has ended (a
	// process that still ran would hold the lock), so this process continues
	// it: from its exact time, replacing the claim at once if its lease still
	// runs.
	if t, ok := inner.(Resumer); ok && r.rec != nil {
		t.Resume(r.rec.Claim, r.rec.Node)
	}
	return r, nil
}

// Inner returns the registry the record wraps.
func (r *Registry) Inner() frond.WorkerRegistry { return r.inner }

// Acquire implements frond.WorkerRegistry: the registry's answer, or, when
// the registry cannot be reached, the recorded ID while it is safe to use.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	r.mu.Lock()
	rec := r.rec
	r.mu.Unlock()
	actx := ctx
	if rec != nil {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, fallbackAcquireTimeout)
		defer cancel()
	}
	w, err := r.inner.Acquire(actx, maxNode)
	if err == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.released {
			return frond.Worker{}, errReleased
		}
		next := Record{Key: r.key, Node: w.ID, LastNanos: w.LastIssued.UnixNano(), ConfNanos: w.LastIssued.UnixNano(), Claim: w.Claim}
		if w.LastIssued.IsZero() {
			next.LastNanos, next.ConfNanos = 0, 0
		}
		if r.rec != nil && r.rec.Node == w.ID && r.rec.LastNanos > next.LastNanos {
			// This node issued past what the registry recorded (it ran from
			// the record, or its last Save was lost): keep the later time.
			next.LastNanos = r.rec.LastNanos
			w.LastIssued = time.Unix(0, r.rec.LastNanos)
		}
		r.held, r.fromCache, r.degraded = true, false, nil
		if werr := r.persistLocked(next); werr != nil {
			// The file still names an earlier claim and its times, which
			// the registry holds or passed: a later start may fall back on
			// it within its own bound. This run's record lives in memory,
			// so later writes carry this worker ID.
			r.o.Logger.Warn("worker cache: cannot write the local record", "err", werr)
		}
		return w, nil
	}
	if !errors.Is(err, frond.ErrStoreUnavailable) {
		return frond.Worker{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held && !r.fromCache {
		return frond.Worker{}, err // a hold is being re-acquired: the registry decides
	}
	if r.rec == nil {
		return frond.Worker{}, fmt.Errorf("%w (and there is no local record of a worker ID to fall back on)", err)
	}
	now := r.o.Now()
	until := time.Unix(0, r.rec.ConfNanos).Add(r.o.RecycleAfter)
	if r.rec.Node > maxNode {
		return frond.Worker{}, fmt.Errorf("%w (the local record's worker ID %d is outside 0..%d)", err, r.rec.Node, maxNode)
	}
	if !now.Before(until) {
		return frond.Worker{}, fmt.Errorf("%w (the local record of worker ID %d was confirmed at %s, more than recycle_after %v ago: the registry may have given the ID to another node)",
			err, r.rec.Node, time.Unix(0, r.rec.ConfNanos).UTC().Format(time.RFC3339), r.o.RecycleAfter)
	}
	r.held, r.fromCache = true, true
	r.degraded = err
	var last time.Time
	if r.rec.LastNanos != 0 {
		last = time.Unix(0, r.rec.LastNanos)
	}
	return frond.Worker{ID: r.rec.Node, LastIssued: last, FromCache: true}, nil
}

// Save implements frond.WorkerRegistry. Registry first; when the registry
// cannot be reached (or the ID came from the record), the local record
// alone, up to the confirmed time plus RecycleAfter.
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	fromCache := r.fromCache
	r.mu.Unlock()
	var err error
	if !fromCache {
		err = r.inner.Save(ctx, last)
		if err == nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.released {
				// A save that crossed the clean stop's release (the
				// supervisor did not stop in time): the record was lowered
				// to the exact time and must stay there, since the release
				// lowers the registry's too.
				return errReleased
			}
			r.degraded = nil
			return r.recordLocked(last, true)
		}
		if !errors.Is(err, frond.ErrStoreUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return errReleased
	}
	if r.rec == nil {
		return err
	}
	if err != nil {
		r.degraded = err
	}
	// Strictly before: at until itself another node may take the ID.
	if until, why := r.boundLocked(); !last.Before(until) {
		return fmt.Errorf("%w: the worker registry is unreachable and the local record allows snowflake IDs only up to %s (%s)",
			frond.ErrStoreUnavailable, until.UTC().Format(time.RFC3339), why)
	}
	return r.recordLocked(last, false)
}

// boundLocked is the time before which the record lets this node issue
// while the registry does not answer, and why: the confirmed time +
// RecycleAfter, the earliest another node may be given the ID. A registry
// that is not a Resumer (registry.Protocol) may give the ID back to a
// process of the same identity from its recorded time once the lease runs
// out, so while the ID is held there the bound is at most LeaseTTL past the
// confirmed time; the protocol gives it, without the record's proof, only
// from last + RecycleAfter.
func (r *Registry) boundLocked() (time.Time, string) {
	conf := time.Unix(0, r.rec.ConfNanos)
	if _, proof := r.inner.(Resumer); !proof && !r.fromCache && r.o.LeaseTTL < r.o.RecycleAfter {
		return conf.Add(r.o.LeaseTTL), fmt.Sprintf("confirmed time + lease_ttl %v while the ID is held there", r.o.LeaseTTL)
	}
	return conf.Add(r.o.RecycleAfter), fmt.Sprintf("confirmed time + recycle_after %v", r.o.RecycleAfter)
}

// Release implements frond.Releaser: it records last, the time of the
// node's last ID, exactly, in the record and then in the registry.
//
// The order matters. The exact release lowers the registry's time below the
// reservations it confirmed, and the registry may then give the ID to
// another node from last + RecycleAfter; a record that still vouched for a
// reservation would let this node, restarted with the registry unreachable,
// issue the other node's times. So the record is lowered first (confirmed
// and last issued to last), durably, and only then is the release sent: if
// its answer is lost, the record already says what the registry may hold.
// If the record cannot be written (or dropped, see persistLocked), no exact
// release is sent: the claim ends when the registry is closed and the last
// reservation stands, so the next start may wait for it.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	fromCache := r.fromCache
	r.held, r.released = false, true
	if r.rec != nil {
		next := *r.rec
		next.LastNanos = last.UnixNano()
		if !fromCache {
			next.ConfNanos = min(next.ConfNanos, next.LastNanos)
		}
		if err := r.persistLocked(next); err != nil {
			r.mu.Unlock()
			r.o.Logger.Warn("worker cache: the local record cannot be lowered to the exact last time, so the registry is not told it; its last reservation stands (the next start may wait for it)",
				"last", last, "err", err)
			return fmt.Errorf("%w: the exact last time was not recorded (the local record cannot be written: %w); the last reservation stands", ErrNotReleased, err)
		}
	}
	r.mu.Unlock()
	if fromCache {
		return nil // only this node issues with the record
	}
	var err error
	if rl, ok := r.inner.(frond.Releaser); ok {
		err = rl.Release(ctx, last)
	} else {
		err = r.inner.Save(ctx, last)
	}
	if err != nil {
		// Not recorded, or recorded with its answer lost: either way the
		// record vouches for no more than the registry holds.
		r.o.Logger.Warn("worker cache: the registry did not confirm the last time at shutdown", "err", err)
	}
	return err
}

func (r *Registry) recordLocked(last time.Time, confirmed bool) error {
	if r.rec == nil {
		return nil
	}
	next := *r.rec
	next.LastNanos = max(next.LastNanos, last.UnixNano())
	if confirmed {
		next.ConfNanos = max(next.ConfNanos, last.UnixNano())
	}
	if err := r.persistLocked(next); err != nil {
		return fmt.Errorf("worker cache: %w", err)
	}
	return nil
}

// persistLocked makes rec the record, in memory and on disk. The record on
// disk must never let a later start issue a time this run may have issued
// (its last issued time lagging behind a reservation in use) or vouch for a
// time the registry no longer holds: when the write fails (a full or
// read-only disk), the file is removed instead, so a later start has no
// record to fall back on (it waits for the registry), and writes go on
// being tried. Only when neither works does it fail, and the caller must
// not rely on rec: not issue up to a reservation, not send an exact
// release.
func (r *Registry) persistLocked(rec Record) error {
	rec.Last, rec.Confirmed = time.Unix(0, rec.LastNanos).UTC(), time.Unix(0, rec.ConfNanos).UTC()
	r.rec = &rec // what is true of this run, whatever the disk holds
	b, _ := json.MarshalIndent(rec, "", "  ")
	werr := r.disk.Write(r.path, append(b, '\n'))
	if werr == nil {
		return nil
	}
	rerr := r.disk.Remove(r.path)
	if rerr == nil {
		rerr = atomicfile.SyncDir(filepath.Dir(r.path)) // the removal must be durable too
	}
	if rerr == nil || errors.Is(rerr, os.ErrNotExist) {
		r.o.Logger.Warn("worker cache: cannot write the local record; removed it (a start with the registry unreachable cannot fall back on it)",
			"path", r.path, "err", werr)
		return nil
	}
	return fmt.Errorf("cannot write the local record (%w) nor remove it (%v)", werr, rerr)
}

// Disk is where the record is kept: Write replaces a file atomically and
// durably, Remove deletes one. OSDisk is the real one; tests inject faults
// (a full disk, a read-only one) with SetDisk.
type Disk interface {
	Write(path string, data []byte) error
	Remove(path string) error
}

// OSDisk is the operating system's file system: atomicfile.Write (write,
// fsync, rename, fsync the directory) and os.Remove.
type OSDisk struct{}

// Write implements Disk.
func (OSDisk) Write(path string, data []byte) error { return atomicfile.Write(path, data) }

// Remove implements Disk.
func (OSDisk) Remove(path string) error { return os.Remove(path) }

// SetDisk replaces OSDisk for this registry's record, before it is used.
func (r *Registry) SetDisk(d Disk) {
	r.mu.Lock()
	r.disk = d
	r.mu.Unlock()
}

// PeerOffsets implements frond.PeerClock when the wrapped registry does.
func (r *Registry) PeerOffsets(ctx context.Context) ([]frond.PeerOffset, error) {
	if pc, ok := r.inner.(frond.PeerClock); ok {
		return pc.PeerOffsets(ctx)
	}
	return nil, nil
}

// Warnings implements frond.Warner: the registry's own, and whether the node
// runs from its local record.
func (r *Registry) Warnings() []string {
	var out []string
	if w, ok := r.inner.(frond.Warner); ok {
		out = w.Warnings()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.degraded != nil && r.rec != nil && r.rec.ConfNanos == 0:
		out = append(out, fmt.Sprintf("the worker registry is unreachable (%v) and has not yet recorded any time for worker ID %d: no snowflake IDs until it does",
			r.degraded, r.rec.Node))
	case r.degraded != nil && r.rec != nil:
		until, _ := r.boundLocked()
		out = append(out, fmt.Sprintf("the worker registry is unreachable (%v): issuing from the local record, up to %s",
			r.degraded, until.UTC().Format(time.RFC3339)))
	}
	return out
}

// Close implements frond.WorkerRegistry: it closes the registry and then
// releases the data directory.
func (r *Registry) Close() error {
	err := r.inner.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if uerr := r.lock.Unlock(); err == nil {
		err = uerr
	}
	return err
}
