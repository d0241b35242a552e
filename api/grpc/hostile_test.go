package grpcapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
	"github.com/frond-id/frond/service"
)

// A stream's metadata is bounded as HTTP's headers are (16 KiB): grpc-go's
// own bound is 16 MiB, and idle streams each holding that much took the
// heap from 18 MB to 543 MB (issue 29, item 12). A call with more is
// refused and takes no ID.
func TestHostile_MetadataBounded(t *testing.T) {
	f := start(t, api.Options{})
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("a", 64<<10))
	if _, err := f.c.NextSegment(ctx, &frondv1.NextSegmentRequest{Tag: "order"}); err == nil {
		t.Fatal("a call with 64 KiB of metadata was served")
	}
	out, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	if err != nil || out.GetIds()[0] != 1 {
		t.Fatalf("next call: %v, %v; want ID 1 (the refused call took none)", out, err)
	}
}

// A connection that never sends its HTTP/2 preface (or TLS handshake) is
// closed by the handshake deadline, not grpc-go's 120 s.
func TestHostile_HandshakeDeadline(t *testing.T) {
	f := start(t, api.Options{Conn: api.ConnPolicy{HandshakeTimeout: 300 * time.Millisecond}})
	c, err := net.Dial("tcp", f.conn.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	io.Copy(io.Discard, c)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("closed after %v", d)
	}
}

// rawCodec sends bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// A request that does not decode is the client's fault: INVALID_ARGUMENT,
// counted in the metrics, not grpc-go's INTERNAL ("a bug: please report")
// before any interceptor (issue 29, item 13).
func TestHostile_MalformedMessage(t *testing.T) {
	f := start(t, api.Options{})
	for _, msg := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x02, 0xff, 0xfe}} { // garbage; a tag that is not UTF-8
		var out []byte
		err := f.conn.Invoke(bg, frondv1.IDService_NextSegment_FullMethodName, msg, &out, grpc.ForceCodec(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%x: %v, want INVALID_ARGUMENT", msg, err)
		}
	}
	out, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"})
	if err != nil || out.GetIds()[0] != 1 {
		t.Fatalf("next call: %v, %v", out, err)
	}
}

// A call whose own deadline passed, or that its caller cancelled, is
// counted as such in the metrics, not as the server being unavailable
// (issue 29, item 15).
func TestToStatus_CallersDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	if st, code := toStatus(ctx, context.DeadlineExceeded); st.Code() != codes.DeadlineExceeded || code != "deadline_exceeded" {
		t.Fatalf("deadline: %v, %q", st.Code(), code)
	}
	ctx, cancel = context.WithCancel(bg)
	cancel()
	if st, code := toStatus(ctx, context.Canceled); st.Code() != codes.Canceled || code != "cancelled" {
		t.Fatalf("cancelled: %v, %q", st.Code(), code)
	}
}

// unreadCalls opens n NextUUID calls on one HTTP/2 connection whose
// flow-control window is 0 (the server can send no answer's bytes), and
// answers the server's pings, as the attack of issue 43 did (about 1 MB
// of answer from a 90-byte request; 1.2 GB held per connection). It
// returns the connection and a channel of the grpc-status of each call
// answered without a body (a refusal), closed when the connection ends.
func unreadCalls(t *testing.T, addr string, n int) (net.Conn, <-chan string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	req, _ := proto.Marshal(&frondv1.NextUUIDRequest{Version: 7, N: 10000, Form: "typeid", Prefix: strings.Repeat("a", 63)})
	msg := append([]byte{0, 0, 0, 0, 0}, req...)
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(req)))
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := 0; i < n; i++ {
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", frondv1.IDService_NextUUID_FullMethodName},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteData(id, true, msg); err != nil {
			t.Fatal(err)
		}
	}
	statuses := make(chan string, n)
	go func() {
		defer close(statuses)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.PingFrame:
				if !f.IsAck() {
					fr.WritePing(true, f.Data)
				}
			case *http2.MetaHeadersFrame:
				for _, h := range f.Fields {
					if h.Name == "grpc-status" {
						statuses <- h.Value + " " + f.Fields[len(f.Fields)-1].Value
					}
				}
			}
		}
	}()
	return c, statuses
}

