package sdk

import (
	"errors"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Frame is a protobuf message kept as its wire bytes. The host relays an
// adapter's answer (a whole adapted record, megabytes of text) to the
// family as the frame it arrived in: it routes records and never reads
// them, so decoding and re-encoding one would be cost without purpose.
type Frame []byte

// FrameCodec is gRPC's protobuf codec, except that a *Frame is written and
// read as its bytes unchanged. Its name is "proto": the peer sees ordinary
// protobuf on the wire.
type FrameCodec struct{}

// Name is the content subtype: the standard protobuf one.
func (FrameCodec) Name() string { return "proto" }

// Marshal writes a *Frame as itself and a protobuf message as protobuf.
func (FrameCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Frame:
		return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
	case proto.Message:
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return nil, errors.New("frame codec: not a protobuf message")
}

// Unmarshal keeps the bytes for a *Frame and decodes anything else.
func (FrameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *Frame:
		*m = data.Materialize()
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), m)
	}
	return errors.New("frame codec: not a protobuf message")
}
