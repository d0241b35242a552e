package idfmt

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Permutation is a keyed bijection of the integers [0, 2^Width): frond's
// non-guessable IDs. Sequential segment IDs become numbers that look random
// and reveal neither the order nor the volume of the business; a holder of
// the key maps them back (Invert).
//
// Construction: an alternating (unbalanced) Feistel network of 8 rounds
// over exactly Width bits, split into halves of ceil(Width/2) and
// floor(Width/2) bits that swap sizes every round; the round function is the
// splitmix64 finaliser of the half-block mixed with a round key derived from
// the key by SHA-256. Every round is invertible, so the network is a
// bijection of [0, 2^Width) with no cycle walking.
//
// What it is not: encryption with a security proof. It stops counting and
// guessing; it does not protect data an ID carries, and an adversary with
// many (ID, output) pairs and the construction could attack it. Changing
// the key changes every output: rotate keys by starting a new tag.
type Permutation struct {
	width uint
	hi    uint // bits of the high half at the start (and, after an even number of rounds, the end)
	lo    uint
	limit uint64 // 2^width
	keys  [rounds]uint64
}

const rounds = 8

// CheckWidth reports whether NewPermutation accepts width: 2 to 63 bits.
func CheckWidth(width uint) error {
	if width < 2 || width > 63 {
		return fmt.Errorf("%w: permutation width %d: 2 to 63 bits", ErrInvalid, width)
	}
	return nil
}

// NewPermutation returns the permutation of [0, 2^width) for key. width is
// 2 to 63; key must hold at least 16 bytes.
func NewPermutation(key []byte, width uint) (*Permutation, error) {
	if err := CheckWidth(width); err != nil {
		return nil, err
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("%w: permutation key of %d bytes: at least 16", ErrInvalid, len(key))
	}
	p := &Permutation{width: width, hi: (width + 1) / 2, lo: width / 2, limit: 1 << width}
	for i := range p.keys {
		h := sha256.Sum256(append(append([]byte("frond-permutation-v1"), byte(i), byte(width)), key...))
		p.keys[i] = binary.LittleEndian.Uint64(h[:8])
	}
	return p, nil
}

// Width returns the permutation's width in bits.
func (p *Permutation) Width() uint { return p.width }

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
	return int64(p.forward(uint64(x))), nil
}

// Invert is the inverse of Apply.
func (p *Permutation) Invert(y int64) (int64, error) {
	if y < 0 || uint64(y) >= p.limit {
		return 0, fmt.Errorf("%w: %d is outside the %d-bit permutation", ErrInvalid, y, p.width)
	}
	return int64(p.backward(uint64(y))), nil
}
