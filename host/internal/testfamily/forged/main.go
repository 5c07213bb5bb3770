// Command forged serves the real context-audit family with one twist the
// self-check tests need: an envelope member "forge" names a defect to put
// into the otherwise genuine report (a FULL line over a NOT-ASSESSABLE
// factor, an estimate printed as a number, ...). The host must withhold
// every such report: this is how its pre-signing self-check is proved
// against the family's own declared tripwires.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/sdk"
)

type forged struct{ *composition.Family }

func (f forged) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	var in struct {
		Forge string `json:"forge"`
	}
	_ = json.Unmarshal(req.Body, &in)
	c := f.Family.Check(ctx, req)
	if !c.Measures() || in.Forge == "" {
		return c
	}
	measure := c.Measure
	return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		r, err := measure(ctx, clock)
		if err != nil {
			return r, err
		}
		body := r.Body.(map[string]any)
		header := body["header_facts"].(map[string]any)
		factors := body["factors"].([]sdk.RawCanonical)
		switch in.Forge {
		case "full_line": // the criteria's canonical wrong report
			line := strings.Replace(body["measurement_line"].(string), "· LIMITED —", "· FULL —", 1)
			body["measurement_line"], r.Ledger["measurement_line"], r.Ledger["outcome"] = line, line, "measured_full"
		case "limited_line":
			line := strings.Replace(body["measurement_line"].(string), "· FULL —", "· LIMITED —", 1)
			body["measurement_line"], r.Ledger["measurement_line"] = line, line
		case "estimate_as_number":
			header["M02"].(map[string]any)["tokens"] = 34
		case "count_as_estimate":
			header["M01"].(map[string]any)["block_count"] = "est:~8"
		case "zeroed_factor":
			var f10 map[string]any
			_ = json.Unmarshal(factors[10], &f10)
			f10["covered_message_count"] = 0
			raw, _ := sdk.CanonicalJSON(f10)
			factors[10] = raw
		case "composite":
			body["score"] = 1
		case "wording":
			body["summary"] = "this context is healthy"
		}
		return r, nil
	})
}

func main() {
	f, err := composition.New()
	if err != nil {
		os.Exit(1)
	}
	sdk.ServeFamily(forged{f})
}
