// Command assay-example-count serves the example-count family: main is one
// call to sdk.ServeFamily.
package main

import (
	"fmt"
	"os"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/examples/family/count"
)

func main() {
	f, err := count.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example-count: embedded criteria unreadable:", err)
		os.Exit(1)
	}
	sdk.ServeFamily(f)
}
