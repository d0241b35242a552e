package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/idfmt"
	"github.com/frond-id/frond/snowflake"
)

// ErrSerialNotFound means no serial of the name asked for is configured.
var ErrSerialNotFound = errors.New("serial not found")

func serialNotFound(name string) error {
	return fmt.Errorf("%w: serial %s is not configured", ErrSerialNotFound, Quote(name))
}

// SerialConfig configures one business serial number.
type SerialConfig struct {
	// Template, e.g. "PAY{time:yyyyMMddHHmmssSSS}{seq:6}" (see idfmt.Template).
	Template string `koanf:"template"`
	// Source of the sequence: "segment" (a segment tag, unique across nodes
	// through the store) or "snowflake" (the node's snowflake IDs).
	Source string `koanf:"source"`
	// Tag is the segment tag (default: the serial's name). With a reset it
	// is the prefix of one tag per period, "tag.20261122", created on first use.
	Tag string `koanf:"tag"`
	// Reset restarts a segment sequence every "hour", "day" or "month"; "none" (default) never.
	Reset string `koanf:"reset"`
	// Zone for the time text and the reset periods (default UTC).
	Zone string `koanf:"zone"`
	// Step of the tags created for the sequence (default 1000).
	Step int64 `koanf:"step"`
}

// kindSet are the configured serials and obfuscation keys.
type kindSet struct {
	serials map[string]*serial
	perms   map[int]perms // by key version; empty without an obfuscation key
	cur     perms         // the current key's (zero without one)
	// friendly is the time layout of the snowflake layout's friendly form
	// ("" when it has none: friendlyLayout).
	friendly string
}

type serial struct {
	name string
	cfg  SerialConfig
	tmpl *idfmt.Template
	loc  *time.Location
}

func (s *Service) initKinds() error {
	s.kinds.serials = map[string]*serial{}
	for name, c := range s.cfg.Serials {
		sr, err := s.newSerial(name, c)
		if err != nil {
			return err
		}
		s.kinds.serials[name] = sr
	}
	ps, err := s.cfg.obfuscationPerms()
	if err != nil {
		return err
	}
	s.kinds.perms = map[int]perms{}
	for i, p := range ps {
		s.kinds.perms[p.version] = p
		if i == 0 {
			s.kinds.cur = p
		}
	}
	s.kinds.friendly = friendlyLayout(s.cfg.Snowflake.Layout)
	for tag, p := range s.cfg.Prefixes {
		if err := CheckPrefix(p); err != nil {
			return configError(fmt.Errorf("prefix of tag %q: %w", tag, err), "Prefixes["+tag+"]")
		}
	}
	for tag, form := range s.cfg.Forms {
		if err := s.checkForm(KindSegment, form); err != nil {
			return configError(fmt.Errorf("form of tag %q: %w", tag, err), "Forms["+tag+"]")
		}
	}
	return nil
}

// newSerial checks and prepares a serial; its errors are *ConfigError
// naming the serial's field ("Serials[pay].Step").
func (s *Service) newSerial(name string, c SerialConfig) (*serial, error) {
	bad := func(err error, fields ...string) error {
		for i, f := range fields {
			fields[i] = "Serials[" + name + "]." + f
		}
		return configError(err, fields...)
	}
	tmpl, err := idfmt.ParseTemplate(c.Template)
	if err != nil {
		return nil, bad(err, "Template")
	}
	if c.Tag == "" {
		c.Tag = name
	}
	if c.Step == 0 {
		c.Step = 1000
	}
	if c.Zone == "" {
		c.Zone = "UTC"
	}
	loc, err := time.LoadLocation(c.Zone)
	if err != nil {
		return nil, bad(fmt.Errorf("%w: zone %q: %v", frond.ErrInvalidArgument, c.Zone, err), "Zone")
	}
	switch c.Source {
	case "segment", "":
		c.Source = "segment"
		probe := c.Tag + ".2026112200" // the longest period tag
		if err := frond.ValidateTagName(probe); err != nil {
			return nil, bad(err, "Tag")
		}
		// The tags are created with this step: the store's rule, now.
		if err := (frond.Tag{Name: probe, MaxID: 1, Step: c.Step}).Validate(); err != nil {
			return nil, bad(err, "Step")
		}
		if err := tmpl.CheckSegment(c.Reset); err != nil {
			return nil, bad(err, "Reset", "Template")
		}
	case "snowflake":
		if c.Reset != "" && c.Reset != "none" {
			return nil, bad(fmt.Errorf("%w: reset %q: a snowflake sequence restarts every tick already", frond.ErrInvalidArgument, c.Reset), "Reset")
		}
		l := s.cfg.Snowflake.Layout
		if err := tmpl.CheckSnowflake(l.Unit, l.MaxNode(), l.MaxSeq()); err != nil {
			return nil, bad(err, "Template")
		}
		// Local time that repeats (daylight saving ending) would print two
		// ticks alike: only zones with one offset all year.
		y := time.Now().Year()
		_, jan := time.Date(y, 1, 1, 0, 0, 0, 0, loc).Zone()
		_, jul := time.Date(y, 7, 1, 0, 0, 0, 0, loc).Zone()
		if jan != jul {
			return nil, bad(fmt.Errorf("%w: zone %q changes its offset during the year; snowflake serials would repeat when clocks go back: use UTC or a fixed-offset zone", frond.ErrInvalidArgument, c.Zone), "Zone")
		}
	default:
		return nil, bad(fmt.Errorf("%w: source %q: segment or snowflake", frond.ErrInvalidArgument, c.Source), "Source")
	}
	return &serial{name: name, cfg: c, tmpl: tmpl, loc: loc}, nil
}

