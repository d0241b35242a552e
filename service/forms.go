package service

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/snowflake"
	"go.jetify.com/typeid"
)

// Forms of an ID in answers.
const (
	FormNumber   = "number"   // decimal (the default)
	FormBase62   = "base62"   // 11 characters, sortable
	FormBase32   = "base32"   // Crockford, 13 characters, sortable
	FormOpaque   = "opaque"   // keyed permutation, decimal: unordered, non-guessable
	FormOpaque62 = "opaque62" // keyed permutation in base62: short, unordered, non-guessable
	// FormMist is a segment ID as Mist lays it out (seed 003): the ID in
	// the top 47 bits, then two random bytes. A number; the ID is still in
	// it, in order (docs/kinds.md#mist).
	FormMist = "mist"
	// FormFriendly is a snowflake ID as readable text, CosId's friendly
	// form: its time in UTC, its node and its sequence,
	// "20261126081530123-5-16".
	FormFriendly = "friendly"
	// FormTypeID is a UUID version 7 as a TypeID: a prefix, an underscore
	// and the UUID in 26 characters of Crockford base32
	// ("user_01h455vb4pex5vsknk084sn02q").
	FormTypeID = "typeid"
)

// Kinds for forms.
const (
	KindSegment   = "segment"
	KindSnowflake = "snowflake"
)

// MistCounterBits is the width of a Mist ID's counter: 47 bits, then two
// salts of 8 bits (63 in all).
const MistCounterBits = 47

// checkForm checks that form is one of kind's forms (and its key
// configured).
func (s *Service) checkForm(kind, form string) error {
	switch form {
	case "", FormNumber, FormBase62, FormBase32:
		return nil
	case FormOpaque, FormOpaque62:
		if s.kinds.cur.seg == nil {
			return fmt.Errorf("%w: form %q needs an obfuscation key (obfuscation.key_file)", frond.ErrInvalidArgument, form)
		}
		return nil
	case FormMist:
		if kind == KindSegment {
			return nil
		}
		return fmt.Errorf("%w: form mist is a form of segment IDs: a snowflake ID has no room for its salts", frond.ErrInvalidArgument)
	case FormFriendly:
		if kind != KindSnowflake {
			return fmt.Errorf("%w: form friendly is a form of snowflake IDs (time-node-sequence)", frond.ErrInvalidArgument)
		}
		if l := s.cfg.Snowflake.Layout; l.ShardBits > 0 {
			return fmt.Errorf("%w: form friendly (time-node-sequence) has no place for the %d shard bits of layout %s: ask for number, base62 or base32", frond.ErrInvalidArgument, l.ShardBits, l.Name)
		}
		if s.kinds.friendly == "" {
			return fmt.Errorf("%w: form friendly needs a layout whose unit and epoch are whole microseconds and whose time ends before the year 10000 (layout %s)", frond.ErrInvalidArgument, s.cfg.Snowflake.Layout.Name)
		}
		return nil
	}
	extra := "mist"
	if kind == KindSnowflake {
		extra = "friendly"
	}
	return fmt.Errorf("%w: form %s: number, base62, base32, opaque, opaque62 or %s", frond.ErrInvalidArgument, Quote(form), extra)
}

// FormMapping is the mapping (frond.Tag.Mapping) a form names: opaque for
// FormOpaque and FormOpaque62, mist for FormMist; the others (number,
// base62, base32, friendly) only encode a number, in whatever mapping the
// tag has: "".
func FormMapping(form string) string {
	switch form {
	case FormOpaque, FormOpaque62:
		return frond.MappingOpaque
	case FormMist:
		return frond.MappingMist
	}
	return ""
}

// mappingForm is the form a tag's IDs take when neither the request nor
// the configuration names one: the mapping's own.
func mappingForm(mapping string) string {
	switch mapping {
	case frond.MappingOpaque:
		return FormOpaque
	case frond.MappingMist:
		return FormMist
	}
	return FormNumber
}

// Numeric reports whether a form is a number (so it can go in ids and on
// Leaf's API).
func Numeric(form string) bool {
	return form == "" || form == FormNumber || form == FormOpaque || form == FormMist
}

