package service

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strconv"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/segment"
)

// More kinds of request, beside KindSegment and KindSnowflake.
const (
	KindUUID   = "uuid"
	KindSerial = "serial"
	// KindSeq is the next value(s) of a key in a keyed sequence space
	// (Request.Name the space, Request.Key the key): docs/sequences.md.
	KindSeq = "seq"
)

// Request asks for IDs of one kind, whatever the protocol it came in. Front
// ends decode into a Request, call Take (or only Check, for a request that
// must not take IDs, such as HTTP HEAD) and encode the Answer: the rules of
// a request are written here once.
type Request struct {
	// Kind is KindSegment, KindSnowflake, KindUUID, KindSerial or KindSeq.
	Kind string
	// Name is the segment tag, the serial's name, or the name of a
	// name-based UUID (versions 3 and 5).
	Name string
	// Namespace of a name-based UUID: dns, url, oid, x500 or a UUID.
	Namespace string
	// Count is how many IDs; 0 means one, answered as a single ID. At most
	// MaxBatch, or MaxRangesBatch with Ranges.
	Count int64
	// Form of segment and snowflake IDs (FormNumber, FormBase62, ...). Empty
	// means the tag's configured form (Config.Forms), else FormNumber.
	// UUIDs of version 7 have FormTypeID; serials have no forms.
	Form string
	// Prefix goes before text IDs and an underscore ("ord_2XgH4..."): of
	// segment and snowflake IDs in a text form (empty: the tag's
	// configured prefix, Config.Prefixes), and of UUIDs in FormTypeID.
	Prefix string
	// Ranges answers segment IDs as ranges of plain numbers.
	Ranges bool
	// Numbers says the protocol answers only numbers (Leaf's API, TinyID's,
	// RESP INCR): a tag whose configured form is text is refused
	// (frond.ErrFormNotCarried), one whose form is numeric (opaque) is
	// answered in it, as numbers (Nums) even when Ranges was asked.
	Numbers bool
	// Version of UUIDs: 1, 3, 4, 5, 6 or 7; 0 means 4.
	Version int
	// Run answers segment IDs as one range from one segment (TinyID's
	// segments): at most Count IDs, fewer when the segment ends first;
	// Count 0 means the tag's step. It implies Ranges.
	Run bool
	// Whole answers exactly Count contiguous segment IDs taken from the
	// store in one allocation, past every ID handed out so far (CosId's
	// segment distributor, whose clients hand out (max-step, max] by
	// themselves: fewer IDs, or a stride, would hand out others' IDs). It
	// implies Run and Lease; a set of stores (strided) cannot serve it.
	Whole bool
	// Token is the caller's tag token, when Config.Tokens is set.
	Token string
	// Lease says the caller hands the IDs out later (the client library's
	// leases): refused for a sequence tag (frond.ErrNotLeasable), whose IDs
	// must come from the store when they are asked for.
	Lease bool
	// IdempotencyKey, chosen by the client, makes a retry within the window
	// get the first answer again instead of new IDs (idempotency.go).
	IdempotencyKey string
	// Key is the key of a keyed sequence (KindSeq): 1 to 255 bytes.
	Key string
	// Forwarded marks a keyed sequence request another node forwarded to
	// this one as the owner of its section: answered here or refused,
	// never forwarded again.
	Forwarded bool
	// Peer marks a keyed sequence request another node of the cluster
	// forwarded and signed (keyseq.Peer, checked by the front door): its
	// caller's token was checked where the caller came in.
	Peer bool
	// Shard (with HasShard) or ShardKey is the shard of the IDs of a tag
	// with shard bits (frond.ShardMapping): every number is the counter
	// moved up by the bits with the shard below, the shard given, or the
	// low bits of frond.KeyHash(ShardKey) (frond.ShardOf). A tag without
	// shard bits refuses them; one with them needs one.
	Shard    int64
	HasShard bool
	ShardKey string
	// Counters marks a lease whose caller applies a tag's shard bits to
	// each ID itself (a client library that knows them): the ranges of a
	// tag with shard bits are then its counters, and ShardBits (set by the
	// service) says how many bits the caller moves each up by, its shard
	// below. Without it such a tag's leases are refused (form_not_carried):
	// a client that does not know shard bits would hand out bare counters.
	Counters  bool
	ShardBits int
}

