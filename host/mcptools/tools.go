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
	output := outputSchema(doc.Components.Schemas)
	var out []Tool
	for _, s := range c.Services {
		prefix := "/" + s.Service
		stopped := ""
		switch s.State {
		case "stopped":
			stopped = "STOPPED (" + s.StoppedReason + "): every call is refused until the operator resumes it. "
		case "starting":
			stopped = "STARTING: the host is proving this service; calls are refused (nothing charged) for a few seconds. "
		}
		input := requestSchema(doc.Paths[prefix+"/precheck"], doc.Components.Schemas)
		out = append(out, Tool{Path: prefix + "/precheck", Tool: &mcp.Tool{
			Name:  ToolName(s.Service, "precheck"),
			Title: s.Service + ": free pre-check",
			Description: stopped + fmt.Sprintf("Free (%d a day per caller): whether %s would measure this body under %s, without measuring it. "+
				"Send the same body to the paid tool. Counted against the caller's address, or against a wallet it proves: "+
				"sign the answer's sign_in challenge (x402 sign-in-with-x) and send the proof in _meta[\"x402/sign-in-with-x\"] "+
				"(\"challenge\" there asks for one without counting anything).", s.FreePerDay, s.Service, s.CriteriaID),
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
				Meta:        paidMeta(doc.Paths[path], op.PriceUSDCUnits),
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
// own: the component its requestBody references, every reference resolved
// inside the document.
func requestSchema(path map[string]json.RawMessage, schemas map[string]json.RawMessage) any {
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
		name, ok := strings.CutPrefix(op.RequestBody.Content["application/json"].Schema.Ref, componentRef)
		if ok && schemas[name] != nil {
			b := &bundler{schemas: schemas, top: name, defs: map[string]any{}}
			root, ok := decode(schemas[name]).(map[string]any)
			if !ok {
				return map[string]any{"type": "object"}
			}
			b.walk(root)
			if _, typed := root["type"]; !typed {
				root["type"] = "object"
			}
			return b.attach(root)
		}
	}
	return map[string]any{"type": "object"}
}

// paidMeta is a paid tool's price as data: the atomic units, and the
// route's x-payment-info from the OpenAPI document (the USD amount and
// the x402 terms), so an agent budgets from tools/list alone.
func paidMeta(path map[string]json.RawMessage, units int64) mcp.Meta {
	m := mcp.Meta{"price_usdc_units": units}
	var op struct {
		Info json.RawMessage `json:"x-payment-info"`
	}
	if json.Unmarshal(path["post"], &op) == nil && len(op.Info) > 0 {
		m["x-payment-info"] = decode(op.Info)
	}
	return m
}

// outputSchema is what a tool's structuredContent is: a signed answer (a
// report, a pre-check, a refusal), x402's PaymentRequired (an unpaid
// call), or the status and text of an answer that was not JSON. Clients
// (the official TypeScript SDK) check structuredContent against it on
// error results too.
func outputSchema(schemas map[string]json.RawMessage) any {
	b := &bundler{schemas: schemas, defs: map[string]any{}}
	alternatives := []any{}
	if schemas["SignedAnswer"] != nil {
		alternatives = append(alternatives, map[string]any{"$ref": b.ref("SignedAnswer")})
	}
	if schemas["PaymentRequired"] != nil {
		alternatives = append(alternatives, map[string]any{"$ref": b.ref("PaymentRequired")})
	}
	alternatives = append(alternatives, map[string]any{"type": "object", "required": []any{"status", "text"},
		"properties": map[string]any{"status": map[string]any{"type": "integer"}, "text": map[string]any{"type": "string"}}})
	return b.attach(map[string]any{"type": "object", "anyOf": alternatives})
}

const componentRef = "#/components/schemas/"

// bundler makes a schema that references OpenAPI components a document of
// its own: the component top is its root ("#"), and every other component
// it reaches is copied under $defs.
type bundler struct {
	schemas map[string]json.RawMessage
	top     string
	defs    map[string]any
}

// ref is where component c is in the bundled document, copying it (and
// what it references) the first time.
func (b *bundler) ref(c string) string {
	if c == b.top {
		return "#"
	}
	if _, done := b.defs[c]; !done {
		b.defs[c] = map[string]any{} // a component that references itself
		v := decode(b.schemas[c])
		b.walk(v)
		b.defs[c] = v
	}
	return "#/$defs/" + c
}

func (b *bundler) walk(x any) {
	switch t := x.(type) {
	case map[string]any:
		for k, val := range t {
			if s, ok := val.(string); ok && k == "$ref" && strings.HasPrefix(s, componentRef) {
				c, sub, _ := strings.Cut(strings.TrimPrefix(s, componentRef), "/")
				to := b.ref(c)
				if sub != "" {
					to += "/" + sub
				}
				t[k] = to
				continue
			}
			b.walk(val)
		}
	case []any:
		for _, e := range t {
			b.walk(e)
		}
	}
}

// attach puts the copied components under the root's $defs.
func (b *bundler) attach(root map[string]any) map[string]any {
	if len(b.defs) == 0 {
		return root
	}
	own, _ := root["$defs"].(map[string]any) // the root's own, kept
	if own == nil {
		own = map[string]any{}
	}
	for c, v := range b.defs {
		own[c] = v
	}
	root["$defs"] = own
	return root
}

func decode(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return map[string]any{"type": "object"}
	}
	return v
}
