// Package streamdivergence embeds the stream-divergence/v1 criteria document
// as this host serves it (the published document with the shipped corpus's
// pin), so the family plugin describes itself from the same bytes.
package streamdivergence

import _ "embed"

// Document is criteria.json, byte for byte.
//
//go:embed criteria.json
var Document []byte
