package grpcapi

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/frond-id/frond/api"
	frondv1 "github.com/frond-id/frond/proto/frond/v1"
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
