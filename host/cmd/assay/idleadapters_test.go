package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// The start-up line on each adapter no loaded family names says what
// routing (by format id) does with it, as the catalog's
// accepted_by_loaded_criteria does: reached when loaded criteria accept
// its format, whatever family it names; never reached otherwise.
func TestIdleAdapterLinesSayWhetherRequestsReachIt(t *testing.T) {
	var out bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out})
	services := []server.Service{{Desc: &pb.FamilyDescription{CriteriaId: "context-composition/v1", Formats: []string{"letta-af", "anthropic-messages"}}}}
	warnIdleAdapters(log, []pluginhost.AdapterStatus{
		{Format: "letta-af", Family: "context-composition/v1"},   // its own: no line
		{Format: "anthropic-messages", Family: "elsewhere/v1"},   // routed
		{Format: "new-format", Family: "context-composition/v1"}, // its format not accepted
		{Format: "other-format", Family: "not-loaded/v1"},        // neither
	}, services)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"requests of that format reach it: format=anthropic-messages family=elsewhere/v1",
		"a new format needs a criteria revision); no request will reach it: format=new-format",
		"adapter names a family whose criteria are not loaded; no request will reach it: format=other-format",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to hold %q", i, lines[i], w)
		}
	}
}
