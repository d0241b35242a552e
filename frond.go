package frond

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxTagNameLen is the longest tag name, the width of Leaf's biz_tag column.
const MaxTagNameLen = 128

// MaxDescriptionLen is the longest description in characters, the width of
// Leaf's description column.
const MaxDescriptionLen = 256

func validateDescription(d string) error {
	if n := utf8.RuneCountInString(d); n > MaxDescriptionLen || !utf8.ValidString(d) {
		return fmt.Errorf("%w: description of %d characters: at most %d characters of valid UTF-8", ErrInvalidArgument, n, MaxDescriptionLen)
	}
	for i, r := range d {
		// Control characters (NUL, ESC, a newline...) would be printed raw
		// by frond tag list and log readers: a terminal obeys ESC sequences.
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return fmt.Errorf("%w: description: a control character (%U) at byte %d: write it as text", ErrInvalidArgument, r, i)
		}
	}
	return nil
}

// Tag is a business tag as a segment store keeps it: Leaf's leaf_alloc row.
type Tag struct {
	// Name is the business tag (Leaf's biz_tag). See ValidateTagName.
	Name string
	// MaxID is the first ID not yet handed out by the store: the next
	// allocation of step s returns [MaxID, MaxID+s). As in Leaf, the IDs
	// issued so far are all below MaxID.
	MaxID int64
	// Step is the configured segment length. The segment engine may ask for
	// longer segments (the adaptive step) but never shorter ones.
	Step int64
	// Description is free text for operators.
	Description string
	// UpdatedAt is the time of the last change, as the store recorded it.
	UpdatedAt time.Time
	// Mode is how the tag's IDs are handed out: empty (ModeSegment, Leaf's
	// buffered segments) or ModeSequence (every ID taken from the store at
	// request time, linearizable across nodes). It is set when the tag is
	// created and never changes. Stores keep it beside Leaf's table, so a
	// Leaf table reads as all segment tags.
	Mode string
	// Mapping is how the tag's counter becomes the numbers it hands out,
	// for its whole life and on every node: empty (MappingPlain: the
	// counter itself), MappingMist (the counter and two random bytes) or
	// MappingOpaque (a keyed permutation). Text forms (base62, prefixes)
	// encode the mapped number and are free to ask for; another mapping
	// is refused, since two mappings of one counter meet each other
	// (issue 42). Stores keep it beside Leaf's table and hand it out with
	// every allocation, read atomically with it (Allocation.Mapping).
	Mapping string
}

// Mappings of a tag's counter to its numbers (Tag.Mapping).
const (
	MappingPlain  = "plain"
	MappingMist   = "mist"
	MappingOpaque = "opaque"
)

// MistShift is how far a Mist number moves the counter up: 16 bits of
// salt below it.
const MistShift = 16

// CheckMapping reports whether m is a mapping: empty, MappingPlain,
// MappingMist, MappingOpaque, or shard bits (ShardMapping).
func CheckMapping(m string) error {
	switch m {
	case "", MappingPlain, MappingMist, MappingOpaque:
		return nil
	}
	if ShardBits(m) > 0 {
		return nil
	}
	if len(m) > 40 {
		m = m[:40] + "..."
	}
	return fmt.Errorf("%w: mapping %q: plain, mist, opaque or shard:K (K shard bits, 1 to %d)", ErrInvalidArgument, m, MaxShardBits)
}

// MaxShardBits is the most shard bits a tag may have (ShardMapping).
const MaxShardBits = 16

// shardPrefix begins a mapping of shard bits ("shard:4").
const shardPrefix = "shard:"

// ShardMapping is the mapping of a tag with bits shard bits (1 to
// MaxShardBits), "shard:4": its numbers are its counter n moved up by the
// bits, the shard below (n<<bits | shard), so that the number modulo
// 2^bits routes a row to its shard ("gene IDs"). The shard is given with
// each request, or derived from a key (ShardOf). Uniqueness is the
// counter's: two requests never share a counter, whatever shards they
// ask for.
func ShardMapping(bits int) string { return shardPrefix + strconv.Itoa(bits) }