// resets reports whether the serial restarts its sequence every period.
func (sr *serial) resets() bool { return sr.cfg.Reset != "" && sr.cfg.Reset != "none" }

// SerialNames lists the configured serials.
func (s *Service) SerialNames() []string {
	out := make([]string, 0, len(s.kinds.serials))
	for n := range s.kinds.serials {
		out = append(out, n)
	}
	return out
}

// serials returns n serial numbers of the named serial; ErrSerialNotFound if
// no serial of that name is configured.
func (s *Service) serials(ctx context.Context, name string, n int) ([]string, error) {
	sr, ok := s.kinds.serials[name]
	if !ok {
		return nil, serialNotFound(name)
	}
	if n < 1 || n > MaxBatch {
		return nil, fmt.Errorf("%w: count %d: must be 1 to %d", frond.ErrInvalidArgument, n, MaxBatch)
	}
	out := make([]string, 0, n)
	if sr.cfg.Source == "snowflake" {
		ids, err := s.w.NextN(n)
		for _, id := range ids {
			p, _ := s.cfg.Snowflake.Layout.Decompose(id)
			str, ferr := sr.tmpl.Format(p.Time.In(sr.loc), p.Node, p.Seq)
			if ferr != nil {
				return out, ferr
			}
			out = append(out, str)
		}
		return out, err
	}
	for len(out) < n {
		at := time.Unix(0, s.cfg.Now()).In(sr.loc)
		tag := sr.cfg.Tag
		if key := idfmt.PeriodKey(sr.cfg.Reset, at); key != "" {
			tag += "." + key
		}
		// By the tag's mode: a sequence tag's serials are taken from the
		// store request by request, as its IDs are.
		a, err := s.take(ctx, &Request{Kind: KindSegment, Name: tag, Count: int64(n - len(out)), Ranges: true, Form: FormNumber}) // the serial's own form, whatever the tag's
		rs := a.Ranges
		if errors.Is(err, frond.ErrTagNotFound) && !sr.resets() {
			// A missing tag may be one that was deleted: creating it again
			// at 1 would hand out the same serials again.
			return out, fmt.Errorf("%w: serial %s: its tag %q does not exist. A new serial: create it (frond tag create %s --step %d). "+
				"If it existed (it was deleted), create it again with --max-id above the last sequence issued, or the serials repeat",
				frond.ErrTagNotFound, Quote(name), tag, tag, sr.cfg.Step)
		}
		if errors.Is(err, frond.ErrTagNotFound) {
			// First use of this period's tag: create it, then retry.
			_, cerr := s.store.CreateTag(ctx, frond.Tag{Name: tag, MaxID: 1, Step: sr.cfg.Step, Description: "serial " + sr.name})
			if cerr != nil && !errors.Is(cerr, frond.ErrTagExists) {
				return out, cerr
			}
			continue
		}
		if err != nil {
			return out, err
		}
		for _, r := range rs {
			for _, id := range r.Append(nil) {
				str, ferr := sr.tmpl.Format(at, s.serialNode(), id)
				if ferr != nil {
					return out, fmt.Errorf("serial %q, period tag %q: %w", name, tag, ferr)
				}
				out = append(out, str)
			}
		}
	}
	return out, nil
}

