// Command assay-adapter-letta-af is the letta-af format adapter of
// context-composition/v1.
package main

import (
	"github.com/assay-audit/assay/plugins/adapter-letta-af/lettaaf"
	"github.com/assay-audit/assay/sdk"
)

func main() { sdk.ServeAdapter(lettaaf.Adapter{}) }