// ShardBits is the shard bits of mapping m, 0 when m is no ShardMapping.
func ShardBits(m string) int {
	rest, ok := strings.CutPrefix(m, shardPrefix)
	if !ok || rest == "" || len(rest) > 2 || rest[0] == '0' {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > MaxShardBits {
		return 0
	}
	return n
}

// KeyHash is the hash of a key that every node, version and client
// language computes alike: FNV-1a of its bytes (64-bit), then MurmurHash3's
// 64-bit finaliser (fmix64) so that its low bits are as good as its high
// ones. Keyed sequences take a key's section from it, and tags with shard
// bits a key's shard (ShardOf); docs/kinds.md lists test vectors.
func KeyHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// ShardOf is the shard of key under bits shard bits: the low bits of
// KeyHash(key).
func ShardOf(key string, bits int) int64 { return int64(KeyHash(key) & (1<<bits - 1)) }

// StoredMapping is the form of a mapping stores keep: empty for plain
// numbers, so that a tag without a mapping record (a Leaf table) is plain.
func StoredMapping(m string) string {
	if m == MappingPlain {
		return ""
	}
	return m
}

// MappingName is the tag's mapping by its name: MappingPlain for an empty
// Mapping.
func (t Tag) MappingName() string {
	if t.Mapping == "" {
		return MappingPlain
	}
	return t.Mapping
}

// MappingFloor is the max_id every store of a tag must be raised to (when
// below it) as the tag's mapping moves from one to another, when top is the
// highest max_id of the tag over its stores: the first counter value whose
// numbers under the new mapping lie above every number the old mapping
// gave (all from counters below top). Plain to Mist: a counter c gives
// c<<16 and up, above every plain number below top once c >= ceil(top /
// 2^16). Mist to plain: the Mist numbers of counters below top are below
// top<<16. An opaque number may be any number of its width, so no raise
// moves a tag past them: a change to or from opaque is refused.
func MappingFloor(from, to string, top int64) (int64, error) {
	from, to = StoredMapping(from), StoredMapping(to)
	switch {
	case from == to:
		return top, nil
	case ShardBits(from) > 0 || ShardBits(to) > 0:
		return 0, fmt.Errorf("%w: a tag's shard bits are set when it is created: its numbers and their shards would meet another mapping's; use a new tag", ErrInvalidArgument)
	case from == MappingOpaque || to == MappingOpaque:
		return 0, fmt.Errorf("%w: a tag's mapping cannot change to or from opaque: an opaque number may be any number below 2^width, so no raise moves the tag past the numbers it gave; use a new tag", ErrInvalidArgument)
	case from == "" && to == MappingMist:
		return (max(top, 0) + 1<<MistShift - 1) >> MistShift, nil
	default: // Mist to plain
		if top > math.MaxInt64>>MistShift {
			return 0, fmt.Errorf("%w: max_id %d is past Mist's counter: its numbers fill the whole space", ErrTagExhausted, top)
		}
		return max(top, 0) << MistShift, nil
	}
}

// MappingChange is what every copy of a tag holds as its mapping while a
// change of its mapping from one to another is under way (segment.ChangeMapping,
// "mist>plain"): a fence. The change marks every copy
// first, then reads every copy's max_id, then raises each to one floor
// (MappingFloor) with the new mapping. An allocation of a fenced copy is
// never handed out (the engine skips it: the counters are lost, never
// given), so the max_id values read after every copy is marked bound
// every number the old mapping gave, whatever segments nodes took
// meanwhile, and whatever step they took them with.
func MappingChange(from, to string) string {
	return MappingName(from) + ">" + MappingName(to)
}

// ParseMappingChange returns the stored mappings (StoredMapping) a change
// under way moves from and to, and ok false when m is no change
// (MappingChange).
func ParseMappingChange(m string) (from, to string, ok bool) {
	f, t, ok := strings.Cut(m, ">")
	if !ok {
		return "", "", false
	}
	return StoredMapping(f), StoredMapping(t), true
}

// ServedMapping is the mapping of the numbers a tag whose stored mapping
// is m hands out: m, or during a change of mapping the one it moves from
// (the numbers nodes still hold; no new segment is served until the
// change is done).
func ServedMapping(m string) string {
	if from, _, ok := ParseMappingChange(m); ok {
		return from
	}
	return StoredMapping(m)
}

// checkStoredMapping is CheckMapping, and also a change under way between
// plain and Mist (MappingChange): what a store may be asked to record.
func checkStoredMapping(m string) error {
	from, to, ok := ParseMappingChange(m)
	if !ok {
		return CheckMapping(m)
	}
	if m != MappingChange(from, to) || from == to || from == MappingOpaque || to == MappingOpaque || ShardBits(from) > 0 || ShardBits(to) > 0 ||
		CheckMapping(from) != nil || CheckMapping(to) != nil {
		return fmt.Errorf("%w: mapping %q: a change of mapping is plain>mist or mist>plain", ErrInvalidArgument, m)
	}
	return nil
}

// Modes of a tag (Tag.Mode).
const (
	ModeSegment  = "segment"
	ModeSequence = "sequence"
)

// CheckMode reports whether mode is a tag mode: empty, ModeSegment or
// ModeSequence.
func CheckMode(mode string) error {
	switch mode {
	case "", ModeSegment, ModeSequence:
		return nil
	}
	n := len(mode)
	if n > 40 {
		mode = mode[:40] + "..."
	}
	return fmt.Errorf("%w: tag mode %q: segment or sequence", ErrInvalidArgument, mode)
}

// StoredMode is the form of a mode stores keep: empty for segment tags,
// so that a tag without a mode record is a segment tag.
func StoredMode(mode string) string {
	if mode == ModeSegment {
		return ""
	}
	return mode
}

// ModeName is the tag's mode by its name: ModeSegment for an empty Mode.
func (t Tag) ModeName() string {
	if t.Mode == "" {
		return ModeSegment
	}
	return t.Mode
}

// Validate checks a tag before it is created.
func (t Tag) Validate() error {
	if err := ValidateTagName(t.Name); err != nil {
		return err
	}
	if t.Step < 1 {
		return fmt.Errorf("%w: step %d of tag %q: must be at least 1", ErrInvalidArgument, t.Step, t.Name)
	}
	if t.MaxID < 0 {
		return fmt.Errorf("%w: max_id %d of tag %q: must not be negative", ErrInvalidArgument, t.MaxID, t.Name)
	}
	if err := CheckMode(t.Mode); err != nil {
		return err
	}
	if err := CheckMapping(t.Mapping); err != nil {
		return err
	}
	return validateDescription(t.Description)
}

// TagUpdate is a change to a tag; nil fields are left as they are.
type TagUpdate struct {
	// Step sets the configured step (at least 1).
	Step *int64
	// Description replaces the description.
	Description *string
	// MaxID raises max_id. A value below the current max_id is refused with
	// ErrWouldReissue; the same value is accepted and changes nothing.
	MaxID *int64
	// Mapping changes the tag's mapping (Tag.Mapping). Another mapping
	// needs MaxID at least at MappingFloor of the tag's max_id, in the
	// same update: the store raises and changes the mapping atomically,
	// so every allocation is of one mapping, before or after. A sequence
	// tag's mapping never changes (its IDs are formatted by the mapping a
	// node has cached).
	Mapping *string
	// Adopt records Mapping on a tag that has none recorded (plain) without
	// the raise: the operator's word that the tag's numbers have been in
	// that mapping all along (a tag a node's configured form served before
	// frond kept mappings). Another mapping's numbers handed out before
	// would meet the tag's.
	Adopt bool
}

// Validate checks the fields that can be checked without the stored tag.
func (u TagUpdate) Validate() error {
	if u.Step != nil && *u.Step < 1 {
		return fmt.Errorf("%w: step %d: must be at least 1", ErrInvalidArgument, *u.Step)
	}
	if u.MaxID != nil && *u.MaxID < 0 {
		return fmt.Errorf("%w: max_id %d: must not be negative", ErrInvalidArgument, *u.MaxID)
	}
	if u.Mapping != nil {
		if err := checkStoredMapping(*u.Mapping); err != nil {
			return err
		}
	}
	if u.Description != nil {
		return validateDescription(*u.Description)
	}
	return nil
}

// Apply returns t with the update applied, or ErrWouldReissue when the
// update would lower max_id. Stores call it inside their transaction.
func (u TagUpdate) Apply(t Tag) (Tag, error) {
	if err := u.Validate(); err != nil {
		return t, err
	}
	old := t
	// Finishing a change of mapping (MappingChange) raises the copy into
	// the new mapping's counter: its max_id counts other numbers from then
	// on, so a lower value is no reissue if it is at the new mapping's
	// floor (checked below). Plain to Mist lowers it so.
	_, curTo, moving := ParseMappingChange(t.Mapping)
	finishing := moving && u.Mapping != nil && StoredMapping(*u.Mapping) == curTo && !u.Adopt
	if u.MaxID != nil {
		if *u.MaxID < t.MaxID && !finishing {
			return t, fmt.Errorf("%w: max_id of %q is %d; %d would hand out IDs again", ErrWouldReissue, t.Name, t.MaxID, *u.MaxID)
		}
		t.MaxID = *u.MaxID
	}
	if u.Step != nil {
		t.Step = *u.Step
	}
	if u.Description != nil {
		t.Description = *u.Description
	}
	if u.Adopt && (u.Mapping == nil || StoredMapping(*u.Mapping) == "" || StoredMapping(old.Mapping) != "") {
		return t, fmt.Errorf("%w: tag %q: adopt records mist or opaque on a tag with no mapping recorded (plain); it has %s", ErrInvalidArgument, t.Name, old.MappingName())
	}
	if u.Mapping != nil && StoredMapping(*u.Mapping) != StoredMapping(t.Mapping) {
		to := StoredMapping(*u.Mapping)
		if t.Mode == ModeSequence {
			return t, fmt.Errorf("%w: tag %q is a sequence tag: its mapping is set when it is created", ErrInvalidArgument, t.Name)
		}
		if u.Adopt {
			t.Mapping = to
			return t, nil
		}
		curFrom, curTo, moving := ParseMappingChange(t.Mapping)
		newFrom, _, fencing := ParseMappingChange(to)
		switch {
		case moving && !fencing && to != curTo, moving && fencing:
			return t, fmt.Errorf("%w: tag %q: a change of its mapping from %s to %s is under way (its copies are fenced, serving no new segment): "+
				"finish it first (frond tag set %s --mapping %s)", ErrInvalidArgument, t.Name, MappingName(curFrom), MappingName(curTo), t.Name, MappingName(curTo))
		case fencing:
			// The fence of a change (MappingChange): no raise; the change
			// raises each copy once every copy is fenced.
			if newFrom != StoredMapping(t.Mapping) {
				return t, fmt.Errorf("%w: tag %q is %s: a change of mapping from %s does not apply", ErrInvalidArgument, t.Name, old.MappingName(), MappingName(newFrom))
			}
			t.Mapping = to
			return t, nil
		}
		from := t.Mapping
		if moving {
			from = curFrom // finishing a change: the floor of the mapping it moves from
		}
		// The floor of this store's own max_id; the caller raises every
		// store of a set to the floor of the highest (MappingFloor).
		floor, err := MappingFloor(from, to, old.MaxID)
		if err != nil {
			return t, err
		}
		if u.MaxID == nil || t.MaxID < floor {
			return t, fmt.Errorf("%w: tag %q: mapping %s to %s needs max_id raised to at least %d in the same update", ErrInvalidArgument, t.Name, old.MappingName(), MappingName(to), floor)
		}
		t.Mapping = to
	}
	return t, nil
}

// MappingName names a mapping: MappingPlain for empty.
func MappingName(m string) string {
	return Tag{Mapping: m}.MappingName()
}

// ValidateTagName reports whether name is a valid tag name: 1 to 128 bytes of
// ASCII letters, digits and the punctuation - _ . : @ (enough for Leaf's
// "leaf-segment-test", for "order:2026" style names and for CosId's
// date-grouped segments, "order@20261128", and safe in a URL path, a Redis
// key and an etcd key without escaping).
func ValidateTagName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty tag name", ErrInvalidArgument)
	}
	if len(name) > MaxTagNameLen {
		return fmt.Errorf("%w: tag name of %d bytes: at most %d allowed", ErrInvalidArgument, len(name), MaxTagNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '@':
		default:
			return fmt.Errorf("%w: tag name %q: byte %d (%q) is not a letter, a digit, '-', '_', '.', ':' or '@'", ErrInvalidArgument, name, i, c)
		}
	}
	return nil
}

