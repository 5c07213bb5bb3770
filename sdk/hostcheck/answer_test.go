package hostcheck

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// maxAnswer is an answer at context-audit's cap: 10,000 blocks, each a
// text span of a 5 MiB record.
func maxAnswer(tb testing.TB) ([]byte, uint64) {
	const recordLen = 5 << 20
	msgs := make([]*pb.Message, 0, 100)
	for m := 0; m < 100; m++ {
		msg := sdk.Message("user")
		for b := 0; b < 100; b++ {
			off := uint64((m*100 + b) * 500)
			msg.Blocks = append(msg.Blocks, sdk.SpanBlock(sdk.KindText, &pb.Span{Offset: off, Length: 400}))
		}
		msgs = append(msgs, msg)
	}
	f, err := proto.Marshal(sdk.Adapted(sdk.Record(sdk.L2, msgs...)))
	if err != nil {
		tb.Fatal(err)
	}
	return f, recordLen
}

// Each check holds or names its cause: a good answer passes; each defect
// is found with its closed-set cause.
func TestAnswer(t *testing.T) {
	f, n := maxAnswer(t)
	if cause, detail := Answer(f, n); cause != "" {
		t.Fatalf("a good answer: %s %s", cause, detail)
	}
	if cause, _ := Answer(f, 1000); cause != FaultSpan {
		t.Errorf("spans past a short record: %q", cause)
	}
	enc := func(r *pb.AdaptResponse) []byte { b, _ := proto.Marshal(r); return b }
	for want, answer := range map[string][]byte{
		FaultUndecoded: {0xff, 0xff, 0xff},
		FaultEmpty:     enc(&pb.AdaptResponse{}),
		FaultLevel:     enc(sdk.Adapted(sdk.Record("l0"))),
		FaultRefusal:   enc(sdk.Refuse("Not OK", "")),
		FaultCount: enc(sdk.Adapted(&pb.SessionRecord{Level: string(sdk.L1),
			Disclosures: []*pb.Disclosure{{Code: "x", Count: -2}}})),
		"": enc(sdk.Adapted(&pb.SessionRecord{Level: string(sdk.L0), HasStatedTotal: true, StatedTotal: -5})),
	} {
		if cause, _ := Answer(answer, 10); cause != want {
			t.Errorf("want cause %q, got %q", want, cause)
		}
	}
}

// A block's text that is not UTF-8 is undecodable, as the family's
// decoder would find it (proto3 strings are UTF-8), and says where.
func TestAnswerWantsUTF8(t *testing.T) {
	bytesField := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	block := bytesField(nil, 5, []byte{0xff, 0xfe})
	msg := bytesField(nil, 2, block)
	rec := bytesField(bytesField(nil, 1, []byte("L0")), 2, msg)
	answer := bytesField(nil, 1, rec)
	if err := proto.Unmarshal(answer, &pb.AdaptResponse{}); err == nil {
		t.Fatal("the decoder takes it: the test's answer is not what it means")
	}
	if cause, detail := Answer(answer, 10); cause != FaultUndecoded || detail != "message 1 block 1: a string that is not UTF-8" {
		t.Errorf("%q %q", cause, detail)
	}
}

// BenchmarkCheckAnswerMaxRecord is the host's check of an answer at the
// cap (10,000 spans): the cost the check adds to each adapted request.
func BenchmarkCheckAnswerMaxRecord(b *testing.B) {
	f, n := maxAnswer(b)
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		if cause, _ := Answer(f, n); cause != "" {
			b.Fatal(cause)
		}
	}
}
