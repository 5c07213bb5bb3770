package bodyschema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

const family = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
 "required": ["fmt", "rec"],
 "properties": {"fmt": {"enum": ["lines", "tree", "bare"]}, "rec": {"type": ["object", "array"], "description": "the record."}},
 "$defs": {"unused": {"type": "string"}}}`

// lines: an array of strings, through a definition; tree: a recursive
// object reached through "#" and a definition whose name needs escaping.
var formats = map[string][]byte{
	"lines": []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "items": {"$ref": "#/$defs/Line"},
		"$defs": {"Line": {"type": "string"}}}`),
	"tree": []byte(`{"type": ["object", "string"], "properties": {"kids": {"type": "array", "items": {"$ref": "#"}},
		"leaf": {"$ref": "#/$defs/a~1b"}}, "$defs": {"a/b": {"type": "integer"}}}`),
	"remote": []byte(`{"$ref": "https://example.org/schema.json"}`),
}

func validator(t *testing.T, raw []byte) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("the composed schema does not compile: %v", err)
	}
	return r
}

// Each declared format's record is held to its adapter's schema, the
// adapter's references (to its root and its definitions) still resolve
// where they now stand, a format with no schema keeps the family's bare
// description, and a schema reaching outside itself is left out, named.
func TestComposeDescribesTheRecordPerFormat(t *testing.T) {
	out, skipped, err := Compose([]byte(family), Record{FormatMember: "fmt", RecordMember: "rec"}, formats)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(skipped, []string{"remote"}) {
		t.Errorf("skipped %v, want [remote]", skipped)
	}
	v := validator(t, out)
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"fmt": "lines", "rec": ["a", "b"]}`, true},
		{`{"fmt": "lines", "rec": ["a", 3]}`, false},
		{`{"fmt": "lines", "rec": {"x": 1}}`, false},
		{`{"fmt": "tree", "rec": {"kids": [{"kids": [{"leaf": 3}]}]}}`, true},
		{`{"fmt": "tree", "rec": {"kids": [{"kids": [{"leaf": "x"}]}]}}`, false},
		{`{"fmt": "tree", "rec": "a string the tree format admits"}`, true},
		{`{"fmt": "tree", "rec": {"kids": [7]}}`, false},
		{`{"fmt": "bare", "rec": "no adapter schema: only the family's description, whose type was the formats'"}`, true},
		{`{"fmt": "nope", "rec": []}`, false},
		{`{"rec": []}`, false},
	} {
		var inst any
		if err := json.Unmarshal([]byte(c.body), &inst); err != nil {
			t.Fatal(err)
		}
		if err := v.Validate(inst); (err == nil) != c.ok {
			t.Errorf("%s: valid %v, want %v (%v)", c.body, err == nil, c.ok, err)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	for _, name := range []string{"unused", "record.lines", "record.lines.Line", "record.tree", "record.tree.a/b"} {
		if defs[name] == nil {
			t.Errorf("$defs has no %q", name)
		}
	}
	if defs["record.remote"] != nil {
		t.Error("the schema reaching outside itself was composed in")
	}
}

// A family that names no record, or formats without schemas, is
// published exactly as it described itself.
func TestComposeLeavesOtherFamiliesAlone(t *testing.T) {
	for _, c := range []struct {
		rec     Record
		formats map[string][]byte
	}{
		{Record{}, formats},
		{Record{FormatMember: "fmt", RecordMember: "rec"}, nil},
		{Record{FormatMember: "fmt", RecordMember: "rec"}, map[string][]byte{"remote": formats["remote"]}},
	} {
		out, _, err := Compose([]byte(family), c.rec, c.formats)
		if err != nil || string(out) != family {
			t.Errorf("%+v: changed the family's schema (%v)", c.rec, err)
		}
	}
}

// The format member's enum is the criteria's accepted formats, whatever
// the family's schema listed (here one format short); a schema without
// that member, or no formats, is left as it was.
func TestFormatEnumIsTheCriteriasList(t *testing.T) {
	family := []byte(`{"type":"object","properties":{"declared_format_id":{"enum":["a","b"],"description":"d"},"record":{}}}`)
	out := FormatEnum(family, "declared_format_id", []string{"a", "b", "gemini-generate-content"})
	var got struct {
		Properties map[string]struct {
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if e := got.Properties["declared_format_id"]; strings.Join(e.Enum, ",") != "a,b,gemini-generate-content" || e.Description != "d" {
		t.Errorf("the format member: %+v", e)
	}
	if string(FormatEnum(family, "", []string{"x"})) != string(family) || string(FormatEnum(family, "declared_format_id", nil)) != string(family) ||
		string(FormatEnum(family, "format", []string{"x"})) != string(family) {
		t.Error("a schema with nothing to set was changed")
	}
}
