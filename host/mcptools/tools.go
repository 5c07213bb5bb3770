package mcptools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one MCP tool and the host route a call of it becomes.
type Tool struct {
	*mcp.Tool
	// Path is the route (POST /<service>/precheck or /<service>/<op>).
	Path string
	// Paid: the route takes a payment (a pre-check never does).
	Paid bool
}

// catalog is what the tools are described from: the host's catalog (GET /).
type catalog struct {
	Services []struct {
		Service          string `json:"service"`
		CriteriaID       string `json:"criteria_id"`
		CriteriaRevision string `json:"criteria_revision"`
		Criteria         string `json:"criteria"`
		Precheck         string `json:"precheck"`
		FreePerDay       int64  `json:"free_prechecks_per_day"`
		BodyBytes        int64  `json:"body_bytes"`
		Measures         string `json:"measures"`
		Never            string `json:"never"`
		State            string `json:"state"`
		StoppedReason    string `json:"stopped_reason"`
		Ops              []struct {
			Name           string `json:"name"`
			Endpoint       string `json:"endpoint"`
			PriceUSDCUnits int64  `json:"price_usdc_units"`
			PriceLabel     string `json:"price_label"`
		} `json:"ops"`
	} `json:"services"`
}

// Tools are the MCP tools for a host's catalog (GET /) and OpenAPI
// document (GET /openapi.json): per service, <service>_precheck and
// <service>_<op>, with the op's request body schema as the input schema
// and the signed answer's as the output schema.
func Tools(catalogJSON, openapiJSON []byte) ([]Tool, error) {
	var c catalog
	if err := json.Unmarshal(catalogJSON, &c); err != nil {
		return nil, fmt.Errorf("mcptools: the catalog: %w", err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("mcptools: the OpenAPI document: %w", err)
	}
	output := standalone(doc.Components.Schemas["SignedAnswer"], "SignedAnswer")
	var out []Tool
	for _, s := range c.Services {
		prefix := "/" + s.Service
		stopped := ""
		if s.State == "stopped" {
			stopped = "STOPPED (" + s.StoppedReason + "): every call is refused until the operator resumes it. "
		}
		input := requestSchema(doc.Paths[prefix+"/precheck"], doc.Components.Schemas)
		out = append(out, Tool{Path: prefix + "/precheck", Tool: &mcp.Tool{
			Name:  ToolName(s.Service, "precheck"),
			Title: s.Service + ": free pre-check",
			Description: stopped + fmt.Sprintf("Free (%d a day per caller): whether %s would measure this body under %s, without measuring it. "+
				"Send the same body to the paid tool.", s.FreePerDay, s.Service, s.CriteriaID),
			InputSchema: input, OutputSchema: output,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
		}})
		for _, op := range s.Ops {
			path := prefix + "/" + op.Name
			out = append(out, Tool{Path: path, Paid: true, Tool: &mcp.Tool{
				Name:  ToolName(s.Service, op.Name),
				Title: s.Service + ": " + op.Name + " (" + op.PriceLabel + ")",
				Description: stopped + fmt.Sprintf("Paid, %s (%d USDC atomic units) over x402: %s Never: %s "+
					"Criteria %s rev %s (%s). The answer is a report signed by the host. Bodies up to %d bytes.",
					op.PriceLabel, op.PriceUSDCUnits, strings.TrimSpace(s.Measures), strings.TrimSpace(s.Never),
					s.CriteriaID, s.CriteriaRevision, s.Criteria, s.BodyBytes),
				InputSchema: requestSchema(doc.Paths[path], doc.Components.Schemas), OutputSchema: output,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
				Meta:        mcp.Meta{"price_usdc_units": op.PriceUSDCUnits},
			}})
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// ToolName is the tool of a service's op (or "precheck"): <service>_<op>
// in the characters MCP tool names allow.
func ToolName(service, op string) string {
	return strings.NewReplacer("-", "_", "/", "_").Replace(service + "_" + op)
}

// requestSchema is a route's request body schema as a document of its
// own: the component its requestBody references, with the references
// into it turned back into the document's own.
func requestSchema(path map[string]json.RawMessage, schemas map[string]json.RawMessage) json.RawMessage {
	var op struct {
		RequestBody struct {
			Content map[string]struct {
				Schema struct {
					Ref string `json:"$ref"`
				} `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
	if err := json.Unmarshal(path["post"], &op); err == nil {
		name, ok := strings.CutPrefix(op.RequestBody.Content["application/json"].Schema.Ref, "#/components/schemas/")
		if ok && schemas[name] != nil {
			return standalone(schemas[name], name)
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// standalone is a component schema with its references turned back into
// its own ("#/components/schemas/<name>/…" → "#/…"), as a tool's schema
// is a document of its own; an input schema must be an object.
func standalone(raw json.RawMessage, name string) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	prefix := "#/components/schemas/" + name + "/"
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && k == "$ref" && strings.HasPrefix(s, prefix) {
					t[k] = "#/" + strings.TrimPrefix(s, prefix)
					continue
				}
				walk(val)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	if m, ok := v.(map[string]any); ok {
		if _, typed := m["type"]; !typed {
			m["type"] = "object"
		}
	}
	out, _ := json.Marshal(v)
	return out
}
