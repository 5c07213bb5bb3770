// Package settlementevidencecorpus embeds the settlement-evidence/v1 corpus (corpus.json, written by
// corpus/gen-corpus.mjs), so the family plugin ships the corpus its
// criteria pin and the host can run it before serving.
package settlementevidencecorpus

import _ "embed"

// JSON is corpus.json, byte for byte.
//
//go:embed corpus.json
var JSON []byte
