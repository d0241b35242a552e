package idfmt

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

var testKey = []byte("0123456789abcdef-frond-test-key")

var schemes = []string{SchemeFF1, SchemeSplitmix}

// newPerm is a permutation of any width from 2, below NewPermutation's
// minimum for FF1, so that narrow widths can be checked exhaustively.
func newPerm(t testing.TB, scheme string, w uint) *Permutation {
	t.Helper()
	if scheme == SchemeFF1 {
		return newFF1Permutation(testKey, w)
	}
	p, err := NewPermutation(scheme, testKey, w)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The permutation is a bijection: checked exhaustively on every width up
// to 20 (FF1's narrowest accepted width) for both schemes.
func TestPermutation_BijectionExhaustive(t *testing.T) {
	maxW := uint(20)
	if testing.Short() {
		maxW = 16
	}
	for _, scheme := range schemes {
		for w := uint(2); w <= maxW; w++ {
			p := newPerm(t, scheme, w)
			n := int64(1) << w
			seen := make([]bool, n)
			for x := int64(0); x < n; x++ {
				y, err := p.Apply(x)
				if err != nil || y < 0 || y >= n {
					t.Fatalf("%s width %d: Apply(%d) = %d, %v", scheme, w, x, y, err)
				}
				if seen[y] {
					t.Fatalf("%s width %d: two inputs map to %d", scheme, w, y)
				}
				seen[y] = true
				if back, err := p.Invert(y); err != nil || back != x {
					t.Fatalf("%s width %d: Invert(Apply(%d)) = %d, %v", scheme, w, x, back, err)
				}
			}
		}
	}
}

// NIST's nine FF1 samples (SP 800-38G, the "FF1samples" examples: AES-128,
// -192 and -256, radix 10 and 36, with and without a tweak) through the
// same code that permutes IDs.
func TestFF1_NISTSamples(t *testing.T) {
	const k128 = "2B7E151628AED2A6ABF7158809CF4F3C"
	const k192 = k128 + "EF4359D8D580AA4F"
	const k256 = k192 + "7F036D6F04FC6A94"
	const digits, alnum = "0123456789", "0123456789abcdefghi"
	const t2, t3 = "39383736353433323130", "3737373770717273373737"
	for i, c := range []struct {
		key, tweak string
		radix      uint64
		pt, ct     string
	}{
		{k128, "", 10, digits, "2433477484"},
		{k128, t2, 10, digits, "6124200773"},
		{k128, t3, 36, alnum, "a9tv40mll9kdu509eum"},
		{k192, "", 10, digits, "2830668132"},
		{k192, t2, 10, digits, "2496655549"},
		{k192, t3, 36, alnum, "xbj3kv35jrawxv32ysr"},
		{k256, "", 10, digits, "6657667009"},
		{k256, t2, 10, digits, "1001623463"},
		{k256, t3, 36, alnum, "xs8a0azh2avyalyzuwd"},
	} {
		key, _ := hex.DecodeString(c.key)
		tweak, _ := hex.DecodeString(c.tweak)
		f, err := newFF1(key, c.radix, len(c.pt), tweak)
		if err != nil {
			t.Fatalf("sample %d: %v", i+1, err)
		}
		a, b := numOf(c.pt[:f.u], c.radix), numOf(c.pt[f.u:], c.radix)
		ea, eb := f.encrypt(a, b)
		if got := strOf(ea, f.u, c.radix) + strOf(eb, f.v, c.radix); got != c.ct {
			t.Errorf("sample %d: encrypt %s = %s, want %s", i+1, c.pt, got, c.ct)
		}
		if da, db := f.decrypt(ea, eb); da != a || db != b {
			t.Errorf("sample %d: decrypt does not give the plaintext back", i+1)
		}
	}
}

const numerals = "0123456789abcdefghijklmnopqrstuvwxyz"

func numOf(s string, radix uint64) uint64 {
	var x uint64
	for _, c := range s {
		x = x*radix + uint64(strings.IndexRune(numerals, c))
	}
	return x
}

func strOf(x uint64, n int, radix uint64) string {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = numerals[x%radix]
		x /= radix
	}
	return string(b)
}

// The power-of-two reduction (a mask) agrees with the generic one
// (bits.Rem64), which the NIST samples check.
func TestFF1_MaskMatchesRemainder(t *testing.T) {
	key := []byte("0123456789abcdef")
	f, _ := newFF1(key, 2, 40, nil)
	g, _ := newFF1(key, 2, 40, nil)
	g.pow2 = false // force the generic reduction
	for x := uint64(0); x < 1000; x++ {
		v := x * 0x9e3779b97f4a7c15 >> 24
		a1, b1 := f.encrypt(v>>20, v&(1<<20-1))
		a2, b2 := g.encrypt(v>>20, v&(1<<20-1))
		if a1 != a2 || b1 != b2 {
			t.Fatalf("mask and remainder disagree on %d", v)
		}
	}
}