// fitMapping checks r, a segment request checked by Check, against the
// tag's mapping (frond.Tag.Mapping) before any ID is taken, the one place
// this rule is written: a request that names no form gets the mapping's
// (mist, opaque, or number for plain numbers); a form that names another
// mapping is refused, since another mapping of one counter meets the
// tag's numbers (issue 42); encodings of the number (number, base62,
// base32, prefixes) are free. Ranges and leases are plain numbers: of a
// tag whose numbers are not plain they are refused, but for a list of
// numbers (TinyID), answered in the mapping.
func (s *Service) fitMapping(r *Request, mapping string) error {
	if bits := frond.ShardBits(mapping); bits > 0 && (r.Ranges || r.Run || r.Lease) && !numbersList(r) {
		switch {
		case !r.Counters || !r.Lease:
			return fmt.Errorf("%w: tag %s has %d shard bits: its ranges would be bare counters; a client library that applies them leases the counters (counters=1 with lease=1)",
				frond.ErrFormNotCarried, Quote(r.Name), bits)
		case r.HasShard || r.ShardKey != "":
			return fmt.Errorf("%w: a lease of counters names no shard: the client puts each ID's shard below its counter", frond.ErrInvalidArgument)
		}
		r.ShardBits = bits
		return nil
	}
	if err := fitShard(r, mapping); err != nil {
		return err
	}
	if r.Form == "" {
		r.Form = mappingForm(mapping)
	} else if m := FormMapping(r.Form); m != "" && m != mapping {
		why := "its configured form (forms:)"
		if s.cfg.Forms[r.Name] != r.Form {
			why = "the request's form"
		}
		return fmt.Errorf("%w: tag %s hands out %s numbers (its mapping); %s %s is %s numbers, which would meet them: ask for %s, base62 or base32",
			frond.ErrInvalidArgument, Quote(r.Name), frond.MappingName(mapping), why, Quote(r.Form), frond.MappingName(m), mappingForm(mapping))
	}
	if mapping == "" {
		return nil
	}
	if mapping == frond.MappingOpaque && s.kinds.cur.seg == nil {
		return fmt.Errorf("%w: tag %s hands out opaque numbers, and this node has no obfuscation key (obfuscation.key_file)", frond.ErrInvalidArgument, Quote(r.Name))
	}
	if !r.Ranges && !r.Run && !r.Lease {
		return nil
	}
	if numbersList(r) {
		return nil
	}
	what := "ranges are plain numbers"
	if r.Run || r.Lease {
		what = "a lease is a range of plain numbers that the client hands out itself"
	}
	return fmt.Errorf("%w: tag %s hands out %s numbers (its mapping), and %s", frond.ErrFormNotCarried, Quote(r.Name), frond.MappingName(mapping), what)
}

// fitShard checks r's shard against the tag's shard bits (mapping), and
// fills r.Shard from r.ShardKey: a tag with shard bits needs a shard below
// 2^bits, one without refuses it.
func fitShard(r *Request, mapping string) error {
	return fitShardBits(r, frond.ShardBits(mapping), func() (string, string) {
		return "tag " + Quote(r.Name), "its mapping is " + frond.MappingName(mapping)
	})
}

// fitShardBits is the rule of fitShard for bits shard bits of what (a tag,
// or the snowflake layout, and why it has none: named only in a refusal,
// so that an answer allocates nothing here): with none, r must name no
// shard; with some, a shard below 2^bits or a key.
func fitShardBits(r *Request, bits int, named func() (what, why string)) error {
	given := r.HasShard || r.ShardKey != ""
	switch {
	case bits == 0 && given:
		what, why := named()
		return fmt.Errorf("%w: %s has no shard bits (%s): ask without shard or shard_key", frond.ErrInvalidArgument, what, why)
	case bits == 0:
		return nil
	case !given:
		what, _ := named()
		return fmt.Errorf("%w: %s has %d shard bits: give shard (0 to %d) or shard_key (the shard is then the key's, frond.ShardOf)", frond.ErrInvalidArgument, what, bits, 1<<bits-1)
	case r.ShardKey != "":
		r.Shard, r.HasShard, r.ShardKey = frond.ShardOf(r.ShardKey, bits), true, ""
	case r.Shard >= 1<<bits:
		what, _ := named()
		return fmt.Errorf("%w: shard %d: %s has %d shard bits (0 to %d)", frond.ErrInvalidArgument, r.Shard, what, bits, 1<<bits-1)
	}
	return nil
}

