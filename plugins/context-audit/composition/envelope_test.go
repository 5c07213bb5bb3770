package composition

import (
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
)

var accepted = []string{"letta-af", "anthropic-messages", "generic-message-list"}

func TestEnvelopeRulesInOrder(t *testing.T) {
	ok := `"envelope_version":"context-composition-envelope/1","declared_format_id":"anthropic-messages"`
	cases := []struct {
		body string
		code sdk.RefusalCode
	}{
		{`[]`, CodeMalformedBody},
		{`{"a":"\udc00"}`, CodeMalformedBody},
		{`{"declared_format_id":"letta-af","record":{}}`, CodeEnvelope},
		{`{"envelope_version":"context-composition-envelope/2","declared_format_id":"x"}`, CodeEnvelope},
		{`{"envelope_version":"context-composition-envelope/1","declared_format_id":"example-unknown-format-never-accepted","record":{}}`, CodeFormat},
		{`{"envelope_version":"context-composition-envelope/1","record":{}}`, CodeFormat},
		{`{` + ok + `}`, CodeRecordRequired},
		{`{` + ok + `,"record":null}`, CodeRecordRequired},
		{`{` + ok + `,"record":[],"harness_stated_counts":[1]}`, CodeStatedCounts},
		{`{` + ok + `,"record":[],"harness_stated_counts":{"pad":"` + strings.Repeat("x", StatedCountsCap) + `"}}`, CodeStatedCounts},
	}
	for _, c := range cases {
		e, ref := ParseEnvelope([]byte(c.body), accepted)
		if c.code == CodeStatedCounts && e == nil {
			t.Errorf("%.60s: a stated-counts refusal comes with the envelope", c.body)
		}
		if ref == nil || ref.Code != c.code || ref.Message != messages[c.code] {
			t.Errorf("%.60s: %+v, want %s", c.body, ref, c.code)
		}
	}
	_, ref := ParseEnvelope([]byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"x","record":{}}`), accepted)
	if got := ref.Facts["accepted_formats"]; len(got.([]string)) != 3 {
		t.Errorf("format refusal lists the accepted ids: %v", got)
	}
}

func TestEnvelopeCountsUnknownMembers(t *testing.T) {
	e, ref := ParseEnvelope([]byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"letta-af",
		"declared_format_version":7,"criteria_ack":"context-composition/v1","record":{"a":1},"extra":"SECRET","more":{},
		"harness_stated_counts":{"total":5},"caller":"x"}`), accepted)
	if ref != nil {
		t.Fatal(ref.Code)
	}
	// extra, more, and a non-string declared_format_version
	if e.UnknownMembers != 3 || e.VersionGiven || e.FormatID != "letta-af" || string(e.StatedCounts) != `{"total":5}` {
		t.Errorf("%+v", e)
	}
}
