package segment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/internal/atomicfile"
)

// Floor classes: a tag's floors are kept per mapping of the numbers its
// store answered (a change from plain to Mist lowers max_id, which then
// holds the Mist counter: another space, with a floor of its own), and
// apart for sequence tags (their IDs come from AllocateIDs, which carries
// no mapping).
const (
	classPlain = iota
	classMist
	classOpaque
	classSeq
	nClasses
)

var classNames = [nClasses]string{"plain", "mist", "opaque", "seq"}

// classOf is the floor class of an allocation of stored mapping m.
func classOf(m string) int {
	switch frond.StoredMapping(m) {
	case frond.MappingMist:
		return classMist
	case frond.MappingOpaque:
		return classOpaque
	}
	return classPlain
}

// TagFloors are a tag's floors on one store: per class, the highest end of
// a range the store answered this node (0: none), and the store's count of
// the tag's deletions (frond.DeletionCounter) when the first was kept.
type TagFloors struct {
	Ends      [nClasses]int64
	Deletions int64
}

// tagFloorsJSON is TagFloors as frond stores floors prints it.
type tagFloorsJSON struct {
	Plain     int64 `json:"plain,omitempty"`
	Mist      int64 `json:"mist,omitempty"`
	Opaque    int64 `json:"opaque,omitempty"`
	Seq       int64 `json:"seq,omitempty"`
	Deletions int64 `json:"deletions,omitempty"`
}

// MarshalJSON writes t as {"plain": end, "mist": end, ..., "deletions": n}.
func (t TagFloors) MarshalJSON() ([]byte, error) {
	return json.Marshal(tagFloorsJSON{t.Ends[classPlain], t.Ends[classMist], t.Ends[classOpaque], t.Ends[classSeq], t.Deletions})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *TagFloors) UnmarshalJSON(b []byte) error {
	var j tagFloorsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if min(j.Plain, j.Mist, j.Opaque, j.Seq, j.Deletions) < 0 {
		return fmt.Errorf("%w: a negative floor", frond.ErrInvalidArgument)
	}
	*t = TagFloors{Ends: [nClasses]int64{j.Plain, j.Mist, j.Opaque, j.Seq}, Deletions: j.Deletions}
	return nil
}

// FloorsReport is the floors one node keeps of one store (frond stores
// floors prints a list of them; frond stores rearm reads them).
type FloorsReport struct {
	Store string               `json:"store"`
	Tags  map[string]TagFloors `json:"tags"`
}

// ReadFloorsDir reads every floors file of the data directory dir.
func ReadFloorsDir(dir string) ([]FloorsReport, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "floors", "*.floors"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := []FloorsReport{}
	for _, p := range paths {
		store, tags, err := ReadFloors(p)
		if err != nil {
			return nil, err
		}
		out = append(out, FloorsReport{Store: store, Tags: tags})
	}
	return out, nil
}

// Highest is the highest floor of t converted to the space of mapping
// (frond.MappingFloor: a plain floor f is Mist counter ceil(f/2^16), a Mist
// floor c is plain number c<<16), or of sequence IDs when seq: what a
// re-arm must raise a tag of that mapping to.
func (t TagFloors) Highest(mapping string, seq bool) int64 {
	if seq {
		return t.Ends[classSeq]
	}
	to := frond.StoredMapping(mapping)
	top := int64(0)
	for c := range classSeq {
		if t.Ends[c] == 0 {
			continue
		}
		f, err := frond.MappingFloor(classNames[c], to, t.Ends[c])
		if err != nil { // opaque and another: no conversion; the same space only
			if classOf(to) == c {
				f = t.Ends[c]
			} else {
				continue
			}
		}
		top = max(top, f)
	}
	return top
}

// Floors keeps, in one file of a node's data directory, the floors of one
// store (issue 67): for each tag the highest end of a range the store gave
// this node, written before any ID of the range is handed out. A store
// that answers a tag below its floor lost acknowledged writes.
//
// The file is a log of lines "tag class end deletions", the last line of a
// tag and class winning, appended with one write per segment load (off the
// request path: the double buffer loads ahead), and written anew (a line a
// floor) when it opens with more than twice as many lines as it holds
// floors, and while it runs once it holds more than four times as many. Writes are not
// synced to the disk: a crash of the process keeps them (the page cache),
// a crash of the machine may lose the last loads' lines, and the check then
// misses a loss of at most those segments.
type Floors struct {
	path  string
	store string

	mu    sync.Mutex
	f     *os.File
	tags  map[string]*TagFloors
	lines int
}

// floorsHeader begins every floors file, with the store's name after it.
const floorsHeader = "# frond segment floors v1: "

// OpenFloors opens (or creates) the floors file at path, of the store
// named store (its URL with the password masked: said in the file, for
// people and frond stores floors).
func OpenFloors(path, store string) (*Floors, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("segment floors: %w", err)
	}
	f := &Floors{path: path, store: store, tags: map[string]*TagFloors{}}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("segment floors: %w", err)
	}
	if len(data) > 0 {
		if f.lines, err = f.parse(data); err != nil {
			return nil, fmt.Errorf("segment floors %s: %w", path, err)
		}
	}
	// A last line cut short (the process killed in the middle of a write)
	// is dropped by writing the file anew: appended to, it would run into
	// the next line.
	torn := len(data) > 0 && data[len(data)-1] != '\n'
	if len(data) == 0 || torn || f.lines > 2*len(f.tags)+64 {
		if err := atomicfile.Write(path, f.compact()); err != nil {
			return nil, fmt.Errorf("segment floors: %w", err)
		}
		f.lines = len(f.tags)
	}
	if f.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("segment floors: %w", err)
	}
	return f, nil
}