// sharded is ids of a tag of mapping, its counters, as the numbers it
// hands out: with shard bits each moved up by them, r's shard below; else
// ids itself. The mapping the numbers are then in: plain for shard bits.
func sharded(r *Request, mapping string, ids []int64) (string, []int64, error) {
	bits := frond.ShardBits(mapping)
	if bits == 0 {
		return mapping, ids, nil
	}
	for i, id := range ids {
		if id < 0 || id > math.MaxInt64>>bits {
			return "", nil, fmt.Errorf("%w: tag %s: counter %d does not fit below its %d shard bits: use a new tag", frond.ErrTagExhausted, Quote(r.Name), id, bits)
		}
		ids[i] = id<<bits | r.Shard
	}
	return "", ids, nil
}

// countersFit cuts a lease of counters (r.ShardBits) to the counters that
// fit below the shard bits, and refuses one that holds none, as sharded
// refuses one ID: the client would move them past 63 bits. The counters
// cut off are skipped, never handed out.
func countersFit(r *Request, rs []frond.Range) ([]frond.Range, error) {
	if r.ShardBits == 0 {
		return rs, nil
	}
	top := int64(math.MaxInt64 >> r.ShardBits)
	fit := rs[:0]
	for _, x := range rs {
		if x.Len() > 0 && x.Start <= top {
			x.End = min(x.End, top+1)
			fit = append(fit, x)
		}
	}
	if len(fit) == 0 {
		return nil, fmt.Errorf("%w: tag %s: its counters are past %d, the last that fits below its %d shard bits: use a new tag", frond.ErrTagExhausted, Quote(r.Name), top, r.ShardBits)
	}
	return fit, nil
}

// tagAnswer answers ids, counters of the tag of r, in its mapping: the
// shard applied (sharded), then the form.
func (s *Service) tagAnswer(r *Request, mapping string, ids []int64) (Answer, error) {
	m, ids, err := sharded(r, mapping, ids)
	if err != nil {
		return Answer{}, err
	}
	return s.answerIn(KindSegment, m, r.Form, r.Prefix, ids)
}

// MaxPrefix is the longest prefix of a string ID, TypeID's limit.
const MaxPrefix = 63

// CheckPrefix checks a prefix of string IDs by TypeID's rule (spec 0.3):
// 1 to 63 lowercase ASCII letters and underscores, starting and ending
// with a letter. Empty means none.
func CheckPrefix(p string) error {
	if p == "" {
		return nil
	}
	bad := len(p) > MaxPrefix || p[0] == '_' || p[len(p)-1] == '_'
	for i := 0; i < len(p) && !bad; i++ {
		bad = (p[i] < 'a' || p[i] > 'z') && p[i] != '_'
	}
	if bad {
		return fmt.Errorf("%w: prefix %s: 1 to %d lowercase letters a-z and underscores, starting and ending with a letter", frond.ErrInvalidArgument, Quote(p), MaxPrefix)
	}
	return nil
}

// checkPrefix checks r.Prefix for r's form, r.Form filled: a prefix goes
// only before text. An empty r.Prefix of a segment request takes the tag's
// configured prefix when its form is text.
func (s *Service) checkPrefix(r *Request) error {
	if err := CheckPrefix(r.Prefix); err != nil {
		return err
	}
	if r.Prefix == "" && r.Kind == KindSegment && !Numeric(r.Form) {
		r.Prefix = s.cfg.Prefixes[r.Name]
	}
	if r.Prefix != "" && Numeric(r.Form) {
		text := "base62, base32 or opaque62"
		if r.Kind == KindSnowflake {
			text = "base62, base32, opaque62 or friendly"
		}
		return fmt.Errorf("%w: prefix %s: a prefix goes before text; form %s is a number (ask for %s)", frond.ErrInvalidArgument, Quote(r.Prefix), Quote(cmp.Or(r.Form, FormNumber)), text)
	}
	return nil
}

