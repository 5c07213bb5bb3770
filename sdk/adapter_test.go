package sdk

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/wire"
)

// An answer encoded inside the adapter's memory budget goes on the wire
// exactly as the answer itself would, through the frame codec too, and
// decodes to the same record or refusal.
func TestEncodedAnswerIsTheAnswer(t *testing.T) {
	for _, resp := range []*pb.AdaptResponse{
		{Result: &pb.AdaptResponse_Record{Record: &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{
			{RoleRaw: "user", Blocks: []*pb.Block{{KindRaw: "text", TextSpan: &pb.Span{Offset: 3, Length: 9}}}},
			{RoleRaw: "tool", Schema: true, Blocks: []*pb.Block{{KindRaw: "tool_use", Name: "lookup", HasArgs: true,
				Content: &pb.Block_Text{Text: "{\"a\":1}"}, HasStatedTokens: true, StatedTokens: -4}}},
		}, HasStatedTotal: true, StatedTotal: 12}}},
		{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{Code: "record_does_not_parse_as_declared_format", Message: "static"}}},
		{},
	} {
		want, _ := proto.Marshal(resp)
		out, err := encoded(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := proto.Marshal(out)
		framed, err := wire.FrameCodec{}.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || !bytes.Equal(framed.Materialize(), want) {
			t.Errorf("%v: encoded as %x, framed %x, want %x", resp, got, framed.Materialize(), want)
		}
		var back pb.AdaptResponse
		if err := proto.Unmarshal(got, &back); err != nil || !proto.Equal(&back, resp) {
			t.Errorf("%v: decoded as %v (%v)", resp, &back, err)
		}
	}
}

// The constructors build exactly the messages an adapter used to write by
// hand, so an answer built with them is the same answer on the wire.
func TestConstructorsAreTheHandBuiltMessages(t *testing.T) {
	span := &pb.Span{Offset: 3, Length: 9}
	for _, c := range []struct{ got, want proto.Message }{
		{Refuse(RecordDoesNotParse, "static"), &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{
			Code: "record_does_not_parse_as_declared_format", Message: "static"}}}},
		{Refuse(RecordRequired, "m"), &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{Code: "record_required", Message: "m"}}}},
		{Adapted(Record(L2, Message("user", TextBlock(KindText, "hi"), SpanBlock(Kind("custom"), span), NonSerialisableBlock(KindToolResult)))),
			&pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{{RoleRaw: "user", Blocks: []*pb.Block{
				{KindRaw: "text", Content: &pb.Block_Text{Text: "hi"}},
				{KindRaw: "custom", TextSpan: span},
				{KindRaw: "tool_result", Content: &pb.Block_NonSerialisable{NonSerialisable: true}},
			}}}}}}},
		{Record(L0), &pb.SessionRecord{Level: "L0"}},
	} {
		want, _ := proto.Marshal(c.want)
		got, _ := proto.Marshal(c.got)
		if !bytes.Equal(got, want) || !proto.Equal(c.got, c.want) {
			t.Errorf("built %v, want %v", c.got, c.want)
		}
	}
}

// StringBlock answers a string as a span where one may stand for it, as
// its decoded text otherwise, and nothing for another kind of value.
func TestStringBlock(t *testing.T) {
	doc, err := Locate([]byte(`["plain","esc\u0061ped",1]`))
	if err != nil {
		t.Fatal(err)
	}
	var v []Value
	for e := range doc.Root().Elems() {
		v = append(v, e)
	}
	if b, ok := StringBlock(KindText, v[0], false); !ok || b.GetTextSpan().GetOffset() != 2 || b.GetTextSpan().GetLength() != 5 || b.GetKindRaw() != "text" {
		t.Errorf("plain string: %v %v", b, ok)
	}
	if b, ok := StringBlock(KindText, v[1], false); !ok || b.GetText() != "escaped" || b.GetTextSpan() != nil {
		t.Errorf("escaped string without json_string spans: %v %v", b, ok)
	}
	if b, ok := StringBlock(KindText, v[1], true); !ok || !b.GetTextSpan().GetJsonString() {
		t.Errorf("escaped string with json_string spans: %v %v", b, ok)
	}
	if b, ok := StringBlock(KindText, v[2], true); ok || b != nil {
		t.Errorf("a number: %v %v", b, ok)
	}
}
