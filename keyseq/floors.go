package keyseq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/frond-id/frond"
)

// Floors keeps, where it survives a restart of the node (its data
// directory), the highest maximum this node raised each section of a space
// to: every value it answered in the section is below it. A take or a
// raise that starts below it means the store lost acknowledged writes (a
// Redis restarted without its data or from an older file, a fail-over to
// a replica that missed the last writes, a database restored from a
// backup): the section is refused, not served again from below (issue 58).
type Floors interface {
	// Load returns the floors of space's sections (0 where none is kept).
	Load(space string, sections int) ([]int64, error)
	// Record keeps max as the floor of section when it is above the one
	// kept, before any value below it is answered.
	Record(space string, section int, max int64) error
}

// ErrStoreLostData is the refusal of a section whose store answered a
// maximum below one this node raised it to before (Floors): the store lost
// acknowledged writes, and values would be given twice. It wraps
// frond.ErrStoreLostData (and so frond.ErrStoreUnavailable), the one
// finding of a store that went back whoever found it: the section is not
// served until the store is re-armed above every value answered (frond
// space rearm).
var ErrStoreLostData = fmt.Errorf("%w: the keyed sequence store lost data", frond.ErrStoreLostData)

// FencedError is the refusal of every section of a space whose store is
// fenced for lost data (frond.Place.Lost): a node found that the store
// went back, from a keyed sequence section or a segment tag, and wrote it
// into the store, so that every node refuses it, whatever its data
// directory (issue 68, item 1).
type FencedError struct {
	Space string
	Fence frond.Place // the store's place, with its finding (Lost)
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("%v: space %q: the store is %s", ErrStoreLostData, e.Space, strings.TrimPrefix(e.Fence.Describe(), "alone, "))
}

func (e *FencedError) Unwrap() error { return ErrStoreLostData }

// Fenced is the refusal of a take or a raise in space by a store whose
// place reads place (Place.String, as read in the same atomic step): a
// *FencedError when it is fenced for lost data, else nil.
func Fenced(space, place string) error {
	if !strings.Contains(place, "|lost:") {
		return nil
	}
	p, err := frond.ParsePlace(place)
	if err != nil {
		_, lost, _ := strings.Cut(place, "|lost:")
		p = frond.Place{Lost: lost}
	}
	return &FencedError{Space: space, Fence: p}
}

// LostDataError is ErrStoreLostData for one section, with what this node
// knows: the store's maximum now, and the floor it kept.
type LostDataError struct {
	Space   string
	Section int
	Store   int64 // where the store's raise began
	Floor   int64 // the highest maximum this node raised the section to or read
}

func (e *LostDataError) Error() string {
	return fmt.Sprintf("%v: space %q section %d: the store's maximum is %d, and this node raised it to, or read it at, %d before (its data directory keeps it), "+
		"so values up to %d may have been answered: the store lost acknowledged writes (a Redis restarted without its data or from an older file, "+
		"a fail-over to a replica behind, a restored backup); the section is not served, and the store is fenced for every node. Re-arm the space above every value any node answered: "+
		"frond space rearm %s (it gathers every live node's floors; this node's highest: %d)",
		ErrStoreLostData, e.Space, e.Section, e.Store, e.Floor, e.Floor-1, e.Space, e.Floor)
}

func (e *LostDataError) Unwrap() error { return ErrStoreLostData }

// FileFloors keeps floors in a directory (the node's data directory): one
// file a space, 8 bytes a section (big-endian), written in place. A write
// reaches the file before the values of its raise are answered; it is not
// synced to the disk, so a crash of the machine (not of the process) may
// lose the last raises' records: the check then misses a loss of at most
// a step per section.
type FileFloors struct {
	Dir string

	mu    sync.Mutex
	files map[string]*os.File
}

// NewFileFloors keeps floors in dir/keyseq.
func NewFileFloors(dir string) *FileFloors {
	return &FileFloors{Dir: filepath.Join(dir, "keyseq"), files: map[string]*os.File{}}
}

func (f *FileFloors) file(space string) (*os.File, error) {
	if fh := f.files[space]; fh != nil {
		return fh, nil
	}
	if err := frond.ValidateTagName(space); err != nil { // a file name: no '/'
		return nil, err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, err
	}
	fh, err := os.OpenFile(filepath.Join(f.Dir, space+".floors"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	f.files[space] = fh
	return fh, nil
}

// Load implements Floors.
func (f *FileFloors) Load(space string, sections int) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fh, err := f.file(space)
	if err != nil {
		return nil, fmt.Errorf("keyed sequence floors of %q: %w", space, err)
	}
	buf := make([]byte, 8*sections)
	n, err := fh.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("keyed sequence floors of %q: %w", space, err)
	}
	out := make([]int64, sections)
	for i := range n / 8 {
		out[i] = int64(binary.BigEndian.Uint64(buf[8*i:]))
	}
	return out, nil
}

// Record implements Floors.
func (f *FileFloors) Record(space string, section int, max int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fh, err := f.file(space)
	if err != nil {
		return fmt.Errorf("keyed sequence floors of %q: %w", space, err)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(max))
	if _, err := fh.WriteAt(b[:], int64(section)*8); err != nil {
		return fmt.Errorf("%w: keep the floor of space %q section %d: %v", frond.ErrStoreUnavailable, space, section, err)
	}
	return nil
}

// Close closes the files.
func (f *FileFloors) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, fh := range f.files {
		errs = append(errs, fh.Close())
	}
	clear(f.files)
	return errors.Join(errs...)
}

// MemFloors keeps floors in memory: a node's restarts within one process
// (tests, the model), and the floors of a node with no data directory.
type MemFloors struct {
	mu sync.Mutex
	m  map[string][]int64
}

// Load implements Floors.
func (f *MemFloors) Load(space string, sections int) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int64, sections)
	copy(out, f.m[space])
	return out, nil
}

// Record implements Floors.
func (f *MemFloors) Record(space string, section int, max int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string][]int64{}
	}
	v := f.m[space]
	if len(v) <= section {
		v = append(v, make([]int64, section+1-len(v))...)
		f.m[space] = v
	}
	v[section] = max
	return nil
}
