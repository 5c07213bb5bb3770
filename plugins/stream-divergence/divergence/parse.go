// Package divergence is the stream-divergence/v1 engine: it parses a
// submission under the criteria's input contract and malformed rule, and
// compares the two artefacts byte for byte. Plain Go: no gRPC, no I/O.
package divergence

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
)

// Published caps (criteria input_contract.caps).
const (
	ChunksPerArtefact = 1024
	ChunkBytes        = 65536
	ArtefactBytes     = 65536
)

// The two sides, named as the criteria name them.
const (
	Streamed  = "streamed_capture"
	Reference = "reference_output"
)

// Artefact is one side after validation.
type Artefact struct {
	ChunkCount int
	Bytes      []byte
}

// Submission is a validated request body.
type Submission struct {
	Streamed  Artefact
	Reference Artefact
}

// Refusal codes: the criteria's, plus body_not_object (ANNEX A-2).
const (
	CodeBodyNotObject     sdk.RefusalCode = "body_not_object"
	CodeStreamedRequired  sdk.RefusalCode = "streamed_capture_required"
	CodeReferenceRequired sdk.RefusalCode = "reference_output_required"
	CodeChunksRequired    sdk.RefusalCode = "chunks_required"
	CodeChunkNotString    sdk.RefusalCode = "chunk_not_string"
	CodeChunkNotBase64    sdk.RefusalCode = "chunk_not_base64"
	CodeChunkCountCap     sdk.RefusalCode = "chunk_count_cap"
	CodeChunkBytesCap     sdk.RefusalCode = "chunk_bytes_cap"
	CodeArtefactBytesCap  sdk.RefusalCode = "artefact_bytes_cap"
)

// messages are the ANNEX A-3 static strings.
var messages = map[sdk.RefusalCode]string{
	CodeBodyNotObject:     "request body is not a JSON object",
	CodeStreamedRequired:  "streamed_capture is missing or not an object",
	CodeReferenceRequired: "reference_output is missing or not an object",
	CodeChunksRequired:    "chunks is missing or not an array",
	CodeChunkNotString:    "a chunk is not a string",
	CodeChunkNotBase64:    "a chunk is not valid base64 (RFC 4648 standard alphabet, padded, no whitespace)",
	CodeChunkCountCap:     "an artefact has more chunks than the published cap",
	CodeChunkBytesCap:     "a chunk decodes to more bytes than the published cap",
	CodeArtefactBytesCap:  "an artefact decodes to more bytes than the published cap",
}

func refuse(code sdk.RefusalCode, facts map[string]any) *sdk.Refusal {
	return &sdk.Refusal{Code: code, Message: messages[code], Facts: facts}
}

var strict = base64.StdEncoding.Strict()

// rawArtefact is one side between the shape rules and the content rules.
type rawArtefact struct {
	name   string
	chunks []json.RawMessage
	texts  []string
	dec    [][]byte
}

// Parse validates body under the malformed rule. When several rules fail,
// the first in the criteria's listed order wins; each rule is tried on
// streamed_capture before reference_output and on chunks by ascending index
// (ANNEX A-3), so each rule is a separate pass below.
func Parse(body []byte) (*Submission, *sdk.Refusal) {
	var top map[string]json.RawMessage
	if !utf8.Valid(body) || !isObject(body) || json.Unmarshal(body, &top) != nil || top == nil {
		return nil, refuse(CodeBodyNotObject, nil)
	}
	sides := []*rawArtefact{{name: Streamed}, {name: Reference}}
	objs := make([]map[string]json.RawMessage, 2)
	for i, codeReq := range []sdk.RefusalCode{CodeStreamedRequired, CodeReferenceRequired} {
		raw, ok := top[sides[i].name]
		if !ok || !isObject(raw) || json.Unmarshal(raw, &objs[i]) != nil || objs[i] == nil {
			return nil, refuse(codeReq, nil)
		}
	}
	for i, s := range sides {
		raw, ok := objs[i]["chunks"]
		if !ok || !isArray(raw) || json.Unmarshal(raw, &s.chunks) != nil || s.chunks == nil {
			return nil, refuse(CodeChunksRequired, map[string]any{"artefact": s.name})
		}
	}
	for _, s := range sides {
		s.texts = make([]string, len(s.chunks))
		for j, c := range s.chunks {
			if !isString(c) || json.Unmarshal(c, &s.texts[j]) != nil {
				return nil, refuse(CodeChunkNotString, map[string]any{"artefact": s.name, "chunk_index": j})
			}
		}
	}
	for _, s := range sides {
		s.dec = make([][]byte, len(s.texts))
		for j, t := range s.texts {
			d, ok := decodeStrict(t)
			if !ok {
				return nil, refuse(CodeChunkNotBase64, map[string]any{"artefact": s.name, "chunk_index": j})
			}
			s.dec[j] = d
		}
	}
	for _, s := range sides {
		if n := len(s.dec); n > ChunksPerArtefact {
			return nil, refuse(CodeChunkCountCap, map[string]any{"artefact": s.name, "cap": ChunksPerArtefact, "chunk_count": n})
		}
	}
	for _, s := range sides {
		for j, d := range s.dec {
			if len(d) > ChunkBytes {
				return nil, refuse(CodeChunkBytesCap, map[string]any{"artefact": s.name, "chunk_index": j, "cap": ChunkBytes, "byte_length": len(d)})
			}
		}
	}
	out := make([]Artefact, 2)
	for i, s := range sides {
		total := 0
		for _, d := range s.dec {
			total += len(d)
		}
		if total > ArtefactBytes {
			return nil, refuse(CodeArtefactBytesCap, map[string]any{"artefact": s.name, "cap": ArtefactBytes, "byte_length": total})
		}
		buf := make([]byte, 0, total)
		for _, d := range s.dec {
			buf = append(buf, d...)
		}
		out[i] = Artefact{ChunkCount: len(s.dec), Bytes: buf}
	}
	return &Submission{Streamed: out[0], Reference: out[1]}, nil
}

// decodeStrict is RFC 4648 standard base64 with padding and zero pad bits.
// Go's strict decoder still skips CR and LF, which the ANNEX forbids, so
// they are refused first.
func decodeStrict(s string) ([]byte, bool) {
	if len(s)%4 != 0 || bytes.ContainsAny([]byte(s), "\r\n") {
		return nil, false
	}
	d, err := strict.DecodeString(s)
	if err != nil {
		return nil, false
	}
	return d, true
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func isObject(raw []byte) bool { return firstByte(raw) == '{' }
func isArray(raw []byte) bool  { return firstByte(raw) == '[' }
func isString(raw []byte) bool { return firstByte(raw) == '"' }
