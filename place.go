package frond

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Place is where a store stands in a set of stores that share one ID space
// (segment.Multi, seed 000's "several instances with offset and step"): the
// store hands out only the IDs congruent to Residue modulo Of. The place is
// recorded in the store itself, written by the command that changes the set
// (frond stores set), and every allocation checks it in the same atomic
// operation that raises max_id (PlacedStore.AllocateAt): a node whose view
// of the set is another (another residue, another number of stores, an
// older set) gets nothing from the store.
//
// The zero Place is a store that stands alone: it hands out every ID.
type Place struct {
	Residue int64 // the store's IDs are those ≡ Residue (mod Of)
	Of      int64 // how many stores the set holds (1: the set's only store); 0 when the store stands alone, never placed (or is retired)
	Gen     int64 // the set's generation, raised by every change of the set
	// Change is the identity of the change of the set that wrote this
	// place (segment.ChangeSet): two changes that picked the same
	// generation are told apart by it. "" for a store alone, never placed.
	Change string
	// Next is the generation a change of the set under way will give the
	// store, 0 when none is: while it is set the store hands out no ID to
	// anyone (a fence), since no node asks at a place with Next set.
	Next int64
	// Move is the change under way (set with Next): its identity and the
	// stores it places and retires, so that it can be finished or
	// abandoned exactly as it was begun, and by nothing else.
	Move Move
	// Lost is set when a node found that the store lost acknowledged
	// writes (it answered an allocation below a range it gave that node
	// before: segment.Guard): a fence for every node, whatever its data
	// directory, until an operator re-arms the store (frond stores
	// rearm). It names the finding (LostFinding): when, and the tag.
	Lost string
}

// maxLostLen bounds Place.Lost, so that a place with a change under way
// and a finding fits the 255 bytes a store keeps it in.
const maxLostLen = 48

// LostFinding is the Lost of a place fenced by a node that found, at unix
// time sec, that the store answered tag below a range it gave before:
// "1764400000@order" (the tag cut to fit).
func LostFinding(sec int64, tag string) string {
	s := strconv.FormatInt(sec, 10) + "@" + tag
	if len(s) > maxLostLen {
		s = s[:maxLostLen]
	}
	return s
}

// Rearmed is p without its lost-data fence (Lost): the place a re-armed
// store is given back.
func (p Place) Rearmed() Place { p.Lost = ""; return p }

// Move is a change of the set of stores under way, as its fence records it
// in every store it fenced.
type Move struct {
	Change string // the change's identity (NewIdentity)
	// Run is the identity of the run of the change (frond stores set, or
	// its rerun or abandon) that wrote this fence: a fence taken off and
	// written again by another run reads differently, so a run's
	// compare-and-set from the fence it read cannot succeed on it.
	Run    string
	Set    string // the identities of the stores of the new set (PlacedStore.Identity), in residue order, comma-separated
	Retire string // the identities of the stores it retires, comma-separated
	// Raised is set once the change has raised every store of its new
	// set, before it writes the first new place: from then on the change
	// can only be finished, never undone (a store it placed may serve,
	// and a later change may have replaced that place).
	Raised bool
	// Abandon is set on the first store's fence before an abandon puts
	// any store back at its old place: from then on the change can only
	// be abandoned. That fence is marked one way (Raised: the commit) or
	// the other, never both, each by compare-and-set from the unmarked
	// fence, so a rerun and an abandon running at once cannot both go
	// through.
	Abandon bool
}

// Stores returns the identities of the stores of m's new set and of those it
// retires.
func (m Move) Stores() (set, retire []string) {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return split(m.Set), split(m.Retire)
}

// MaxSetStores is how many stores a change of the set names at most (its
// new set and the stores it retires together): a fence records each by its
// identity, in a place that fits 255 bytes.
const MaxSetStores = 16

// identityLen is the length of the identities NewIdentity makes: 8
// characters of base32 (40 bits).
const identityLen = 8

