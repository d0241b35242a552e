package grpcapi

import (
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

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
	bad  sync.Map // the message (a pointer) → its decoding error
	held sync.Map // an answer (a pointer) → its heldAnswer (Server.held)
}

// Marshal implements encoding.CodecV2: an answer with a place in the
// node's answer budget is encoded into a buffer that gives the place back
// once grpc-go has written it (answers.go).
func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	if p, ok := c.held.LoadAndDelete(v); ok {
		if m, ok := v.(proto.Message); ok {
			return c.marshalHeld(m, p.(heldAnswer))
		}
		p.(heldAnswer).ca.done(p.(heldAnswer).h)
	}
	return c.CodecV2.Marshal(v)
}

// drop gives back the place of an answer that will not be encoded.
func (c *codec) drop(v any) {
	if v == nil {
		return
	}
	if p, ok := c.held.LoadAndDelete(v); ok {
		p.(heldAnswer).ca.done(p.(heldAnswer).h)
	}
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
