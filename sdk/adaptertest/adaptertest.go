// Package adaptertest is the conformance check every format adapter runs in
// its own tests, in process, before anyone pins and loads it: the contract
// the host and the families rely on, whoever wrote the adapter.
package adaptertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/corpus"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// TB is the part of testing.TB the checks use (so the checks themselves
// can be tested).
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// Cases are records of the adapter's format.
type Cases struct {
	// Valid records must adapt.
	Valid [][]byte
	// Invalid records must be refused with sdk.RecordDoesNotParse.
	Invalid [][]byte
}

// Run checks a against the contract:
//   - Describe names a family, a format id, at least one format version and
//     the adapter's version;
//   - Describe carries a record schema (sdk.CheckRecordSchema) that
//     compiles as JSON Schema 2020-12 and admits every valid record: a
//     client that validates its arguments against the published schema
//     (an MCP client does) must never turn away a record Adapt takes;
//   - every valid record adapts to a SessionRecord at level L0, L1 or L2
//     whose every block carries exactly one content (text, a text span
//     that resolves in the record, or non-serialisable), the same way
//     twice;
//   - with json_string_spans set (as the SDK's families ask) and without
//     it, the family sees the same record, and without it no span is a
//     json_string one;
//   - every invalid record is refused with sdk.RecordDoesNotParse (or
//     sdk.RecordRequired), no refusal message repeats any 16-byte run of
//     the record, and the messages are static: at most 16 distinct ones
//     over every invalid and damaged record (custody);
//   - truncations and byte flips of the valid records never panic, and any
//     refusal they produce keeps the same rules.
func Run(t TB, a sdk.Adapter, c Cases) {
	t.Helper()
	d := a.Describe()
	if d.GetFamily() == "" || d.GetFormatId() == "" || len(d.GetFormatVersions()) == 0 || d.GetAdapterVersion() == "" {
		t.Errorf("Describe must name family, format id, format versions and adapter version: %v", d)
	}
	schema := recordSchema(t, d.GetRecordSchema())
	ctx := context.Background()
	adapt := func(rec []byte) *pb.AdaptResponse {
		return a.Adapt(ctx, &pb.AdaptRequest{FormatId: d.GetFormatId(), Record: rec, JsonStringSpans: true})
	}
	for i, rec := range c.Valid {
		r, ok := answered(t, "valid record", i, func() *pb.AdaptResponse { return adapt(rec) })
		if !ok {
			continue
		}
		sr := r.GetRecord()
		if sr == nil {
			t.Errorf("valid record %d refused: code %q, message %q", i, r.GetRefusal().GetCode(), r.GetRefusal().GetMessage())
			continue
		}
		if schema != nil {
			if err := admits(schema, rec); err != nil {
				t.Errorf("valid record %d adapts but the record schema refuses it: %v", i, err)
			}
		}
		if again := adapt(rec); !proto.Equal(r, again) {
			t.Errorf("valid record %d adapts differently twice", i)
		}
		if err := sameEitherWay(a, rec, r); err != "" {
			t.Errorf("valid record %d: %s", i, err)
		}
		// text spans are offsets into the record: the SDK resolves them
		// for the family, so they must resolve here
		if err := sdk.ResolveTextSpans(sr, rec); err != nil {
			t.Errorf("valid record %d: a text span does not resolve: %v", i, err)
		}
		if l := sdk.Level(sr.GetLevel()); l != sdk.L0 && l != sdk.L1 && l != sdk.L2 {
			t.Errorf("valid record %d: level %q", i, l)
		}
		for m, msg := range sr.GetMessages() {
			for b, blk := range msg.GetBlocks() {
				if blk.GetContent() == nil {
					t.Errorf("valid record %d, message %d, block %d: no content (text or non-serialisable)", i, m, b)
				}
			}
		}
	}
	distinct := map[string]bool{}
	for i, rec := range c.Invalid {
		r, ok := answered(t, "invalid record", i, func() *pb.AdaptResponse { return adapt(rec) })
		if !ok {
			continue
		}
		distinct[r.GetRefusal().GetMessage()] = true
		checkRefusal(t, "invalid record", i, rec, r, true)
	}
	defer func() {
		if len(distinct) > 16 {
			t.Errorf("%d distinct refusal messages: messages must be static", len(distinct))
		}
	}()
	for i, rec := range c.Valid {
		for _, m := range mutations(rec) {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("a mutation of valid record %d panicked", i)
					}
				}()
				if r := adapt(m); r.GetRecord() == nil {
					distinct[r.GetRefusal().GetMessage()] = true
					checkRefusal(t, "mutated record", i, m, r, false)
				}
			}()
		}
	}
}

