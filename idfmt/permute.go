package idfmt

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Schemes of Permutation: the construction a key is used with. A key's
// scheme is part of its configuration (obfuscation.scheme), so that an
// upgrade never changes the opaque IDs an existing key gives.
const (
	// SchemeFF1 is NIST SP 800-38G FF1 over AES-128 in radix 2: the
	// permutation of new keys.
	SchemeFF1 = "ff1"
	// SchemeSplitmix is frond's first construction, kept so that keys made
	// with it go on giving (and revealing) the same opaque IDs: an 8-round
	// Feistel network whose round function is the splitmix64 finaliser
	// mixed with the key. Nobody has analysed it as a pseudorandom
	// function; do not choose it for a new key.
	SchemeSplitmix = "splitmix"
)

// Permutation is a keyed bijection of the integers [0, 2^Width): frond's
// non-guessable IDs. Sequential segment IDs become numbers that look random
// and reveal neither the order nor the volume of the business; a holder of
// the key maps them back (Invert).
//
// With SchemeFF1 it is FF1 (NIST SP 800-38G Rev. 1) on Width binary
// numerals under AES-128 (the key: the first 16 bytes of SHA-256 of a label
// and the configured key) with an empty tweak: ten Feistel rounds whose
// round function is an AES-based pseudorandom function, a bijection of
// exactly [0, 2^Width) with no cycle walking. Its security is FF1's: an adversary who sees the images
// of any inputs it likes learns nothing of other images beyond what a
// random permutation would tell, as far as FF1 is sound (NIST approves it
// for domains of at least a million values: Width 20 or more). It hides
// order and volume; it is not an authenticator: a number picked at random
// is as likely to be valid as under any permutation of the same width.
type Permutation struct {
	width  uint
	scheme string
	ff     *ff1 // SchemeFF1
	// SchemeSplitmix:
	hi    uint // bits of the high half at the start (and, after an even number of rounds, the end)
	lo    uint
	limit uint64 // 2^width
	keys  [rounds]uint64
}

const rounds = 8

// MinWidthFF1 is the narrowest SchemeFF1 permutation: NIST SP 800-38G
// Rev. 1 asks for a domain of at least a million values (2^20).
const MinWidthFF1 = 20

// CheckScheme reports whether scheme is SchemeFF1 or SchemeSplitmix.
func CheckScheme(scheme string) error {
	if scheme != SchemeFF1 && scheme != SchemeSplitmix {
		return fmt.Errorf("%w: permutation scheme %q: %s or %s", ErrInvalid, scheme, SchemeFF1, SchemeSplitmix)
	}
	return nil
}

// CheckWidth reports whether NewPermutation accepts width for scheme: 20
// to 63 bits for SchemeFF1, 2 to 63 for SchemeSplitmix.
func CheckWidth(scheme string, width uint) error {
	if err := CheckScheme(scheme); err != nil {
		return err
	}
	lo := uint(2)
	if scheme == SchemeFF1 {
		lo = MinWidthFF1
	}
	if width < lo || width > 63 {
		return fmt.Errorf("%w: %s permutation width %d: %d to 63 bits", ErrInvalid, scheme, width, lo)
	}
	return nil
}

// NewPermutation returns the permutation of [0, 2^width) for key in scheme
// (SchemeFF1 or SchemeSplitmix; see CheckWidth for the widths). key must
// hold at least 16 bytes.
func NewPermutation(scheme string, key []byte, width uint) (*Permutation, error) {
	if err := CheckWidth(scheme, width); err != nil {
		return nil, err
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("%w: permutation key of %d bytes: at least 16", ErrInvalid, len(key))
	}
	if scheme == SchemeFF1 {
		return newFF1Permutation(key, width), nil
	}
	return newSplitmix(key, width), nil
}

// newFF1Permutation is SchemeFF1 on any width from 2 (tests exhaust the
// narrow ones, below what NewPermutation accepts).
func newFF1Permutation(key []byte, width uint) *Permutation {
	k := sha256.Sum256(append([]byte("frond-permutation-ff1\x00"), key...))
	f, err := newFF1(k[:16], 2, int(width), nil)
	if err != nil {
		panic(err) // a 32-byte key, radix 2 and 2 to 63 numerals are always accepted
	}
	return &Permutation{width: width, scheme: SchemeFF1, ff: f, limit: 1 << width}
}

func newSplitmix(key []byte, width uint) *Permutation {
	p := &Permutation{width: width, scheme: SchemeSplitmix, hi: (width + 1) / 2, lo: width / 2, limit: 1 << width}
	for i := range p.keys {
		h := sha256.Sum256(append(append([]byte("frond-permutation-v1"), byte(i), byte(width)), key...))
		p.keys[i] = binary.LittleEndian.Uint64(h[:8])
	}
	return p
}

// Width returns the permutation's width in bits.
func (p *Permutation) Width() uint { return p.width }

// Scheme returns the permutation's scheme.
func (p *Permutation) Scheme() string { return p.scheme }

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (p *Permutation) round(x uint64, i int, bits uint) uint64 {
	return mix(x^p.keys[i]) & (1<<bits - 1)
}

// forward runs the rounds: (hi, lo) becomes (lo, hi ^ F(lo)), and the
// halves swap sizes. rounds is even, so the sizes end as they began.
func (p *Permutation) forward(x uint64) uint64 {
	sh, sl := p.hi, p.lo
	h, l := x>>sl, x&(1<<sl-1)
	for i := 0; i < rounds; i++ {
		h, l = l, h^p.round(l, i, sh)
		sh, sl = sl, sh
	}
	return h<<sl | l
}

func (p *Permutation) backward(y uint64) uint64 {
	sh, sl := p.hi, p.lo
	h, l := y>>sl, y&(1<<sl-1)
	for i := rounds - 1; i >= 0; i-- {
		sh, sl = sl, sh
		h, l = l^p.round(h, i, sh), h
	}
	return h<<sl | l
}

// Apply maps x, below 2^Width, to its image. It returns an error for x out
// of range.
func (p *Permutation) Apply(x int64) (int64, error) {
	if x < 0 || uint64(x) >= p.limit {
		return 0, fmt.Errorf("%w: %d is outside the %d-bit permutation", ErrInvalid, x, p.width)
	}
	if p.ff != nil {
		a, b := p.ff.encrypt(uint64(x)>>p.ff.v, uint64(x)&(p.ff.powV-1))
		return int64(a<<p.ff.v | b), nil
	}
	return int64(p.forward(uint64(x))), nil
}

// Invert is the inverse of Apply.
func (p *Permutation) Invert(y int64) (int64, error) {
	if y < 0 || uint64(y) >= p.limit {
		return 0, fmt.Errorf("%w: %d is outside the %d-bit permutation", ErrInvalid, y, p.width)
	}
	if p.ff != nil {
		a, b := p.ff.decrypt(uint64(y)>>p.ff.v, uint64(y)&(p.ff.powV-1))
		return int64(a<<p.ff.v | b), nil
	}
	return int64(p.backward(uint64(y))), nil
}
