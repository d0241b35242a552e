package resp

import "errors"

// framer follows the RESP framing of what a connection sends, byte by byte
// as it is read, and refuses a command whose header announces more
// arguments or a larger argument than the request bound allows. redcon
// parses a multibulk header's count before the data arrives and loops that
// many times on every read: "*199999999999999\r\n" alone would keep a core
// busy for hours (found by FuzzStream). The framer ends such a connection
// before redcon sees the bytes.
type framer struct {
	max       int64 // the request bound, bytes
	state     frameState
	n         int64 // the number being read (count or size)
	digits    int
	remaining int64 // arguments left in the command
	skip      int64 // bytes of an argument (and its CRLF) left
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
	frSkip                      // the argument's bytes and CRLF
	frPass                      // malformed: redcon answers and closes
)

var errFrameTooLarge = errors.New("request too large: a command announces more than the request bound")

// feed follows b; an error means the connection must end.
func (f *framer) feed(b []byte) error {
	// The most arguments a command within the bound can have: each takes at
	// least "$0\r\n\r\n".
	maxArgs := f.max/6 + 1
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch f.state {
		case frStart:
			if c == '*' {
				f.state, f.n, f.digits = frCount, 0, 0
			} else if c != '\r' && c != '\n' {
				f.state = frInline
			}
		case frInline:
			if c == '\n' {
				f.state = frStart
			}
		case frCount, frSize:
			switch {
			case c >= '0' && c <= '9' && f.digits < 19:
				f.n = f.n*10 + int64(c-'0')
				f.digits++
				if f.state == frCount && f.n > maxArgs || f.state == frSize && f.n > f.max {
					return errFrameTooLarge
				}
			case c == '\r' && f.digits > 0:
				f.state++ // frCountLF or frSizeLF
			default:
				f.state = frPass
			}
		case frCountLF:
			if c != '\n' || f.n == 0 {
				f.state = frPass
				continue
			}
			f.state, f.remaining = frArg, f.n
		case frArg:
			if c != '$' {
				f.state = frPass
				continue
			}
			f.state, f.n, f.digits = frSize, 0, 0
		case frSizeLF:
			if c != '\n' {
				f.state = frPass
				continue
			}
			f.state, f.skip = frSkip, f.n+2
		case frSkip:
			k := min(f.skip, int64(len(b)-i))
			f.skip -= k
			i += int(k) - 1
			if f.skip == 0 {
				f.remaining--
				if f.remaining == 0 {
					f.state = frStart
				} else {
					f.state = frArg
				}
			}
		case frPass:
			return nil
		}
	}
	return nil
}
