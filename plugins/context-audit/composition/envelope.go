package composition

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// EnvelopeVersion is the only envelope version v1 accepts.
const EnvelopeVersion = "context-composition-envelope/1"

// Caps (criteria input_contract.caps).
const (
	EntriesCap      = 10000
	EntryBytesCap   = 1 << 20
	StatedCountsCap = 64 << 10
)

// Refusal codes (ANNEX C-2), in order.
const (
	CodeMalformedBody  sdk.RefusalCode = "malformed_body"
	CodeEnvelope       sdk.RefusalCode = "envelope_version_not_supported"
	CodeFormat                         = sdk.FormatNotAccepted
	CodeRecordRequired                 = sdk.RecordRequired
	CodeStatedCounts   sdk.RefusalCode = "stated_counts_invalid"
)

var messages = map[sdk.RefusalCode]string{
	CodeMalformedBody:  "request body is not a JSON object",
	CodeEnvelope:       "envelope_version is not context-composition-envelope/1",
	CodeFormat:         "declared_format_id is not an accepted format",
	CodeRecordRequired: "record is missing or ambiguous",
	CodeStatedCounts:   "harness_stated_counts is not an object or is over its cap",
}

var known = map[string]bool{"envelope_version": true, "declared_format_id": true, "declared_format_version": true,
	"record": true, "harness_stated_counts": true, "criteria_ack": true, "caller": true}

// Envelope is a body that passed the envelope rules (not yet the format's).
type Envelope struct {
	FormatID       string
	VersionGiven   bool
	Record         json.RawMessage // a slice of the body, never a copy
	RecordSpan     *pb.Span        // where Record lies in the body
	StatedCounts   json.RawMessage // nil when absent
	UnknownMembers int
}

// ParseEnvelope applies ANNEX C-1 and the envelope rules of C-2 (R-1 to
// R-4 and the stated-counts rule); the format's own rules come after. A
// stated-counts refusal is returned with the envelope, since an adapter's
// R-4 (an ambiguous record) precedes it.
func ParseEnvelope(body []byte, accepted []string) (*Envelope, *sdk.Refusal) {
	if !utf8.Valid(body) || sdk.HasLoneSurrogate(body) || !sdk.JSONKind(body, '{') || !sdk.ValidJSON(body) {
		return nil, refuse(CodeMalformedBody, nil)
	}
	// the members by span: the record (up to 5 MiB) is neither decoded nor
	// copied here; the adapter decodes it once, and the host hands it over
	// by span (a later duplicate member wins, as encoding/json decides)
	members, ok := sdk.TopLevel(body)
	if !ok {
		return nil, refuse(CodeMalformedBody, nil)
	}
	top := make(map[string]json.RawMessage, len(members))
	spans := make(map[string]*pb.Span, len(members))
	for _, m := range members {
		top[m.Name] = json.RawMessage(body[m.Start:m.End:m.End])
		spans[m.Name] = &pb.Span{Offset: uint64(m.Start), Length: uint64(m.End - m.Start)}
	}
	if v, ok := str(top["envelope_version"]); !ok || v != EnvelopeVersion {
		return nil, refuse(CodeEnvelope, nil)
	}
	id, ok := str(top["declared_format_id"])
	if !ok || !contains(accepted, id) {
		return nil, refuse(CodeFormat, map[string]any{"accepted_formats": accepted})
	}
	rec, ok := top["record"]
	if !ok || sdk.JSONKind(rec, 'n') {
		return nil, refuse(CodeRecordRequired, nil)
	}
	e := &Envelope{FormatID: id, Record: rec, RecordSpan: spans["record"]}
	var stated *sdk.Refusal
	if raw, ok := top["harness_stated_counts"]; ok && !sdk.JSONKind(raw, 'n') {
		if !sdk.JSONKind(raw, '{') || len(raw) > StatedCountsCap {
			stated = refuse(CodeStatedCounts, map[string]any{"cap": StatedCountsCap})
		} else {
			e.StatedCounts = raw
		}
	}
	_, e.VersionGiven = str(top["declared_format_version"])
	for k, v := range top {
		optionalString := k == "declared_format_version" || k == "criteria_ack"
		if !known[k] || (optionalString && !sdk.JSONKind(v, '"')) {
			e.UnknownMembers++
		}
	}
	// a stated-counts refusal comes with the envelope: the caller applies
	// it after the adapter's R-4 (ANNEX C-2 order)
	return e, stated
}

func refuse(code sdk.RefusalCode, facts map[string]any) *sdk.Refusal {
	return &sdk.Refusal{Code: code, Message: messages[code], Facts: facts}
}

func str(raw json.RawMessage) (string, bool) {
	if raw == nil || !sdk.JSONKind(raw, '"') {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
