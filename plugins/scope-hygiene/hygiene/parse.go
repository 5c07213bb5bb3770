// Package hygiene is the memory-scope-hygiene/v1 engine (service
// scope-hygiene): it validates one exported agent-memory store under the
// criteria's input contract and computes the five scope-hygiene factors,
// the coverage block and the verdict line. Plain Go: no gRPC, no I/O.
package hygiene

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
)

// Caps (criteria input_contract.caps).
const RecordsPerAudit = 1000

// Refusal codes, in the order they are tried (ANNEX A-3).
const (
	CodeExport        sdk.RefusalCode = "export_required"
	CodeFamilyMissing sdk.RefusalCode = "family_required"
	CodeFamilyUnknown sdk.RefusalCode = "family_unknown"
	CodeForm          sdk.RefusalCode = "form_invalid"
	CodeRecords       sdk.RefusalCode = "records_required"
	CodeRecordsEmpty  sdk.RefusalCode = "records_empty"
	CodeRecordCap     sdk.RefusalCode = "record_count_cap"
	CodeRecordObject  sdk.RefusalCode = "record_not_object"
	CodeRecordID      sdk.RefusalCode = "record_id_required"
	CodeRecordIDDup   sdk.RefusalCode = "record_id_duplicate"
	CodeContentText   sdk.RefusalCode = "content_text_required"
	CodeContentHash   sdk.RefusalCode = "content_hash_required"
	CodeManifest      sdk.RefusalCode = "manifest_invalid"
	CodeDeclaredKeys  sdk.RefusalCode = "declared_scope_keys_invalid"
	CodeVariant       sdk.RefusalCode = "variant_unknown"
)

var messages = map[sdk.RefusalCode]string{
	CodeExport:        "request body is not a JSON object",
	CodeFamilyMissing: "family is missing",
	CodeFamilyUnknown: "family is not one of mem0, zep_graphiti, letta, generic",
	CodeForm:          "form is missing or not full_text or hash_only",
	CodeRecords:       "records is missing or not an array",
	CodeRecordsEmpty:  "records is empty",
	CodeRecordCap:     "more records than the published cap",
	CodeRecordObject:  "a record is not an object",
	CodeRecordID:      "a record id is missing or not a string",
	CodeRecordIDDup:   "a record id is duplicated in the submission",
	CodeContentText:   "a full-text record has no content_text string",
	CodeContentHash:   "a hash-only record has no non-empty content_hash string",
	CodeManifest:      "manifest is not an object",
	CodeDeclaredKeys:  "declared_scope_keys is not an array of strings",
	CodeVariant:       "variant is not published for the declared family",
}

func refuse(code sdk.RefusalCode, facts map[string]any) *sdk.Refusal {
	return &sdk.Refusal{Code: code, Message: messages[code], Facts: facts}
}

// Families and their variants (first is the default).
var variants = map[string][]string{
	"mem0":         {"platform", "oss"},
	"zep_graphiti": {"graphiti", "zep_cloud"},
	"letta":        {"mixed", "blocks", "passages"},
	"generic":      {"claim-jsonl"},
}

// fields is one JSON object's members, undecoded.
type fields map[string]json.RawMessage

