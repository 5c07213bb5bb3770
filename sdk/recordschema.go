package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// CheckRecordSchema says whether raw can be an adapter's record schema
// (AdapterDescription.record_schema): a JSON object whose every "$ref" is
// "#" or "#/$defs/<name>..." and which has no "$id", "$anchor" or
// "$dynamicRef". The host moves the schema into each accepting family's
// request schema, so a reference has to mean the same thing wherever the
// schema lands; a URL would also send a caller's validator off the host.
func CheckRecordSchema(raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return errors.New("the record schema is not JSON")
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("the record schema is not a JSON object")
	}
	return checkSchemaRefs(v, 0)
}

func checkSchemaRefs(v any, depth int) error {
	if depth > 64 {
		return errors.New("the record schema nests deeper than 64")
	}
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			switch k {
			case "$id", "$anchor", "$dynamicRef", "$dynamicAnchor":
				return fmt.Errorf("the record schema uses %s: references stay within it, as \"#\" or \"#/$defs/...\"", k)
			case "$ref":
				s, _ := val.(string)
				if s != "#" && !strings.HasPrefix(s, "#/$defs/") {
					return errors.New("a record schema reference is neither \"#\" nor \"#/$defs/...\"")
				}
			case "const", "enum", "examples", "default":
				continue // instances, not schemas: a "$ref" there is data
			case "properties", "patternProperties", "$defs", "dependentSchemas":
				// names, then schemas: a member may be called "$ref"
				named, _ := val.(map[string]any)
				for _, sub := range named {
					if err := checkSchemaRefs(sub, depth+1); err != nil {
						return err
					}
				}
				continue
			}
			if err := checkSchemaRefs(val, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, val := range t {
			if err := checkSchemaRefs(val, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
