package plugintest

import (
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func TestDescriptionProblemsNameWhatAHostNeeds(t *testing.T) {
	doc := []byte(`{"criteria_id":"x/v1","service":"x","version":"1.0.0","ops":["run"],"input_contract":{"caps":{"body_bytes":10}}}`)
	corpus := []byte(`{"id":"x-corpus/v1","cases":[]}`)
	pin, err := sdk.CorpusPin(corpus)
	if err != nil {
		t.Fatal(err)
	}
	good := func() *pb.FamilyDescription {
		d, err := sdk.DescribeFromCriteria(doc)
		if err != nil {
			t.Fatal(err)
		}
		d.Corpus, d.CorpusSha256 = corpus, pin
		d.LedgerFields = []*pb.LedgerField{{Name: "op", Type: pb.LedgerField_STRING}}
		return d
	}
	if p := DescriptionProblems(good()); len(p) != 0 {
		t.Fatalf("a sound description: %v", p)
	}
	for want, spoil := range map[string]func(*pb.FamilyDescription){
		"no corpus":                           func(d *pb.FamilyDescription) { d.Corpus = nil },
		"is not the criteria's corpus.sha256": func(d *pb.FamilyDescription) { d.CorpusSha256 = strings.Repeat("0", 64) },
		"no ops":                              func(d *pb.FamilyDescription) { d.Ops = nil },
		"precheck":                            func(d *pb.FamilyDescription) { d.Ops[0].Name = "precheck" },
		"body_bytes":                          func(d *pb.FamilyDescription) { d.BodyBytes = 0 },
		"no criteria_document":                func(d *pb.FamilyDescription) { d.CriteriaDocument = nil },
		"ledger field":                        func(d *pb.FamilyDescription) { d.LedgerFields[0].Type = pb.LedgerField_TYPE_UNSPECIFIED },
		"service name":                        func(d *pb.FamilyDescription) { d.Service = "" },
	} {
		d := good()
		spoil(d)
		p := DescriptionProblems(d)
		if len(p) != 1 || !strings.Contains(p[0], want) {
			t.Errorf("%s: %v", want, p)
		}
	}
}
