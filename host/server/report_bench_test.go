package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// maxReportBody is the family body of a max-size record's report as the
// SDK sends it to the host.
func maxReportBody(tb testing.TB) ([]byte, *selfcheck.Checker) {
	fam, err := composition.New()
	if err != nil {
		tb.Fatal(err)
	}
	sess := &sdk.LocalSession{Family: fam, Ctx: context.Background(),
		Adapters: sdk.LocalAdapters{"anthropic-messages": anthropic.Adapter{}}}
	v, err := sess.Start(&pb.Start{Route: pb.Start_OP, Op: "audit", Body: compositiontest.MaxRecord(tb), NowUnixNano: time.Now().UnixNano()})
	if err != nil || v.GetOutcome() != pb.Outcome_ACCEPTED {
		tb.Fatalf("not accepted: %v", err)
	}
	rep, err := sess.Proceed()
	if err != nil {
		tb.Fatal(err)
	}
	raw := rep.GetBody()
	return raw, selfcheck.New(fam.Describe().GetTripwires())
}

// BenchmarkMaxReportHost is the host's share of a max-size audit after
// the family answers: read the family's body in canonical form,
// self-check it, sign it.
func BenchmarkMaxReportHost(b *testing.B) {
	raw, check := maxReportBody(b)
	keys, err := signing.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		// as Server.assemble and Keyring.Sign take it
		doc, err := sdk.Canonicalize(raw)
		if err != nil {
			b.Fatal(err)
		}
		members, err := check.Check(doc)
		if err != nil {
			b.Fatal(err)
		}
		answer := map[string]any{}
		for _, m := range members {
			answer[m.Name] = sdk.RawCanonical(doc[m.Start:m.End])
		}
		if _, err := keys.Sign(answer); err != nil {
			b.Fatal(err)
		}
	}
}