// Issue 43, item 1: answers a client never reads are bounded by the node's
// answer budget, across connections: the calls past it are refused at once
// (UNAVAILABLE, overloaded) before any ID is taken; the places come back
// when the connection closes; and an answer not written within the write
// timeout closes its connection. Before, each such connection held about
// 1.2 GB, and three killed the node under a 4 GiB limit.
func TestHostile_UnreadAnswersBounded(t *testing.T) {
	const budget = 8 << 20
	f := start(t, api.Options{Conn: api.ConnPolicy{WriteTimeout: time.Hour}}, func(c *service.Config) { c.AnswerBudget = budget })
	var conns []net.Conn
	refused := 0
	for range 3 {
		c, statuses := unreadCalls(t, f.conn.Target(), 200)
		conns = append(conns, c)
		deadline := time.Now().Add(20 * time.Second)
		for want := refused + 150; refused < want && time.Now().Before(deadline); {
			select {
			case st := <-statuses:
				if !strings.HasPrefix(st, "14 ") {
					t.Fatalf("a call refused with %q, want 14 (UNAVAILABLE)", st)
				}
				refused++
			case <-time.After(time.Until(deadline)):
			}
		}
		used, limit, _ := f.svc.AnswerBudget()
		if used > limit || limit != budget {
			t.Fatalf("answers not read hold %d bytes of a budget of %d", used, limit)
		}
	}
	if refused < 450 {
		t.Fatalf("%d calls refused of 600 that cannot be read", refused)
	}
	// Another client is refused while the budget is full, and served once
	// the unread connections close.
	if _, err := f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 7, N: 10000}); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("a call while the budget is full: %v", err)
	}
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for used, _, _ := f.svc.AnswerBudget(); used != 0; used, _, _ = f.svc.AnswerBudget() {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after the connections closed", used)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := f.c.NextUUID(bg, &frondv1.NextUUIDRequest{Version: 7, N: 10000}); err != nil {
		t.Fatalf("after the unread connections closed: %v", err)
	}

	// The write deadline: an answer not written in time closes its
	// connection, and its place comes back.
	g := start(t, api.Options{Conn: api.ConnPolicy{WriteTimeout: 300 * time.Millisecond}}, func(c *service.Config) { c.AnswerBudget = budget })
	c, statuses := unreadCalls(t, g.conn.Target(), 2)
	defer c.Close()
	select {
	case <-waitClosed(statuses):
	case <-time.After(10 * time.Second):
		t.Fatal("a connection whose answers were not read within the write timeout is still open")
	}
	deadline = time.Now().Add(10 * time.Second)
	for used, _, _ := g.svc.AnswerBudget(); used != 0; used, _, _ = g.svc.AnswerBudget() {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after the write deadline", used)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitClosed is closed when ch is.
func waitClosed(ch <-chan string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	return done
}

// Every answer's place comes back once written, a small one too (grpc-go
// keeps a buffer below 1 KiB as a plain slice and never hands it back:
// the budget filled with calls of one ID each).
func TestAnswerBudget_SmallAnswersReleased(t *testing.T) {
	f := start(t, api.Options{}, func(c *service.Config) { c.AnswerBudget = 64 << 10 })
	for i := 0; i < 500; i++ {
		if _, err := f.c.NextSegment(bg, &frondv1.NextSegmentRequest{Tag: "order"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for used, _, _ := f.svc.AnswerBudget(); used != 0; used, _, _ = f.svc.AnswerBudget() {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still held after every answer was read", used)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 43, item 6: a LeaseRanges stream that sends nothing held its
// connection open for ever, even with limits.idle_timeout at 5 s
// (MaxConnectionIdle does not apply while a stream is open): it ends after
// the idle timeout without a request now. (A health Watch does not: see
// health.Watch.)
func TestHostile_IdleStreamsEnd(t *testing.T) {
	f := start(t, api.Options{Conn: api.ConnPolicy{IdleTimeout: 300 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	st, err := f.c.LeaseRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := st.Recv(); status.Code(err) != codes.Unavailable || time.Since(t0) > 5*time.Second {
		t.Fatalf("an idle LeaseRanges stream: %v after %v", err, time.Since(t0))
	}
	// A stream in use is not ended: requests every 100 ms for a second.
	st, err = f.c.LeaseRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		if err := st.Send(&frondv1.NextSegmentRangesRequest{Tag: "order", N: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatalf("a stream in use: %v", err)
		}
	}
}
