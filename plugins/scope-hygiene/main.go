// Command assay-scope-hygiene is the memory-scope-hygiene/v1 family plugin
// (service scope-hygiene).
package main

import (
	"fmt"
	"os"

	"github.com/assay-audit/assay/plugins/scope-hygiene/hygiene"
	"github.com/assay-audit/assay/sdk"
)

func main() {
	f, err := hygiene.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scope-hygiene: embedded criteria unreadable:", err)
		os.Exit(1)
	}
	sdk.ServeFamily(f)
}