// Sequential inputs come out unordered: about half the neighbours go up.
func TestPermutation_LooksRandom(t *testing.T) {
	for _, scheme := range schemes {
		p := newPerm(t, scheme, 63)
		up, prev := 0, int64(-1)
		for x := int64(1); x <= 10000; x++ {
			y, _ := p.Apply(x)
			if y > prev {
				up++
			}
			prev = y
		}
		if up < 4500 || up > 5500 {
			t.Fatalf("%s: %d of 10000 neighbours increase", scheme, up)
		}
		q, _ := NewPermutation(scheme, []byte("another key, sixteen bytes at least"), 63)
		a, _ := p.Apply(42)
		b, _ := q.Apply(42)
		if a == b {
			t.Fatalf("%s: two keys give the same image", scheme)
		}
	}
}

// Each output bit of FF1 flips for about half the inputs one apart: no
// bit stays put or follows the input's low bits.
func TestFF1_OutputBitsBalanced(t *testing.T) {
	p, _ := NewPermutation(SchemeFF1, testKey, 63)
	var ones [63]int
	const n = 20000
	for x := int64(0); x < n; x++ {
		y, _ := p.Apply(x)
		for b := range ones {
			ones[b] += int(y >> b & 1)
		}
	}
	for b, c := range ones {
		if c < n*45/100 || c > n*55/100 {
			t.Errorf("bit %d is set in %d of %d images", b, c, n)
		}
	}
}

// The images of fixed inputs are pinned: a change of construction, key
// derivation or byte order shows here, before it changes the opaque IDs
// of a deployment.
func TestPermutation_Pinned(t *testing.T) {
	for _, c := range []struct {
		scheme string
		width  uint
		x      int64
		want   int64
	}{
		{SchemeSplitmix, 63, 1, splitmixPinned63},
		{SchemeFF1, 63, 1, ff1Pinned63},
		{SchemeFF1, 53, 1, ff1Pinned53},
	} {
		p, _ := NewPermutation(c.scheme, testKey, c.width)
		if got, _ := p.Apply(c.x); got != c.want {
			t.Errorf("%s/%d: Apply(%d) = %d, want %d", c.scheme, c.width, c.x, got, c.want)
		}
	}
}

func TestPermutation_Errors(t *testing.T) {
	if _, err := NewPermutation(SchemeFF1, []byte("short"), 63); !errors.Is(err, ErrInvalid) {
		t.Error("short key accepted")
	}
	for _, c := range []struct {
		scheme string
		w      uint
	}{{SchemeSplitmix, 0}, {SchemeSplitmix, 1}, {SchemeSplitmix, 64}, {SchemeFF1, 19}, {SchemeFF1, 64}, {"aes", 63}, {"", 63}} {
		if _, err := NewPermutation(c.scheme, testKey, c.w); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q width %d accepted", c.scheme, c.w)
		}
	}
	for _, scheme := range schemes {
		p, _ := NewPermutation(scheme, testKey, 53)
		for _, x := range []int64{-1, 1 << 53, math.MaxInt64} {
			if _, err := p.Apply(x); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: Apply(%d) accepted", scheme, x)
			}
			if _, err := p.Invert(x); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: Invert(%d) accepted", scheme, x)
			}
		}
	}
}

func FuzzPermutation(f *testing.F) {
	f.Add(int64(0), uint8(63), false)
	f.Add(int64(math.MaxInt64), uint8(63), true)
	f.Add(int64(1<<53-1), uint8(53), true)
	f.Fuzz(func(t *testing.T, x int64, w uint8, ff bool) {
		width := uint(w%62) + 2
		scheme := SchemeSplitmix
		if ff {
			scheme = SchemeFF1
		}
		p := newPerm(t, scheme, width)
		y, err := p.Apply(x)
		limit := uint64(1) << width
		if x < 0 || uint64(x) >= limit {
			if err == nil {
				t.Fatalf("Apply(%d) on %d bits accepted", x, width)
			}
			return
		}
		if err != nil || y < 0 || uint64(y) >= limit {
			t.Fatalf("Apply(%d) on %d bits = %d, %v", x, width, y, err)
		}
		if back, err := p.Invert(y); err != nil || back != x {
			t.Fatalf("round trip of %d on %d bits: %d, %v", x, width, back, err)
		}
	})
}

// Pinned images of 1 under testKey. splitmixPinned63 is what frond's
// first construction gave before FF1 existed: existing keys keep their IDs.
const (
	splitmixPinned63 = 7591628352076167987
	ff1Pinned63      = 6187518587223252865
	ff1Pinned53      = 3960122639764739
)