// Range is a run of IDs: Start, Start+Stride, Start+2*Stride, ... below End.
// Stride is 1 except in multi-store mode, where store i of K hands out only
// the IDs congruent to i modulo K (Stride K).
type Range struct {
	Start  int64 `json:"start"`
	End    int64 `json:"end"` // exclusive
	Stride int64 `json:"stride"`
}

func (r Range) stride() int64 {
	if r.Stride < 1 {
		return 1
	}
	return r.Stride
}

// Len returns the number of IDs in r.
func (r Range) Len() int64 {
	if r.End <= r.Start {
		return 0
	}
	// End-Start cannot overflow (both are non-negative); adding s-1 could.
	return (r.End-r.Start-1)/r.stride() + 1
}

// Last returns the last ID in r; it is meaningless when r is empty.
func (r Range) Last() int64 { return r.Start + (r.Len()-1)*r.stride() }

// Contains reports whether id is one of the IDs of r.
func (r Range) Contains(id int64) bool {
	return id >= r.Start && id < r.End && (id-r.Start)%r.stride() == 0
}

// Append appends the IDs of r to dst.
func (r Range) Append(dst []int64) []int64 {
	s := r.stride()
	for id := r.Start; id < r.End; id += s {
		dst = append(dst, id)
		if id > math.MaxInt64-s {
			break
		}
	}
	return dst
}

