package freetier

import (
	"context"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
)

func TestValidWallet(t *testing.T) {
	for s, want := range map[string]bool{
		"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin": true,  // Serum program id, 32 bytes
		"11111111111111111111111111111111":             true,  // the system program: 32 zero bytes
		"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v": true,  // USDC mint
		"1111111111111111111111111111111":              false, // 31 zero bytes
		"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz": false, // 33 bytes
		"0PjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v": false, // 0 is not base58
		"":                                 false,
		"CANARY0123456789abcdef0123456789": false,
	} {
		if got := ValidWallet(s); got != want {
			t.Errorf("ValidWallet(%q) = %v", s, got)
		}
	}
}

func TestWalletAndAddressAreSeparateKeys(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "sqlite")
	g, err := New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{PerDay: 100, MinInterval: 5 * time.Second}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	for i, c := range []Caller{{Wallet: w, Addr: "127.0.0.1"}, {Addr: "127.0.0.1"}, {Addr: "127.0.0.2"}} {
		a, err := g.Admit(ctx, "svc", "svc|c/v1|1", lim, c, now)
		if err != nil || !a.Admitted {
			t.Fatalf("caller %d: %+v %v", i, a, err)
		}
	}
	if a, _ := g.Admit(ctx, "svc", "svc|c/v1|1", lim, Caller{Wallet: w, Addr: "10.9.9.9"}, now); a.Admitted {
		t.Error("one wallet from two addresses was admitted twice")
	}
	if a, _ := g.Admit(ctx, "other-svc", "other|c/v1|1", lim, Caller{Wallet: w}, now); !a.Admitted {
		t.Error("each service has its own allowance")
	}
}