// sameEitherWay compares an answer given with json_string_spans (r) with
// the answer to the same record without it: equal once their spans are
// resolved, and none of the second's spans a json_string one. The answer
// is "" or what is wrong.
func sameEitherWay(a sdk.Adapter, rec []byte, r *pb.AdaptResponse) string {
	plain := a.Adapt(context.Background(), &pb.AdaptRequest{FormatId: a.Describe().GetFormatId(), Record: rec})
	for _, m := range plain.GetRecord().GetMessages() {
		for _, b := range m.GetBlocks() {
			if b.GetTextSpan().GetJsonString() {
				return "a json_string span in an answer to a request without json_string_spans"
			}
		}
	}
	r, plain = proto.CloneOf(r), proto.CloneOf(plain)
	for _, x := range []*pb.AdaptResponse{r, plain} {
		if x.GetRecord() != nil && sdk.ResolveTextSpans(x.GetRecord(), rec) != nil {
			return "a text span does not resolve"
		}
	}
	if !proto.Equal(r, plain) {
		return "the record differs with json_string_spans and without"
	}
	return ""
}

// answered calls adapt for case i of what, as the host would see it: a
// panic is the adapter's failure on that case (reported, the run goes on
// with the next case, where a panic would otherwise end the whole test
// binary), and an answer that is neither a record nor a refusal says so.
// ok is false when there is no answer to check further.
func answered(t TB, what string, i int, adapt func() *pb.AdaptResponse) (r *pb.AdaptResponse, ok bool) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s %d: the adapter panicked: %v", what, i, p)
			r, ok = nil, false
		}
	}()
	r = adapt()
	if r.GetRecord() == nil && r.GetRefusal() == nil {
		t.Errorf("%s %d: the answer is empty: neither a record nor a refusal (set one: the host counts an empty answer as the adapter's fault)", what, i)
		return r, false
	}
	return r, true
}

func checkRefusal(t TB, what string, i int, rec []byte, r *pb.AdaptResponse, mustRefuse bool) {
	t.Helper()
	ref := r.GetRefusal()
	if ref == nil {
		if mustRefuse {
			t.Errorf("%s %d was adapted, want %s", what, i, sdk.RecordDoesNotParse)
		}
		return
	}
	if code := sdk.RefusalCode(ref.GetCode()); code != sdk.RecordDoesNotParse && code != sdk.RecordRequired {
		t.Errorf("%s %d: refusal code %q, want %q", what, i, code, sdk.RecordDoesNotParse)
	}
	msg := []byte(ref.GetMessage())
	for j := 0; j+16 <= len(rec); j++ {
		if bytes.Contains(msg, rec[j:j+16]) {
			t.Errorf("%s %d: the refusal message repeats part of the record", what, i)
			return
		}
	}
}

// mutations are truncations at sixteenths and single-byte flips at a few
// positions: cheap, deterministic, and enough to find an unguarded index.
func mutations(rec []byte) [][]byte {
	var out [][]byte
	for k := 0; k < 16; k++ {
		out = append(out, append([]byte{}, rec[:len(rec)*k/16]...))
	}
	for _, at := range []int{0, len(rec) / 3, len(rec) / 2, len(rec) - 1} {
		if at < 0 || at >= len(rec) {
			continue
		}
		for _, b := range []byte{'"', '{', ']', 0xff} {
			m := append([]byte{}, rec...)
			m[at] = b
			out = append(out, m)
		}
	}
	return out
}

// FatalTB is what Adapted and Answer need of a testing.TB.
type FatalTB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Adapted adapts a record that must adapt and returns it as a family sees
// it: asked as the SDK asks (json_string_spans set), text spans resolved.
func Adapted(t FatalTB, a sdk.Adapter, record []byte) *pb.SessionRecord {
	t.Helper()
	r := a.Adapt(context.Background(), &pb.AdaptRequest{FormatId: a.Describe().GetFormatId(), Record: record, JsonStringSpans: true})
	if r.GetRecord() == nil {
		t.Fatalf("refused: %s", r.GetRefusal().GetCode())
	}
	Answer(t, r, record)
	return r.GetRecord()
}

// Answer checks any answer to any bytes, as a fuzz target does: exactly
// one of a record and a refusal, and a record's text spans resolve (the
// SDK resolves them for the family, so they are resolved here too).
func Answer(t FatalTB, r *pb.AdaptResponse, record []byte) {
	t.Helper()
	answer(t, r, record)
}

// AnswerEitherWay is Answer for an answer given with json_string_spans,
// and checks that the answer without it is the same record (and has no
// json_string span): the check for a fuzz target.
func AnswerEitherWay(t FatalTB, a sdk.Adapter, r *pb.AdaptResponse, record []byte) {
	t.Helper()
	if err := sameEitherWay(a, record, r); err != "" {
		t.Fatalf("%s", err)
	}
	answer(t, r, record)
}

