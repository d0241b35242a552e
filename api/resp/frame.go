package resp

import (
	"errors"
	"fmt"
)

// framer follows the RESP framing of what a connection sends, byte by byte
// as it is read, and ends the connection on anything redcon could be made
// to spend unbounded memory or CPU on, before redcon sees the bytes:
//
//   - a multibulk header that announces more arguments, or an argument
//     larger, than the request bound allows: redcon parses a header's
//     count before the data arrives and loops that many times on every
//     read ("*199999999999999\r\n" alone kept a core busy for hours; found
//     by FuzzStream);
//   - any byte the framing does not allow where it stands (a sign, a
//     leading zero, a missing "$" or CRLF): redcon reads counts with
//     strconv.Atoi, so "*+1" or twenty leading zeros would pass a framer
//     that only looked at digits, and a framer that let the rest of the
//     stream through after such a byte could be steered past its bounds
//     (issue 29);
//   - an inline command (no "*": telnet, nc) longer than MaxInline bytes
//     or of more than MaxInlineWords words: redcon copies the rest of the
//     line for every word, so its cost grows with the square of the line
//     (a 512 KiB line of "a a a ..." took 14.5 GB; issue 29). redis-cli
//     sends multibulk commands; inline ones are typed by hand.
//
// It also counts whole commands (Commands), so that the connection can hand
// redcon a bounded number per read (limitConn).
type framer struct {
	max       int64 // the request bound, bytes
	state     frameState
	n         int64 // the number being read (count or size)
	digits    int
	remaining int64 // arguments left in the command
	skip      int64 // bytes of an argument left
	inline    int   // bytes of the inline command so far
	words     int   // words of the inline command so far
	space     bool  // the last inline byte was a space
	commands  int64 // whole commands seen
}

type frameState uint8

const (
	frStart   frameState = iota // a command starts
	frInline                    // an inline command: up to the newline
	frCount                     // "*" read: the argument count
	frCountLF                   // the count's "\r" read
	frArg                       // an argument starts: "$"
	frSize                      // "$" read: the argument's size
	frSizeLF                    // the size's "\r" read
	frData                      // the argument's bytes
	frDataCR                    // the argument's "\r"
	frDataLF                    // the argument's "\n"
)

// Bounds of an inline command.
const (
	MaxInline      = 4096
	MaxInlineWords = 64
)

// MaxArgs bounds the arguments of a multibulk command, as MaxInlineWords
// bounds an inline one: frond's commands take a handful. redcon parses an
// incomplete command again from its start on every read, so a command of
// 174,762 empty arguments sent 200 bytes at a time cost 7.4 s of CPU
// (issue 43, item 4); with at most 64 each read parses at most 64.
const MaxArgs = 64

var (
	errFrameTooLarge = errors.New("request too large: a command announces more than the request bound")
	errInlineTooLong = fmt.Errorf("inline command too long: at most %d bytes and %d words (send commands as RESP arrays, as Redis clients do)", MaxInline, MaxInlineWords)
	errTooManyArgs   = fmt.Errorf("too many arguments: a command takes at most %d", MaxArgs)
)

// errFraming is a byte the framing does not allow where it stands.
type errFraming struct {
	what string
	got  byte
}

func (e *errFraming) Error() string {
	return fmt.Sprintf("Protocol error: %s, got %q", e.what, e.got)
}

// atCommandStart reports whether the bytes fed so far end on a command's
// boundary.
func (f *framer) atCommandStart() bool { return f.state == frStart }

// feed follows b; an error means the connection must end.
func (f *framer) feed(b []byte) error {
	_, err := f.feedCommands(b, -1)
	return err
}

// feedCommands follows b up to the end of the limit-th whole command
// (limit < 0: all of b) and returns how many bytes of b it followed.
func (f *framer) feedCommands(b []byte, limit int) (int, error) {
	// The most arguments a command within the bound can have: each takes at
	// least "$0\r\n\r\n".
	maxArgs := f.max/6 + 1
	done := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch f.state {
		case frStart:
			switch c {
			case '*':
				f.state, f.n, f.digits = frCount, 0, 0
			case '\r', '\n':
			default:
				f.state, f.inline, f.words, f.space = frInline, 0, 0, true
				i-- // counted as part of the line
			}
		case frInline:
			if c == '\n' {
				f.state = frStart
				if f.words > 0 {
					f.commands++
					done++
				}
				break
			}
			f.inline++
			if c != ' ' && f.space && c != '\r' {
				f.words++
			}
			f.space = c == ' '
			if f.inline > MaxInline || f.words > MaxInlineWords {
				return i, errInlineTooLong
			}
		case frCount, frSize:
			switch {
			case c >= '0' && c <= '9':
				if f.digits > 0 && f.n == 0 || f.state == frCount && f.digits == 0 && c == '0' {
					return i, &errFraming{"a count or size without leading zeros", c}
				}
				f.n = f.n*10 + int64(c-'0')
				f.digits++
				if f.state == frCount && f.n > MaxArgs {
					return i, errTooManyArgs
				}
				if f.state == frCount && f.n > maxArgs || f.state == frSize && f.n > f.max {
					return i, errFrameTooLarge
				}
			case c == '\r' && f.digits > 0:
				f.state++ // frCountLF or frSizeLF
			case f.state == frCount:
				return i, &errFraming{"invalid multibulk length", c}
			default:
				return i, &errFraming{"invalid bulk length", c}
			}
		case frCountLF, frSizeLF:
			if c != '\n' {
				return i, &errFraming{"CRLF after a length", c}
			}
			if f.state == frCountLF {
				f.state, f.remaining = frArg, f.n
			} else {
				f.state, f.skip = frData, f.n
				if f.skip == 0 {
					f.state = frDataCR
				}
			}
		case frArg:
			if c != '$' {
				return i, &errFraming{"expected '$'", c}
			}
			f.state, f.n, f.digits = frSize, 0, 0
		case frData:
			k := min(f.skip, int64(len(b)-i))
			f.skip -= k
			i += int(k) - 1
			if f.skip == 0 {
				f.state = frDataCR
			}
		case frDataCR:
			if c != '\r' {
				return i, &errFraming{"CRLF after an argument", c}
			}
			f.state = frDataLF
		case frDataLF:
			if c != '\n' {
				return i, &errFraming{"CRLF after an argument", c}
			}
			f.remaining--
			if f.remaining > 0 {
				f.state = frArg
				break
			}
			f.state = frStart
			f.commands++
			done++
		}
		if limit >= 0 && done >= limit && f.state == frStart {
			return i + 1, nil
		}
	}
	return len(b), nil
}
