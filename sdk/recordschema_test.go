package sdk

import (
	"strings"
	"testing"
)

// A record schema's references stay inside it; names and instance
// values that happen to spell a keyword are not references.
func TestCheckRecordSchema(t *testing.T) {
	for _, c := range []struct {
		schema, want string
	}{
		{`{"type": "array", "items": {"$ref": "#/$defs/Line"}, "$defs": {"Line": {"type": "string"}}}`, ""},
		{`{"properties": {"kids": {"items": {"$ref": "#"}}}}`, ""},
		{`{"properties": {"$ref": {"type": "string"}, "$id": {"const": {"$ref": "http://x"}}}}`, ""},
		{`{"enum": [{"$id": "x"}], "examples": [{"$ref": "y"}]}`, ""},
		{`{"items": {"$ref": "https://example.org/s.json"}}`, "neither"},
		{`{"properties": {"a": {"$ref": "other.json#/x"}}}`, "neither"},
		{`{"$id": "https://example.org/s.json"}`, "$id"},
		{`{"$defs": {"a": {"$dynamicRef": "#x"}}}`, "$dynamicRef"},
		{`[1]`, "not a JSON object"},
		{`{`, "not JSON"},
	} {
		err := CheckRecordSchema([]byte(c.schema))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.schema, err, c.want)
		}
	}
}
