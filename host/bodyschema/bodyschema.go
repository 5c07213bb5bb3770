// Package bodyschema composes the request schema the host publishes for a
// family (OpenAPI, x402 discovery, MCP tools): the family's own, with the
// record member described per declared format by the schema the format's
// adapter publishes. A family names its formats; their shapes are the
// adapters', so a new adapter's format is described without a family
// release, and the description stays with the code that reads the format.
package bodyschema

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/assay-audit/assay/sdk"
)

// Record places a family's record in its body: the top-level member that
// names the format and the one that holds the record.
type Record struct {
	FormatMember, RecordMember string
}

// DefName is the $defs entry holding format's record schema in a composed
// schema; the adapter's own definitions sit beside it as DefName + "." +
// their name.
func DefName(format string) string { return "record." + format }

// Compose is family with rec's record member described by formats (format
// id to its adapter's record schema; a format the family accepts with no
// schema here keeps the family's description alone). The record member's
// own "type" is dropped when any format is described: a format's shapes
// (a letta-af record may be a JSON string) are the adapter's to state.
// Family is returned unchanged when rec names no members, no format has a
// schema, or family is not an object schema with properties; an adapter
// schema that sdk.CheckRecordSchema refuses is left out (its format keeps
// the family's description) and named in skipped.
func Compose(family []byte, rec Record, formats map[string][]byte) (out []byte, skipped []string, err error) {
	if rec.FormatMember == "" || rec.RecordMember == "" || len(formats) == 0 {
		return family, nil, nil
	}
	var root map[string]any
	if json.Unmarshal(family, &root) != nil {
		return family, nil, nil
	}
	props, _ := root["properties"].(map[string]any)
	if props == nil {
		return family, nil, nil
	}
	defs, _ := root["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
	}
	ids := make([]string, 0, len(formats))
	for id := range formats {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var branches []any
	for _, id := range ids {
		if sdk.CheckRecordSchema(formats[id]) != nil {
			skipped = append(skipped, id)
			continue
		}
		var s map[string]any
		if json.Unmarshal(formats[id], &s) != nil {
			skipped = append(skipped, id)
			continue
		}
		name := DefName(id)
		if _, taken := defs[name]; taken {
			return nil, nil, errors.New("bodyschema: the family's $defs already hold a name the composition needs")
		}
		own, _ := s["$defs"].(map[string]any)
		delete(s, "$defs")
		delete(s, "$schema")
		defs[name] = rewriteRefs(s, name)
		for k, v := range own {
			defs[name+"."+k] = rewriteRefs(v, name)
		}
		branches = append(branches, map[string]any{
			"if": map[string]any{"properties": map[string]any{rec.FormatMember: map[string]any{"const": id}},
				"required": []any{rec.FormatMember}},
			"then": map[string]any{"properties": map[string]any{rec.RecordMember: map[string]any{"$ref": "#/$defs/" + pointerToken(name)}}},
		})
	}
	if len(branches) == 0 {
		return family, skipped, nil
	}
	if r, ok := props[rec.RecordMember].(map[string]any); ok {
		delete(r, "type")
		if d, _ := r["description"].(string); d != "" {
			r["description"] = d + " The shape of each format's record is its adapter's schema, chosen by " + rec.FormatMember + "."
		}
	}
	all, _ := root["allOf"].([]any)
	root["allOf"] = append(all, branches...)
	root["$defs"] = defs
	out, err = json.Marshal(root)
	if err != nil {
		return nil, nil, errors.New("bodyschema: the composed schema does not encode")
	}
	return out, skipped, nil
}

// rewriteRefs points an adapter schema's references ("#" and
// "#/$defs/x...") at where its parts now stand (name and name.x).
func rewriteRefs(v any, name string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if k == "const" || k == "enum" || k == "examples" || k == "default" {
				continue // instances: a "$ref" there is data
			}
			if s, ok := val.(string); ok && k == "$ref" {
				switch {
				case s == "#":
					t[k] = "#/$defs/" + pointerToken(name)
				case strings.HasPrefix(s, "#/$defs/"):
					t[k] = "#/$defs/" + pointerToken(name+".") + strings.TrimPrefix(s, "#/$defs/")
				}
				continue
			}
			t[k] = rewriteRefs(val, name)
		}
	case []any:
		for i := range t {
			t[i] = rewriteRefs(t[i], name)
		}
	}
	return v
}

// pointerToken escapes s as one JSON Pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// FormatEnum is family with its format member's enum set to formats, the
// criteria's accepted formats: the one list, so a criteria revision that
// accepts a new format reaches OpenAPI, the 402's discovery metadata and
// the MCP input schemas with no second list in the family's schema to
// forget. Family is returned unchanged when member is empty, formats is
// empty, or family has no such property object.
func FormatEnum(family []byte, member string, formats []string) []byte {
	if member == "" || len(formats) == 0 {
		return family
	}
	var root map[string]any
	if json.Unmarshal(family, &root) != nil {
		return family
	}
	props, _ := root["properties"].(map[string]any)
	prop, _ := props[member].(map[string]any)
	if prop == nil {
		return family
	}
	enum := make([]any, len(formats))
	for i, f := range formats {
		enum[i] = f
	}
	prop["enum"] = enum
	out, err := json.Marshal(root)
	if err != nil {
		return family
	}
	return out
}
