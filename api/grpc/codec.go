package grpcapi

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/frond-id/frond"
)

// codec is gRPC's protobuf codec, except for a request that does not
// decode (malformed bytes, a string field that is not UTF-8): grpc-go turns
// the codec's error into INTERNAL ("a bug: please report") before any
// interceptor runs, so the call escaped the metrics and the access log and
// blamed the server for the client's input. Here the message is marked
// instead, and the interceptors answer INVALID_ARGUMENT (malformed).
type codec struct {
	encoding.CodecV2
	bad sync.Map // the message (a pointer) → its decoding error
}

func newCodec() *codec { return &codec{CodecV2: encoding.GetCodecV2("proto")} }

// Unmarshal implements encoding.CodecV2.
func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		c.bad.Store(v, err)
	}
	return nil
}

// malformed returns the decoding error of m, once, or nil.
func (c *codec) malformed(m any) error {
	if err, ok := c.bad.LoadAndDelete(m); ok {
		return fmt.Errorf("%w: the request message does not decode: %v", frond.ErrInvalidArgument, err)
	}
	return nil
}

// checkedStream answers a stream's malformed message as malformed.
type checkedStream struct {
	grpc.ServerStream
	c *codec
}

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.c.malformed(m)
}
