package hostcheck

import (
	"fmt"
	"regexp"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// pathName is what a service or op name must be: one URL path segment a
// host routes (POST /{service}/{op}), lower case, never anything a router
// reads as a pattern.
var pathName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// Description lists what a host refuses to load in a family's
// description, empty when there is nothing: a family that has any is left
// out of the host (the others are served), named in the log with the
// first. The host and sdk/plugintest run this same function, so an
// author's test fails on exactly what a host would refuse. The corpus
// is not judged here: a family whose corpus is missing or fails is loaded
// and not served (the launch self-test).
func Description(d *pb.FamilyDescription) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if d.GetCriteriaId() == "" {
		add("no criteria_id")
	}
	if !pathName.MatchString(d.GetService()) {
		add("the service name is not 1 to 63 of a-z, 0-9, _ and - starting with a letter (it is a URL path segment)")
	}
	if len(d.GetOps()) == 0 {
		add("no ops: a family serves at least one paid op")
	}
	seen := map[string]bool{}
	for i, op := range d.GetOps() {
		switch name := op.GetName(); {
		case !pathName.MatchString(name):
			add("op %d: its name is not 1 to 63 of a-z, 0-9, _ and - starting with a letter (it is a URL path segment)", i+1)
		case name == "precheck":
			add("op %d is named precheck, the free route every service has", i+1)
		case seen[name]:
			add("op %d: a name given twice", i+1)
		}
		seen[op.GetName()] = true
		if op.GetPriceUsdcUnits() < 0 {
			add("op %d: a negative price", i+1)
		}
	}
	if d.GetBodyBytes() <= 0 {
		add("body_bytes is not positive (input_contract.caps.body_bytes)")
	}
	if len(d.GetCriteriaDocument()) == 0 {
		add("no criteria_document (GET /{service}/criteria serves it byte for byte)")
	}
	fields := map[string]bool{}
	for i, f := range d.GetLedgerFields() {
		switch {
		case f.GetName() == "" || f.GetType() == pb.LedgerField_TYPE_UNSPECIFIED:
			add("ledger field %d: no name or no type", i+1)
		case fields[f.GetName()]:
			add("ledger field %d: a name given twice", i+1)
		}
		fields[f.GetName()] = true
		if p := f.GetPattern(); p != "" {
			if _, err := regexp.Compile(p); err != nil {
				add("ledger field %d: its pattern is not an RE2 expression", i+1)
			}
		}
	}
	// a waiver lifts a word of the host's baseline of verdict words, for
	// the reason the criteria's ANNEX states: a word the baseline does not
	// hold, or no reason, is a waiver the host cannot honour as written
	out = append(out, selfcheck.WaiverProblems(d.GetTripwires())...)
	return out
}
