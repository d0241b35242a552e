package resp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestFramer(t *testing.T) {
	ok := []struct {
		in       string
		commands int64
	}{
		{"*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n*1\r\n$4\r\nPING\r\n", 2},
		{"PING\r\nINCR order\r\n", 2},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$19\r\n*9999999999999999\r\n\r\n", 1}, // a header's look-alike inside an argument
		{"*1\r\n$0\r\n\r\n", 1},
		{"\r\n\r\n   \r\nPING\n", 1},
		{"SEGMENT \"a b c\" COUNT 2\r\n", 1},
		{strings.Repeat("a ", MaxInlineWords) + "\r\n", 1},
	}
	for _, c := range ok {
		// Whole, and split at every byte.
		f := framer{max: 1 << 20}
		if err := f.feed([]byte(c.in)); err != nil {
			t.Errorf("%q: %v", c.in, err)
		}
		g := framer{max: 1 << 20}
		for i := 0; i < len(c.in); i++ {
			if err := g.feed([]byte{c.in[i]}); err != nil {
				t.Errorf("%q byte by byte: %v", c.in, err)
			}
		}
		if f.state != g.state || f.state != frStart || f.commands != c.commands || g.commands != c.commands {
			t.Errorf("%q: state %d whole, %d byte by byte; commands %d and %d, want %d", c.in, f.state, g.state, f.commands, g.commands, c.commands)
		}
	}
	for _, in := range []string{"*199999999999999\r\n", "*1\r\n$99999999999\r\n", "PING\r\n*" + strings.Repeat("9", 30) + "\r\n"} {
		f := framer{max: 1 << 20}
		if err := f.feed([]byte(in)); !errors.Is(err, errFrameTooLarge) && !errors.Is(err, errTooManyArgs) {
			t.Errorf("%q: %v, want errFrameTooLarge or errTooManyArgs", in, err)
		}
	}
	// Issue 43, item 4: at most MaxArgs arguments (redcon parses an
	// incomplete command from its start on every read).
	if err := (&framer{max: 1 << 20}).feed([]byte(fmt.Sprintf("*%d\r\n", MaxArgs))); err != nil {
		t.Errorf("%d arguments: %v", MaxArgs, err)
	}
	if err := (&framer{max: 1 << 20}).feed([]byte(fmt.Sprintf("*%d\r\n", MaxArgs+1))); !errors.Is(err, errTooManyArgs) {
		t.Errorf("%d arguments: %v, want errTooManyArgs", MaxArgs+1, err)
	}
	// Whatever redcon's strconv.Atoi would read but the framing does not
	// allow ends the connection: a framer that let it through could be
	// steered past its bounds (issue 29: "*+1\r\n$4\r\nPING\r\n" and then
	// "*1200000000\r\n" pinned a core per connection).
	for _, in := range []string{
		"*x\r\n", "*+1\r\n$4\r\nPING\r\n", "*-1\r\n", "*0\r\n", "*01\r\n", "*" + strings.Repeat("0", 20) + "1\r\n",
		"*1\r\n$+4\r\nPING\r\n", "*1\r\n$04\r\nPING\r\n", "*1\r\n$-1\r\n", "*1\r\nPING\r\n", "*1\r\n$4\r\nPINGxx",
		"*1\n", "*1\r\n$4\n", "*1\r\n$4\r\nPING\n", "*2\r\n$4\r\nINCR\r\n*1\r\n",
	} {
		f := framer{max: 1 << 20}
		var fe *errFraming
		if err := f.feed([]byte(in)); !errors.As(err, &fe) {
			t.Errorf("%q: %v, want a framing error", in, err)
		}
	}
	// Inline commands are bounded in bytes and words: redcon's cost grows
	// with their square (a 512 KiB line of "a a a ..." took 14.5 GB).
	for _, in := range []string{strings.Repeat("a ", MaxInlineWords+1), "PING " + strings.Repeat("x", MaxInline)} {
		f := framer{max: 1 << 20}
		if err := f.feed([]byte(in)); !errors.Is(err, errInlineTooLong) {
			t.Errorf("%.40q...: %v, want errInlineTooLong", in, err)
		}
	}
}

// feedCommands stops after the limit-th whole command.
func TestFramer_CommandsPerRead(t *testing.T) {
	in := []byte(strings.Repeat("*1\r\n$4\r\nPING\r\n", 5) + "PING\r\n*1\r\n$4\r\nPI")
	f := framer{max: 1 << 20}
	n, err := f.feedCommands(in, 3)
	if err != nil || n != 3*14 || f.commands != 3 || !f.atCommandStart() {
		t.Fatalf("limit 3: %d bytes, %v, %d commands", n, err, f.commands)
	}
	m, err := f.feedCommands(in[n:], 10)
	if err != nil || n+m != len(in) || f.commands != 6 || f.atCommandStart() {
		t.Fatalf("the rest: %d bytes, %v, %d commands", m, err, f.commands)
	}
}