// Format renders IDs of a kind in a form. For numeric forms it also
// returns the numbers (permuted for opaque, salted for mist).
//
// For FormNumber the numbers are ids itself and the strings are nil: the
// protocols that answer numbers never pay for text (Answer.Texts makes it
// when asked).
func (s *Service) Format(kind, form string, ids []int64) ([]string, []int64, error) {
	return s.format(kind, form, "", ids)
}

// format is Format with a prefix before each text ID ("ord_2XgH4..."): the
// numbers in the mapping the form names (FormMapping), encoded in the form.
func (s *Service) format(kind, form, prefix string, ids []int64) ([]string, []int64, error) {
	return s.formatIn(kind, FormMapping(form), form, prefix, ids)
}

// formatIn is format of numbers in a mapping (frond.Tag.Mapping), encoded
// in form: a segment tag's numbers are in its mapping whatever form is
// asked (fitMapping has checked that the form is one of the mapping's).
func (s *Service) formatIn(kind, mapping, form, prefix string, ids []int64) ([]string, []int64, error) {
	if err := s.checkForm(kind, form); err != nil {
		return nil, nil, err
	}
	if mapping == "" && (form == "" || form == FormNumber) {
		return nil, ids, nil
	}
	strs := make([]string, len(ids))
	var nums []int64
	if Numeric(form) {
		nums = make([]int64, len(ids))
	}
	sep := ""
	if prefix != "" {
		sep = prefix + "_"
	}
	for i, id := range ids {
		v := id
		switch mapping {
		case frond.MappingOpaque:
			var err error
			if v, err = s.permOf(kind).Apply(id); err != nil {
				// Not the caller's fault: the tag has outgrown the configured width.
				return nil, nil, fmt.Errorf("%w: ID %d does not fit the %d-bit opaque form: raise obfuscation.segment_width or use a new tag", frond.ErrTagExhausted, id, s.permOf(kind).Width())
			}
		case frond.MappingMist:
			if id < 0 || id >= 1<<MistCounterBits {
				return nil, nil, fmt.Errorf("%w: ID %d does not fit Mist's %d-bit counter: use a new tag, or another form", frond.ErrTagExhausted, id, MistCounterBits)
			}
			v = id<<16 | int64(rand.Uint32()&0xffff)
		}
		var str string
		switch form {
		case FormBase62:
			str = idfmt.Base62.EncodeFixed(v)
		case FormBase32:
			str = idfmt.Base32.EncodeFixed(v)
		case FormOpaque62:
			str = idfmt.Base62.Encode(v)
		case FormFriendly: // the prefix in the same buffer
			b, err := s.appendFriendly(append(make([]byte, 0, len(sep)+32), sep...), id)
			if err != nil {
				return nil, nil, err
			}
			str = string(b)
		default:
			str = strconv.FormatInt(v, 10)
		}
		if sep != "" && form != FormFriendly {
			str = sep + str
		}
		strs[i] = str
		if nums != nil {
			nums[i] = v
		}
	}
	return strs, nums, nil
}

// friendlyTime is the time of the friendly form, in UTC, to the
// millisecond; friendlyMicro to the microsecond, for layouts whose unit is
// not a whole number of milliseconds.
const (
	friendlyTime  = "20060102150405.000"
	friendlyMicro = "20060102150405.000000"
)

// friendlyLayout is the time layout of l's friendly form: to the
// millisecond when its ticks are whole milliseconds, else to the
// microsecond; "" when the text could not hold its ticks exactly (a unit
// or epoch not in whole microseconds, a time past the year 9999), and the
// form is refused. Computed once (kindSet.friendly).
func friendlyLayout(l snowflake.Layout) string {
	switch {
	case l.Unit%time.Microsecond != 0 || l.Epoch.Nanosecond()%int(time.Microsecond) != 0 || l.Expires().Year() > 9999:
		return ""
	case l.Unit%time.Millisecond == 0 && l.Epoch.Nanosecond()%int(time.Millisecond) == 0:
		return friendlyTime
	}
	return friendlyMicro
}

