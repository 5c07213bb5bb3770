package lifecycle

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
)

// Refusal codes (ANNEX A-3), in the order they are tried.
const (
	CodeBodyNotObject = "body_not_object"
	CodeLogRequired   = "log_required"
	CodeAsOfInvalid   = "as_of_invalid"
	CodeLogEmpty      = "log_empty"
	CodeNoValidLines  = "no_valid_lines"
)

var messages = map[string]string{
	CodeBodyNotObject: "request body is not a JSON object",
	CodeLogRequired:   "log is missing or not an array",
	CodeAsOfInvalid:   "as_of is not a parseable timestamp",
	CodeLogEmpty:      "the log has no lines",
	CodeNoValidLines:  "every line of the log is malformed",
}

func refuse(code string, facts map[string]any) *sdk.Refusal {
	return &sdk.Refusal{Code: code, Message: messages[code], Facts: facts}
}

// Line is a valid line: only what the rules read.
type Line struct {
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
	if !utf8.Valid(body) || hasLoneSurrogate(body) || !isKind(body, '{') || json.Unmarshal(body, &top) != nil || top == nil {
		return nil, refuse(CodeBodyNotObject, nil)
	}
	rawLog, ok := top["log"]
	var lines []json.RawMessage
	if !ok || !isKind(rawLog, '[') || json.Unmarshal(rawLog, &lines) != nil || lines == nil {
		return nil, refuse(CodeLogRequired, nil)
	}
	out := &Log{Submitted: len(lines)}
	if raw, ok := top["as_of"]; ok && !isKind(raw, 'n') {
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
	for _, raw := range lines {
		id, line, ok := parseLine(raw)
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
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
	if !isKind(raw, '{') || json.Unmarshal(raw, &m) != nil || m == nil {
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
		if !isKind(raw, 'n') {
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
	if raw == nil || !isKind(raw, '"') {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func isKind(raw []byte, first byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == first
}

// hasLoneSurrogate finds a \u escape naming half a surrogate pair. Outside
// strings valid JSON has no backslash, so a linear scan of escapes suffices.
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character (\\ included)
			continue
		}
		cu, ok := hex4(b, i+2)
		if !ok {
			return false // malformed escape: json.Unmarshal refuses it anyway
		}
		i += 5
		switch {
		case cu >= 0xDC00 && cu <= 0xDFFF:
			return true
		case cu >= 0xD800 && cu <= 0xDBFF:
			if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

func hex4(b []byte, at int) (int, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[at : at+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= int(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}