// NewIdentity returns a random identity for a store or a change of the set:
// 8 characters of lowercase base32 (a-z, 2-7).
func NewIdentity() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// ValidIdentity reports whether s is an identity as NewIdentity makes them
// (1 to 16 characters of a-z and 2-7; frond makes 8).
func ValidIdentity(s string) bool {
	if len(s) == 0 || len(s) > 2*identityLen {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Alone reports whether p is the place of a store that stands alone: the
// zero Place.
func (p Place) Alone() bool { return p == Place{} }

// Retired reports whether p is the place of a store a change of the set
// retired (Of 0 at a generation above 0): no node asks at it, so the store
// hands out nothing until a change places it again.
func (p Place) Retired() bool { return p.Of == 0 && p.Gen > 0 }

// Moving reports whether a change of the set is under way at p.
func (p Place) Moving() bool { return p.Next != 0 }

// Settled is p with no change under way: the place a node asks at.
func (p Place) Settled() Place { p.Next, p.Move = 0, Move{}; return p }

// Fenced reports whether a node found that the store lost acknowledged
// writes (Lost): no node allocates from it until it is re-armed.
func (p Place) Fenced() bool { return p.Lost != "" }

// Set names the set p is a member of (or was retired from): its generation
// and the change that made it, "generation 4 (change abcd2345)".
func (p Place) Set() string {
	if p.Change == "" {
		return fmt.Sprintf("generation %d", p.Gen)
	}
	return fmt.Sprintf("generation %d (change %s)", p.Gen, p.Change)
}

// String encodes p as it is stored: "" for a store alone, "r/K@g#c" for a
// member of a set placed by change c ("r/K@g" before changes had
// identities), with ">n#x/r:set;retire" appended while change x to
// generation n is under way, fenced by its run r ("0/0@0>n#x/r:..." for a
// store alone being moved into a
// set), and "!" after it once the change has raised its stores ("~" once
// it is being abandoned); "|lost:finding" last when a node found the
// store lost acknowledged writes (Lost).
func (p Place) String() string {
	if p == (Place{}) {
		return ""
	}
	lost := ""
	if p.Lost != "" {
		lost = "|lost:" + p.Lost
	}
	s := fmt.Sprintf("%d/%d@%d", p.Residue, p.Of, p.Gen)
	if p.Change != "" {
		s += "#" + p.Change
	}
	if p.Next != 0 {
		s += ">" + strconv.FormatInt(p.Next, 10) + "#" + p.Move.Change + "/" + p.Move.Run + ":" + p.Move.Set + ";" + p.Move.Retire
		if p.Move.Raised {
			s += "!"
		}
		if p.Move.Abandon {
			s += "~"
		}
	}
	return s + lost
}

// FencePrefix is the beginning of String of a fence (Next set) that every
// fence of the same change at the same store shares, whatever run wrote
// it and however it is marked: the place before the change, the change's
// generation and identity ("0/2@3#abcd2345>4#efgh6789/"). "" when p is no
// fence.
func (p Place) FencePrefix() string {
	if p.Next == 0 {
		return ""
	}
	s := p.Rearmed().String()
	return s[:strings.Index(s, ">")] + ">" + strconv.FormatInt(p.Next, 10) + "#" + p.Move.Change + "/"
}

// Describe is p for people: "alone", "residue 1 of 3 (generation 4,
// change abcd2345)", with what a change under way will do.
func (p Place) Describe() string {
	s := "alone"
	change := ""
	if p.Change != "" {
		change = ", change " + p.Change
	}
	switch {
	case p.Retired():
		s = fmt.Sprintf("retired by the change to generation %d%s", p.Gen, change)
	case p.Of == 1:
		s = fmt.Sprintf("the only store of the set (generation %d%s)", p.Gen, change)
	case p.Of > 0:
		s = fmt.Sprintf("residue %d of %d (generation %d%s)", p.Residue, p.Of, p.Gen, change)
	}
	if p.Next != 0 {
		set, retire := p.Move.Stores()
		s += fmt.Sprintf(", fenced: change %s to generation %d is under way (stores %s", p.Move.Change, p.Next, strings.Join(set, " "))
		if len(retire) > 0 {
			s += ", retiring " + strings.Join(retire, " ")
		}
		s += ")"
		if p.Move.Raised {
			s += ", raised: it can only be finished"
		}
		if p.Move.Abandon {
			s += ", being abandoned: it can only be abandoned"
		}
	}
	if p.Lost != "" {
		sec, tag, _ := strings.Cut(p.Lost, "@")
		when := sec
		if n, err := strconv.ParseInt(sec, 10, 64); err == nil {
			when = time.Unix(n, 0).UTC().Format(time.RFC3339)
		}
		found := fmt.Sprintf("tag %q below a range it gave that node before", tag)
		rearm := "frond stores rearm"
		if sp := LostFindingSpace(p.Lost); sp != "" {
			found = fmt.Sprintf("keyed sequence space %q below a maximum that node raised a section to or read", sp)
			rearm = "frond space rearm " + sp + ", then frond stores rearm if the store keeps segment tags"
		}
		s += fmt.Sprintf(", fenced for lost data: at %s a node found that the store answered %s "+
			"(a fail-over to a replica behind, a restored backup, a Redis restarted empty); no node allocates from it until it is re-armed (%s, docs/operations.md#a-store-that-went-back)", when, found, rearm)
	}
	return s
}

// Validate checks that p is a place: 0 <= Residue < Of, or a store alone
// (Of 0, Residue 0); Gen >= 0, and at least 1 in a set; Next 0 or above
// Gen; identities where they belong (a change for every place but alone, a
// Move exactly while Next is set, naming at least one store of the new
// set and at most MaxSetStores in all).
func (p Place) Validate() error {
	switch {
	case p.Of == 0 && p.Residue != 0, p.Of < 0, p.Of > 0 && (p.Residue < 0 || p.Residue >= p.Of || p.Gen < 1):
		return fmt.Errorf("%w: place %q: residue %d of %d stores", ErrInvalidArgument, p.String(), p.Residue, p.Of)
	case p.Gen < 0, p.Next != 0 && p.Next <= p.Gen:
		return fmt.Errorf("%w: place %q: generation %d, next %d", ErrInvalidArgument, p.String(), p.Gen, p.Next)
	case p.Change != "" && !ValidIdentity(p.Change), p.Change != "" && p.Gen == 0:
		return fmt.Errorf("%w: place %q: change %q", ErrInvalidArgument, p.String(), p.Change)
	case p.Next == 0 && p.Move != Move{}:
		return fmt.Errorf("%w: place %q: a change under way without its generation", ErrInvalidArgument, p.String())
	case len(p.Lost) > maxLostLen || p.Lost != "" && (ValidateTagName(p.Lost) != nil || p.Next != 0):
		return fmt.Errorf("%w: place %q: a lost-data finding of 1 to %d letters, digits and - _ . : @, on a place with no change under way", ErrInvalidArgument, p.String(), maxLostLen)
	}
	if p.Next == 0 {
		return nil
	}
	set, retire := p.Move.Stores()
	ids := append(slices.Clip(set), retire...)
	ok := ValidIdentity(p.Move.Change) && ValidIdentity(p.Move.Run) && len(set) > 0 && len(ids) <= MaxSetStores && !(p.Move.Raised && p.Move.Abandon)
	for i, id := range ids {
		ok = ok && ValidIdentity(id) && !slices.Contains(ids[:i], id)
	}
	if !ok {
		return fmt.Errorf("%w: place %q: the change under way must have an identity and name 1 to %d distinct stores", ErrInvalidArgument, p.String(), MaxSetStores)
	}
	return nil
}

// ParsePlace decodes what Place.String wrote.
func ParsePlace(s string) (Place, error) {
	if s == "" {
		return Place{}, nil
	}
	bad := fmt.Errorf("%w: place %q: want r/K@g#change, with >n#change/run:set;retire while a change is under way, |lost:finding when fenced for lost data", ErrInvalidArgument, s)
	s0 := s
	s, lost, _ := strings.Cut(s, "|lost:")
	rest, fence, moving := strings.Cut(s, ">")
	rest, change, _ := strings.Cut(rest, "#")
	rk, g, ok := strings.Cut(rest, "@")
	r, k, ok2 := strings.Cut(rk, "/")
	if !ok || !ok2 {
		return Place{}, bad
	}
	p := Place{Change: change, Lost: lost}
	var errs [4]error
	p.Residue, errs[0] = strconv.ParseInt(r, 10, 64)
	p.Of, errs[1] = strconv.ParseInt(k, 10, 64)
	p.Gen, errs[2] = strconv.ParseInt(g, 10, 64)
	if moving {
		n, move, ok := strings.Cut(fence, "#")
		xr, stores, ok2 := strings.Cut(move, ":")
		x, run, ok4 := strings.Cut(xr, "/")
		set, retire, ok3 := strings.Cut(stores, ";")
		retire, abandon := strings.CutSuffix(retire, "~")
		retire, raised := strings.CutSuffix(retire, "!")
		p.Next, errs[3] = strconv.ParseInt(n, 10, 64)
		p.Move = Move{Change: x, Run: run, Set: set, Retire: retire, Raised: raised, Abandon: abandon}
		if !ok || !ok2 || !ok3 || !ok4 || errs[3] == nil && p.Next == 0 {
			errs[3] = bad
		}
	}
	if errors.Join(errs[:]...) != nil {
		return Place{}, bad
	}
	if err := p.Validate(); err != nil {
		return Place{}, err
	}
	if p.String() != s0 { // one spelling per place: "+1", "01" are not it
		return Place{}, bad
	}
	return p, nil
}

// ErrWrongPlace means a store refused an allocation because its recorded
// place is not the one the node asked at (PlacedStore.AllocateAt): the set
// of stores changed, or the node lists the store in a set it is not part
// of, or the store is fenced by a change under way. It wraps
// ErrStoreUnavailable: the node's other stores carry on.
var ErrWrongPlace = fmt.Errorf("%w: the store is not at the place this node asked at", ErrStoreUnavailable)

// ErrPlaceChanged means a compare-and-set of a store's place found another
// place (PlacedStore.SwapPlace): another change of the set ran at once.
var ErrPlaceChanged = errors.New("the store's place changed meanwhile")

// WrongPlace is the error of an allocation refused at place want by a store
// whose place is got.
func WrongPlace(got, want Place) error {
	if got.Fenced() {
		return fmt.Errorf("%w (%w): the store is %s", ErrStoreLostData, ErrWrongPlace, got.Describe())
	}
	return fmt.Errorf("%w: the store is %s, this node asked as %s: "+
		"every node reads the set from the stores (docs/stores.md); a change of the set fences the stores until it is done",
		ErrWrongPlace, got.Describe(), want.Describe())
}

// PlaceKeeper reads and swaps a store's place: a PlacedStore, and the
// keyed sequence stores (package keyseq) kept in the same database, Redis
// or etcd, which read the same place, so that a lost-data fence (Lost)
// written by either is one fact for both (issue 68).
type PlaceKeeper interface {
	// Place reads the store's place (the zero Place when none is recorded).
	Place(ctx context.Context) (Place, error)
	// SwapPlace sets the store's place to p if it is old now, else returns
	// an error wrapping ErrPlaceChanged.
	SwapPlace(ctx context.Context, old, p Place) error
}

// FenceLost writes finding (LostFinding) into the place of s as its
// lost-data fence, for every node: nil once the place is fenced, by this
// call or an earlier one. A place with a change of the set under way is
// not fenced (the change fences the store already; ErrPlaceChanged says
// so). It is the one way a node that found a store went back, from a
// segment tag (segment.Guard) or a keyed sequence section (keyseq.Node),
// fences it.
func FenceLost(ctx context.Context, s PlaceKeeper, finding string) error {
	var err error
	for range 3 {
		var p Place
		if p, err = s.Place(ctx); err != nil {
			continue
		}
		switch {
		case p.Fenced():
			return nil
		case p.Moving():
			return fmt.Errorf("%w: a change of the set is under way at it: %s", ErrPlaceChanged, p.Describe())
		}
		lost := p
		lost.Lost = finding
		if err = s.SwapPlace(ctx, p, lost); err == nil {
			return nil
		}
	}
	return err
}

// LiftLost takes the lost-data fence off the place of s if it is the one
// of finding (nothing else changed meanwhile): what a re-arm does last.
// It reports whether a fence was lifted.
func LiftLost(ctx context.Context, s PlaceKeeper, finding string) (bool, error) {
	p, err := s.Place(ctx)
	if err != nil || p.Lost != finding || finding == "" {
		return false, err
	}
	if err := s.SwapPlace(ctx, p, p.Rearmed()); err != nil {
		return false, err
	}
	return true, nil
}

// LostSpace is the name a lost-data finding of a keyed sequence space
// gives (LostFinding's tag): "seq:" and the space's name. A finding is
// of a space when LostFindingSpace finds one in it.
func LostSpace(space string) string { return "seq:" + space }

// LostFindingSpace is the space a finding names ("" when it names a
// segment tag): "1764400000@seq:msgs" is space "msgs". A name cut to fit
// the place is returned cut (FindingOfSpace tells whether it is a given
// space's).
func LostFindingSpace(finding string) string {
	_, what, _ := strings.Cut(finding, "@")
	space, ok := strings.CutPrefix(what, "seq:")
	if !ok {
		return ""
	}
	return space
}

// FindingOfSpace reports whether finding is keyed sequence space's: it
// names the space, or, cut to fit the place (maxLostLen), the beginning of
// its name.
func FindingOfSpace(finding, space string) bool {
	got := LostFindingSpace(finding)
	if got == "" {
		return false
	}
	return got == space || len(finding) == maxLostLen && strings.HasPrefix(space, got)
}

// PlacedStore is a store that records its place in a set of stores and
// checks it on every allocation. Every store of frond's is one; a
// segment.Multi uses only stores that are.
//
// The check and the raise of max_id are one atomic operation, and a
// SwapPlace waits for allocations in flight (or they for it): an
// allocation either ends before the swap, and a reader of max_id after the
// swap sees it, or it sees the new place and is refused. This is what
// makes a change of the set safe (frond stores set): fence every store,
// then read every max_id, raise them, and write the new places.
//
// Allocate, and AllocateIDs where the store has it, are AllocateAt and
// AllocateIDsAt at the zero Place: a store that is part of a set refuses
// them.
type PlacedStore interface {
	SegmentStore
	PlaceKeeper
	// Identity returns the store's identity: a string made by NewIdentity
	// and recorded in the store by the first call (atomically: every
	// caller gets the same), the same on every later call, from any
	// client. A change of the set records its stores by identity, so that
	// it is finished with exactly the stores it began with.
	Identity(ctx context.Context) (string, error)
	// AllocateAt is Allocate, done only if the store's place is at (with
	// no change under way), checked in the same atomic operation; else an
	// error wrapping ErrWrongPlace and nothing is taken. At the zero Place
	// (a store alone) it is also done by the only store of a set (Of 1):
	// CheckPlace is the rule.
	AllocateAt(ctx context.Context, at Place, tag string, step int64) (Allocation, error)
	// AllocateIDsAt is SequenceStore.AllocateIDs at a place, as AllocateAt.
	AllocateIDsAt(ctx context.Context, at Place, tag string, n int64) ([]Range, error)
	// CreateTagAt, UpdateTagAt and DeleteTagAt are CreateTag, UpdateTag
	// and DeleteTag done only if the store's place is at, checked in the
	// same atomic operation (CheckTagPlace), else an error wrapping
	// ErrWrongPlace and nothing changed: a tag of a set is administered
	// under the set's fence, like its allocations (issue 57), so a node
	// whose view of the set is another, or a change of the set under way,
	// changes no copy of a tag behind the others' backs. CreateTag,
	// UpdateTag and DeleteTag are these at the zero Place.
	CreateTagAt(ctx context.Context, at Place, t Tag) (Tag, error)
	UpdateTagAt(ctx context.Context, at Place, name string, u TagUpdate) (Tag, error)
	DeleteTagAt(ctx context.Context, at Place, name string) error
}

// CheckTagPlace is the check of tag administration at place at
// (PlacedStore.CreateTagAt, UpdateTagAt, DeleteTagAt) for a store whose
// place reads got: CheckPlace, and also a fence of the same change (the
// change of the set that fenced the store raises and creates tags in it;
// no node asks at a fence): got begins with at's FencePrefix, whichever
// run of the change wrote the fence and however it is marked; and a
// lost-data fence (Place.Lost) at exactly the place read, which the
// re-arm of the store raises tags under.
func CheckTagPlace(got string, at Place) error {
	if at.Fenced() && got == at.String() {
		return nil // the re-arm raises tags at the lost-data fence it read (frond stores rearm)
	}
	if at.Next == 0 {
		return CheckPlace(got, at)
	}
	if strings.HasPrefix(got, at.FencePrefix()) {
		return nil
	}
	p, err := ParsePlace(got)
	if err != nil {
		return fmt.Errorf("%w: the store's place reads %q: %v", ErrWrongPlace, got, err)
	}
	return WrongPlace(p, at)
}

// CreateTagAt is s.CreateTagAt where s is a PlacedStore; a store that
// keeps no place stands alone: at the zero Place it is s.CreateTag, at any
// other it refuses with ErrWrongPlace. Wrappers of stores forward through
// it, as through UpdateTagAt and DeleteTagAt.
func CreateTagAt(ctx context.Context, s SegmentStore, at Place, t Tag) (Tag, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.CreateTagAt(ctx, at, t)
	}
	if err := CheckTagPlace("", at); err != nil {
		return Tag{}, err
	}
	return s.CreateTag(ctx, t)
}

// UpdateTagAt is s.UpdateTagAt, as CreateTagAt.
func UpdateTagAt(ctx context.Context, s SegmentStore, at Place, name string, u TagUpdate) (Tag, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.UpdateTagAt(ctx, at, name, u)
	}
	if err := CheckTagPlace("", at); err != nil {
		return Tag{}, err
	}
	return s.UpdateTag(ctx, name, u)
}

