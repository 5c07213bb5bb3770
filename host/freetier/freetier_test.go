package freetier

import (
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/siwx"
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

// Counters of keys idle for two days (and for twice the longest interval
// any family asked for) are deleted as calls go on, so fresh callers do not
// grow the table forever; a deleted counter admits as a fresh one would.
func TestIdleCountersArePruned(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, kind)
			g, err := New(ctx, st)
			if err != nil {
				t.Fatal(err)
			}
			g.pruneEvery = 2
			lim := Limits{PerDay: 1, MinInterval: 5 * time.Second}
			t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			admit := func(addr string, at time.Time, lim Limits) bool {
				t.Helper()
				a, err := g.Admit(ctx, "svc", "svc|c/v1|1", lim, Caller{Addr: addr}, at)
				if err != nil {
					t.Fatal(err)
				}
				return a.Admitted
			}
			keys := func() int64 {
				t.Helper()
				n, err := st.FreeTierKeys(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			admit("10.0.0.1", t0, lim)                   // call 1
			admit("10.0.0.2", t0.Add(49*time.Hour), lim) // call 2 prunes: 10.0.0.1 idle 49 h
			if n := keys(); n != 1 {
				t.Fatalf("%d counters after the prune, want 1", n)
			}
			if !admit("10.0.0.1", t0.Add(49*time.Hour+time.Second), lim) {
				t.Error("a pruned caller is not admitted as a fresh one")
			}
			// a family asking for a 30 h interval keeps counters 60 h
			long := Limits{PerDay: 1, MinInterval: 30 * time.Hour}
			t1 := t0.Add(100 * time.Hour)
			admit("10.0.0.3", t1, long)                              // call 4 prunes the first two
			admit("10.0.0.4", t1.Add(50*time.Hour), long)            // call 5
			admit("10.0.0.5", t1.Add(50*time.Hour+time.Second), lim) // call 6 prunes .1 and .2 (101 h), keeps .3 (50 h)
			if n := keys(); n != 3 {
				t.Errorf("%d counters, want 3 (10.0.0.3 kept under the 30 h interval)", n)
			}
		})
	}
}

// Every gate on one store checks the others' sign-in challenges (one key
// derived from the store's secret); a gate pinned to a public URL binds
// it; a public URL that is none is refused.
func TestSignInIsTheStores(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "sqlite")
	a, err := New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, st, PublicURL("https://assay.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	target, ok := b.SignIn().Target("http", "relay.example", "/s/precheck", "solana:x")
	if !ok || target.URI != "https://assay.example.com/s/precheck" {
		t.Fatalf("pinned target: %+v", target)
	}
	e, err := a.SignIn().Challenge(target, now)
	if err != nil {
		t.Fatal(err)
	}
	var seed [32]byte
	p, err := siwx.Sign(e, ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := p.Encode()
	if _, err := b.SignIn().Check(h, target, now); err != nil {
		t.Errorf("a challenge of one gate, checked by another on the store: %v", err)
	}
	if _, err := New(ctx, st, PublicURL("assay.example.com")); err == nil {
		t.Error("a public URL without a scheme was taken")
	}
}
