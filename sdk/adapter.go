package sdk

import (
	"context"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Adapter is the contract of a format-adapter plugin, in plain Go: it turns
// one declared format's record into a SessionRecord or a refusal. In a
// plugin, req.Record is the host's pages, mapped, and valid only until
// Adapt returns (its answer is encoded before they are released): an
// adapter keeps nothing of it, or of any string made from it, past Adapt.
//
// Adapt answers with Adapted or Refuse; the record is built with Record,
// Message and the Block constructors, so an adapter never writes the
// protobuf oneof wrappers by hand.
type Adapter interface {
	Describe() *pb.AdapterDescription
	Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse
}

// Level is how much of a record's structure its format lets an adapter
// observe (SessionRecord.level). A family runs its structural tests only
// at L2, and below it prints "not identifiable at this level" where it
// would otherwise measure a zero, so a level stated higher than the format
// supports turns an unseen structure into a measured absence. State the
// level the criteria give the format (format_levels), or, for a format
// whose level depends on content, the one this record reaches. The host
// refuses an answer naming any other level.
type Level string

// The levels the protocol has.
const (
	// L0: who spoke (roles) and the texts; nothing says what a block is.
	L0 Level = "L0"
	// L1: L0 and some of a block's details (a tool's name, whether it
	// carries arguments, a source); families read it as L0 today.
	L1 Level = "L1"
	// L2: the format says what each block is (its kind), so a family's
	// structural tests run.
	L2 Level = "L2"
)

// Kind is a block's kind as its format names it (Block.kind_raw). It is
// free text on purpose: a family reports a kind it does not recognise as
// written (context-composition's P-OTHER) rather than guessing what it
// is, so an adapter passes a format's own name through as Kind(name). The
// constants spell the common kinds once, so an adapter that means one
// names it exactly as the families read it (ANNEX C-9 of
// context-composition).
type Kind string

// The common kinds, spelled as the families' class lists read them: a
// kind spelt any other way is reported as written, never classified.
const (
	KindText           Kind = "text"
	KindReasoning      Kind = "reasoning"
	KindToolDefinition Kind = "tool_definition"
	KindToolCall       Kind = "tool_call"
	KindToolResult     Kind = "tool_result"
	KindToolReturn     Kind = "tool_return"
	KindSummary        Kind = "summary"
	KindRetrieval      Kind = "retrieval"
)

// RefusalCode is why a request is refused: an adapter's reason for a
// record (AdaptRefusal.code), and a family's refusal code (Refusal.Code,
// RefuseWith), which a family declares as typed constants of its
// criteria. The host checks an adapter's only for its shape; a family maps
// it onto a refusal of its own criteria, and the criteria name the codes
// below alone, so an adapter refuses with one of them (context-audit
// answers any other as RecordDoesNotParse).
type RefusalCode string

// The refusal codes the host and the families understand.
const (
	// RecordDoesNotParse: the record is not the declared format
	// (context-composition R-5). An adapter never tries another format
	// instead: the caller declared this one.
	RecordDoesNotParse RefusalCode = "record_does_not_parse_as_declared_format"
	// RecordRequired: the record is the format but ambiguous, e.g. an
	// agent file holding other than exactly one agent.
	RecordRequired RefusalCode = "record_required"
	// FormatNotAccepted: the family's criteria do not accept the format
	// . The host answers it itself, before any adapter is asked; a
	// family may see it from Request.Adapters.
	FormatNotAccepted RefusalCode = "format_not_accepted"
)

// Refuse is an adapter's refusal of a record. The message reaches the
// caller and the host's log, so it is static text: never any part of the
// record.
func Refuse(code RefusalCode, message string) *pb.AdaptResponse {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{Code: string(code), Message: message}}}
}

// Adapted is an adapter's answer that rec is the record, adapted.
func Adapted(rec *pb.SessionRecord) *pb.AdaptResponse {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: rec}}
}

// Record is a SessionRecord at a level, holding messages in order. An
// adapter appends to its Messages and Disclosures as it reads.
func Record(level Level, messages ...*pb.Message) *pb.SessionRecord {
	return &pb.SessionRecord{Level: string(level), Messages: messages}
}

// Message is one message of a record: its role as the format writes it
// (families read "system", "user", "assistant" and "tool"; any other is
// reported as written) and its blocks in order.
func Message(role string, blocks ...*pb.Block) *pb.Message {
	return &pb.Message{RoleRaw: role, Blocks: blocks}
}

// TextBlock is a block whose text the adapter holds: a decoded or
// rewritten text. A text that is bytes of the record as they stand is
// cheaper as SpanBlock or StringBlock: it does not cross the process
// boundary a second time.
func TextBlock(kind Kind, text string) *pb.Block {
	return &pb.Block{KindRaw: string(kind), Content: &pb.Block_Text{Text: text}}
}

// SpanBlock is a block whose text is the record's bytes span names (see
// Value.TextSpanFor); the SDK resolves it, bounds and UTF-8 checked,
// before a family sees the block.
func SpanBlock(kind Kind, span *pb.Span) *pb.Block {
	return &pb.Block{KindRaw: string(kind), TextSpan: span}
}

// NonSerialisableBlock is a block whose payload the format holds but that
// is not text (an image, a redacted part): a family counts it as a block
// of unknown size rather than as an empty one.
func NonSerialisableBlock(kind Kind) *pb.Block {
	return &pb.Block{KindRaw: string(kind), Content: &pb.Block_NonSerialisable{NonSerialisable: true}}
}

// StringBlock is a JSON string of the record as a block: a span of the
// record when its contents allow one (with jsonSpans, the request's
// json_string_spans, every string does), else its decoded text. ok is
// false when v is not a string.
func StringBlock(kind Kind, v Value, jsonSpans bool) (b *pb.Block, ok bool) {
	if span, ok := v.TextSpanFor(jsonSpans); ok {
		return SpanBlock(kind, span), true
	}
	s, ok := v.String()
	if !ok {
		return nil, false
	}
	return TextBlock(kind, s), true
}
