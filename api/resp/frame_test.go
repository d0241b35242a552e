package resp

import (
	"errors"
	"strings"
	"testing"
)

func TestFramer(t *testing.T) {
	ok := []string{
		"*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n*1\r\n$4\r\nPING\r\n",
		"PING\r\nINCR order\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$19\r\n*9999999999999999\r\n\r\n", // a header's look-alike inside an argument
		"*1\r\n$0\r\n\r\n",
		"*x\r\n", // malformed: left to redcon, which answers and closes
	}
	for _, in := range ok {
		// Whole, and split at every byte.
		f := framer{max: 1 << 20}
		if err := f.feed([]byte(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
		g := framer{max: 1 << 20}
		for i := 0; i < len(in); i++ {
			if err := g.feed([]byte{in[i]}); err != nil {
				t.Errorf("%q byte by byte: %v", in, err)
			}
		}
		if f.state != g.state {
			t.Errorf("%q: state %d whole, %d byte by byte", in, f.state, g.state)
		}
	}
	for _, in := range []string{"*199999999999999\r\n", "*1\r\n$99999999999\r\n", "PING\r\n*" + strings.Repeat("9", 30) + "\r\n"} {
		f := framer{max: 1 << 20}
		if err := f.feed([]byte(in)); !errors.Is(err, errFrameTooLarge) {
			t.Errorf("%q: %v, want errFrameTooLarge", in, err)
		}
	}
}
