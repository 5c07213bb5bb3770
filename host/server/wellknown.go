package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/assay-audit/assay/host/payment"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// The discovery documents: the x402 capability manifest of
// draft-hawkins-x402-dns-discovery-03 at /.well-known/x402, and the
// RFC 9727 API catalog at /.well-known/api-catalog.
const (
	manifestPath   = "/.well-known/x402"
	apiCatalogPath = "/.well-known/api-catalog"
	// apiCatalogType is the linkset media type (RFC 9264) with the
	// profile RFC 9727 registers for an API catalog.
	apiCatalogType = `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`
	// openAPIType is /openapi.json's format, as a link's type hint.
	openAPIType = "application/vnd.oai.openapi+json;version=3.1"
	// discoveryCache: both documents change only when the host restarts
	// with other services, prices or terms, and a payer pays from the
	// live 402, never from a cached manifest; five minutes keeps
	// crawlers off the host (the draft asks for cache headers)
	discoveryCache = "public, max-age=300"
	// catalogLink is the api-catalog relation every discovery answer
	// carries (RFC 9727 asks it of a HEAD); relative, it resolves against
	// the request's own URL, so a HEAD builds nothing
	catalogLink = `<` + apiCatalogPath + `>; rel="api-catalog"`
	// manifestKind: Assay serves paid routes; its facilitator, embedded or
	// remote, publishes no /supported of its own here
	manifestKind        = "resource-server"
	manifestDescription = "Signed, criteria-bound audit services, paid per report with x402 v2 on Solana in USDC. " +
		"Each resource's live 402 is authoritative; the assay member repeats what those 402s ask, and the signature member is checked against keys like any answer of this host."
)

// errNoOffer is a payment gate whose offer carries no x402 requirement.
var errNoOffer = errors.New("server: the payment gate's offer carries no x402 requirement")

// offered is what a route's own 402 says (payment.Publisher.Offer's x402
// member): the part the manifest repeats.
type offered struct {
	X402Version int `json:"x402Version"`
	Resource    struct {
		URL         string `json:"url"`
		Description string `json:"description"`
	} `json:"resource"`
	Accepts []struct {
		Scheme            string `json:"scheme"`
		Network           string `json:"network"`
		Amount            string `json:"amount"`
		Asset             string `json:"asset"`
		PayTo             string `json:"payTo"`
		MaxTimeoutSeconds int64  `json:"maxTimeoutSeconds"`
	} `json:"accepts"`
}

// offerAt is the 402 the gate would answer at path for op of service
// (op nil: no route, the host's base alone). It is read from the gate's
// own offer, not rebuilt from its terms, so the manifest's URLs and
// terms are the 402s' by construction: public_url when the operator set
// one, else the request's scheme and Host, as every 402 writes them.
func offerAt(p payment.Publisher, r *http.Request, path, service string, op *pb.Op) (offered, error) {
	req := r.Clone(r.Context())
	req.URL.Path, req.URL.RawPath = path, ""
	pr := payment.Request{HTTP: req, Service: service}
	if op != nil {
		// no Input: the route's discovery schema (extensions.bazaar) is
		// the 402's to carry; the manifest repeats none of it
		pr.Op, pr.Price = op.GetName(), payment.Price{USDCUnits: op.GetPriceUsdcUnits(), Label: op.GetPriceLabel(), Basis: op.GetPriceBasis()}
	}
	_, members := p.Offer(pr, "")
	var o offered
	raw, err := json.Marshal(members["x402"])
	if err != nil {
		return o, fmt.Errorf("server: the gate's offer: %w", err)
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, fmt.Errorf("server: the gate's offer: %w", err)
	}
	if o.Resource.URL == "" || op != nil && len(o.Accepts) == 0 {
		return o, errNoOffer
	}
	return o, nil
}

