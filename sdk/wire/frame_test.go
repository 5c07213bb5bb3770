package wire

import (
	"bytes"
	"testing"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// within reports whether v's bytes lie inside buf's (v is a slice of it).
func within(v, buf []byte) bool {
	if len(v) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&v[0])), uintptr(unsafe.Pointer(&buf[0]))
	return p >= lo && p+uintptr(len(v)) <= lo+uintptr(len(buf))
}

func codecMessages() []proto.Message {
	big := bytes.Repeat([]byte("0123456789abcdef"), DetachBytes/16+3)
	edge := big[:DetachBytes]
	return []proto.Message{
		&pb.HostToFamily{},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{}}},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Route: pb.Start_OP, Op: "audit", Body: big, NowUnixNano: 7, BodyToken: 9}}},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Body: big}}},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Body: edge, Op: "x"}}},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Body: edge[:len(edge)-1], Op: "x"}}},
		&pb.AdaptRequest{FormatId: "f", FormatVersion: "1", Record: big, RecordSpan: &pb.Span{Offset: 1, Length: 2}},
		&pb.FamilyToHost{Msg: &pb.FamilyToHost_Report{Report: &pb.Report{Body: big, Ledger: big[:10], CheckEndUnixNano: 3}}},
		&pb.FamilyToHost{Msg: &pb.FamilyToHost_Validated{Validated: &pb.Validated{Outcome: pb.Outcome_ACCEPTED, Body: big, Caller: "c", HasCaller: true}}},
		&pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{{RoleRaw: "user"}}}}},
	}
}

// TestFrameCodecIsProtobuf: what the codec writes, standard protobuf
// reads as the message; what standard protobuf writes, the codec reads as
// the message; the sender's message is left as it was.
func TestFrameCodecIsProtobuf(t *testing.T) {
	for i, m := range codecMessages() {
		before := proto.Clone(m)
		data, err := FrameCodec{}.Marshal(m)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !proto.Equal(m, before) {
			t.Errorf("%d: marshalling changed the sender's message", i)
		}
		got := m.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, m) {
			t.Errorf("%d: protobuf reads the codec's bytes as %v (%v)", i, got, err)
		}
		std, _ := proto.Marshal(m)
		back := m.ProtoReflect().New().Interface()
		if err := (FrameCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(std)}, back); err != nil || !proto.Equal(back, m) {
			t.Errorf("%d: the codec reads protobuf as %v (%v)", i, back, err)
		}
		again := m.ProtoReflect().New().Interface()
		if err := (FrameCodec{}).Unmarshal(data, again); err != nil || !proto.Equal(again, m) {
			t.Errorf("%d: the codec reads itself as %v (%v)", i, again, err)
		}
	}
}

// TestFrameCodecCopiesNoLargeField: a large body is sent from the
// sender's slice and received as a slice of the arriving buffer; a small
// one is copied as protobuf copies it.
func TestFrameCodecCopiesNoLargeField(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, DetachBytes)
	m := &pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Op: "audit", Body: big}}}
	data, err := FrameCodec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sent := false
	for _, b := range data {
		sent = sent || within(b.ReadOnlyData(), big) && len(b.ReadOnlyData()) == len(big)
	}
	if !sent {
		t.Error("the body was copied on sending")
	}
	wire := data.Materialize()
	var got pb.HostToFamily
	if err := unmarshalAliasing(wire, got.ProtoReflect(), DetachBytes); err != nil {
		t.Fatal(err)
	}
	if body := got.GetStart().GetBody(); !bytes.Equal(body, big) || !within(body, wire) || cap(body) != len(body) {
		t.Error("the body was copied on receiving, or may grow into the buffer")
	}
	small := &pb.Start{Op: "audit", Body: big[:DetachBytes-10]}
	wire, _ = proto.Marshal(small)
	var gotSmall pb.Start
	if err := unmarshalAliasing(wire, gotSmall.ProtoReflect(), DetachBytes); err != nil || within(gotSmall.GetBody(), wire) || !proto.Equal(&gotSmall, small) {
		t.Errorf("a small body decodes as %v, aliased %v (%v)", &gotSmall, within(gotSmall.GetBody(), wire), err)
	}
}

// FuzzFrameCodec: on any bytes, the codec's decoding accepts exactly what
// protobuf accepts and gives the same message; the threshold is lowered
// to 2 bytes so that fuzzed fields take the aliasing path.
func FuzzFrameCodec(f *testing.F) {
	for _, m := range []proto.Message{
		&pb.HostToFamily{Msg: &pb.HostToFamily_Start{Start: &pb.Start{Route: pb.Start_OP, Op: "audit", Body: []byte("{}{}"), NowUnixNano: 7}}},
		&pb.HostToFamily{Msg: &pb.HostToFamily_Proceed{Proceed: &pb.Proceed{}}},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got pb.HostToFamily
		errWant := proto.Unmarshal(b, &want)
		errGot := unmarshalAliasing(b, got.ProtoReflect(), 2)
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("protobuf %v, codec %v", errWant, errGot)
		}
		if errWant == nil && !proto.Equal(&want, &got) {
			t.Fatalf("protobuf %v, codec %v", &want, &got)
		}
	})
}
