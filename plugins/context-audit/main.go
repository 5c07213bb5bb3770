// Command assay-context-audit is the context-composition/v1 family plugin
// (service context-audit): the engine in package composition, served over
// the SDK; records reach it adapted, through the host's adapter plugins.
package main

import (
	"fmt"
	"os"

	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/sdk"
)

func main() {
	f, err := composition.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "context-audit: embedded criteria unreadable:", err)
		os.Exit(1)
	}
	sdk.ServeFamily(f)
}
