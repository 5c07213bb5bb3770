package lettaaf

import (
	"testing"

	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
)

// BenchmarkAdapt adapts the max-size and the realistic record of this
// format (compositiontest.BenchmarkAdapter).
func BenchmarkAdapt(b *testing.B) { compositiontest.BenchmarkAdapter(b, Adapter{}) }
