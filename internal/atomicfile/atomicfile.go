// Package atomicfile writes small state files so that a crash leaves either
// the old content or the new, never a mix: write a temporary file, fsync
// it, rename it over the old one, fsync the directory. Lock keeps a data
// directory to one process.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data, durably: it fails unless the new content
// and the rename are on disk.
func Write(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable only once the directory is: an error here is
	// a failed write (the old content may come back after a power loss).
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes the entries of dir (a rename, a removal) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrLocked means another process holds a lock taken with Lock.
var ErrLocked = errors.New("held by another process")

// Lock takes an exclusive advisory lock (flock) on path, creating the file
// if needed, without waiting: it fails with ErrLocked when another process
// holds it. The lock lasts until Unlock or the process ends (a crash frees
// it).
func Lock(path string) (*Locked, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Locked{f: f}, nil
}

// Locked is a lock taken with Lock.
type Locked struct{ f *os.File }

// Unlock releases the lock. It is idempotent.
func (l *Locked) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
