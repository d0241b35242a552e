// Package file is the embedded worker registry: the worker ID comes from
// configuration, and the last time this node issued snowflake IDs is kept in
// a file in the data directory (worker.json), so a restart never reuses a
// timestamp. An exclusive lock on the directory (worker.lock, flock) stops a
// second process from running with the same worker ID: two processes with
// one worker ID would issue the same IDs.
//
// The lock fences processes on one machine only. Nothing in a file fences
// two machines: two processes configured with one worker ID on different
// data directories issue the same IDs, and so do two pods of one
// StatefulSet ordinal when the old one still runs (a pod force-deleted from
// an unreachable node) and the volume does not fence it (NFS or another
// ReadWriteMany volume, emptyDir, hostPath). What the record can do, it
// does: it names the process that last wrote it (Owner: the host name and,
// in Kubernetes, the pod's UID) and whether that process stopped cleanly
// (released its exact last time); a start on a record of another owner
// that did not stop cleanly is refused until the operator, having made sure
// that owner has stopped, names it in Options.TakeOver.
//
// It suits one node, or nodes with hand-assigned worker IDs; registries
// that assign IDs among many nodes fence them with leases.
package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/atomicfile"
)

var (
	_ frond.WorkerRegistry = (*Registry)(nil)
	_ frond.Releaser       = (*Registry)(nil)
)

// File names in the data directory.
const (
	StateFile = "worker.json"
	LockFile  = "worker.lock"
)

// Registry is a file worker registry.
type Registry struct {
	dir  string
	node int64
	lock *atomicfile.Locked
	o    Options

	mu       sync.Mutex
	last     time.Time
	wrote    bool  // this process wrote the record: it is this owner's
	released bool  // ... and marked it released
	expect   Owner // the owner the file names, as last read or written
}

type record struct {
	Node       int64     `json:"node"`
	LastIssued time.Time `json:"last_issued"`
	LastNanos  int64     `json:"last_issued_unix_nanos"`
	Host       string    `json:"host,omitempty"` // Owner.Host, also in records of earlier versions
	// Instance is Owner.Instance (a pod's UID).
	Instance string `json:"instance,omitempty"`
	// Released: the owner stopped cleanly; nobody issues with the record
	// until the next start.
	Released bool `json:"released,omitempty"`
}

// Owner identifies the process that writes the record.
type Owner struct {
	// Host is the machine's (or pod's) host name.
	Host string
	// Instance tells apart processes that share a host name: a
	// Kubernetes pod's UID (worker.instance, set from the downward API),
	// which a pod created again with the same name does not share.
	Instance string
}

// String is how errors name the owner, and how Options.TakeOver names it.
func (o Owner) String() string {
	if o.Instance != "" {
		return o.Host + "/" + o.Instance
	}
	return o.Host
}

// continuedBy reports whether this process, p, may take the record of o
// (the owner that wrote it) as its own: the same host, and the same
// instance unless o's record names none (written by an earlier version, or
// without worker.instance). A record that names an instance is another
// owner's to a start that names none.
func (o Owner) continuedBy(p Owner) bool {
	return o.Host == p.Host && (o.Instance == "" || o.Instance == p.Instance)
}

// Options configure Open.
type Options struct {
	// Owner is this process; an empty Host means os.Hostname().
	Owner Owner
	// TakeOver names (as Owner.String) the owner of a record that did not
	// stop cleanly, which this process may take over: the operator's word
	// that it has stopped.
	TakeOver string
	// Logger receives the take-over; nil discards it.
	Logger *slog.Logger
}

// OwnerError is Open's error when the record was last written by another
// process that did not stop cleanly; it wraps frond.ErrNoWorkerID.
type OwnerError struct {
	Path     string
	Node     int64
	Last     time.Time
	Previous Owner
	This     Owner
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("%v: %s was last written by %s, as worker ID %d (last time %s), which did not stop cleanly; this process is %s. "+
		"If %s may still run (a pod force-deleted from a node that is unreachable, a volume that two machines can write), both would issue "+
		"the same snowflake IDs as worker ID %d. Make sure it has stopped (the machine is off or cut off from this volume for good), then "+
		"start once with worker.takeover=%q (env FROND_WORKER__TAKEOVER; docs/deploy.md)",
		frond.ErrNoWorkerID, e.Path, e.Previous, e.Node, e.Last.UTC().Format(time.RFC3339Nano), e.This, e.Previous, e.Node, e.Previous.String())
}

// Unwrap returns frond.ErrNoWorkerID.
func (e *OwnerError) Unwrap() error { return frond.ErrNoWorkerID }

// Open is OpenWith with the default Options: this host, no take-over.
func Open(dir string, node int64) (*Registry, error) { return OpenWith(dir, node, Options{}) }