// MaxShardKey is the longest shard key, in bytes.
const MaxShardKey = 255

// Answer holds the IDs of a request.
type Answer struct {
	// Request is the request as checked, its defaults filled.
	Request Request
	// Form is the form of Strs and Nums (FormNumber for plain numbers).
	Form string
	// Nums are the IDs as numbers, for the numeric forms (FormNumber, and
	// FormOpaque, whose numbers are permuted); nil for the others.
	Nums []int64
	// Strs are the IDs as text in Form: every form but FormNumber (see
	// Texts), and UUIDs and serials.
	Strs []string
	// Ranges are the segment IDs of a Ranges request.
	Ranges []frond.Range
	// Replayed says the answer was given before, to a request with the
	// same idempotency key.
	Replayed bool
	// hold is the answer's place in the node's answer budget (Release).
	hold Hold
}

// Texts are the IDs as text: Strs, or for plain numbers the numbers in
// decimal, made when asked.
func (a Answer) Texts() []string {
	if a.Strs != nil || a.Nums == nil || a.Form != FormNumber {
		return a.Strs
	}
	out := make([]string, len(a.Nums))
	for i, id := range a.Nums {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

// Check validates r completely and fills its defaults (Form, Version),
// without taking an ID: every error a request can get from its input comes
// from here, so a request that is refused has taken nothing.
func (s *Service) Check(r *Request) error {
	limit := int64(MaxBatch)
	switch r.Kind {
	case KindSegment:
		if err := frond.ValidateTagName(r.Name); err != nil {
			return err
		}
		if err := s.checkToken(r.Token, r.Name); err != nil {
			return err
		}
		if r.Whole {
			if r.Count < 1 {
				return fmt.Errorf("%w: a whole segment needs its step, from 1 to %d", frond.ErrInvalidArgument, MaxRangesBatch)
			}
			r.Run, r.Lease = true, true
		}
		if r.Run {
			r.Ranges = true
		}
		if err := s.segmentForm(r); err != nil {
			return err
		}
		if err := s.checkPrefix(r); err != nil {
			return err
		}
		if r.Ranges {
			limit = MaxRangesBatch
		}
	case KindSnowflake:
		if r.Form == "" {
			r.Form = FormNumber
		}
		if err := s.checkForm(KindSnowflake, r.Form); err != nil {
			return err
		}
		if err := s.checkPrefix(r); err != nil {
			return err
		}
	case KindUUID:
		if err := CheckUUID(r); err != nil {
			return err
		}
	case KindSerial:
		if r.Form != "" || r.Prefix != "" {
			return fmt.Errorf("%w: serials have no forms or prefixes: their template is their form", frond.ErrInvalidArgument)
		}
		if _, ok := s.kinds.serials[r.Name]; !ok {
			return serialNotFound(r.Name)
		}
	case KindSeq:
		if err := s.checkSeq(r); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: kind %s: segment, snowflake, uuid, serial or seq", frond.ErrInvalidArgument, Quote(r.Kind))
	}
	if (r.Ranges || r.Run) && r.Kind != KindSegment {
		return fmt.Errorf("%w: only segment IDs come as ranges", frond.ErrInvalidArgument)
	}
	if r.Counters && !r.Lease {
		return fmt.Errorf("%w: counters go with a lease: the client that applies a tag's shard bits hands the IDs out itself", frond.ErrInvalidArgument)
	}
	if err := checkShard(r); err != nil {
		return err
	}
	if r.Kind == KindSnowflake {
		if err := s.fitSnowflakeShard(r); err != nil {
			return err
		}
	}
	if r.Count < 0 || r.Count > limit {
		return fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, r.Count, limit)
	}
	if r.IdempotencyKey != "" {
		return checkIdempotencyKey(r.IdempotencyKey)
	}
	return nil
}

// fitSnowflakeShard checks r's shard against the snowflake layout's shard
// bits (snowflake.shard_bits) as fitShard does against a tag's, and
// refuses the forms that would hide them.
func (s *Service) fitSnowflakeShard(r *Request) error {
	l := s.cfg.Snowflake.Layout
	if err := fitShardBits(r, int(l.ShardBits), func() (string, string) {
		return "the snowflake layout", "layout " + l.Name + ", snowflake.shard_bits 0"
	}); err != nil {
		return err
	}
	if l.ShardBits > 0 && FormMapping(r.Form) != "" {
		return fmt.Errorf("%w: form %s hides the shard bits of snowflake IDs (an opaque number routes nowhere): ask for number, base62 or base32", frond.ErrInvalidArgument, r.Form)
	}
	return nil
}

// checkShard checks a request's shard or shard key, before the tag's
// shard bits are known (fitMapping checks it against them).
func checkShard(r *Request) error {
	if !r.HasShard && r.ShardKey == "" {
		return nil
	}
	switch {
	case r.Kind != KindSegment && r.Kind != KindSnowflake:
		return fmt.Errorf("%w: a shard is for the IDs of a tag or a snowflake layout with shard bits, not %s", frond.ErrInvalidArgument, r.Kind)
	case r.HasShard && r.ShardKey != "":
		return fmt.Errorf("%w: shard or shard_key, not both", frond.ErrInvalidArgument)
	case r.HasShard && (r.Shard < 0 || r.Shard >= 1<<frond.MaxShardBits):
		return fmt.Errorf("%w: shard %d: from 0 to 2^shard_bits-1", frond.ErrInvalidArgument, r.Shard)
	case len(r.ShardKey) > MaxShardKey:
		return fmt.Errorf("%w: shard_key of %d bytes: at most %d", frond.ErrInvalidArgument, len(r.ShardKey), MaxShardKey)
	}
	return nil
}

// segmentForm fills r's form and applies the rule of forms across
// protocols (docs/kinds.md#forms-across-protocols), the one place it is
// written. A request that names no form gets the tag's configured one,
// else FormNumber. The configured form is an operator's decision to hide
// or shorten the tag's IDs: an answer that can carry it does (TinyID's
// list of numbers carries opaque numbers instead of ranges); one that
// cannot is refused, never answered in plain numbers.
func (s *Service) segmentForm(r *Request) error {
	configured := r.Form == ""
	if configured {
		r.Form = s.cfg.Forms[r.Name]
	}
	if r.Form == "" {
		return nil // the form of the tag's mapping, once it is known (fitMapping)
	}
	if err := s.checkForm(KindSegment, r.Form); err != nil {
		return err
	}
	return s.formRules(r, configured)
}

// formRules applies the rule of forms across protocols to r's form, asked
// in the request or configured (the tag's: Config.Forms or its mapping).
func (s *Service) formRules(r *Request, configured bool) error {
	if r.Form == FormNumber {
		return nil
	}
	if !configured { // a form asked for in the request
		if r.Numbers && !Numeric(r.Form) {
			return fmt.Errorf("%w: this API answers numbers: form %s is text", frond.ErrInvalidArgument, Quote(r.Form))
		}
		if r.Ranges {
			return fmt.Errorf("%w: ranges are plain numbers: they cannot be given in form %s", frond.ErrInvalidArgument, Quote(r.Form))
		}
		return nil
	}
	if numbersList(r) {
		return nil
	}
	var what string
	switch {
	case r.Lease:
		what = "a lease is a range of plain numbers that the client hands out itself"
	case r.Run:
		what = "a segment lease is a range of plain numbers that the client hands out itself"
	case r.Numbers && !Numeric(r.Form):
		// Before ranges: TinyID's nextId takes ranges for numbers its
		// caller never asked to be ranges (issue 44, item 8).
		what = "this API answers numbers, and " + r.Form + " is text"
	case r.Ranges:
		what = "ranges are plain numbers"
	default:
		return nil
	}
	// What to do is the code's hint (frond.ErrorCodes), which every
	// protocol adds.
	return fmt.Errorf("%w: tag %s answers in form %s (its configured form), and %s",
		frond.ErrFormNotCarried, Quote(r.Name), Quote(r.Form), what)
}

// numbersList answers TinyID's list of numbers (nextId: ranges asked of
// an API that answers numbers) of a tag whose form is a number but not
// plain: the numbers themselves, in the form, instead of ranges. Such a
// caller cuts its batch to what it serves, as TinyID does: the list is cut
// to MaxBatch, not refused. It reports whether r is such a request (and
// is now the list).
func numbersList(r *Request) bool {
	if !r.Numbers || !Numeric(r.Form) || !r.Ranges || r.Run || r.Lease {
		return false
	}
	r.Ranges = false
	r.Count = min(r.Count, MaxBatch)
	return true
}

// Peek checks r (see Check) and reports whether Take could serve it now,
// without taking an ID: the answer to HTTP HEAD, which must be the status
// a GET would get. A segment tag must exist (or have IDs buffered); a
// snowflake request needs a generator, a clock not behind the worker ID's
// last time, and time reserved in the registry.
func (s *Service) Peek(ctx context.Context, r *Request) error {
	if err := s.Check(r); err != nil {
		return err
	}
	switch r.Kind {
	case KindSegment:
		k, err := s.kindOf(ctx, r.Name)
		if err == nil {
			err = s.fitMapping(r, k.mapping)
		}
		if mode := k.mode; err != nil || mode == frond.ModeSequence {
			if err == nil && (r.Run || r.Lease) {
				err = fmt.Errorf("%w: tag %s is a sequence tag", frond.ErrNotLeasable, Quote(r.Name))
			}
			if err == nil {
				err = s.seq.peek(ctx, r.Name) // served when its store answers
			}
			return err
		}
		for _, st := range s.seg.Stats() {
			if st.Tag == r.Name && st.Ready {
				return nil
			}
		}
		_, err = s.Tag(ctx, r.Name)
		return err
	case KindSnowflake:
		return s.w.Peek()
	}
	return nil
}

// Take checks r (see Check) and only then takes its IDs; a request whose
// ctx has already ended (a caller's deadline passed) takes none. IDs of a
// batch that fails part-way, or whose caller goes away while it waits for
// the store, are valid and unique but are not answered: they are skipped,
// never handed to anyone else.
//
// Before any ID is taken, the answer's most bytes are reserved in the
// node's answer budget (budget): an answer that would not fit is refused
// with frond.ErrOverloaded. The caller writes the answer and then calls
// Answer.Release, whatever happened to the write.
func (s *Service) Take(ctx context.Context, r Request) (Answer, error) {
	if err := s.Check(&r); err != nil {
		return Answer{}, err
	}
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	leasing := s.leasing(&r)
	var asked int64
	if leasing {
		asked = askedIDs(&r)
		if err := s.leases.AllowLease(ctx, asked); err != nil {
			return Answer{}, err
		}
	}
	hold, err := s.budget.reserve(answerBound(&r))
	if err != nil {
		if leasing {
			s.leases.Leased(ctx, -asked)
		}
		return Answer{}, err
	}
	var a Answer
	switch {
	case r.IdempotencyKey != "":
		a, err = s.takeKeyed(ctx, r)
	case r.Kind == KindSegment:
		a, err = s.takeTag(ctx, &r, "", true) // the hot path: one call less
	default:
		a, err = s.take(ctx, &r)
	}
	if err != nil {
		hold.Release()
	}
	if leasing {
		var got int64 // a replay leases nothing new
		if err == nil && !a.Replayed {
			got = leasedIDs(&a)
		}
		s.leases.Leased(ctx, got-asked)
	}
	if a.Request.Kind == "" { // takeTag's is r as fitted to the tag's mapping
		a.Request = r
	}
	a.hold = hold
	return a, err
}

// Release gives the answer's place in the node's answer budget back: its
// front door calls it once the answer is written, or will never be.
func (a *Answer) Release() { a.hold.Release() }

// MoveHoldTo moves the answer's place in the node's answer budget into h,
// adding it to the place h already holds: a front door that writes many
// answers before one flush (RESP's pipelines) gives them back with one
// Release. Places of one node's answers are always in one budget.
func (a *Answer) MoveHoldTo(h *Hold) {
	h.add(&a.hold)
}

// TakeHold moves the answer's place in the node's answer budget out of it,
// for a front door that writes the answer later (gRPC: when its transport
// has sent it), and releases it then; nil when the answer holds none.
func (a *Answer) TakeHold() *Hold {
	if !a.hold.Held() {
		return nil
	}
	h := a.hold
	a.hold = Hold{}
	return &h
}

// takeKeyed is Take of a request with an idempotency key: its own function,
// so that the closure's capture of r does not move every request to the
// heap.
func (s *Service) takeKeyed(ctx context.Context, r Request) (Answer, error) {
	a, err := s.idem.do(ctx, r, s.callerScope(ctx, &r), func() (Answer, error) {
		// Not ended by the caller going away (see idempotency.do), but by
		// Close, and within the store's load timeout.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.loadTimeout())
		defer cancel()
		stop := context.AfterFunc(s.bg.ctx, cancel)
		defer stop()
		return s.take(tctx, &r)
	})
	if a.Request.Kind == "" {
		a.Request = r
	}
	return a, err
}

func (s *Service) take(ctx context.Context, r *Request) (Answer, error) {
	n := max(r.Count, 1)
	switch r.Kind {
	case KindSegment:
		return s.takeTag(ctx, r, "", true)
	case KindSnowflake:
		var ids []int64
		var err error
		if n == 1 {
			var id int64
			id, err = s.w.Next()
			ids = []int64{id}
		} else {
			ids, err = s.w.NextN(int(n))
		}
		if err != nil {
			return Answer{}, err
		}
		if r.HasShard {
			l := s.cfg.Snowflake.Layout
			for i, id := range ids {
				ids[i] = l.WithShard(id, r.Shard)
			}
		}
		return s.answer(KindSnowflake, r.Form, r.Prefix, ids)
	case KindUUID:
		if nameBased(r.Version) {
			u, err := NameUUID(r.Version, r.Namespace, r.Name)
			return Answer{Strs: []string{u.String()}}, err
		}
		strs, err := UUIDs(r.Version, int(n))
		if err == nil && r.Form == FormTypeID {
			err = typeIDs(r.Prefix, strs)
		}
		return Answer{Form: r.Form, Strs: strs}, err
	case KindSeq:
		return s.takeSeq(ctx, r, n)
	default: // KindSerial
		strs, err := s.serials(ctx, r.Name, int(n))
		if err != nil {
			return Answer{}, err
		}
		return Answer{Strs: strs}, nil
	}
}

// takeTag serves a request for IDs of a tag, by its mode (modeOf; or mode,
// when not empty). With learn, a refusal of the store that says the tag
// has the other mode (it was deleted and created again with it by another
// node within modeTTL) is learnt, and the request served by it (misread).
//
// The IDs are handed out in the mapping their segment came with
// (segment.Engine.NextMapped): the request is checked against the tag's
// mapping as this node last read it (fitMapping), and when a segment
// brings another (the tag's mapping changed), the IDs taken are skipped,
// the new mapping learnt, and the request served once more by it.
//
// The answer's Request is r as fitted to the mapping (its form filled,
// TinyID's list of numbers no longer ranges): the caller answers by it.
func (s *Service) takeTag(ctx context.Context, r *Request, mode string, learn bool) (a Answer, err error) {
	defer func() {
		if err == nil && a.Request.Kind == "" {
			a.Request = *r
		}
	}()
	k, err := s.kindOf(ctx, r.Name)
	if err != nil {
		return Answer{}, err
	}
	if mode == "" {
		mode = cmp.Or(k.mode, frond.ModeSegment)
	}
	form, ranges, count := r.Form, r.Ranges, r.Count // what fitMapping fills
	shard, hasShard, shardKey := r.Shard, r.HasShard, r.ShardKey
	if err := s.fitMapping(r, k.mapping); err != nil {
		return Answer{}, err
	}
	n := max(r.Count, 1)
	if mode == frond.ModeSequence {
		a, err := s.takeSequence(ctx, *r, n, k.mapping)
		if err != nil {
			return s.misread(ctx, r, mode, learn, err)
		}
		return a, nil
	}
	var m string
	if r.Whole {
		return s.takeWhole(ctx, r, k.mapping)
	}
	if r.Run {
		if r.Count == 0 {
			if n, err = s.tagStep(ctx, r.Name); err != nil {
				return Answer{}, err
			}
		}
		var rg frond.Range
		if rg, m, err = s.seg.NextRunMapped(ctx, r.Name, n); err == nil && m == k.mapping {
			return Answer{Form: FormNumber, Ranges: []frond.Range{rg}}, nil
		}
	} else if r.Ranges {
		var rs []frond.Range
		if rs, m, err = s.seg.NextNMapped(ctx, r.Name, n); err == nil && m == k.mapping {
			if rs, err = countersFit(r, rs); err != nil {
				return Answer{}, err
			}
			return Answer{Form: FormNumber, Ranges: rs}, nil
		}
	} else if n == 1 {
		var id int64
		if id, m, err = s.seg.NextMapped(ctx, r.Name); err == nil && m == k.mapping {
			return s.tagAnswer(r, m, []int64{id})
		}
	} else {
		var rs []frond.Range
		if rs, m, err = s.seg.NextNMapped(ctx, r.Name, n); err == nil && m == k.mapping {
			ids := make([]int64, 0, n)
			for _, x := range rs {
				ids = x.Append(ids)
			}
			return s.tagAnswer(r, m, ids)
		}
	}
	if err != nil && !errors.Is(err, segment.ErrMappingChanged) {
		return s.misread(ctx, r, mode, learn, err)
	}
	// Another mapping came with a segment: the tag's mapping changed.
	if err == nil {
		s.setKind(r.Name, tagKind{mode, m})
	} else if fresh, rerr := s.store.Tag(ctx, r.Name); rerr == nil {
		s.setTag(fresh)
	}
	if !learn {
		return Answer{}, fmt.Errorf("%w: tag %s: its mapping changed while this request was served; retry", frond.ErrStoreUnavailable, Quote(r.Name))
	}
	s.log.Info("tag mapping learnt from a segment", "tag", r.Name, "was", frond.MappingName(k.mapping), "now", frond.MappingName(m))
	r.Form, r.Ranges, r.Count = form, ranges, count
	r.Shard, r.HasShard, r.ShardKey = shard, hasShard, shardKey // a key's shard by the tag's bits as learnt
	return s.takeTag(ctx, r, mode, false)
}

// takeWhole serves a Whole request: one allocation of r.Count IDs from the
// store, past every segment any node holds, answered only when it is
// exactly that (a plain, contiguous range of the tag's numbers). A range
// that is not is lost (a gap), never handed out.
func (s *Service) takeWhole(ctx context.Context, r *Request, mapping string) (Answer, error) {
	if _, set := s.store.(frond.TagCopier); set {
		// Refused before the store is asked: its segments are strided.
		return Answer{}, fmt.Errorf("%w: tag %s: this node's stores are a set, whose segments are strided; a whole segment is contiguous", frond.ErrInvalidArgument, Quote(r.Name))
	}
	a, err := s.store.Allocate(ctx, r.Name, r.Count)
	if err != nil {
		return s.misread(ctx, r, frond.ModeSegment, true, err)
	}
	switch {
	case segment.MappingChanging(a.Mapping) != nil:
		return Answer{}, fmt.Errorf("tag %s: %w", Quote(r.Name), segment.MappingChanging(a.Mapping))
	case a.Mapping != mapping:
		s.setKind(r.Name, tagKind{frond.ModeSegment, a.Mapping})
		return Answer{}, fmt.Errorf("%w: tag %s: its mapping changed while this request was served; retry", frond.ErrStoreUnavailable, Quote(r.Name))
	case a.Stride > 1 || a.Len() != r.Count:
		return Answer{}, fmt.Errorf("%w: tag %s: the store gave %d IDs for a segment of %d", frond.ErrStoreUnavailable, Quote(r.Name), a.Len(), r.Count)
	}
	return Answer{Form: FormNumber, Ranges: []frond.Range{a.Range}}, nil
}

// misread handles a failed takeTag of mode: with learn, when the store
// said the tag has the other mode, this node learns it and serves the
// request once more by it; any other error is the answer.
func (s *Service) misread(ctx context.Context, r *Request, mode string, learn bool, err error) (Answer, error) {
	switch {
	case !learn:
	case mode == frond.ModeSequence && errors.Is(err, frond.ErrNotSequence):
		s.setMode(r.Name, "")
		return s.takeTag(ctx, r, frond.ModeSegment, false)
	case mode != frond.ModeSequence && errors.Is(err, frond.ErrNotLeasable):
		s.setMode(r.Name, frond.ModeSequence)
		return s.takeTag(ctx, r, frond.ModeSequence, false)
	}
	return Answer{}, err
}

// takeSequence serves a request for a sequence tag: its IDs come from one
// group commit (sequencer). A lease (Run: TinyID's segments, the client
// library) is refused: a leased range would be handed out later, after
// requests that were answered by the store meanwhile.
func (s *Service) takeSequence(ctx context.Context, r Request, n int64, mapping string) (Answer, error) {
	if r.Run || r.Lease {
		return Answer{}, fmt.Errorf("%w: tag %s is a sequence tag, whose IDs come from the store when they are asked for", frond.ErrNotLeasable, Quote(r.Name))
	}
	rs, err := s.seq.take(ctx, r.Name, n)
	if err != nil {
		return Answer{}, err
	}
	if r.Ranges {
		return Answer{Form: FormNumber, Ranges: rs}, nil
	}
	ids := make([]int64, 0, n)
	for _, x := range rs {
		ids = x.Append(ids)
	}
	return s.tagAnswer(&r, mapping, ids)
}

func (s *Service) answer(kind, form, prefix string, ids []int64) (Answer, error) {
	return s.answerIn(kind, FormMapping(form), form, prefix, ids)
}

// answerIn answers ids in a mapping, encoded in form (formatIn).
func (s *Service) answerIn(kind, mapping, form, prefix string, ids []int64) (Answer, error) {
	strs, nums, err := s.formatIn(kind, mapping, form, prefix, ids)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Form: form, Nums: nums, Strs: strs}, nil
}

