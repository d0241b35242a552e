package idfmt

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid means a string is not an encoding of a 63-bit ID, or a
// template or key is unusable.
var ErrInvalid = errors.New("invalid ID form")

// An Encoding turns non-negative 63-bit IDs into short strings and back.
//
// Both encodings here are written for frond: no well-kept Go library offers
// fixed-width, order-preserving base62 or Crockford base32 for int64 (ULID
// libraries do Crockford for 128 bits), and the code is a few lines.
type Encoding struct {
	name     string
	alphabet string
	width    int             // characters for 2^63-1
	decode   [256]int8       // -1: not a digit
	fold     func(byte) byte // normalises input before lookup
}

// Base62 uses 0-9A-Za-z, in ASCII order, so fixed-width strings sort like
// the numbers: 11 characters for any 63-bit ID.
var Base62 = newEncoding("base62", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", nil)

// Base32 is Crockford's base32 (0-9, A-Z without I, L, O, U): 13 characters
// for any 63-bit ID, sortable when fixed-width. Decoding ignores case and
// hyphens and reads I and L as 1 and O as 0, as Crockford specifies.
var Base32 = newEncoding("base32", "0123456789ABCDEFGHJKMNPQRSTVWXYZ", func(c byte) byte {
	switch c {
	case 'i', 'I', 'l', 'L':
		return '1'
	case 'o', 'O':
		return '0'
	}
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
})

func newEncoding(name, alphabet string, fold func(byte) byte) *Encoding {
	e := &Encoding{name: name, alphabet: alphabet, fold: fold}
	for i := range e.decode {
		e.decode[i] = -1
	}
	for i := 0; i < len(alphabet); i++ {
		e.decode[alphabet[i]] = int8(i)
	}
	for n := uint64(1<<63 - 1); n > 0; n /= uint64(len(alphabet)) {
		e.width++
	}
	return e
}

// Name is "base62" or "base32".
func (e *Encoding) Name() string { return e.name }

// Width is the length of the fixed-width (sortable) form.
func (e *Encoding) Width() int { return e.width }

// Encode returns the shortest string for id (no leading zero digits).
// It panics on a negative id, which no frond ID is.
func (e *Encoding) Encode(id int64) string {
	if id < 0 {
		panic("idfmt: negative ID")
	}
	var buf [16]byte
	i := len(buf)
	base := uint64(len(e.alphabet))
	for n := uint64(id); ; n /= base {
		i--
		buf[i] = e.alphabet[n%base]
		if n < base {
			break
		}
	}
	return string(buf[i:])
}

// EncodeFixed returns id in Width characters, padded with the zero digit:
// strings of the same encoding sort as their IDs do.
func (e *Encoding) EncodeFixed(id int64) string {
	s := e.Encode(id)
	return strings.Repeat(e.alphabet[:1], e.width-len(s)) + s
}

// Decode reads a string of either form back to the ID.
func (e *Encoding) Decode(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty %s string", ErrInvalid, e.name)
	}
	base := uint64(len(e.alphabet))
	var n uint64
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if e.fold != nil {
			if c == '-' {
				continue
			}
			c = e.fold(c)
		}
		d := e.decode[c]
		if d < 0 {
			return 0, fmt.Errorf("%w: byte %d (%q) is not a %s digit", ErrInvalid, i, c, e.name)
		}
		if n > (1<<63-1-uint64(d))/base {
			return 0, fmt.Errorf("%w: larger than 2^63-1", ErrInvalid)
		}
		n = n*base + uint64(d)
		digits++
	}
	if digits == 0 {
		return 0, fmt.Errorf("%w: no digits", ErrInvalid)
	}
	return int64(n), nil
}