// str is a member that is a JSON string.
func (f fields) str(name string) (string, bool) {
	raw, ok := f[name]
	if !ok || !sdk.JSONKind(raw, '"') {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// set reports a member present and not null.
func (f fields) set(name string) bool {
	raw, ok := f[name]
	return ok && !sdk.JSONKind(raw, 'n')
}

// isTrue and isFalse read exact booleans.
func (f fields) isTrue(name string) bool {
	raw, ok := f[name]
	return ok && bytes.Equal(bytes.TrimSpace(raw), []byte("true"))
}
func (f fields) isFalse(name string) bool {
	raw, ok := f[name]
	return ok && bytes.Equal(bytes.TrimSpace(raw), []byte("false"))
}

// object decodes a member that is a JSON object.
func (f fields) object(name string) fields {
	raw, ok := f[name]
	if !ok || !sdk.JSONKind(raw, '{') {
		return nil
	}
	var m fields
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// strings decodes a member that is an array, keeping its string elements;
// ok is false when the member is not an array.
func (f fields) strings(name string) (out []string, allStrings, ok bool) {
	raw, present := f[name]
	if !present || !sdk.JSONKind(raw, '[') {
		return nil, false, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false, false
	}
	allStrings = true
	for _, it := range items {
		var s string
		if !sdk.JSONKind(it, '"') || json.Unmarshal(it, &s) != nil {
			allStrings = false
			continue
		}
		out = append(out, s)
	}
	return out, allStrings, true
}

// Export is a validated submission.
type Export struct {
	Family, Form, Variant string
	VariantDefaulted      bool
	Manifest              fields // nil when absent
	DeclaredKeys          []string
	KeysFromManifest      bool
	// DroppedKeys are declared keys that are never scope keys (ANNEX A-4),
	// in declared order
	DroppedKeys []string
	Records     []*Record
}

// Record is one record with what the rules read.
type Record struct {
	Index   int
	ID      string
	Content string // content_text or content_hash, exactly as submitted
	f       fields
}

// Parse validates a body (ANNEX ).
func Parse(body []byte) (*Export, *sdk.Refusal) {
	var top fields
	if !utf8.Valid(body) || sdk.HasLoneSurrogate(body) || !sdk.JSONKind(body, '{') || json.Unmarshal(body, &top) != nil || top == nil {
		return nil, refuse(CodeExport, nil)
	}
	e := &Export{}
	if _, ok := top["family"]; !ok {
		return nil, refuse(CodeFamilyMissing, nil)
	}
	fam, ok := top.str("family")
	if _, known := variants[fam]; !ok || !known {
		return nil, refuse(CodeFamilyUnknown, nil)
	}
	e.Family = fam
	form, _ := top.str("form")
	if form != "full_text" && form != "hash_only" {
		return nil, refuse(CodeForm, nil)
	}
	e.Form = form
	var raws []json.RawMessage
	if r, ok := top["records"]; !ok || !sdk.JSONKind(r, '[') || json.Unmarshal(r, &raws) != nil || raws == nil {
		return nil, refuse(CodeRecords, nil)
	}
	if len(raws) == 0 {
		return nil, refuse(CodeRecordsEmpty, nil)
	}
	if len(raws) > RecordsPerAudit {
		return nil, refuse(CodeRecordCap, map[string]any{"cap": RecordsPerAudit, "record_count": len(raws)})
	}
	objs := make([]fields, len(raws))
	for i, r := range raws {
		if !sdk.JSONKind(r, '{') || json.Unmarshal(r, &objs[i]) != nil || objs[i] == nil {
			return nil, refuse(CodeRecordObject, map[string]any{"record_index": i})
		}
	}
	e.Records = make([]*Record, len(objs))
	for i, o := range objs {
		id, ok := o.str("id")
		if !ok {
			return nil, refuse(CodeRecordID, map[string]any{"record_index": i})
		}
		e.Records[i] = &Record{Index: i, ID: id, f: o}
	}
	seen := map[string]bool{}
	for i, r := range e.Records {
		if seen[r.ID] {
			return nil, refuse(CodeRecordIDDup, map[string]any{"record_index": i})
		}
		seen[r.ID] = true
	}
	for i, r := range e.Records {
		if form == "full_text" {
			text, ok := r.f.str("content_text")
			if !ok {
				return nil, refuse(CodeContentText, map[string]any{"record_index": i})
			}
			r.Content = text
		}
	}
	for i, r := range e.Records {
		if form == "hash_only" {
			h, ok := r.f.str("content_hash")
			if !ok || h == "" {
				return nil, refuse(CodeContentHash, map[string]any{"record_index": i})
			}
			r.Content = h
		}
	}
	if raw, ok := top["manifest"]; ok && !sdk.JSONKind(raw, 'n') {
		if e.Manifest = top.object("manifest"); e.Manifest == nil {
			return nil, refuse(CodeManifest, nil)
		}
	}
	if e.Manifest != nil {
		if _, present := e.Manifest["declared_scope_keys"]; present {
			keys, all, ok := e.Manifest.strings("declared_scope_keys")
			if !ok || !all {
				return nil, refuse(CodeDeclaredKeys, nil)
			}
			e.DeclaredKeys, e.KeysFromManifest = dedupe(keys), true
			e.DeclaredKeys, e.DroppedKeys = dropKeys(e.DeclaredKeys)
		}
	}
	if !e.KeysFromManifest {
		e.DeclaredKeys = defaultKeys[e.Family]
	}
	e.Variant, e.VariantDefaulted = variants[fam][0], true
	if raw, ok := top["variant"]; ok && !sdk.JSONKind(raw, 'n') {
		v, isStr := top.str("variant")
		if !isStr || !contains(variants[fam], v) {
			return nil, refuse(CodeVariant, nil)
		}
		e.Variant, e.VariantDefaulted = v, false
	}
	return e, nil
}

var defaultKeys = map[string][]string{
	"mem0":         {"user_id", "agent_id", "app_id", "run_id"},
	"zep_graphiti": {"group_id", "graph_id"},
}

// neverScope are the names a declared key cannot have (ANNEX A-4): a
// scope prints its keys and values, and these would print content or
// provenance, or a member name no answer carries.
var neverScope = []string{"content", "content_text", "content_hash", "hash", "source", "score", "grade", "band", "composite"}

// dropKeys splits deduplicated declared keys into those kept and those
// dropped (ASCII letters compared without case), each in declared order.
func dropKeys(keys []string) (kept, dropped []string) {
	kept, dropped = []string{}, []string{}
	for _, k := range keys {
		if contains(neverScope, sdk.FoldASCII(k)) {
			dropped = append(dropped, k)
		} else {
			kept = append(kept, k)
		}
	}
	return kept, dropped
}

func dedupe(keys []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