// Allocation is what a segment store hands out in one call.
type Allocation struct {
	// Range holds the allocated IDs.
	Range
	// Step is the tag's configured step at the time of the allocation; the
	// engine never asks for less.
	Step int64
	// Mapping is the tag's mapping (Tag.Mapping) as the allocation found
	// it, read atomically with the raise: the IDs are handed out in it.
	Mapping string
}

// TagCopier is a store made of several (segment.Multi): TagCopies reads a
// tag from every one of them, for a change that must see the highest
// max_id (a change of mapping, MappingFloor).
type TagCopier interface {
	TagCopies(ctx context.Context, name string) ([]Tag, error)
}

// TagCopies reads a tag from every store s is made of (TagCopier), or
// from s alone.
func TagCopies(ctx context.Context, s SegmentStore, name string) ([]Tag, error) {
	if c, ok := s.(TagCopier); ok {
		return c.TagCopies(ctx, name)
	}
	t, err := s.Tag(ctx, name)
	if err != nil {
		return nil, err
	}
	return []Tag{t}, nil
}

// SegmentStore is the contract of a segment backend. Implementations must be
// safe for concurrent use by many goroutines and by many processes sharing
// the same database: uniqueness rests on Allocate alone.
//
// Every method honours ctx: when it expires the method returns promptly with
// an error that wraps both ErrStoreUnavailable and ctx.Err(), and the store
// is left as if the call had not happened or as if it had completed, never
// half-applied.
type SegmentStore interface {
	// Allocate raises the max_id of tag by step in one atomic operation and
	// returns the IDs from the old max_id (inclusive) to the new one
	// (exclusive), as Leaf's UPDATE ... SET max_id = max_id + step does. A
	// step <= 0 means the tag's configured step. The returned Allocation
	// carries the configured step as it is now.
	//
	// It returns ErrTagNotFound if the tag does not exist, ErrTagExhausted if
	// max_id+step would overflow, and an error wrapping ErrStoreUnavailable
	// if the store cannot be reached. After an error no IDs are consumed,
	// except that an ambiguous failure (the store may have applied the
	// change but the answer was lost) may skip a range: IDs are lost, never
	// issued twice.
	Allocate(ctx context.Context, tag string, step int64) (Allocation, error)

	// Tag returns one tag, or ErrTagNotFound.
	Tag(ctx context.Context, name string) (Tag, error)

	// Tags returns every tag, ordered by name.
	Tags(ctx context.Context) ([]Tag, error)

	// CreateTag creates t (see Tag.Validate) and returns it as stored. It
	// returns ErrTagExists if a tag of that name exists, whatever its fields.
	CreateTag(ctx context.Context, t Tag) (Tag, error)

	// UpdateTag applies u (see TagUpdate.Apply) atomically and returns the
	// tag as stored. It returns ErrTagNotFound, ErrInvalidArgument, or
	// ErrWouldReissue when u would lower max_id.
	UpdateTag(ctx context.Context, name string, u TagUpdate) (Tag, error)

	// DeleteTag removes the tag, or returns ErrTagNotFound. Creating it again
	// later starts from the new max_id, so IDs handed out before the delete
	// can be issued again: deletion is an operator's decision.
	DeleteTag(ctx context.Context, name string) error

	// Close releases the store's connections. Calls after Close return
	// ErrClosed.
	Close() error
}

