package snowflake

import "math/bits"

// divider divides non-negative int64 values by a constant without a DIV
// instruction: a 64-bit division costs 20 to 90 cycles, more than the rest of
// Generator.Next. It uses the round-up method of Granlund and Montgomery
// ("Division by invariant integers using multiplication", 1994, theorem 4.2)
// with N = 63: for d not a power of two, l = ceil(log2 d) and
// m = ceil(2^(63+l) / d) < 2^64, and for every 0 <= n < 2^63,
// n / d == (n * m) >> (63 + l), that is hi64(n*m) >> (l-1). Powers of two are
// a plain shift. TestDivider checks it against the / operator.
type divider struct {
	d     uint64
	m     uint64 // 0 when d is a power of two
	shift uint
}

func newDivider(d uint64) divider {
	if d == 0 {
		panic("snowflake: divide by zero")
	}
	if d&(d-1) == 0 {
		return divider{d: d, shift: uint(bits.TrailingZeros64(d))}
	}
	l := uint(bits.Len64(d - 1)) // ceil(log2 d) >= 2
	q, r := bits.Div64(uint64(1)<<(l-1), 0, d)
	if r != 0 {
		q++
	}
	return divider{d: d, m: q, shift: l - 1}
}

// div returns n / d for 0 <= n < 2^63.
func (v divider) div(n uint64) uint64 {
	if v.m == 0 {
		return n >> v.shift
	}
	hi, _ := bits.Mul64(n, v.m)
	return hi >> v.shift
}
