// Package contextcomposition embeds the context-composition/v1 criteria
// document as this host serves it (the published document with the
// shipped corpus's pin).
package contextcomposition

import _ "embed"

// Document is criteria.json, byte for byte.
//
//go:embed criteria.json
var Document []byte