// ErrForbidden means the request's token does not allow its tag
// (Config.Tokens).
var ErrForbidden = frond.ErrForbidden

// TokensSet reports whether tag tokens are configured (Config.Tokens):
// then every request for segment IDs carries one.
func (s *Service) TokensSet() bool { return len(s.tokens) > 0 }

// checkToken enforces Config.Tokens.
func (s *Service) checkToken(token, tag string) error {
	if len(s.tokens) == 0 {
		return nil
	}
	if token == "" {
		return fmt.Errorf("%w: tag %s: a token is required (token parameter, x-frond-token)", ErrForbidden, Quote(tag))
	}
	if a := s.cfg.AdminToken; a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(token)) == 1 {
		return nil // the admin's: everything a tag token allows
	}
	if !s.tokens[token][tag] {
		return fmt.Errorf("%w: tag %s", ErrForbidden, Quote(tag))
	}
	return nil
}

// tagStep is the configured step of tag: from its buffer when loaded, else
// from the store.
func (s *Service) tagStep(ctx context.Context, tag string) (int64, error) {
	for _, st := range s.seg.Stats() {
		if st.Tag == tag && st.Ready && st.MinStep > 0 {
			return min(st.MinStep, MaxRangesBatch), nil
		}
	}
	t, err := s.Tag(ctx, tag)
	if err != nil {
		return 0, err
	}
	return min(t.Step, MaxRangesBatch), nil
}

// maxQuoted is how much of a caller's input an error message repeats.
const maxQuoted = 40

// Quote quotes a caller's input for an error message, cut to its first 40
// bytes: an error never echoes a large input back.
func Quote(in string) string {
	if len(in) <= maxQuoted {
		return strconv.Quote(in)
	}
	return strconv.Quote(in[:maxQuoted]) + fmt.Sprintf("... (%d bytes)", len(in))
}
