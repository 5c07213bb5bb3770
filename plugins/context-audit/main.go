// Command assay-context-audit is the context-composition/v1 family plugin
// (service context-audit). Part 1: envelope, adapters through the host,
// could-not-measure kinds and the pre-check; the paid report comes with the
// metric register.
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