// appendFriendly appends the friendly form of a snowflake ID:
// time-node-sequence.
func (s *Service) appendFriendly(b []byte, id int64) ([]byte, error) {
	p, err := s.cfg.Snowflake.Layout.Decompose(id)
	if err != nil {
		return b, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
	}
	n := len(b)
	b = p.Time.UTC().AppendFormat(b, s.kinds.friendly)
	if dot := n + 14; dot < len(b) && b[dot] == '.' {
		b = append(b[:dot], b[dot+1:]...)
	}
	b = strconv.AppendInt(append(b, '-'), p.Node, 10)
	return strconv.AppendInt(append(b, '-'), p.Seq, 10), nil
}

// parseFriendly is the snowflake ID of a friendly form.
func (s *Service) parseFriendly(v string) (int64, error) {
	ts, rest, ok1 := strings.Cut(v, "-")
	node, seq, ok2 := strings.Cut(rest, "-")
	layout := s.kinds.friendly
	digits := len(layout) - 1
	if !ok1 || !ok2 || len(ts) != digits {
		return 0, fmt.Errorf("time-node-sequence, with the time in %d digits (yyyyMMddHHmmssSSS%s)", digits, strings.Repeat("S", digits-17))
	}
	t, err := time.Parse(layout, ts[:14]+"."+ts[14:])
	if err != nil {
		return 0, errors.New("the time is not a date and time (yyyyMMddHHmmssSSS)")
	}
	l := s.cfg.Snowflake.Layout
	nd, ok := Digits(node)
	sq, ok2 := Digits(seq)
	if !ok || !ok2 {
		return 0, errors.New("the node and the sequence are whole numbers")
	}
	d := t.Sub(l.Epoch)
	if d < 0 || d%l.Unit != 0 {
		return 0, fmt.Errorf("the time is not a tick of layout %s", l.Name)
	}
	id, err := l.Compose(snowflake.Parts{Tick: int64(d / l.Unit), Node: nd, Seq: sq})
	if err != nil {
		return 0, err
	}
	// One text per ID: the form frond writes, without leading zeros.
	if back, _ := s.appendFriendly(nil, id); string(back) != v {
		return 0, fmt.Errorf("not the friendly form of its ID (%s): no leading zeros", back)
	}
	return id, nil
}

// RevealRequest asks for the ID behind a formatted one.
type RevealRequest struct {
	// Kind is KindSegment, KindSnowflake or KindUUID.
	Kind string
	// Form the value is in; for UUIDs only FormTypeID.
	Form  string
	Value string
	// KeyVersion picks the obfuscation key that gave an opaque value; 0
	// means the current key.
	KeyVersion int
	// Prefix the value must carry. Empty: Tag's configured prefix, when
	// Tag is set; else whatever prefix the value has.
	Prefix string
	// Tag the value came from (segment IDs), for its configured prefix.
	Tag string
}

// Revealed is what a formatted ID holds.
type Revealed struct {
	Kind string `json:"kind"`
	// ID of a segment or snowflake value.
	ID int64 `json:"id"`
	// UUID of a TypeID, in its 36-character form.
	UUID string `json:"uuid,omitempty"`
	// Prefix the value carried.
	Prefix string `json:"prefix,omitempty"`
	// Salts of a Mist ID: its two random bytes.
	Salts []int `json:"salts,omitempty"`
}

