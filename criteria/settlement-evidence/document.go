// Package settlementevidence embeds the settlement-evidence/v1 criteria
// document as this host serves it (the published document with the shipped
// corpus's pin).
package settlementevidence

import _ "embed"

// Document is criteria.json, byte for byte.
//
//go:embed criteria.json
var Document []byte
