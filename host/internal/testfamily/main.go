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
	sdk.ServeFamily(f)
}
