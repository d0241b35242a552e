// Package file is the embedded worker registry: the worker ID comes from
// configuration, and the last time this node issued snowflake IDs is kept in
// a file in the data directory (worker.json), so a restart never reuses a
// timestamp. An exclusive lock on the directory (worker.lock, flock) stops a
// second process from running with the same worker ID: two processes with
// one worker ID would issue the same IDs.
//
// It suits one node, or nodes with hand-assigned worker IDs. Registries that
// assign IDs among many nodes come with the worker-registry work.
package file

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

	mu   sync.Mutex
	last time.Time
}

type record struct {
	Node       int64     `json:"node"`
	LastIssued time.Time `json:"last_issued"`
	LastNanos  int64     `json:"last_issued_unix_nanos"`
	Host       string    `json:"host,omitempty"`
}

// Open locks dir for this process and reads the recorded state. It returns
// an error wrapping frond.ErrNoWorkerID when another process holds the lock.
func Open(dir string, node int64) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	lock, err := atomicfile.Lock(filepath.Join(dir, LockFile))
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil, fmt.Errorf("%w: another process holds %s: two processes with one worker ID would issue the same snowflake IDs; give each process its own data directory", frond.ErrNoWorkerID, filepath.Join(dir, LockFile))
	}
	if err != nil {
		return nil, fmt.Errorf("worker registry: %w", err)
	}
	r := &Registry{dir: dir, node: node, lock: lock}
	rec, err := r.read()
	if err != nil {
		r.Close()
		return nil, err
	}
	r.last = rec.LastIssued
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
	return r.writeLocked(last)
}

// Release implements frond.Releaser: it records last exactly.
func (r *Registry) Release(ctx context.Context, last time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeLocked(last)
}

func (r *Registry) writeLocked(last time.Time) error {
	host, _ := os.Hostname()
	b, _ := json.MarshalIndent(record{Node: r.node, LastIssued: last.UTC(), LastNanos: last.UnixNano(), Host: host}, "", "  ")
	if err := atomicfile.Write(filepath.Join(r.dir, StateFile), append(b, '\n')); err != nil {
		return fmt.Errorf("worker registry: save: %w", err)
	}
	r.last = last
	return nil
}

// Close implements frond.WorkerRegistry: it releases the directory lock.
func (r *Registry) Close() error {
	return r.lock.Unlock()
}
