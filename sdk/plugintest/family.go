package plugintest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/hostcheck"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/wire"
)

// StartFamily starts a family's binary as a host does (handshake, SHA-256
// checksum, gRPC over mutual TLS), asks for its description and checks
// what a host needs of it before it serves the family (DescriptionProblems):
// any problem ends the test, every one of them named. Requests are answered by a real host: StartHost.
func StartFamily(t testing.TB, binary string) *pb.FamilyDescription {
	t.Helper()
	d := describeFamily(t, binary)
	requireServable(t, binary, d)
	return d
}

// requireServable ends the test at a description a host would not serve:
// nothing after it can pass.
func requireServable(t testing.TB, binary string, d *pb.FamilyDescription) {
	t.Helper()
	if p := DescriptionProblems(d); len(p) > 0 {
		t.Fatalf("plugintest: %s: a host refuses this family's description (%d problem(s)):\n  %s", binary, len(p), strings.Join(p, "\n  "))
	}
}

// describeFamily starts binary as a family and returns its description;
// one that does not start or is not a family fails t.
func describeFamily(t testing.TB, binary string) *pb.FamilyDescription {
	t.Helper()
	disp, _ := launch(t, binary, wire.FamilyPluginName, plugin.PluginSet{wire.FamilyPluginName: &wire.FamilyPlugin{}}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := disp.(*wire.FamilyConn).Client.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		t.Fatalf("plugintest: %s does not describe itself as a family (an adapter's binary?): %v", binary, err)
	}
	return d
}

// DescriptionProblems lists what a host would hold against a family's
// description: hostcheck.Description (a host leaves such a family out),
// then its corpus (a host serves no family whose corpus is missing or
// not the one its criteria pin). A family's in-process test can call it
// on Describe() too.
func DescriptionProblems(d *pb.FamilyDescription) []string {
	out := hostcheck.Description(d)
	switch pin, err := sdk.CorpusPin(d.GetCorpus()); {
	case len(d.GetCorpus()) == 0:
		out = append(out, "no corpus: a host runs it before serving, and serves no family that ships none")
	case err != nil:
		out = append(out, "the corpus does not decode: "+err.Error())
	case pin != d.GetCorpusSha256():
		out = append(out, "the corpus's pin "+pin+" is not the criteria's corpus.sha256 "+d.GetCorpusSha256())
	}
	return out
}
