package mcptools

import (
	"encoding/json"
	"strings"
	"testing"
)

// A tool's schemas are documents of their own: no reference is left into
// the OpenAPI document's components, every reference resolves inside the
// schema, and the output schema admits a signed answer, a
// PaymentRequired, and the status and text of an answer that was not JSON.
func TestToolSchemasAreSelfContained(t *testing.T) {
	catalog := `{"services":[{"service":"s-one","criteria_id":"c/v1","criteria_revision":"1","state":"serving","free_prechecks_per_day":3,
		"ops":[{"name":"run","price_usdc_units":50000,"price_label":"$0.05"}]}]}`
	openapi := `{"paths":{
		"/s-one/precheck":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/SOneRequest"}}}}}},
		"/s-one/run":{"post":{"requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/SOneRequest"}}}}}}},
	"components":{"schemas":{
		"SOneRequest":{"type":"object","properties":{"a":{"$ref":"#/components/schemas/SOneRequest/$defs/part"}},"$defs":{"part":{"type":"string"}}},
		"SignedAnswer":{"type":"object","required":["signature"],"properties":{"payment":{"type":"object","properties":{"m":{"$ref":"#/components/schemas/Marker"}}}}},
		"Marker":{"type":"object","properties":{"next":{"$ref":"#/components/schemas/Marker"}}},
		"PaymentRequired":{"type":"object","required":["x402Version","accepts"]}}}}`
	tools, err := Tools([]byte(catalog), []byte(openapi))
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools: %v %d", err, len(tools))
	}
	for _, tool := range tools {
		for what, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			raw, _ := json.Marshal(schema)
			if strings.Contains(string(raw), "#/components/") {
				t.Errorf("%s %s schema references the OpenAPI document: %s", tool.Name, what, raw)
			}
			var doc any
			_ = json.Unmarshal(raw, &doc)
			for _, ref := range refs(doc) {
				if resolve(doc, ref) == nil {
					t.Errorf("%s %s schema: %s resolves to nothing in %s", tool.Name, what, ref, raw)
				}
			}
		}
	}
	out, _ := json.Marshal(tools[1].OutputSchema)
	for _, want := range []string{`"$ref":"#/$defs/SignedAnswer"`, `"$ref":"#/$defs/PaymentRequired"`, `"required":["status","text"]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output schema lacks %s: %s", want, out)
		}
	}
	if tools[0].Name != "s_one_precheck" || tools[1].Name != "s_one_run" || !tools[1].Paid || tools[0].Paid {
		t.Errorf("tool names and kinds: %s %v, %s %v", tools[0].Name, tools[0].Paid, tools[1].Name, tools[1].Paid)
	}
}

func refs(x any) []string {
	var out []string
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			if s, ok := v.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(v)...)
		}
	case []any:
		for _, e := range t {
			out = append(out, refs(e)...)
		}
	}
	return out
}

// resolve follows a "#/a/b" pointer in doc (nil when it leads nowhere).
func resolve(doc any, ref string) any {
	cur := doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}
