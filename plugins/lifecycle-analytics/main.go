// Command assay-lifecycle-analytics is the settlement-evidence/v1 family
// plugin (service lifecycle-analytics).
package main

import (
	"fmt"
	"os"

	"github.com/assay-audit/assay/plugins/lifecycle-analytics/lifecycle"
	"github.com/assay-audit/assay/sdk"
)

func main() {
	f, err := lifecycle.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle-analytics: embedded criteria unreadable:", err)
		os.Exit(1)
	}
	sdk.ServeFamily(f)
}