// ObfuscationKey is a key of the opaque forms with its version and scheme.
type ObfuscationKey struct {
	Version int
	Scheme  string // idfmt.SchemeFF1 (empty means it) or idfmt.SchemeSplitmix
	Key     []byte
}

// perms are a key's permutations: one per kind, of the kind's width.
type perms struct {
	version   int
	seg, snow *idfmt.Permutation
}

func (p perms) of(kind string) *idfmt.Permutation {
	if kind == KindSnowflake {
		return p.snow
	}
	return p.seg
}

func (k ObfuscationKey) scheme() string {
	if k.Scheme == "" {
		return idfmt.SchemeFF1
	}
	return k.Scheme
}

// perms makes the key's permutations; segWidth 0 means 63.
func (k ObfuscationKey) perms(segWidth uint, layout snowflake.Layout) (perms, error) {
	if segWidth == 0 {
		segWidth = 63
	}
	seg, err := idfmt.NewPermutation(k.scheme(), k.Key, segWidth)
	if err != nil {
		return perms{}, fmt.Errorf("key version %d: %w", k.Version, err)
	}
	snow, err := idfmt.NewPermutation(k.scheme(), k.Key, layout.Bits())
	if err != nil {
		return perms{}, fmt.Errorf("key version %d, snowflake layout %s: %w", k.Version, layout.Name, err)
	}
	return perms{version: k.Version, seg: seg, snow: snow}, nil
}

// obfuscationPerms are the permutations of the configured keys, the
// current one first, checked: versions positive and distinct, schemes
// known, keys long enough for every width they permute. None without
// ObfuscationKey.
func (c Config) obfuscationPerms() ([]perms, error) {
	if len(c.ObfuscationKey) == 0 {
		if len(c.ObfuscationPrevious) > 0 {
			return nil, configError(fmt.Errorf("%w: previous obfuscation keys without a current key", frond.ErrInvalidArgument), "ObfuscationPrevious")
		}
		return nil, nil
	}
	cur := ObfuscationKey{Version: c.ObfuscationVersion, Scheme: c.ObfuscationScheme, Key: c.ObfuscationKey}
	if cur.Version == 0 {
		cur.Version = 1
	}
	keys := append([]ObfuscationKey{cur}, c.ObfuscationPrevious...)
	out := make([]perms, 0, len(keys))
	seen := map[int]bool{}
	for i, k := range keys {
		field := "ObfuscationKey"
		if i > 0 {
			field = fmt.Sprintf("ObfuscationPrevious[%d]", i-1)
		}
		if k.Version < 1 {
			return nil, configError(fmt.Errorf("%w: obfuscation key version %d: must be 1 or more", frond.ErrInvalidArgument, k.Version), field)
		}
		if seen[k.Version] {
			return nil, configError(fmt.Errorf("%w: two obfuscation keys have version %d", frond.ErrInvalidArgument, k.Version), field)
		}
		seen[k.Version] = true
		if err := idfmt.CheckScheme(k.scheme()); err != nil {
			if i == 0 {
				field = "ObfuscationScheme"
			}
			return nil, configError(err, field)
		}
		if w := c.ObfuscationWidth; w != 0 {
			if err := idfmt.CheckWidth(k.scheme(), w); err != nil {
				return nil, configError(fmt.Errorf("key version %d: %w", k.Version, err), "ObfuscationWidth")
			}
		}
		p, err := k.perms(c.ObfuscationWidth, c.Snowflake.Layout)
		if err != nil {
			return nil, configError(err, field)
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *Service) permOf(kind string) *idfmt.Permutation { return s.kinds.cur.of(kind) }

// ObfuscationVersion is the version of the key that gives opaque IDs; 0
// without one.
func (s *Service) ObfuscationVersion() int { return s.kinds.cur.version }

func (s *Service) keyVersions() string {
	vs := make([]int, 0, len(s.kinds.perms))
	for v := range s.kinds.perms {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return strings.Trim(fmt.Sprint(vs), "[]")
}
