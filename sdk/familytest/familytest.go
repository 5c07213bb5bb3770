// Package familytest helps a family's own tests read its answers as the
// host will: a measured report as decoded JSON, its ledger fields as the
// JSON text the host checks.
package familytest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
)

// Report runs an accepted check's measurement with the given clock and
// returns the report body decoded from its JSON, and the ledger fields'
// JSON text.
func Report(tb testing.TB, c sdk.Checked, clock func() time.Time) (body map[string]any, ledger string) {
	tb.Helper()
	if c.Outcome() != sdk.Accepted || !c.Measures() {
		tb.Fatalf("not accepted for measurement: outcome %v", c.Outcome())
	}
	rep, err := c.Measure(context.Background(), clock)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := sdk.CanonicalJSON(rep.Body) // as the SDK sends it
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		tb.Fatal(err)
	}
	if rep.Ledger == nil {
		return body, "{}" // as the SDK sends a nil map: no fields
	}
	lg, err := json.Marshal(rep.Ledger)
	if err != nil {
		tb.Fatal(err)
	}
	return body, string(lg)
}
