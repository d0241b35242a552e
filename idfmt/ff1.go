package idfmt

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"math/bits"
)

// ff1 is FF1, the format-preserving encryption of NIST SP 800-38G (Rev. 1),
// for numeral strings of length n in a radix whose halves fit 64 bits:
// radix^ceil(n/2) < 2^64. That covers every width frond permutes (n bits
// in radix 2, up to 63) and NIST's published samples (radix 10 and 36), so
// the arithmetic is on uint64 and a permutation takes no allocation.
//
// A string is held as its two halves' values: a = NUM(X[1..u]) and
// b = NUM(X[u+1..n]), with u = floor(n/2) and v = n-u numerals.
type ff1 struct {
	blk        cipher.Block
	radix      uint64
	n, u, v    int
	powU, powV uint64 // radix^u, radix^v
	pow2       bool   // radix is a power of two: mod radix^m is a mask
	b          int    // bytes of NUM(B) in Q
	// The CBC-MAC of P || Q depends on the round only through Q's last
	// block ([i] and NUM(B) are its last b+1 bytes), so everything before
	// it is computed once: mac is the MAC state before the last block, and
	// last holds the last block's fixed bytes (the tweak's tail and the
	// padding).
	mac  [16]byte
	last [16]byte
	// fixed is last XOR mac as two big-endian words: the round's block
	// before [i] and NUM(B) are XORed into its last b+1 bytes (which are
	// zero in last).
	fixed [2]uint64
}

const ff1Rounds = 10

// newFF1 returns FF1 under an AES key (16, 24 or 32 bytes) for strings of
// n numerals in radix with tweak.
func newFF1(key []byte, radix uint64, n int, tweak []byte) (*ff1, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if radix < 2 || radix > 1<<16 || n < 2 || n > 1<<20 {
		return nil, errors.New("ff1: radix 2 to 65536, length at least 2")
	}
	f := &ff1{blk: blk, radix: radix, n: n, u: n / 2, v: n - n/2, pow2: radix&(radix-1) == 0}
	var ok bool
	if f.powV, ok = pow(radix, f.v); !ok {
		return nil, errors.New("ff1: radix^ceil(n/2) must be below 2^64")
	}
	f.powU, _ = pow(radix, f.u)
	// b = ceil(ceil(v * log2(radix)) / 8): ceil(log2(radix^v)) is the bit
	// length of radix^v - 1.
	f.b = (bits.Len64(f.powV-1) + 7) / 8
	if f.b == 0 {
		f.b = 1
	}
	// d = 4*ceil(b/4) + 4 is at most 12 here: y is the first d bytes of
	// one block R, no further blocks needed.

	// P = [1]^1 [2]^1 [1]^1 [radix]^3 [10]^1 [u mod 256]^1 [n]^4 [t]^4.
	var p [16]byte
	p[0], p[1], p[2] = 1, 2, 1
	p[3], p[4], p[5] = byte(radix>>16), byte(radix>>8), byte(radix)
	p[6], p[7] = 10, byte(f.u)
	binary.BigEndian.PutUint32(p[8:], uint32(n))
	binary.BigEndian.PutUint32(p[12:], uint32(len(tweak)))
	blk.Encrypt(f.mac[:], p[:])

	// Q = T || [0]^((-t-b-1) mod 16) || [i]^1 || [NUM(B)]^b, a multiple
	// of 16 bytes.
	pad := ((-len(tweak)-f.b-1)%16 + 16) % 16
	q := make([]byte, len(tweak)+pad+1+f.b)
	copy(q, tweak)
	for len(q) > 16 {
		xorBlock(&f.mac, q[:16])
		blk.Encrypt(f.mac[:], f.mac[:])
		q = q[16:]
	}
	copy(f.last[:], q)
	f.fixed[0] = binary.BigEndian.Uint64(f.last[:8]) ^ binary.BigEndian.Uint64(f.mac[:8])
	f.fixed[1] = binary.BigEndian.Uint64(f.last[8:]) ^ binary.BigEndian.Uint64(f.mac[8:])
	return f, nil
}

func pow(radix uint64, e int) (uint64, bool) {
	r := uint64(1)
	for range e {
		hi, lo := bits.Mul64(r, radix)
		if hi != 0 {
			return 0, false
		}
		r = lo
	}
	return r, true
}

func xorBlock(dst *[16]byte, src []byte) {
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// prf is y = NUM(S) mod radix^m for round i with the half x:
// R = CBC-MAC(P || Q), S its first d bytes. blk is scratch space: a block
// handed to cipher.Block escapes, so one per permutation, not per round.
func (f *ff1) prf(blk *[16]byte, i int, x uint64, mod uint64) uint64 {
	w0, w1 := f.fixed[0], f.fixed[1]
	if f.b < 8 {
		w1 ^= uint64(i)<<(8*f.b) | x
	} else {
		w0 ^= uint64(i)
		w1 ^= x
	}
	binary.BigEndian.PutUint64(blk[:8], w0)
	binary.BigEndian.PutUint64(blk[8:], w1)
	f.blk.Encrypt(blk[:], blk[:])
	// d = 4*ceil(b/4)+4 bytes of R: 8 when b <= 4, 12 when b <= 8.
	var hi, lo uint64
	if f.b <= 4 {
		lo = binary.BigEndian.Uint64(blk[:8])
	} else {
		hi = uint64(binary.BigEndian.Uint32(blk[:4]))
		lo = binary.BigEndian.Uint64(blk[4:12])
	}
	if f.pow2 {
		return lo & (mod - 1)
	}
	return bits.Rem64(hi, lo, mod)
}

// encrypt maps the halves (a < radix^u, b < radix^v) to their image.
func (f *ff1) encrypt(a, b uint64) (uint64, uint64) {
	blk := new([16]byte)
	for i := range ff1Rounds {
		mod := f.powU
		if i%2 == 1 {
			mod = f.powV
		}
		y := f.prf(blk, i, b, mod)
		c := a + y // a, y < mod
		if c < a || c >= mod {
			c -= mod
		}
		a, b = b, c
	}
	return a, b
}

// decrypt is the inverse of encrypt.
func (f *ff1) decrypt(a, b uint64) (uint64, uint64) {
	blk := new([16]byte)
	for i := ff1Rounds - 1; i >= 0; i-- {
		mod := f.powU
		if i%2 == 1 {
			mod = f.powV
		}
		y := f.prf(blk, i, a, mod)
		c := b - y
		if b < y {
			c += mod
		}
		a, b = c, a
	}
	return a, b
}
