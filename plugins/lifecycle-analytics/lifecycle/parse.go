package lifecycle

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
)

// Refusal codes (ANNEX A-3), in the order they are tried.
const (
	CodeBodyNotObject sdk.RefusalCode = "body_not_object"
	CodeLogRequired   sdk.RefusalCode = "log_required"
	CodeAsOfInvalid   sdk.RefusalCode = "as_of_invalid"
	CodeLogEmpty      sdk.RefusalCode = "log_empty"
	CodeNoValidLines  sdk.RefusalCode = "no_valid_lines"
)

var messages = map[sdk.RefusalCode]string{
	CodeBodyNotObject: "request body is not a JSON object",
	CodeLogRequired:   "log is missing or not an array",
	CodeAsOfInvalid:   "as_of is not a parseable timestamp",
	CodeLogEmpty:      "the log has no lines",
	CodeNoValidLines:  "every line of the log is malformed",
}

func refuse(code sdk.RefusalCode, facts map[string]any) *sdk.Refusal {
	return &sdk.Refusal{Code: code, Message: messages[code], Facts: facts}
}

// Line is a valid line: only what the rules read.
type Line struct {
	// Index is the line's position in the submitted log (0-based,
	// malformed lines counted).
	Index           int
	Issued, Expires Instant
	// HasUsedAt: the line carries the used_at member (null included);
	// Used: it carries a used_at instant.
	HasUsedAt bool
	Used      bool
	HasRail   bool
	Rail      string
}

// Log is a validated submission.
type Log struct {
	Submitted int
	Valid     []Line
	// AsOf is the supplied evaluation instant, when one was.
	AsOf    Instant
	HasAsOf bool
}

// Malformed is the malformed_lines factor.
func (l *Log) Malformed() int { return l.Submitted - len(l.Valid) }

// Parse validates a body (ANNEX ). Challenge ids are compared and
// then dropped: nothing downstream ever sees one.
func Parse(body []byte) (*Log, *sdk.Refusal) {
	var top map[string]json.RawMessage
	if !utf8.Valid(body) || sdk.HasLoneSurrogate(body) || !sdk.JSONKind(body, '{') || json.Unmarshal(body, &top) != nil || top == nil {
		return nil, refuse(CodeBodyNotObject, nil)
	}
	rawLog, ok := top["log"]
	var lines []json.RawMessage
	if !ok || !sdk.JSONKind(rawLog, '[') || json.Unmarshal(rawLog, &lines) != nil || lines == nil {
		return nil, refuse(CodeLogRequired, nil)
	}
	out := &Log{Submitted: len(lines)}
	if raw, ok := top["as_of"]; ok && !sdk.JSONKind(raw, 'n') {
		s, isStr := str(raw)
		at, parsed := ParseInstant(s)
		if !isStr || !parsed {
			return nil, refuse(CodeAsOfInvalid, nil)
		}
		out.AsOf, out.HasAsOf = at, true
	}
	if len(lines) == 0 {
		return nil, refuse(CodeLogEmpty, nil)
	}
	seen := make(map[string]bool, len(lines))
	for i, raw := range lines {
		id, line, ok := parseLine(raw)
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		line.Index = i
		out.Valid = append(out.Valid, line)
	}
	if len(out.Valid) == 0 {
		return nil, refuse(CodeNoValidLines, map[string]any{"lines_submitted": out.Submitted, "malformed_lines": out.Submitted})
	}
	return out, nil
}

// parseLine applies malformed rules 1–6; rule 7 (duplicates) is the
// caller's, since only valid lines reserve an id.
func parseLine(raw json.RawMessage) (string, Line, bool) {
	var m map[string]json.RawMessage
	if !sdk.JSONKind(raw, '{') || json.Unmarshal(raw, &m) != nil || m == nil {
		return "", Line{}, false
	}
	var l Line
	id, ok := str(m["challenge_id"])
	if !ok || id == "" {
		return "", l, false
	}
	if l.Issued, ok = instantOf(m["issued_at"]); !ok {
		return "", l, false
	}
	if l.Expires, ok = instantOf(m["expires_at"]); !ok {
		return "", l, false
	}
	if l.Expires.Compare(l.Issued) <= 0 {
		return "", l, false
	}
	if raw, present := m["used_at"]; present {
		l.HasUsedAt = true
		if !sdk.JSONKind(raw, 'n') {
			used, ok := instantOf(raw)
			if !ok || used.Compare(l.Issued) < 0 || used.Compare(l.Expires) > 0 {
				return "", l, false
			}
			l.Used = true
		}
	}
	if raw, present := m["rail"]; present {
		rail, ok := str(raw)
		if !ok || rail == "" {
			return "", l, false
		}
		l.HasRail, l.Rail = true, rail
	}
	return id, l, true
}

func instantOf(raw json.RawMessage) (Instant, bool) {
	s, ok := str(raw)
	if !ok {
		return Instant{}, false
	}
	return ParseInstant(s)
}

// str decodes a JSON string member; ok is false when absent or not a string.
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
