// Package contextcomposition embeds the context-composition/v1 criteria
// document as this host serves it (the published document with the
// shipped corpus's pin).
package contextcomposition

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

// ClassLists is class-lists.json: the role and kind words each axis-P
// class reads, per format and level (ANNEX C-9a). The engine and the
// independent corpus generator both read this one file.
//
//go:embed class-lists.json
var ClassLists []byte