// parse reads the lines of a floors file into f.tags and returns how many
// floor lines it has. A last line cut short (the process killed in the
// middle of a write) is left out.
func (f *Floors) parse(data []byte) (int, error) {
	header, rest, _ := bytes.Cut(data, []byte("\n"))
	if !bytes.HasPrefix(header, []byte(floorsHeader)) {
		return 0, fmt.Errorf("not a floors file (it begins %q)", string(header[:min(len(header), 40)]))
	}
	if f.store == "" {
		f.store = string(header[len(floorsHeader):])
	}
	n := 0
	for len(rest) > 0 {
		line, more, ok := bytes.Cut(rest, []byte("\n"))
		rest = more
		if !ok {
			break // cut short
		}
		tag, class, end, deletions, err := parseFloorLine(string(line))
		if err != nil {
			return 0, err
		}
		t := f.tags[tag]
		if t == nil {
			t = &TagFloors{}
			f.tags[tag] = t
		}
		t.Ends[class], t.Deletions = end, deletions
		n++
	}
	return n, nil
}

func parseFloorLine(line string) (tag string, class int, end, deletions int64, err error) {
	fields := strings.Fields(line)
	bad := fmt.Errorf("line %q: want tag class end deletions", line)
	if len(fields) != 4 || frond.ValidateTagName(fields[0]) != nil {
		return "", 0, 0, 0, bad
	}
	class = -1
	for c, name := range classNames {
		if name == fields[1] {
			class = c
		}
	}
	end, err1 := strconv.ParseInt(fields[2], 10, 64)
	deletions, err2 := strconv.ParseInt(fields[3], 10, 64)
	if class < 0 || err1 != nil || err2 != nil || end < 0 || deletions < 0 {
		return "", 0, 0, 0, bad
	}
	return fields[0], class, end, deletions, nil
}

// compact is the file's content with one line per floor.
func (f *Floors) compact() []byte {
	var b bytes.Buffer
	b.WriteString(floorsHeader + f.store + "\n")
	names := make([]string, 0, len(f.tags))
	for n := range f.tags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := f.tags[n]
		for c := range nClasses {
			if t.Ends[c] != 0 {
				fmt.Fprintf(&b, "%s %s %d %d\n", n, classNames[c], t.Ends[c], t.Deletions)
			}
		}
	}
	return b.Bytes()
}

// Store names the store whose floors f keeps.
func (f *Floors) Store() string { return f.store }

// Tag returns the floors of tag, and false when none is kept.
func (f *Floors) Tag(tag string) (TagFloors, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.tags[tag]; t != nil {
		return *t, true
	}
	return TagFloors{}, false
}

// All returns every tag's floors.
func (f *Floors) All() map[string]TagFloors {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]TagFloors, len(f.tags))
	for n, t := range f.tags {
		out[n] = *t
	}
	return out
}

// set keeps end as the floor of tag in class, with deletions, in the file
// first: an error leaves the floor as it was.
func (f *Floors) set(tag string, class int, end, deletions int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.setLocked(tag, class, end, deletions)
}

func (f *Floors) setLocked(tag string, class int, end, deletions int64) error {
	t := f.tags[tag]
	if t != nil && t.Ends[class] == end && t.Deletions == deletions {
		return nil
	}
	if f.f == nil {
		return fmt.Errorf("segment floors of %s: %w", f.store, frond.ErrClosed)
	}
	if _, err := io.WriteString(f.f, tag+" "+classNames[class]+" "+strconv.FormatInt(end, 10)+" "+strconv.FormatInt(deletions, 10)+"\n"); err != nil {
		return fmt.Errorf("keep the floor of tag %q of %s in the data directory: %w", tag, f.store, err)
	}
	f.lines++
	if t == nil {
		t = &TagFloors{}
		f.tags[tag] = t
	}
	t.Ends[class], t.Deletions = end, deletions
	if f.lines > 4*len(f.tags)+4096 {
		// A node that runs for months appends a line per load: written
		// anew (a line per floor) once most lines are stale. A failure
		// leaves the longer file, which is as good.
		if err := atomicfile.Write(f.path, f.compact()); err == nil {
			if fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
				f.f.Close()
				f.f, f.lines = fh, len(f.tags)
			}
		}
	}
	return nil
}

// raise keeps end as the floor of tag in class where it is above the one
// kept (another allocation of the tag may have returned a higher end
// meanwhile), with deletions where they are above, in the file first.
func (f *Floors) raise(tag string, class int, end, deletions int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tags[tag]
	if t != nil {
		end, deletions = max(end, t.Ends[class]), max(deletions, t.Deletions)
	}
	return f.setLocked(tag, class, end, deletions)
}

// forget drops the floors of tag (a deletion counted since they were kept:
// the tag was deleted and created again), in the file first.
func (f *Floors) forget(tag string, deletions int64) error {
	f.mu.Lock()
	t := f.tags[tag]
	f.mu.Unlock()
	if t == nil {
		return nil
	}
	for c := range nClasses {
		if err := f.set(tag, c, 0, deletions); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the file.
func (f *Floors) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}

// ReadFloors reads the floors file at path without opening it for writes
// (frond stores floors, on a node's data directory while it runs).
func ReadFloors(path string) (store string, tags map[string]TagFloors, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	f := &Floors{tags: map[string]*TagFloors{}}
	if _, err := f.parse(data); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]TagFloors, len(f.tags))
	for n, t := range f.tags {
		if *t != (TagFloors{Deletions: t.Deletions}) {
			out[n] = *t
		}
	}
	return f.store, out, nil
}

// FloorsFile is the file, in the data directory dir, of the floors of the
// store named name: floors/ and a digest of the name.
func FloorsFile(dir, name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	return filepath.Join(dir, "floors", fmt.Sprintf("%016x.floors", h.Sum64()))
}