// SequenceStore is an optional capability of a SegmentStore: the store call
// of a sequence tag (ModeSequence), when the store has a mechanism of its own
// for it (a PostgreSQL or MariaDB sequence, MySQL's LAST_INSERT_ID). A store
// without it serves sequence tags with Allocate(tag, n).
//
// AllocateIDs takes up to n IDs of tag in one atomic operation of the store
// that starts after the call does, and returns them in increasing order as
// ranges (several when other callers' values interleave). It returns at
// least one ID; a multi-store may return fewer than n, and the caller asks
// again for the rest. Errors are Allocate's, and ErrNotSequence when the tag
// is not a sequence tag. A store that implements it may refuse Allocate for
// a sequence tag (ErrNotLeasable): its IDs have one source, this call.
type SequenceStore interface {
	AllocateIDs(ctx context.Context, tag string, n int64) ([]Range, error)
}

// TailReturner is an optional capability of a SegmentStore: giving back the
// unused end of a segment at a clean shutdown (Leaf #15), so that a restart
// does not burn a segment per node.
//
// ReturnTail sets the max_id of the segment tag tag to from if it is to
// now and the tag's stored mapping is still mapping (the segment's
// Allocation.Mapping), in one atomic compare-and-set, and reports whether
// it did. The caller guarantees that no ID in [from, to) was handed out
// and none will be. A sequence tag's max_id is never changed.
//
// The mapping is part of the compare because max_id alone can come back
// to to: a change of mapping from plain to Mist lowers max_id (it holds
// the Mist counter, MappingFloor), and the counter then climbs through
// the values max_id held before. A plain tail given back when the Mist
// counter stands at its end would hand the counters above from out twice
// (issue 67).
type TailReturner interface {
	ReturnTail(ctx context.Context, tag string, from, to int64, mapping string) (bool, error)
}

