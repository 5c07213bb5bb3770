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