// OpenWith locks dir for this process and reads the recorded state. It
// returns an error wrapping frond.ErrNoWorkerID when another process holds
// the lock, and an *OwnerError when the record was last written by another
// owner that did not stop cleanly (unless o.TakeOver names it).
func OpenWith(dir string, node int64, o Options) (*Registry, error) {
	if o.Owner.Host == "" {
		o.Owner.Host, _ = os.Hostname()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	lock, err := atomicfile.Lock(filepath.Join(dir, LockFile))
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil, fmt.Errorf("%w: another process on this machine holds %s, and this one would use the same worker ID: two processes with one worker ID "+
			"would issue the same snowflake IDs. Each process needs a worker ID of its own (node, or static:...) as well as a data directory of its own",
			frond.ErrNoWorkerID, filepath.Join(dir, LockFile))
	}
	if err != nil {
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	r := &Registry{dir: dir, node: node, lock: lock, o: o}
	rec, err := r.read()
	if err != nil {
		r.Close()
		return nil, err
	}
	prev := Owner{Host: rec.Host, Instance: rec.Instance}
	if rec.Host != "" && !rec.Released && !prev.continuedBy(o.Owner) {
		if o.TakeOver != prev.String() {
			r.Close()
			return nil, &OwnerError{Path: filepath.Join(dir, StateFile), Node: rec.Node, Last: rec.LastIssued, Previous: prev, This: o.Owner}
		}
		o.Logger.Warn("worker registry: taking over the record of another process that did not stop cleanly, as worker.takeover says",
			"previous", prev.String(), "this", o.Owner.String(), "worker", node, "last_issued", rec.LastIssued)
	}
	r.last, r.expect = rec.LastIssued, prev
	return r, nil
}

func (r *Registry) read() (record, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return record{}, nil
	}
	if err != nil {
		return record{}, fmt.Errorf("worker registry: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, fmt.Errorf("worker registry: %s is damaged (%v); restore it or, if no snowflake IDs were issued after the time it held, delete it", filepath.Join(r.dir, StateFile), err)
	}
	if rec.LastNanos != 0 {
		rec.LastIssued = time.Unix(0, rec.LastNanos).UTC()
	}
	return rec, nil
}

// Acquire implements frond.WorkerRegistry: the configured worker ID and the
// recorded last time.
func (r *Registry) Acquire(ctx context.Context, maxNode int64) (frond.Worker, error) {
	if r.node < 0 || r.node > maxNode {
		return frond.Worker{}, fmt.Errorf("%w: worker ID %d is outside 0..%d of the layout", frond.ErrNoWorkerID, r.node, maxNode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return frond.Worker{ID: r.node, LastIssued: r.last}, nil
}

// Save implements frond.WorkerRegistry. It writes the file only when last is
// later than the recorded time, atomically (write, fsync, rename).
func (r *Registry) Save(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !last.After(r.last) {
		return nil
	}
	return r.writeLocked(last, false)
}

// Release implements frond.Releaser: it records last exactly, and that
// this process stopped cleanly.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked(last, true)
}

func (r *Registry) writeLocked(last time.Time, released bool) error {
	// Another process writing this record (a pod that still runs on a
	// volume both can write, after a take-over or a check it did not see):
	// stop issuing rather than overwrite its times, and say so. Best effort:
	// a file system offers no compare-and-swap, but this catches a second
	// writer within a reservation.
	cur, err := r.read()
	if err != nil {
		return err
	}
	if now := (Owner{Host: cur.Host, Instance: cur.Instance}); cur.LastNanos != 0 && now != r.expect {
		return fmt.Errorf("worker registry: %w: %s was written by %s since this process (%s) last read or wrote it: another process issues as worker ID %d "+
			"(a pod that still runs on a volume both can write?); snowflake IDs stop until that is resolved and this process restarts (docs/deploy.md)",
			frond.ErrWorkerLost, filepath.Join(r.dir, StateFile), now, r.o.Owner, cur.Node)
	}
	b, _ := json.MarshalIndent(record{Node: r.node, LastIssued: last.UTC(), LastNanos: last.UnixNano(),
		Host: r.o.Owner.Host, Instance: r.o.Owner.Instance, Released: released}, "", "  ")
	if err := atomicfile.Write(filepath.Join(r.dir, StateFile), append(b, '\n')); err != nil {
		return fmt.Errorf("worker registry: save: %w", err)
	}
	r.last, r.wrote, r.released, r.expect = last, true, released, r.o.Owner
	return nil
}

// Abandon releases the directory lock and nothing else, as a process
// killed would leave the record. Tests use it to crash a node.
func (r *Registry) Abandon() error { return r.lock.Unlock() }

// Close implements frond.WorkerRegistry: it marks the record this process
// wrote as released, if Release did not (a clean stop that issued nothing:
// the recorded time is its last reservation), and releases the directory
// lock.
func (r *Registry) Close() error {
	r.mu.Lock()
	var err error
	if r.wrote && !r.released {
		err = r.writeLocked(r.last, true)
	}
	r.mu.Unlock()
	if uerr := r.lock.Unlock(); err == nil {
		err = uerr
	}
	return err
}