// DeletionCounter is an optional capability of a SegmentStore: how many
// times a tag of a name was deleted in it (DeleteTag, DeleteTagAt), counted
// in the same atomic operation as the delete and kept after it. A tag
// deleted and created again starts from the max_id it is created with,
// below the IDs handed out before: a node that remembers those IDs
// (segment.Guard) reads the count to tell that deliberate lowering from a
// store that lost writes, where the count goes back with the rest.
type DeletionCounter interface {
	// Deletions returns how many times tag was deleted: 0 for a tag never
	// deleted, or never created.
	Deletions(ctx context.Context, tag string) (int64, error)
	// RaiseDeletions sets the count of tag to n where it is below n, in
	// one atomic operation: the re-arm of a store that lost writes, whose
	// counts went back with them (segment.Rearm), gives each the highest a
	// node saw.
	RaiseDeletions(ctx context.Context, tag string, n int64) error
}

// DeletionsOf is s.Deletions where s is a DeletionCounter; ok is false
// when it is not (the store counts no deletions).
func DeletionsOf(ctx context.Context, s SegmentStore, tag string) (n int64, ok bool, err error) {
	if d, is := s.(DeletionCounter); is {
		n, err = d.Deletions(ctx, tag)
		return n, true, err
	}
	return 0, false, nil
}

// SequenceIDs takes up to n IDs of the sequence tag tag from s: its
// AllocateIDs where s is a SequenceStore, else Allocate(tag, n), which every
// store does atomically. Wrappers of stores forward through it.
func SequenceIDs(ctx context.Context, s SegmentStore, tag string, n int64) ([]Range, error) {
	if ss, ok := s.(SequenceStore); ok {
		return ss.AllocateIDs(ctx, tag, n)
	}
	a, err := s.Allocate(ctx, tag, n)
	if err != nil {
		return nil, err
	}
	return []Range{a.Range}, nil
}

// Clock is the time source of the engines, injected so tests can move time
// without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock of the machine.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// TagPager is an optional capability of a SegmentStore: its tags a page at
// a time, so that a store of a million tags is listed without reading them
// all at once. Every store of this module has it.
type TagPager interface {
	// TagsAfter returns at most limit tags whose names come after after
	// ("" for the first page), in the store's order of names: bytes, or a
	// database's collation, the same from page to page. The last name of
	// a page is the next page's after; a page shorter than limit is the
	// last.
	TagsAfter(ctx context.Context, after string, limit int) ([]Tag, error)
}

// TagsAfter is a page of s's tags (see TagPager): one read of a TagPager,
// or a page cut from s.Tags for a store that is not one.
func TagsAfter(ctx context.Context, s SegmentStore, after string, limit int) ([]Tag, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: a page of tags needs a limit of at least 1, not %d", ErrInvalidArgument, limit)
	}
	if p, ok := s.(TagPager); ok {
		return p.TagsAfter(ctx, after, limit)
	}
	all, err := s.Tags(ctx)
	if err != nil {
		return nil, err
	}
	return PageOf(all, after, limit), nil
}

