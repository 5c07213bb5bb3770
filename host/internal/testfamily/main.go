// Command testfamily serves the host tests' family plugin.
package main

import (
	"os"

	"github.com/assay-audit/assay/host/internal/testfamily/family"
	"github.com/assay-audit/assay/sdk"
)

func main() {
	f, err := family.New()
	if err != nil {
		os.Exit(1)
	}
	if os.Getenv("TESTFAMILY_OP_PRECHECK") != "" {
		// a description no host can route: its op named as the free route
		f.Describe().Ops[0].Name = "precheck"
	}
	sdk.ServeFamily(f)
}