// DeleteTagAt is s.DeleteTagAt, as CreateTagAt.
func DeleteTagAt(ctx context.Context, s SegmentStore, at Place, name string) error {
	if ps, ok := s.(PlacedStore); ok {
		return ps.DeleteTagAt(ctx, at, name)
	}
	if err := CheckTagPlace("", at); err != nil {
		return err
	}
	return s.DeleteTag(ctx, name)
}

// CheckPlace is AllocateAt's check, for a store whose place reads got
// (Place.String): nil if it is at, else why not.
func CheckPlace(got string, at Place) error {
	if at.Next != 0 {
		return fmt.Errorf("%w: an allocation at place %q, during a change of the set", ErrInvalidArgument, at.String())
	}
	if at.Fenced() { // no node allocates at a lost-data fence: the re-arm raises tags (CheckTagPlace)
		return WrongPlace(at, at.Rearmed())
	}
	if got == at.String() {
		return nil
	}
	p, err := ParsePlace(got)
	if err != nil {
		return fmt.Errorf("%w: the store's place reads %q: %v", ErrWrongPlace, got, err)
	}
	if at.Alone() && p.Of == 1 && !p.Moving() && !p.Fenced() {
		return nil // the only store of its set: every ID is its, as for a store alone
	}
	return WrongPlace(p, at)
}

