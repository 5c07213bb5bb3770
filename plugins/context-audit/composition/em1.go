// Package composition is the context-composition/v1 engine (service
// context-audit): the envelope and its refusals, EM-1, both taxonomy axes,
// the pre-check, and the paid report — metric register M01–M15, factors
// F-1 to F-12, the measurement line (ANNEX C-1 to C-14). Plain Go: no
// gRPC, no I/O; records arrive adapted, through sdk.Request.Adapters.
package composition

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/assay-audit/assay/sdk"
)

// Method is the estimation method's id, printed in every report header.
const Method = "EM-1"

// Chars is C(b): the Unicode code points of the NFC form of text.
func Chars(text string) int {
	if sdk.IsASCII(text) {
		return len(text) // ASCII is its own NFC form, a code point a byte
	}
	if norm.NFC.IsNormalString(text) {
		return utf8.RuneCountInString(text)
	}
	return utf8.RuneCountInString(norm.NFC.String(text))
}

// Estimate is E(b) = ceil(C(b) / 4), 0 for an empty block.
func Estimate(chars int) int {
	return (chars + 3) / 4
}

// Share prints 100 × part / total as est:~N.NN%, or the NOT-ASSESSABLE
// object for a zero denominator (ANNEX C-3).
func Share(part, total int) any {
	s, ok := sdk.EstimatePercent(int64(part), int64(total))
	if !ok {
		return sdk.NotStated{Token: sdk.NotAssessable, Reason: "zero denominator"}
	}
	return s
}
