// Command testfamily serves the host tests' family plugin.
package main

import (
	"os"
	"strings"

	"github.com/assay-audit/assay/host/internal/testfamily/family"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
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
	if w, ok := os.LookupEnv("TESTFAMILY_VERDICT_WAIVER"); ok {
		// word:reason, a waiver of a baseline verdict word as the
		// description declares it (the host judges it at load)
		word, reason, _ := strings.Cut(w, ":")
		t := f.Describe().GetTripwires()
		t.VerdictWaivers = append(t.VerdictWaivers, &pb.VerdictWaiver{Word: word, Reason: reason})
	}
	sdk.ServeFamily(f)
}
