// Command assay-adapter-generic-message-list is the generic-message-list
// format adapter of context-composition/v1.
package main

import (
	"github.com/assay-audit/assay/plugins/adapter-generic-message-list/generic"
	"github.com/assay-audit/assay/sdk"
)

func main() { sdk.ServeAdapter(generic.Adapter{}) }
