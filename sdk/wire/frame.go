package wire

import (
	"errors"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Frame is a protobuf message kept as its wire bytes. The host relays an
// adapter's answer (a whole adapted record, megabytes of text) to the
// family as the frame it arrived in: it routes records and never reads
// them, so decoding and re-encoding one would be cost without purpose.
type Frame []byte

// FrameCodec is the codec every connection in the system runs. Its name
// is "proto" and what it writes is ordinary protobuf, so any peer reads
// it, but it never copies a large bytes field:
//   - a *Frame is written and read as its bytes unchanged;
//   - a bytes field of at least DetachBytes (a request body, a record) is
//     written from the sender's own slice, after the rest of the message,
//     as a second occurrence of its enclosing message fields (protobuf
//     merges them);
//   - such a field is read as a slice of the one buffer the message
//     arrived in, not copied again.
//
// A 5 MiB body thus costs its receiver one copy (the transport's chunks
// made contiguous) where gRPC's own codec makes two, and its sender none
// where gRPC's makes one.
type FrameCodec struct{}

// DetachBytes is the size from which a bytes field is sent and received
// without a copy; below it, copying is cheaper than the bookkeeping.
const DetachBytes = 32 << 10

// Name is the content subtype: the standard protobuf one.
func (FrameCodec) Name() string { return "proto" }

// Marshal writes a *Frame as itself and a protobuf message as protobuf.
func (FrameCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *Frame:
		return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
	case proto.Message:
		var big []detached
		rest := withoutLarge(m.ProtoReflect(), nil, &big)
		b, err := proto.Marshal(rest.Interface())
		if err != nil {
			return nil, err
		}
		out := mem.BufferSlice{mem.SliceBuffer(b)}
		for _, d := range big {
			out = append(out, mem.SliceBuffer(d.header()), mem.SliceBuffer(d.value))
		}
		return out, nil
	}
	return nil, errors.New("frame codec: not a protobuf message")
}

// Unmarshal keeps the bytes for a *Frame and decodes anything else,
// large bytes fields as slices of the message's buffer.
func (FrameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *Frame:
		*m = data.Materialize()
		return nil
	case proto.Message:
		// Materialize allocates a buffer of the message's own: the
		// decoded fields may keep slices of it
		return unmarshalAliasing(data.Materialize(), m.ProtoReflect(), DetachBytes)
	}
	return errors.New("frame codec: not a protobuf message")
}

// detached is one large bytes field taken out of a message: the path of
// field numbers leading to it and its value.
type detached struct {
	path  []protowire.Number
	value []byte
}

// header is the wire bytes that precede the value: each enclosing message
// field's tag and length, then the bytes field's own.
func (d detached) header() []byte {
	// lengths from the inside out: each level holds its own tag and
	// length prefix and everything within
	sizes := make([]int, len(d.path))
	inner := len(d.value)
	for i := len(d.path) - 1; i >= 0; i-- {
		sizes[i] = inner
		inner += protowire.SizeTag(d.path[i]) + protowire.SizeBytes(inner) - inner
	}
	var h []byte
	for i, num := range d.path {
		h = protowire.AppendTag(h, num, protowire.BytesType)
		h = protowire.AppendVarint(h, uint64(sizes[i]))
	}
	return h
}

// withoutLarge returns m itself when it holds no large bytes field, and
// otherwise a shallow copy without them (the caller's message is never
// changed), recording each one taken out.
func withoutLarge(m protoreflect.Message, path []protowire.Number, big *[]detached) protoreflect.Message {
	var out protoreflect.Message
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() || fd.IsMap() {
			return true
		}
		var keep protoreflect.Value
		switch fd.Kind() {
		case protoreflect.BytesKind:
			if len(v.Bytes()) < DetachBytes {
				return true
			}
			*big = append(*big, detached{path: append(append([]protowire.Number(nil), path...), fd.Number()), value: v.Bytes()})
		case protoreflect.MessageKind:
			sub := withoutLarge(v.Message(), append(path, fd.Number()), big)
			if sub == v.Message() {
				return true
			}
			keep = protoreflect.ValueOfMessage(sub)
		default:
			return true
		}
		if out == nil {
			out = m.New()
			m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
				out.Set(fd, v)
				return true
			})
		}
		if keep.IsValid() {
			out.Set(fd, keep)
		} else {
			out.Clear(fd)
		}
		return true
	})
	if out == nil {
		return m
	}
	return out
}

// unmarshalAliasing decodes b into m in wire order: runs of ordinary
// fields through proto (merging), a singular bytes field of at least
// large bytes as a slice of b, and a large singular message field by
// recursion, so its large fields are slices of b too.
func unmarshalAliasing(b []byte, m protoreflect.Message, large int) error {
	fields := m.Descriptor().Fields()
	run := 0 // start of the pending run of ordinary fields
	flush := func(end int) error {
		if end == run {
			return nil
		}
		return proto.UnmarshalOptions{Merge: true}.Unmarshal(b[run:end], m.Interface())
	}
	for at := 0; at < len(b); {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 {
			return protowire.ParseError(n)
		}
		size := protowire.ConsumeFieldValue(num, typ, b[at+n:])
		if size < 0 {
			return protowire.ParseError(size)
		}
		next := at + n + size
		if typ == protowire.BytesType && size >= large {
			fd := fields.ByNumber(num)
			if fd != nil && !fd.IsList() && !fd.IsMap() &&
				(fd.Kind() == protoreflect.BytesKind || fd.Kind() == protoreflect.MessageKind) {
				v, _ := protowire.ConsumeBytes(b[at+n:])
				if err := flush(at); err != nil {
					return err
				}
				if fd.Kind() == protoreflect.BytesKind {
					m.Set(fd, protoreflect.ValueOfBytes(v[:len(v):len(v)]))
				} else if err := unmarshalAliasing(v, m.Mutable(fd).Message(), large); err != nil {
					return err
				}
				run = next
			}
		}
		at = next
	}
	return flush(len(b))
}
