// Package streamdivergence embeds the stream-divergence/v1 criteria document
// as this host serves it (the published document with the shipped corpus's
// pin), so the family plugin describes itself from the same bytes.
package streamdivergence

import _ "embed"

// Document is criteria.json, byte for byte.
//
//go:embed criteria.json
var Document []byte

// RequestSchema is request.schema.json: the request body's shape as a JSON
// Schema (2020-12), for the host's OpenAPI document and its x402 discovery
// metadata. It describes; the family's validation decides.
//
//go:embed request.schema.json
var RequestSchema []byte