// PageOf is the page of tags, ordered by name in bytes, after after.
func PageOf(tags []Tag, after string, limit int) []Tag {
	i, found := slices.BinarySearchFunc(tags, after, func(t Tag, name string) int { return strings.Compare(t.Name, name) })
	if found {
		i++
	}
	return tags[i:min(len(tags), i+max(limit, 0))]
}

// Pinger is an optional capability of a store or registry: Ping checks that
// the backend answers, for readiness probes.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Worker is a snowflake worker ID held by this node.
type Worker struct {
	// ID is the worker (node) ID.
	ID int64
	// LastIssued is the last time any earlier holder of this ID may have
	// issued IDs with it (zero if none). The generator must not issue IDs of
	// earlier ticks.
	LastIssued time.Time
	// Lost is closed when the registry stops vouching that this node holds
	// ID (a lease or session expired, another node took the ID): the node
	// must stop issuing snowflake IDs until it holds an ID again. Nil means
	// the hold cannot be lost (file and static registries).
	Lost <-chan struct{}
	// FromCache is set when the registry could not be reached and the ID
	// comes from the node's local record of its last assignment.
	FromCache bool
	// Claim names this holding of the ID in the registry (a random token),
	// "" if the registry has none. The local record keeps it so that a
	// restart of this process, proved by the record's lock, continues the
	// claim: its ID from its exact time, at once, without waiting for the
	// claim's lease to run out (registry.Protocol.Resume).
	Claim string
}

// WorkerRegistry gives this node a snowflake worker ID that no other live
// node holds, and keeps the last time the node issued IDs so that neither a
// restart nor the next holder of the ID ever reuses a timestamp.
//
// Rules every registry keeps (the conformance suite in storetest checks them):
//   - Two live nodes never hold one ID. When every ID is taken, Acquire
//     fails with ErrNoWorkerID; it never wraps around.
//   - An ID whose holder is gone is given to another node only once that
//     node's clock is past the last time recorded for the ID plus the
//     recycle delay (registry.Options.RecycleAfter), and Worker.LastIssued
//     carries that time.
//   - Registries that assign by node identity (host:port) give a restarting
//     node its earlier ID back while the ID has not been recycled.
type WorkerRegistry interface {
	// Acquire returns a worker ID for this node, between 0 and maxNode, with
	// the last time it was used. It returns an error wrapping ErrNoWorkerID
	// when every ID is taken or the configured one is unusable, and one
	// wrapping ErrStoreUnavailable when the registry cannot be reached or the
	// ID is still held by an earlier run of this node (retry later). After
	// Worker.Lost is closed, Acquire may be called again.
	Acquire(ctx context.Context, maxNode int64) (Worker, error)
	// Save records last as the latest time the node may issue IDs up to.
	// Registries keep the latest of the times saved. A nil error means the
	// time is durable where the next holder of the ID will look. It returns
	// an error wrapping ErrWorkerLost when the node no longer holds the ID.
	Save(ctx context.Context, last time.Time) error
	// Close releases the worker ID (registries that lease) and resources.
	Close() error
}

// PeerOffset is how far a live peer's clock is ahead of this node's clock
// (negative: behind), as a registry measured it.
type PeerOffset struct {
	Peer   string        // the peer's identity (host:port) and worker ID
	Offset time.Duration // peer's clock minus this node's clock
}

// PeerClock is an optional capability of registries that see their live
// peers (ZooKeeper, etcd). PeerOffsets measures the clock of every live peer
// other than this node, so a node can refuse to issue snowflake IDs while
// its clock is far from its peers' average (Leaf's design). It may take up
// to a few report intervals. It must be called only while the node holds an
// ID.
type PeerClock interface {
	PeerOffsets(ctx context.Context) ([]PeerOffset, error)
}

// Releaser is an optional capability of a WorkerRegistry. On a clean
// shutdown, once the generator has stopped, Release records last as the
// node's last time even if an earlier Save recorded a later (reserved) time,
// so the next start need not wait for the reservation to pass.
type Releaser interface {
	Release(ctx context.Context, last time.Time) error
}

// Warner is an optional capability of a store or registry: Warnings lists
// risks the operator accepted (for example a Redis without persistence),
// shown by readiness checks.
type Warner interface {
	Warnings() []string
}
