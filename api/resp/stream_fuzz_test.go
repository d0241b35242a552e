package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/frond-id/frond/api"
)

// FuzzStream sends whole byte streams, as a client could, to a live
// server: whatever arrives, every reply is well-formed RESP, the
// connection ends (the stream's end, QUIT or a malformed request closes
// it) and the server goes on answering other connections.
func FuzzStream(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n",
		"INCR order\r\nSEGMENT order COUNT 3\r\n",
		"*3\r\n$7\r\nSEGMENT\r\n$5\r\norder\r\n$5\r\nCOUNT\r\n",
		"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nQUIT\r\nPING\r\n",
		"*0\r\n\r\n\r\nPING\r\n",
		"*-1\r\n$-1\r\n*2\r\n$-5\r\nINCR\r\n",
		"*1\r\n$99999999999\r\n",
		"*3\r\n$6\r\nRANGES\r\n$5\r\norder\r\n$7\r\n1000000\r\n",
		"HELLO 3\r\nHELLO 2 AUTH default x\r\nCLIENT SETNAME a\r\nCOMMAND DOCS\r\nINFO\r\n",
		"TAG CREATE x STEP 10\r\nTAG LIST\r\nREVEAL segment opaque abc\r\nDECODE 1 LAYOUT nope\r\n",
		"UUID VERSION 7 COUNT 2\r\nSNOWFLAKE FORM base62\r\nSERIAL nope\r\n\"unclosed\r\n",
	} {
		f.Add([]byte(seed))
	}
	addr, _ := start(f, api.Options{})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(in); err != nil && !closedByServer(err) {
			t.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		r := bufio.NewReader(c)
		for {
			if err := readReply(r, 0); err != nil {
				if errors.Is(err, io.EOF) || closedByServer(err) {
					break
				}
				t.Fatalf("reply to %q: %v", in, err)
			}
		}
		// The server still answers.
		p, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.SetDeadline(time.Now().Add(10 * time.Second))
		p.Write([]byte("PING\r\n"))
		if line, err := bufio.NewReader(p).ReadString('\n'); err != nil || line != "+PONG\r\n" {
			t.Fatalf("after %q: PING answered %q, %v", in, line, err)
		}
	})
}

func closedByServer(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// readReply reads one RESP2 value and fails on anything malformed; io.EOF
// only before its first byte.
func readReply(r *bufio.Reader, depth int) error {
	if depth > 8 {
		return errors.New("replies nested deeper than frond's")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		if line == "" {
			return err
		}
		return fmt.Errorf("cut reply %q: %w", line, err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-':
		return nil
	case ':':
		_, err := strconv.ParseInt(body, 10, 64)
		return err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return fmt.Errorf("bulk length %q", body)
		}
		if n == -1 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil || buf[n] != '\r' || buf[n+1] != '\n' {
			return fmt.Errorf("bulk of %d: %v", n, err)
		}
		return nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return fmt.Errorf("array length %q", body)
		}
		for range n {
			if err := readReply(r, depth+1); err != nil {
				if errors.Is(err, io.EOF) {
					return fmt.Errorf("array cut short: %w", io.ErrUnexpectedEOF)
				}
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("reply starts with %q", line[0])
}
