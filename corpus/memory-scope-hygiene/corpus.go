// Package memoryscopehygienecorpus embeds the memory-scope-hygiene/v1 corpus (corpus.json, written by
// corpus/gen-corpus.mjs), so the family plugin ships the corpus its
// criteria pin and the host can run it before serving.
package memoryscopehygienecorpus

import _ "embed"

// JSON is corpus.json, byte for byte.
//
//go:embed corpus.json
var JSON []byte
