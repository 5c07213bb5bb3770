// Command assay-adapter-example-lines serves the example format adapter
// (package lines): main is one call to sdk.ServeAdapter.
package main

import (
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/examples/adapter/lines"
)

func main() { sdk.ServeAdapter(lines.Adapter{}) }
