package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/assay-audit/assay/host/payment"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Routes lists every route the server mounts ("METHOD /path", Go's
// pattern syntax: "/{$}" is the root alone), sorted: what the OpenAPI
// document must describe, and nothing else.
func (s *Server) Routes() []string {
	out := append([]string(nil), s.routes...)
	sort.Strings(out)
	return out
}

// openAPIPath is a route's path as OpenAPI writes it.
func openAPIPath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	if path == "/{$}" {
		path = "/"
	}
	return strings.ToLower(method), path
}

// hostRefusalCodes are the refusal codes the host itself answers on
// service routes (the families' own come from their criteria).
var hostRefusalCodes = []string{codeBodyCap, codeUnavailable, codeDeadline, codeInternal, codeSelfCheck, codeCaller, codeInterval,
	codeSpent, codeFreeDown, codePaymentDown, codeBusy, codeStopped, codeStarting, codeBodyTimeout, codeBodyBroken, codeAdapterFault, codeLedgerDown,
	"payment_required", "payment_invalid", "payment_replayed", "payment_not_settled", "payment_in_progress",
	"payment_conflict", "payment_identifier_invalid", "redelivery_unavailable", "payment_identity_mismatch",
	"marker_invalid", "marker_expired", "marker_spent", codeSignIn, codeChallenge, codeUnpaidRate, codeSenderHeld}

type object = map[string]any

func ref(name string) object { return object{"$ref": "#/components/schemas/" + name} }

// requestSchemaName names a service's request body schema.
func requestSchemaName(service string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(service, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Request"
}

// componentSchema places a family's JSON Schema under components: its
// internal references ("#/$defs/x") are rewritten to where it now stands.
func componentSchema(raw []byte, name string) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return object{"type": "object", "description": "the family describes no request schema"}
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && k == "$ref" && strings.HasPrefix(s, "#/") {
					t[k] = "#/components/schemas/" + name + "/" + strings.TrimPrefix(s, "#/")
					continue
				}
				t[k] = walk(val)
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	return walk(v)
}

func jsonContent(schema any) object {
	return object{"application/json": object{"schema": schema}}
}

func answer(desc string) object {
	return object{"description": desc, "content": jsonContent(ref("SignedAnswer"))}
}

func refusal(desc string, headers ...string) object {
	r := object{"description": desc, "content": jsonContent(ref("Refusal"))}
	if len(headers) > 0 {
		h := object{}
		for _, name := range headers {
			h[name] = object{"$ref": "#/components/headers/" + name}
		}
		r["headers"] = h
	}
	return r
}

