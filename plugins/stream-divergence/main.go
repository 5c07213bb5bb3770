// Command assay-stream-divergence is the stream-divergence/v1 family plugin.
package main

import (
	"fmt"
	"os"

	"github.com/assay-audit/assay/plugins/stream-divergence/divergence"
	"github.com/assay-audit/assay/sdk"
)

func main() {
	f, err := divergence.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stream-divergence: embedded criteria unreadable:", err)
		os.Exit(1)
	}
	sdk.ServeFamily(f)
}