// serviceNames are the loaded services, sorted: every document lists
// them in one order.
func (s *Server) serviceNames() []string {
	names := make([]string, 0, len(s.services))
	for name := range s.services {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// publicBase is the host's public base URL as its 402s write it (the
// gate's offer), or, with no payment gate, by the rule the gate follows
// without public_url: the connection's scheme and the request's Host.
func (s *Server) publicBase(r *http.Request) (string, error) {
	if p, ok := s.cfg.Payments.(payment.Publisher); ok {
		o, err := offerAt(p, r, "/", "", nil)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(o.Resource.URL, "/"), nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host, nil
}

// x402Manifest is the capability manifest: every paid route a bare
// pointer (url, method, description), the form the draft prefers to a
// complete payment entry, which Assay could not keep true: each 402
// carries a fresh memo and a live blockhash. What the 402s ask (scheme,
// network, asset, payTo, amount, timeout) and whether a payer needs a
// node of its own are in the extension member "assay", which consumers
// of the draft ignore. Omitted because Assay cannot fill them truthfully:
// facilitator (a remote one's URL is not the gate's to publish, the
// embedded one serves no /supported), updated (nothing records when the
// offer last changed), contact, attestation and peers.
func (s *Server) x402Manifest(r *http.Request, p payment.Publisher) (map[string]any, error) {
	root, err := offerAt(p, r, "/", "", nil)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(root.Resource.URL, "/")
	resources, routes := []any{}, []any{}
	for _, name := range s.serviceNames() {
		for _, op := range s.services[name].Desc.GetOps() {
			o, err := offerAt(p, r, "/"+name+"/"+op.GetName(), name, op)
			if err != nil {
				return nil, err
			}
			a := o.Accepts[0]
			resources = append(resources, object{"url": o.Resource.URL, "method": http.MethodPost, "description": o.Resource.Description})
			routes = append(routes, object{"url": o.Resource.URL, "method": http.MethodPost, "service": name, "op": op.GetName(),
				"scheme": a.Scheme, "network": a.Network, "asset": a.Asset, "payTo": a.PayTo, "amount": a.Amount, "maxTimeoutSeconds": a.MaxTimeoutSeconds})
		}
	}
	t := p.Terms()
	ext := object{"payerNeedsNode": t.PayerNeedsNode, "routes": routes, "keys": base + "/keys", "openapi": base + "/openapi.json"}
	if t.Note != "" {
		ext["note"] = t.Note
	}
	return object{"x402Version": root.X402Version, "kind": manifestKind, "name": "Assay", "description": manifestDescription,
		"resources": resources, "docs": base + "/", "assay": ext}, nil
}

// discoveryHeaders are the headers both documents share: public data,
// readable from any origin (the draft asks CORS for GET), cacheable.
func discoveryHeaders(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", discoveryCache)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Link", catalogLink)
}

// discoveryFailure answers a document the host could not build: a
// static body, nothing cached.
func (s *Server) discoveryFailure(w http.ResponseWriter, doc string, err error) {
	s.cfg.Logger.Error("discovery document not built", "document", doc, "error", err)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Del("Link")
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// x402ManifestDoc is GET /.well-known/x402. A host that takes no x402
// payment (payments off) answers 404: it has no x402 capability, and a
// manifest with no resources would still tell a crawler it is an x402
// resource server. The manifest is signed like an answer (a top-level
// signature member, which the draft's consumers ignore as unknown).
func (s *Server) x402ManifestDoc(w http.ResponseWriter, r *http.Request) {
	p, ok := s.cfg.Payments.(payment.Publisher)
	if !ok {
		notCovered(w, r)
		return
	}
	discoveryHeaders(w, "application/json")
	if r.Method == http.MethodHead {
		return
	}
	doc, err := s.x402Manifest(r, p)
	var signed []byte
	if err == nil {
		signed, err = s.cfg.Keys.Sign(doc)
	}
	if err != nil {
		s.discoveryFailure(w, "x402", err)
		return
	}
	_, _ = w.Write(signed)
}

// apiCatalog is the RFC 9727 catalog: the host's API as a whole (every
// route is in /openapi.json; the catalog page is its human
// documentation) and each service's, its page the documentation. With
// payments on, the x402 manifest is the host API's service-meta.
func (s *Server) apiCatalog(base string) object {
	spec := []any{object{"href": base + "/openapi.json", "type": openAPIType}}
	status := []any{object{"href": base + "/healthz", "type": "application/json"}}
	host := object{"anchor": base + "/", "service-desc": spec, "status": status,
		"service-doc": []any{object{"href": base + "/", "type": "text/html", "title": "the catalog of services"}}}
	if _, ok := s.cfg.Payments.(payment.Publisher); ok {
		host["service-meta"] = []any{object{"href": base + manifestPath, "type": "application/json", "title": "the x402 capability manifest"}}
	}
	set := []any{host}
	for _, name := range s.serviceNames() {
		page := base + "/" + name
		set = append(set, object{"anchor": page, "service-desc": spec, "status": status,
			"service-doc": []any{object{"href": page, "type": "text/html", "title": name}}})
	}
	return object{"linkset": set}
}

// apiCatalogDoc is GET (and HEAD) /.well-known/api-catalog.
func (s *Server) apiCatalogDoc(w http.ResponseWriter, r *http.Request) {
	discoveryHeaders(w, apiCatalogType)
	if r.Method == http.MethodHead {
		return
	}
	base, err := s.publicBase(r)
	var raw []byte
	if err == nil {
		raw, err = json.MarshalIndent(s.apiCatalog(base), "", "  ")
	}
	if err != nil {
		s.discoveryFailure(w, "api-catalog", err)
		return
	}
	_, _ = w.Write(raw)
}

// wellKnownOperations adds the discovery documents to the OpenAPI
// document: their paths and their schemas.
func wellKnownOperations(paths, schemas object) {
	paths[manifestPath] = object{"get": object{"operationId": "x402Manifest",
		"summary": "The x402 capability manifest (draft-hawkins-x402-dns-discovery-03): every paid route, and in the assay member what its 402 asks; signed like an answer",
		"responses": object{
			"200": object{"description": "the manifest; each route's live 402 stays authoritative", "content": jsonContent(ref("X402Manifest")),
				"headers": object{"Link": object{"$ref": "#/components/headers/Link"}}},
			"404": object{"description": "NOT COVERED: this host takes no x402 payment (payments off)", "content": object{"text/plain": object{"schema": object{"type": "string"}}}}}}}
	paths[apiCatalogPath] = object{"get": object{"operationId": "apiCatalog",
		"summary": `The RFC 9727 API catalog (application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"): the host's API and each service's, with /openapi.json, their documentation pages and /healthz`,
		"responses": object{"200": object{"description": "a linkset (RFC 9264); a HEAD answers the Link header alone",
			"content": object{"application/linkset+json": object{"schema": ref("APICatalog")}},
			"headers": object{"Link": object{"$ref": "#/components/headers/Link"}}}}}}
	target := object{"type": "object", "required": []any{"href"}, "properties": object{"href": object{"type": "string", "format": "uri"},
		"type": object{"type": "string"}, "title": object{"type": "string"}}}
	targets := object{"type": "array", "items": target}
	schemas["APICatalog"] = object{"type": "object", "required": []any{"linkset"}, "properties": object{"linkset": object{"type": "array",
		"items": object{"type": "object", "required": []any{"anchor"}, "properties": object{"anchor": object{"type": "string", "format": "uri"},
			"service-desc": targets, "service-doc": targets, "service-meta": targets, "status": targets}}}}}
	route := object{"type": "object", "required": []any{"url", "method", "service", "op", "scheme", "network", "asset", "payTo", "amount", "maxTimeoutSeconds"},
		"properties": object{"url": object{"type": "string"}, "method": object{"const": "POST"}, "service": object{"type": "string"}, "op": object{"type": "string"},
			"scheme": object{"type": "string"}, "network": object{"type": "string"}, "asset": object{"type": "string"}, "payTo": object{"type": "string"},
			"amount": object{"type": "string", "description": "atomic units, as the 402's amount"}, "maxTimeoutSeconds": object{"type": "integer"}}}
	schemas["X402Manifest"] = object{"type": "object", "required": []any{"x402Version", "kind", "resources"},
		"properties": object{
			"x402Version": object{"const": 2}, "kind": object{"const": manifestKind}, "name": object{"type": "string"}, "description": object{"type": "string"},
			"docs": object{"type": "string"},
			"resources": object{"type": "array", "description": "bare pointers: every paid route's URL as its 402's resource.url",
				"items": object{"type": "object", "required": []any{"url"}, "properties": object{"url": object{"type": "string"},
					"method": object{"const": "POST"}, "description": object{"type": "string"}}}},
			"assay": object{"type": "object", "required": []any{"payerNeedsNode", "routes"}, "description": "Assay's extension member: what each route's 402 asks",
				"properties": object{
					"payerNeedsNode": object{"type": "boolean", "description": "true when this host's 402s carry no recentBlockhash (a remote facilitator and no Solana node of the host's): a payer's client reads one from a Solana JSON-RPC node before it signs"},
					"note":           object{"type": "string"}, "keys": object{"type": "string"}, "openapi": object{"type": "string"},
					"routes": object{"type": "array", "items": route}}},
			"signature": object{"type": "object", "description": "Ed25519 over the RFC 8785 bytes of the manifest without signature, as every answer's; keys at /keys",
				"required": []any{"alg", "key_id", "value"}, "properties": object{"alg": object{"const": "Ed25519"}, "key_id": object{"type": "string"}, "value": object{"type": "string"}}}}}
}