// usdDecimal writes USDC atomic units (6 decimals) as a decimal amount.
func usdDecimal(units int64) string {
	whole, frac := units/1_000_000, units%1_000_000
	if frac == 0 {
		return strconv.FormatInt(whole, 10)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%06d", whole, frac), "0")
}

// paymentInfo is a paid operation's price as data: x-payment-info as the
// payment-discovery draft writes it (price in USD, the protocols with
// what each asks), and x-assay-price with the exact atomic units as a
// JSON number. The route's 402 stays authoritative.
func paymentInfo(op *pb.Op, terms *payment.Terms) (info, price object) {
	info = object{"authMode": "payment-required",
		"price": object{"mode": "fixed", "currency": "USD", "amount": usdDecimal(op.GetPriceUsdcUnits())}}
	if terms != nil {
		x := object{"scheme": terms.Scheme, "network": terms.Network, "asset": terms.Asset, "payTo": terms.PayTo,
			"amount": strconv.FormatInt(op.GetPriceUsdcUnits(), 10), "maxTimeoutSeconds": terms.MaxTimeoutSeconds}
		if terms.Note != "" {
			x["note"] = terms.Note
		}
		// whether the payer's client must read a blockhash from a Solana
		// node of its own before it signs: planned for before any 402
		x["payerNeedsNode"] = terms.PayerNeedsNode
		info["protocols"] = []any{object{terms.Protocol: x}}
	}
	price = object{"usdc_units": op.GetPriceUsdcUnits(), "usdc_decimals": 6, "label": op.GetPriceLabel(), "basis": op.GetPriceBasis()}
	return info, price
}

// nodeSentence says in a paid operation's description what
// x-payment-info's payerNeedsNode means for this host ("" without terms).
func nodeSentence(terms *payment.Terms) string {
	switch {
	case terms == nil:
		return ""
	case terms.PayerNeedsNode:
		return " payerNeedsNode: this host's 402s carry no recentBlockhash (its facilitator is remote and it has no Solana node of its own), so the payer's client reads one from a Solana JSON-RPC node before it signs."
	}
	return " payerNeedsNode false: this host's 402s carry a recentBlockhash (extra.recentBlockhash), so a payer needs no Solana node of its own."
}

// serviceOperations are the path items of one service mounted at prefix.
func serviceOperations(d *pb.FamilyDescription, prefix string, paths object, terms *payment.Terms) {
	name := d.GetService()
	body := object{"required": true, "content": jsonContent(ref(requestSchemaName(name)))}
	tag := []string{name}
	suffix := strings.NewReplacer("/", "_", "-", "_").Replace(prefix)
	paths[prefix+"/criteria"] = object{"get": object{"operationId": "criteria" + suffix, "tags": tag,
		"summary":   "The " + d.GetCriteriaId() + " criteria document, byte for byte (its corpus pin included)",
		"responses": object{"200": object{"description": "the criteria document", "content": jsonContent(object{"type": "object"})}}}}
	if prefix != "" {
		paths[prefix] = object{"get": object{"operationId": "page" + suffix, "tags": tag,
			"summary": "This service's catalog entry: what it states and never says, price, caps, free allowance, example requests (JSON; HTML for a browser)",
			"responses": object{"200": object{"description": "the entry", "content": object{
				"application/json": object{"schema": object{"type": "object"}},
				"text/html":        object{"schema": object{"type": "string"}}}}}}}
		paths[prefix+"/metrics"] = object{"get": object{"operationId": "metrics" + suffix, "tags": tag,
			"summary":   "Prometheus metrics labelled with this service",
			"responses": object{"200": object{"description": "Prometheus text format", "content": object{"text/plain": object{"schema": object{"type": "string"}}}}}}}
	}
	paths[prefix+"/precheck"] = object{"post": object{"operationId": "precheck" + suffix, "tags": tag,
		"summary": "Free pre-check: validation and assessability only, no measurement",
		"description": "Free: " + itoa(d.GetFreeTier().GetPerDay()) + " per UTC day per caller wallet proven with SIGN-IN-WITH-X (x402 sign-in-with-x), " +
			"else per client address (a body's caller alone is never counted against its wallet), at least " +
			itoa(d.GetFreeTier().GetMinIntervalMs()) + " ms apart; a refused pre-check counts.",
		"x-assay-free-tier": object{"per_day": d.GetFreeTier().GetPerDay(), "min_interval_ms": d.GetFreeTier().GetMinIntervalMs(),
			"counted_by": "a wallet proven with SIGN-IN-WITH-X, else the client address", "resets": "00:00 UTC"},
		"parameters": []any{object{"in": "header", "name": "SIGN-IN-WITH-X", "required": false, "schema": object{"type": "string"},
			"description": "base64 JSON of an x402 sign-in-with-x proof (Solana: type ed25519, a base58 Ed25519 signature over the SIWS message) of a challenge " +
				"this host fleet issued (an answer's sign_in, or the 402's PAYMENT-REQUIRED extensions): the pre-check then counts against the proven wallet. " +
				"The value challenge asks for one: answered 401 siwx_challenge before the body is read, nothing counted"}},
		"requestBody": body,
		"responses": object{
			"200": freeHeaders(answer("the signed pre-check (kind precheck); free_tier and the RateLimit fields say the caller's free pre-checks left today and when they reset")),
			"400": freeHeaders(refusal("a signed refusal naming the failed rule (the family's code, or caller_invalid, body_incomplete)")),
			"401": refusal("siwx_invalid: the SIGN-IN-WITH-X proof proves nothing here (error.reason: not_a_proof, version, chain, domain, uri, nonce, expired, "+
				"not_yet_valid, address, signature, replayed, caller_mismatch); siwx_challenge: the challenge asked for. Nothing counted; sign_in carries a fresh challenge", "WWW-Authenticate"),
			"402": freeHeaders(refusal("free_allowance_spent: the caller's free pre-checks for this UTC day are spent; a pre-check cannot be bought. "+
				"error.paid_route names the paid route, and PAYMENT-REQUIRED is that route's x402 requirement (its resource the paid route), so an x402 client reads a requirement, not a malformed one; "+
				"a payment sent to the pre-check is never settled. Retry-After counts to the reset (00:00 UTC); for a caller not signed in, PAYMENT-REQUIRED's and "+
				"the x402 member's extensions declare sign-in-with-x (the same challenge as sign_in): an x402 client signs in and retries, counted against its wallet", "PAYMENT-REQUIRED", "Retry-After")),
			"408": refusal("body_read_timeout: the body did not arrive within the read timeout"),
			"413": refusal("body_bytes_cap: the body is over the published cap (" + itoa(d.GetBodyBytes()) + " bytes)"),
			"422": freeHeaders(answer("the signed could-not-measure answer (kind could_not_measure)")),
			"429": freeHeaders(refusal("free_interval: inside the minimum interval; retry_after_ms and Retry-After say when; sender_held: this client's records crashed or hung a plugin again and again, its requests wait (retry_after_ms)", "Retry-After")),
			"500": refusal("internal_error or self_check_failed: nothing issued"),
			"502": refusal("adapter_failed: the record's format adapter failed on it (error.format, error.cause: crashed, deadline, failed, or how its answer was wrong); sending it again fails again"),
			"503": refusal("service_stopped, service_starting, service_busy, plugin_unavailable, adapter_restarting (error.format), deadline_exceeded, free_tier_unavailable", "Retry-After"),
		}}}
	for _, op := range d.GetOps() {
		info, price := paymentInfo(op, terms)
		paths[prefix+"/"+op.GetName()] = object{"post": object{"operationId": op.GetName() + suffix, "tags": tag,
			"x-payment-info": info, "x-assay-price": price,
			"summary": "Paid (" + op.GetPriceLabel() + " " + op.GetPriceBasis() + "): the signed report, after an x402 v2 payment",
			"description": "Without PAYMENT-SIGNATURE the answer is 402 with PAYMENT-REQUIRED (x402 v2, scheme exact, Solana USDC, " +
				itoa(op.GetPriceUsdcUnits()) + " atomic units). The submission is validated before the payment is read: a refused one is never charged. " +
				"A payment taken whose report was not delivered is redeemed by sending the same request with the same PAYMENT-SIGNATURE (or the delivery marker) again." + nodeSentence(terms),
			"parameters": []any{
				object{"in": "header", "name": "PAYMENT-SIGNATURE", "required": false, "description": "base64 JSON x402 v2 PaymentPayload", "schema": object{"type": "string"}},
				object{"in": "header", "name": "ASSAY-DELIVERY-MARKER", "required": false, "description": "a delivery marker a 503 gave, instead of a payment", "schema": object{"type": "string"}},
			},
			"requestBody": body,
			"responses": object{
				"200": object{"description": "the signed report (kind report); its payment member names the transaction. The same paid request sent again (the same PAYMENT-SIGNATURE, or the same x402 payment-identifier id) with the same body is answered with this answer again, byte for byte, for 24 h, with no second charge", "content": jsonContent(ref("SignedAnswer")),
					"headers": object{"PAYMENT-RESPONSE": object{"$ref": "#/components/headers/PAYMENT-RESPONSE"}}},
				"400": refusal("a signed refusal: the family's rule, or marker_invalid, marker_expired, marker_spent, body_incomplete, payment_identifier_invalid"),
				"402": refusal("payment_required (with x402 and PAYMENT-REQUIRED), payment_invalid, payment_replayed, payment_not_settled", "PAYMENT-REQUIRED"),
				"409": refusal("payment_conflict: this payment (or payment-identifier id) was issued a report for another submission; nothing charged"),
				"429": refusal("unpaid_rate: this client's requests without a payment on paid routes (each adapted before its 402) are past its allowance (error.per_minute; a paid report gives one back); "+
					"sender_held: its records crashed or hung a plugin again and again. Nothing read or charged; retry_after_ms and Retry-After say when", "Retry-After"),
				"408": refusal("body_read_timeout: the body did not arrive within the read timeout"),
				"413": refusal("body_bytes_cap: the body is over the published cap (" + itoa(d.GetBodyBytes()) + " bytes)"),
				"422": answer("the signed could-not-measure answer, delivered unpaid"),
				"500": refusal("internal_error or self_check_failed: nothing charged"),
				"502": refusal("adapter_failed: the record's format adapter failed on it (error.format, error.cause: crashed, deadline, failed, or how its answer was wrong); nothing charged; sending it again fails again"),
				"503": refusal("service_stopped, service_starting, service_busy, payment_in_progress, payment_unavailable, payment_identity_mismatch (error.store_identity, error.host_identity), ledger_unavailable, redelivery_unavailable, plugin_unavailable, adapter_restarting (error.format), deadline_exceeded; after a payment was checked, payment.delivery_marker and ASSAY-DELIVERY-MARKER", "Retry-After", "ASSAY-DELIVERY-MARKER"),
			}}}
	}
}

// freeHeaders adds the free allowance's RateLimit fields to a pre-check
// response.
func freeHeaders(r object) object {
	h, _ := r["headers"].(object)
	if h == nil {
		h = object{}
	}
	for _, name := range []string{"RateLimit", "RateLimit-Policy"} {
		h[name] = object{"$ref": "#/components/headers/" + name}
	}
	r["headers"] = h
	return r
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// openAPI builds the OpenAPI 3.1 document of every route the server
// mounts.
func (s *Server) openAPI() object {
	paths := object{
		"/": object{"get": object{"operationId": "catalog", "summary": "The catalog of services (JSON; HTML for a browser)",
			"responses": object{"200": object{"description": "the catalog", "content": object{
				"application/json": object{"schema": object{"type": "object"}},
				"text/html":        object{"schema": object{"type": "string"}}}}}}},
		"/keys": object{"get": object{"operationId": "keys", "summary": "The report-signing public keys (JWKS, Ed25519), active first; retired keys stay listed",
			"responses": object{"200": object{"description": "a JWKS", "content": object{"application/jwk-set+json": object{"schema": ref("JWKS")}}}}}},
		"/healthz": object{"get": object{"operationId": "healthz", "summary": "Liveness",
			"responses": object{"200": object{"description": "ok", "content": jsonContent(object{"type": "object"})}}}},
		"/readyz": object{"get": object{"operationId": "readyz", "summary": "Readiness: 200 when this host's store answers, its signing keys are loaded and every service it should serve passed its launch self-test (a service an operator stopped for the fleet does not count against it); 503 otherwise, the body saying which part is not",
			"responses": object{
				"200": object{"description": "ready", "content": jsonContent(ref("Readiness"))},
				"503": object{"description": "not ready", "content": jsonContent(ref("Readiness"))}}}},
		"/metrics": object{"get": object{"operationId": "metrics", "summary": "Prometheus metrics",
			"responses": object{"200": object{"description": "Prometheus text format", "content": object{"text/plain": object{"schema": object{"type": "string"}}}}}}},
		"/view": object{"get": object{"operationId": "view", "summary": "The report viewer: a page that checks a signed answer's signature in the browser (WebCrypto Ed25519, keys from /keys or a pasted JWKS) and draws it; the answer never leaves the browser",
			"responses": object{"200": object{"description": "one self-contained HTML page (inline style and script pinned by its Content-Security-Policy)", "content": object{"text/html": object{"schema": object{"type": "string"}}}}}}},
		"/openapi.json": object{"get": object{"operationId": "openapi", "summary": "This document",
			"responses": object{"200": object{"description": "OpenAPI 3.1", "content": jsonContent(object{"type": "object"})}}}},
	}
	check := object{"type": "object", "required": []any{"ok"}, "properties": object{"ok": object{"type": "boolean"}, "reason": object{"type": "string"}}}
	schemas := object{
		"Readiness": object{"type": "object", "required": []any{"ready", "store", "keys", "services"},
			"properties": object{"ready": object{"type": "boolean"}, "store": check, "keys": check,
				"services": object{"type": []any{"array", "null"}, "items": object{"type": "object",
					"required": []any{"service", "criteria_id", "criteria_revision", "state", "ready"},
					"properties": object{"service": object{"type": "string"}, "criteria_id": object{"type": "string"},
						"criteria_revision": object{"type": "string"}, "state": object{"type": "string", "enum": []any{"serving", "stopped"}},
						"reason": object{"type": "string"}, "local": object{"type": "boolean", "description": "stopped on this host alone (its launch self-test failed)"},
						"ready": object{"type": "boolean"}}}},
				"payments": object{"type": "object", "description": "the payment preflight's latest findings (every minute; absent when payments check nothing). Not part of ready: the node and the facilitator are the fleet's",
					"required": []any{"ok", "checked_at", "checks"},
					"properties": object{"ok": object{"type": "boolean"}, "checked_at": object{"type": "string", "format": "date-time"},
						"checks": object{"type": "array", "items": object{"type": "object", "required": []any{"check", "ok"},
							"properties": object{"check": object{"type": "string"}, "ok": object{"type": "boolean"}, "error": object{"type": "string"},
								"fix": object{"type": "string"}, "refuses_start": object{"type": "boolean"}}}}}}}},
		"SignedAnswer": object{"type": "object", "description": "Every JSON answer on a service route: the family's members plus these, signed (Ed25519 over the RFC 8785 bytes of the object without signature).",
			"required": []any{"service", "service_version", "criteria", "corpus", "op", "kind", "issued_at", "signature"},
			"properties": object{
				"service": object{"type": "string"}, "service_version": object{"type": "string"},
				"criteria":  object{"type": "object", "properties": object{"id": object{"type": "string"}, "revision": object{"type": "string"}}},
				"corpus":    object{"type": "object", "properties": object{"id": object{"type": "string"}, "sha256": object{"type": "string"}}},
				"op":        object{"type": "string"},
				"kind":      object{"enum": []any{"precheck", "report", "could_not_measure", "refusal"}},
				"issued_at": object{"type": "string", "format": "date-time"},
				"build": object{"type": "object", "description": "the plugin binaries this answer came from, by the SHA-256 pinned in the operator's config: the family's, and the adapter's of each format it accepts on this host. assay verify --submission runs them on the submission again (docs/payers.md, Checking a report against its submission)",
					"required": []any{"family_sha256", "adapters_sha256"},
					"properties": object{"family_sha256": object{"type": "string", "pattern": "^[0-9a-f]{64}$"},
						"adapters_sha256": object{"type": "object", "additionalProperties": object{"type": "string", "pattern": "^[0-9a-f]{64}$"}}}},
				"sign_in": object{"$ref": "#/components/schemas/SignInChallenge", "description": "on pre-check answers and sign-in refusals: a fresh x402 sign-in-with-x challenge (5 minutes, one use) for the caller's next pre-check"},
				"free_tier": object{"type": "object", "description": "on pre-check answers when the host counts a free allowance: the caller's (a proven wallet's, else the address's) free pre-checks left today, this one counted",
					"required": []any{"per_day", "remaining", "resets_at"},
					"properties": object{"per_day": object{"type": "integer"}, "remaining": object{"type": "integer", "minimum": 0},
						"resets_at": object{"type": "string", "format": "date-time", "description": "the next 00:00 UTC"}, "min_interval_ms": object{"type": "integer"},
						"counted": object{"enum": []any{"wallet", "address"}, "description": "whose allowance was counted: a wallet proven with SIGN-IN-WITH-X, else the client address"}}},
				"payment": object{"type": "object", "description": "on paid routes: mode, examined, charged, and once charged network, transaction, payer, price; after a payment was checked and the report not delivered, delivery_marker",
					"properties": object{"delivery_marker": ref("DeliveryMarker")}},
				"signature": object{"type": "object", "required": []any{"alg", "key_id", "value"},
					"properties": object{"alg": object{"const": "Ed25519"}, "key_id": object{"type": "string"}, "value": object{"type": "string", "description": "base64url, no padding"}}},
			}},
		"Refusal": object{"allOf": []any{ref("SignedAnswer"), object{"type": "object", "required": []any{"error"},
			"properties": object{
				"error": object{"type": "object", "required": []any{"code", "message"},
					"properties": object{"code": object{"type": "string", "description": "the family's code from its criteria, or one of the host's", "examples": anySlice(hostRefusalCodes)},
						"message": object{"type": "string", "description": "static text: never any part of a submission"},
						"reason":  object{"type": "string"}, "retry_after_ms": object{"type": "integer"}, "cap": object{"type": "integer"},
						"per_day":    object{"type": "integer", "description": "free_allowance_spent: the day's allowance"},
						"paid_route": object{"type": "string", "description": "free_allowance_spent: the paid route that measures the same body, e.g. POST /stream-divergence/compare"}}},
				"x402": ref("PaymentRequired")}}}},
		"DeliveryMarker": object{"type": "object", "required": []any{"token", "header"},
			"properties": object{"token": object{"type": "string"}, "header": object{"const": "ASSAY-DELIVERY-MARKER"},
				"expires_at": object{"type": "string", "format": "date-time", "description": "absent once the payment was taken: it never expires"}}},
		"PaymentRequired": object{"type": "object", "description": "x402 v2 PaymentRequired (also base64 JSON in PAYMENT-REQUIRED)",
			"required": []any{"x402Version", "resource", "accepts"},
			"properties": object{
				"x402Version": object{"const": 2}, "error": object{"type": "string"},
				"resource": object{"type": "object", "required": []any{"url"}, "properties": object{
					"url": object{"type": "string"}, "description": object{"type": "string"}, "mimeType": object{"type": "string"}}},
				"accepts": object{"type": "array", "items": object{"type": "object",
					"required": []any{"scheme", "network", "asset", "amount", "payTo", "maxTimeoutSeconds"},
					"properties": object{"scheme": object{"const": "exact"}, "network": object{"type": "string"}, "asset": object{"type": "string"},
						"amount": object{"type": "string"}, "payTo": object{"type": "string"}, "maxTimeoutSeconds": object{"type": "integer"},
						"extra": object{"type": "object"}}}},
				"extensions": object{"type": "object", "description": "bazaar: x402 discovery metadata (info and schema of the route's input and output)"},
			}},
		"SignInChallenge": object{"type": "object", "description": "x402 sign-in-with-x (specs/extensions/sign-in-with-x.md): sign info as a SIWS message with the wallet and send it back in SIGN-IN-WITH-X",
			"required": []any{"info", "supportedChains", "schema"},
			"properties": object{
				"info": object{"type": "object", "required": []any{"domain", "uri", "version", "nonce", "issuedAt"},
					"properties": object{"domain": object{"type": "string"}, "uri": object{"type": "string", "format": "uri"}, "statement": object{"type": "string"},
						"version": object{"const": "1"}, "nonce": object{"type": "string", "pattern": "^[0-9a-f]{32}$"}, "issuedAt": object{"type": "string", "format": "date-time"},
						"expirationTime": object{"type": "string", "format": "date-time"}, "resources": object{"type": "array", "items": object{"type": "string", "format": "uri"}}}},
				"supportedChains": object{"type": "array", "items": object{"type": "object", "required": []any{"chainId", "type"},
					"properties": object{"chainId": object{"type": "string"}, "type": object{"const": "ed25519"}}}},
				"schema": object{"type": "object"}}},
		"JWKS": object{"type": "object", "required": []any{"keys"}, "properties": object{"keys": object{"type": "array", "items": object{"type": "object",
			"properties": object{"kty": object{"const": "OKP"}, "crv": object{"const": "Ed25519"}, "x": object{"type": "string"}, "kid": object{"type": "string"},
				"alg": object{"type": "string"}, "use": object{"type": "string"}}}}}},
	}
	names := make([]string, 0, len(s.services))
	for name := range s.services {
		names = append(names, name)
	}
	sort.Strings(names)
	var terms *payment.Terms
	if p, ok := s.cfg.Payments.(payment.Publisher); ok {
		t := p.Terms()
		terms = &t
	}
	wellKnownOperations(paths, schemas)
	for _, name := range names {
		d := s.services[name].Desc
		schemas[requestSchemaName(name)] = componentSchema(s.services[name].schema, requestSchemaName(name))
		serviceOperations(d, "/"+name, paths, terms)
		if len(s.services) == 1 {
			serviceOperations(d, "", paths, terms)
		}
	}
	if s.cfg.MetricsElsewhere {
		// served on the operator's own listener: not part of the public API
		for path := range paths {
			if path == "/metrics" || strings.HasSuffix(path, "/metrics") {
				delete(paths, path)
			}
		}
	}
	return object{
		"openapi": "3.1.0",
		"info": object{"title": "Assay", "version": "1",
			"description": "Paid, signed, criteria-bound audit services: every answer is a signed report of facts under a published criteria document, never a grade."},
		"paths": paths,
		"components": object{"schemas": schemas, "headers": object{
			"Retry-After":           object{"description": "seconds to wait before sending again", "schema": object{"type": "integer"}},
			"PAYMENT-REQUIRED":      object{"description": "base64 JSON x402 v2 PaymentRequired", "schema": object{"type": "string"}},
			"PAYMENT-RESPONSE":      object{"description": "base64 JSON x402 v2 SettleResponse", "schema": object{"type": "string"}},
			"ASSAY-DELIVERY-MARKER": object{"description": "a token that redeems the payment for this report, no second charge", "schema": object{"type": "string"}},
			"RateLimit-Policy":      object{"description": `the free pre-check allowance (draft-ietf-httpapi-ratelimit-headers): "free-precheck";q=<per day>;w=86400, the window being the UTC day`, "schema": object{"type": "string"}},
			"RateLimit":             object{"description": `the caller's free pre-checks left: "free-precheck";r=<remaining>;t=<seconds to 00:00 UTC>`, "schema": object{"type": "string"}},
			"WWW-Authenticate":      object{"description": `Sign-In-With-X realm="free pre-check": the pre-check takes an x402 sign-in-with-x proof`, "schema": object{"type": "string"}},
			"Link":                  object{"description": `the api-catalog relation (RFC 9727): </.well-known/api-catalog>; rel="api-catalog"`, "schema": object{"type": "string"}},
		}},
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (s *Server) openAPIDoc(w http.ResponseWriter, _ *http.Request) {
	s.openAPIOnce.Do(func() { s.openAPIBytes, _ = json.MarshalIndent(s.openAPI(), "", " ") })
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openAPIBytes)
}
