package main

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// The payment guard moves a gate's hold by each preflight run: a start
// the path did not answer holds it (payment_unavailable, not answering);
// a run still unanswered leaves it; a misconfiguration holds it as such
// (whenever found); a run answered in full lifts it; once proven, a run
// unanswered changes nothing. Held requests ask the path again, at most
// one probe at a time and one per kickEvery. Readiness sees a check that
// got no answer as not refusing a start.
func TestThePaymentGuardMovesTheHold(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "assay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, err := wallet.New(filepath.Join(t.TempDir(), "fee.json"))
	if err != nil {
		t.Fatal(err)
	}
	noAnswer := preflight.Finding{What: "the Solana node answers", Err: "no answer to getGenesisHash", Fatal: true, Unreachable: true}
	wrong := preflight.Finding{What: "the node serves network x", Err: "its genesis hash begins y", Fatal: true}
	ok := preflight.Finding{What: "the Solana node answers"}
	var mu sync.Mutex
	next := []preflight.Finding{noAnswer}
	var runs atomic.Int32
	release := make(chan struct{})
	guard := &payGuard{ctx: ctx, log: hclog.NewNullLogger(), run: func(context.Context) []preflight.Finding {
		runs.Add(1)
		<-release
		mu.Lock()
		defer mu.Unlock()
		return next
	}}
	set := func(fs ...preflight.Finding) { mu.Lock(); next = fs; mu.Unlock() }
	g, err := x402.NewGate(ctx, x402.Config{Facilitator: x402.NewLocal(key, x402.SolanaDevnet), Store: st, Network: x402.SolanaDevnet,
		Asset: x402.USDCDevnet, PayTo: "Seller", DeferResolve: true, OnHeld: guard.kick})
	if err != nil {
		t.Fatal(err)
	}
	guard.start(g, false)
	reason := func() string {
		if h := g.Held(); h != nil {
			return h.Reason
		}
		return ""
	}
	if reason() != x402.ReasonPathUnreachable {
		t.Fatalf("a start the path did not answer: held %q", reason())
	}
	close(release)
	for _, c := range []struct {
		fs   []preflight.Finding
		want string
	}{
		{[]preflight.Finding{noAnswer}, x402.ReasonPathUnreachable},
		{[]preflight.Finding{ok, wrong}, x402.ReasonPathMisconfig},
		{[]preflight.Finding{ok}, ""},
		{[]preflight.Finding{noAnswer}, ""},
		{[]preflight.Finding{ok, wrong}, x402.ReasonPathMisconfig},
		{[]preflight.Finding{noAnswer}, x402.ReasonPathMisconfig},
		{[]preflight.Finding{ok}, ""},
	} {
		set(c.fs...)
		shown := guard.checks(ctx)
		if got := reason(); got != c.want {
			t.Fatalf("after %+v: held %q, want %q", c.fs, got, c.want)
		}
		if shown[0].Unreachable && shown[0].Fatal {
			t.Errorf("readiness is shown a check without an answer as refusing the start: %+v", shown[0])
		}
	}

	// held again: requests ask the path, one probe at a time
	release = make(chan struct{})
	set(noAnswer)
	guard.start(g, false)
	before := runs.Load()
	guard.kicked.Store(0)
	for i := 0; i < 10; i++ {
		guard.kick()
	}
	close(release)
	eventually(t, "the probe a held request asked for", 10*time.Second, func() bool { return !guard.probing.Load() && runs.Load() > before })
	if n := runs.Load() - before; n != 1 {
		t.Errorf("ten held requests at once asked the path %d times, want once", n)
	}
}