// Reveal maps a formatted ID back to the ID (the admin decode of opaque
// forms; the others need no key): the number behind base62, base32,
// opaque, opaque62, mist and friendly, and the UUID behind a TypeID. A
// value that carries a prefix other than the one expected is refused.
func (s *Service) Reveal(in RevealRequest) (Revealed, error) {
	out := Revealed{Kind: in.Kind}
	if err := CheckPrefix(in.Prefix); err != nil {
		return out, err
	}
	want, strict := in.Prefix, in.Prefix != ""
	if in.Tag != "" {
		if in.Kind != KindSegment {
			return out, fmt.Errorf("%w: tag names where a segment value came from; a %s value takes prefix", frond.ErrInvalidArgument, in.Kind)
		}
		if err := frond.ValidateTagName(in.Tag); err != nil {
			return out, err
		}
		if !strict {
			want, strict = s.cfg.Prefixes[in.Tag], true // none configured: a value with a prefix is not the tag's
		}
	}
	value := in.Value
	if i := strings.LastIndexByte(value, '_'); i >= 0 {
		out.Prefix, value = value[:i], value[i+1:]
		if err := CheckPrefix(out.Prefix); err != nil || out.Prefix == "" {
			return out, fmt.Errorf("%w: %s: the text before the last underscore is not a prefix (lowercase letters and underscores)", frond.ErrInvalidArgument, Quote(in.Value))
		}
	}
	if strict && out.Prefix != want {
		if want == "" {
			return out, fmt.Errorf("%w: %s carries prefix %q; tag %s has none", frond.ErrInvalidArgument, Quote(in.Value), out.Prefix, Quote(in.Tag))
		}
		return out, fmt.Errorf("%w: %s does not carry prefix %q", frond.ErrInvalidArgument, Quote(in.Value), want)
	}
	if in.Kind == KindUUID {
		if in.Form != FormTypeID {
			return out, fmt.Errorf("%w: form %s: UUIDs are revealed from their typeid form", frond.ErrInvalidArgument, Quote(in.Form))
		}
		// The library's errors repeat the input: frond's say what is wrong
		// without it.
		if len(value) != 26 {
			return out, fmt.Errorf("%w: %s is not a TypeID: its suffix after the prefix and '_' is %d characters, not 26", frond.ErrInvalidArgument, Quote(in.Value), len(value))
		}
		tid, err := typeid.FromString(in.Value)
		if err != nil {
			return out, fmt.Errorf("%w: %s is not a TypeID: 26 characters of lowercase Crockford base32 (the first 0 to 7) after an optional prefix and '_'", frond.ErrInvalidArgument, Quote(in.Value))
		}
		out.UUID = tid.UUID()
		return out, nil
	}
	if in.Kind != KindSegment && in.Kind != KindSnowflake {
		return out, fmt.Errorf("%w: kind %s: segment, snowflake or uuid", frond.ErrInvalidArgument, Quote(in.Kind))
	}
	form := in.Form
	if err := s.checkForm(in.Kind, form); err != nil {
		return out, err
	}
	if out.Prefix != "" && Numeric(form) {
		return out, fmt.Errorf("%w: %s: form %s has no prefix", frond.ErrInvalidArgument, Quote(in.Value), Quote(form))
	}
	var v int64
	var err error
	switch form {
	case FormBase62, FormOpaque62:
		v, err = idfmt.Base62.Decode(value)
	case FormBase32:
		v, err = idfmt.Base32.Decode(value)
	case FormFriendly:
		v, err = s.parseFriendly(value)
	default:
		v, err = strconv.ParseInt(value, 10, 64)
		if err == nil && v < 0 {
			err = errors.New("negative")
		}
	}
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			err = ne.Err // without the input, which Quote cuts
		}
		return out, fmt.Errorf("%w: %s is not a %s ID: %v", frond.ErrInvalidArgument, Quote(in.Value), cmp.Or(form, FormNumber), err)
	}
	switch form {
	case FormOpaque, FormOpaque62:
		p := s.kinds.cur
		if in.KeyVersion != 0 {
			var ok bool
			if p, ok = s.kinds.perms[in.KeyVersion]; !ok {
				return out, fmt.Errorf("%w: no obfuscation key has version %d (the keys: %s)", frond.ErrInvalidArgument, in.KeyVersion, s.keyVersions())
			}
		}
		if v, err = p.of(in.Kind).Invert(v); err != nil {
			return out, fmt.Errorf("%w: %w", frond.ErrInvalidArgument, err)
		}
	case FormMist:
		out.Salts = []int{int(v >> 8 & 0xff), int(v & 0xff)}
		v >>= 16
	}
	out.ID = v
	return out, nil
}