// AllocateAt is s.AllocateAt where s is a PlacedStore. A store that keeps
// no place stands alone: at the zero Place it is s.Allocate, at any other
// it refuses with ErrWrongPlace. Wrappers of stores forward through it.
func AllocateAt(ctx context.Context, s SegmentStore, at Place, tag string, step int64) (Allocation, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.AllocateAt(ctx, at, tag, step)
	}
	if err := CheckPlace("", at); err != nil {
		return Allocation{}, err
	}
	return s.Allocate(ctx, tag, step)
}

// SequenceIDsAt is SequenceIDs at a place, as AllocateAt.
func SequenceIDsAt(ctx context.Context, s SegmentStore, at Place, tag string, n int64) ([]Range, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.AllocateIDsAt(ctx, at, tag, n)
	}
	if err := CheckPlace("", at); err != nil {
		return nil, err
	}
	return SequenceIDs(ctx, s, tag, n)
}

// IdentityOf returns the identity of s (PlacedStore.Identity), or an error
// wrapping ErrInvalidArgument when s keeps no place.
func IdentityOf(ctx context.Context, s SegmentStore) (string, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.Identity(ctx)
	}
	return "", fmt.Errorf("%w: the store keeps no place: it cannot be part of a set of stores", ErrInvalidArgument)
}

// PlaceOf reads the place of s: the zero Place (alone) when s keeps none.
func PlaceOf(ctx context.Context, s SegmentStore) (Place, error) {
	if ps, ok := s.(PlacedStore); ok {
		return ps.Place(ctx)
	}
	return Place{}, nil
}
