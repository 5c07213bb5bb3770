package sdk_test

import (
	"encoding/json"
	"fmt"

	"github.com/assay-audit/assay/sdk"
)

// A family's description is read from its criteria document: the ids,
// the op and its price, the body cap and the free allowance.
func ExampleDescribe() {
	criteria := []byte(`{"criteria_id": "json-keys/v1", "criteria_revision": "1.0.0", "service": "json-keys", "version": "1.0.0",
		"op": "list", "price": {"usdc_units_per_call": 1000, "label": "$0.001", "basis": "per report"},
		"free_tier": {"per_day": 100, "min_interval_ms": 0}, "corpus": {"id": "json-keys-corpus/v1", "sha256": ""},
		"input_contract": {"caps": {"body_bytes": 65536}}}`)
	d, err := sdk.Describe(criteria, sdk.WithLedgerFields(sdk.LedgerNumber("keys")))
	if err != nil {
		fmt.Println(err)
		return
	}
	op := d.GetOps()[0]
	fmt.Println(d.GetService(), d.GetCriteriaId(), op.GetName(), op.GetPriceUsdcUnits(), d.GetBodyBytes(), d.GetFreeTier().GetPerDay())
	// Output: json-keys json-keys/v1 list 1000 65536 100
}

// A refusal's facts sit beside its code and message, inside error, where
// a caller reads them.
func ExampleRefusal() {
	b, _ := json.Marshal(sdk.Refusal{Code: "key_count_cap", Message: "the object has more keys than the cap", Facts: map[string]any{"cap": 500}})
	fmt.Println(string(b))
	// Output: {"error":{"cap":500,"code":"key_count_cap","message":"the object has more keys than the cap"}}
}

// EM-1 estimates are strings, exact counts numbers; a share of nothing
// is no share at all (the caller prints its criteria's token instead).
func ExampleEstimatePercent() {
	share, ok := sdk.EstimatePercent(1, 8)
	fmt.Println(sdk.Estimate(1234), share, ok)
	_, ok = sdk.EstimatePercent(3, 0)
	fmt.Println(ok)
	// Output:
	// est:~1234 est:~12.50% true
	// false
}

// An adapter answers with a record of messages and blocks at the level
// its format reaches.
func ExampleRecord() {
	rec := sdk.Record(sdk.L1, sdk.Message("user", sdk.TextBlock(sdk.KindText, "hello")))
	fmt.Println(rec.GetLevel(), len(rec.GetMessages()), rec.GetMessages()[0].GetRoleRaw(), rec.GetMessages()[0].GetBlocks()[0].GetKindRaw())
	// Output: L1 1 user text
}
