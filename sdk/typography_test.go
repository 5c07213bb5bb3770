package sdk

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"
)

func TestRatioRoundsHalfAwayFromZeroExactly(t *testing.T) {
	cases := []struct {
		num, den int64
		dec      int
		want     string
	}{
		{625, 100, 1, "6.3"}, // binary %.1f gives 6.2
		{-625, 100, 1, "-6.3"},
		{1, 3, 2, "0.33"},
		{2, 3, 2, "0.67"},
		{1, 200, 2, "0.01"}, // 0.005 -> 0.01
		{1, 201, 2, "0.00"},
		{-1, 201, 2, "0.00"}, // no negative zero
		{7, 1, 0, "7"},
		{5, 2, 0, "3"},
		{100, 1, 3, "100.000"},
		{1, -8, 3, "-0.125"},
	}
	for _, c := range cases {
		if got := Ratio(big.NewInt(c.num), big.NewInt(c.den), c.dec); got != c.want {
			t.Errorf("Ratio(%d,%d,%d) = %q, want %q", c.num, c.den, c.dec, got, c.want)
		}
	}
}

func TestEstimateTypography(t *testing.T) {
	if got := Estimate(1234); got != "est:~1234" {
		t.Errorf("Estimate = %q", got)
	}
	if got, ok := EstimatePercent(1, 3); !ok || got != "est:~33.33%" {
		t.Errorf("EstimatePercent(1,3) = %q %v", got, ok)
	}
	if got, ok := EstimatePercent(0, 7); !ok || got != "est:~0.00%" {
		t.Errorf("EstimatePercent(0,7) = %q %v", got, ok)
	}
	if _, ok := EstimatePercent(3, 0); ok {
		t.Error("a zero denominator must not yield a share")
	}
	if got, ok := Percent(1, 3, 1); !ok || got != "33.3%" {
		t.Errorf("Percent = %q", got)
	}
}

func TestNotStatedCarriesTokenAndReason(t *testing.T) {
	b, err := json.Marshal(NotStated{Token: NotComputable, Reason: "no valid line carries used_at"})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"value":"NOT-COMPUTABLE","reason":"no valid line carries used_at"}` {
		t.Errorf("got %s", b)
	}
}

func TestInstantIsUTCWholeSecondsZ(t *testing.T) {
	loc := time.FixedZone("x", 5*3600+1800)
	in := time.Date(2026, 11, 29, 21, 17, 22, 999999999, loc)
	if got := Instant(in); got != "2026-11-29T15:47:22Z" {
		t.Errorf("Instant = %q", got)
	}
}

func TestRefusalShape(t *testing.T) {
	b, err := json.Marshal(Refusal{Code: "chunk_count_cap", Message: "m", Facts: map[string]any{"cap": 1024}})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"error":{"cap":1024,"code":"chunk_count_cap","message":"m"}}` {
		t.Errorf("got %s", b)
	}
	// a fact named as the code or the message never replaces them
	b, _ = json.Marshal(Refusal{Code: "c", Message: "m", Facts: map[string]any{"code": "x", "message": "y", "n": 2}})
	if string(b) != `{"error":{"code":"c","message":"m","n":2}}` {
		t.Errorf("facts named code and message: got %s", b)
	}
}

func TestFoldASCII(t *testing.T) {
	for in, want := range map[string]string{"Score": "score", "SCORE_x9": "score_x9", "ſcore": "ſcore", "compos\u0130te": "compos\u0130te", "": ""} {
		if got := FoldASCII(in); got != want {
			t.Errorf("FoldASCII(%q) = %q, want %q", in, got, want)
		}
	}
}