func answer(t FatalTB, r *pb.AdaptResponse, record []byte) {
	t.Helper()
	if (r.GetRecord() == nil) == (r.GetRefusal() == nil) {
		t.Fatalf("exactly one of record and refusal")
	}
	if r.GetRecord() != nil {
		if err := sdk.ResolveTextSpans(r.GetRecord(), record); err != nil {
			t.Fatalf("a text span does not resolve: %v", err)
		}
	}
}

// TextsAsSpans checks that an adapter asked as the SDK's families ask
// (json_string_spans) answers every text of record as a span, escaped ones
// included, so no text crosses back inline, and that the texts, resolved,
// are want in order. record should hold only texts the format reads
// verbatim (a text the adapter must rewrite cannot be a span).
func TextsAsSpans(t FatalTB, a sdk.Adapter, record []byte, want []string) {
	t.Helper()
	r := a.Adapt(context.Background(), &pb.AdaptRequest{FormatId: a.Describe().GetFormatId(), Record: record, JsonStringSpans: true})
	var got []string
	for _, m := range r.GetRecord().GetMessages() {
		for _, b := range m.GetBlocks() {
			if b.GetNonSerialisable() {
				continue
			}
			if b.GetTextSpan() == nil {
				t.Fatalf("a text went back inline: %q", b.GetText())
			}
		}
	}
	answer(t, r, record)
	for _, m := range r.GetRecord().GetMessages() {
		for _, b := range m.GetBlocks() {
			if !b.GetNonSerialisable() {
				got = append(got, b.GetText())
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("texts %q, want %q", got, want)
	}
}

// recordSchema compiles the adapter's record schema; nil (and a reported
// error) when there is none or it cannot be one.
func recordSchema(t TB, raw []byte) *jsonschema.Resolved {
	t.Helper()
	if len(raw) == 0 {
		t.Errorf("Describe has no record schema: callers would see only the family's generic description of the record")
		return nil
	}
	r, err := compileRecordSchema(raw)
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	return r
}

// compileRecordSchema checks raw as a record schema and compiles it.
func compileRecordSchema(raw []byte) (*jsonschema.Resolved, error) {
	if err := sdk.CheckRecordSchema(raw); err != nil {
		return nil, fmt.Errorf("record schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("record schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("record schema does not compile: %w", err)
	}
	return r, nil
}

// admits validates one record (JSON) against the schema.
func admits(s *jsonschema.Resolved, rec []byte) error {
	var v any
	if err := json.Unmarshal(rec, &v); err != nil {
		return errors.New("the record is not JSON, which no request body can carry")
	}
	return s.Validate(v)
}

// SchemaAdmits validates record against the record schema a describes: nil
// when the schema admits it. A schema that is missing or cannot compile is
// fatal.
func SchemaAdmits(t FatalTB, a sdk.Adapter, record []byte) error {
	t.Helper()
	r, err := compileRecordSchema(a.Describe().GetRecordSchema())
	if err != nil {
		t.Fatalf("%v", err)
	}
	return admits(r, record)
}

// CorpusRecords runs a over the records of its format in a family's
// corpus (corpus.json; formatMember and recordMember name the body's
// members, as the family's sdk.WithRecord does): every record Adapt takes
// must be admitted by the record schema, since a client validating against
// it would never send the rest. It returns how many adapted; a corpus
// holding none of the format's records is the caller's to judge.
func CorpusRecords(t interface {
	FatalTB
	Errorf(format string, args ...any)
}, a sdk.Adapter, corpusJSON []byte, formatMember, recordMember string) int {
	t.Helper()
	var c corpus.Corpus
	if err := json.Unmarshal(corpusJSON, &c); err != nil {
		t.Fatalf("the corpus: %v", err)
	}
	format := a.Describe().GetFormatId()
	adapted := 0
	for _, k := range c.Cases {
		var body map[string]json.RawMessage
		if json.Unmarshal(k.Request.Body, &body) != nil || len(body[recordMember]) == 0 {
			continue
		}
		var f string
		if json.Unmarshal(body[formatMember], &f) != nil || f != format {
			continue
		}
		rec := body[recordMember]
		r := a.Adapt(context.Background(), &pb.AdaptRequest{FormatId: format, Record: rec, JsonStringSpans: true})
		if r.GetRecord() == nil {
			continue
		}
		adapted++
		if err := SchemaAdmits(t, a, rec); err != nil {
			t.Errorf("corpus case %s adapts but the record schema refuses it: %v", k.Name, err)
		}
	}
	return adapted
}
