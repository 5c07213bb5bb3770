package server_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// walletOf is a test wallet from one seed byte, and its address.
func walletOf(seed byte) (ed25519.PrivateKey, string) {
	var s [32]byte
	s[0], s[31] = seed, 0x5a
	k := ed25519.NewKeyFromSeed(s[:])
	return k, solana.EncodeBase58(k.Public().(ed25519.PublicKey))
}

// prove is the SIGN-IN-WITH-X value of key's proof for challenge e.
func prove(t testing.TB, e siwx.Extension, key ed25519.PrivateKey) string {
	t.Helper()
	p, err := siwx.Sign(e, key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// challengeOf is the sign_in challenge an answer carries.
func challengeOf(t testing.TB, r reply) siwx.Extension {
	t.Helper()
	e, ok := siwx.FromAnswer(r.raw)
	if !ok {
		t.Fatalf("the answer carries no sign-in challenge: %d %.300s", r.status, r.raw)
	}
	return e
}

// provenPost sends a pre-check proved with key against a fresh challenge
// (asked for without spending anything).
func provenPost(t testing.TB, url string, body []byte, key ed25519.PrivateKey) reply {
	t.Helper()
	h, err := siwx.Prove(context.Background(), http.DefaultClient, url, key)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, "POST", url, body, map[string]string{siwx.Header: h})
}

func freeTierOf(r reply) map[string]any { ft, _ := r.json["free_tier"].(map[string]any); return ft }

// 150 pre-checks that name a victim's wallet without proving it leave the
// victim's allowance whole: each is counted against the sender's address
// (free_tier.counted "address"), whose allowance is spent after 100; the
// spent answer's PAYMENT-REQUIRED (and its x402 member) declares
// sign-in-with-x, the very challenge its sign_in member carries. The
// victim, proving its wallet, then has all 100 of its own.
func TestVictimAllowanceUntouchedWithoutProof(t *testing.T) {
	h := startPaid(t, sdPkg)
	h.clock.mu.Lock()
	h.clock.t = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h.clock.mu.Unlock()
	victimKey, victim := walletOf(1)
	url := h.URL + "/stream-divergence/precheck"
	body := precheckBody(victim)
	for i := int64(1); i <= 150; i++ {
		r := post(t, url, body)
		ft := freeTierOf(r)
		switch {
		case i <= 100 && (r.status != 200 || ft["counted"] != "address" || ft["remaining"] != float64(100-i)):
			t.Fatalf("unproven pre-check %d naming the victim: %d free_tier %v", i, r.status, ft)
		case i > 100 && (r.status != 402 || errorCode(r) != "free_allowance_spent" || ft["counted"] != "address"):
			t.Fatalf("unproven pre-check %d naming the victim: %d %.300s", i, r.status, r.raw)
		}
		e := challengeOf(t, r)
		if i == 101 {
			verified(t, h.Host, r)
			var pr struct {
				Accepts    []x402.Requirements        `json:"accepts"`
				Extensions map[string]json.RawMessage `json:"extensions"`
			}
			raw, _ := base64.StdEncoding.DecodeString(r.header.Get("PAYMENT-REQUIRED"))
			if err := json.Unmarshal(raw, &pr); err != nil || len(pr.Accepts) != 1 || pr.Extensions["payment-identifier"] == nil {
				t.Fatalf("the spent 402's PAYMENT-REQUIRED: %v %s", err, raw)
			}
			var declared siwx.Extension
			_ = json.Unmarshal(pr.Extensions[siwx.Key], &declared)
			member, _ := r.json["x402"].(map[string]any)
			exts, _ := member["extensions"].(map[string]any)
			inMember, _ := exts[siwx.Key].(map[string]any)
			info, _ := inMember["info"].(map[string]any)
			if declared.Info.Nonce != e.Info.Nonce || info["nonce"] != e.Info.Nonce || len(declared.SupportedChains) != 1 ||
				declared.SupportedChains[0].ChainID != x402.SolanaDevnet || declared.SupportedChains[0].ChainID != pr.Accepts[0].Network ||
				declared.Info.URI != url || declared.Info.Domain != strings.TrimPrefix(h.URL, "http://") {
				t.Fatalf("the spent 402 declares sign-in-with-x %+v (member %v), sign_in %+v", declared, inMember, e)
			}
		}
		h.clock.Add(5 * time.Second)
	}
	r := provenPost(t, url, body, victimKey)
	if ft := freeTierOf(r); r.status != 200 || ft["counted"] != "wallet" || ft["remaining"] != float64(99) {
		t.Fatalf("the victim, proving its wallet: %d free_tier %v", r.status, ft)
	}
	verified(t, h.Host, r)
}

// A proven wallet spends its own allowance, and its address keeps its
// own: 100 proven pre-checks, each proved with the challenge the last
// answer carried, count down the wallet's; the 101st is refused spent,
// and its 402 declares no sign-in (the wallet is proven already); an
// unproven pre-check from the same address is counted against the
// address's, untouched.
func TestProvenCallerSpendsItsOwn(t *testing.T) {
	h := startPaid(t, sdPkg)
	h.clock.mu.Lock()
	h.clock.t = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h.clock.mu.Unlock()
	key, addr := walletOf(2)
	url := h.URL + "/stream-divergence/precheck"
	e, err := siwx.AskChallenge(context.Background(), http.DefaultClient, url)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 101; i++ {
		r := do(t, "POST", url, precheckBody(addr), map[string]string{siwx.Header: prove(t, e, key)})
		ft := freeTierOf(r)
		switch {
		case i <= 100 && (r.status != 200 || ft["counted"] != "wallet" || ft["remaining"] != float64(100-i)):
			t.Fatalf("proven pre-check %d: %d %.300s", i, r.status, r.raw)
		case i == 101 && (r.status != 402 || errorCode(r) != "free_allowance_spent" || ft["counted"] != "wallet"):
			t.Fatalf("proven pre-check 101: %d %.300s", r.status, r.raw)
		case i == 101 && strings.Contains(decoded(r.header.Get("PAYMENT-REQUIRED")), siwx.Key):
			t.Fatalf("a proven wallet's spent 402 declares sign-in: %s", decoded(r.header.Get("PAYMENT-REQUIRED")))
		}
		e = challengeOf(t, r) // the next pre-check's challenge
		h.clock.Add(5 * time.Second)
	}
	// a proof alone counts: the body need not name the caller
	r := post(t, url, precheckBody(""))
	if ft := freeTierOf(r); r.status != 200 || ft["counted"] != "address" || ft["remaining"] != float64(99) {
		t.Fatalf("the address after its wallet's 100: %d free_tier %v", r.status, ft)
	}
	if n, err := h.Store.SignInNonces(context.Background()); err != nil || n != 101 {
		t.Errorf("spent nonces kept: %d %v, want 101", n, err)
	}
}

// hostPost sends a pre-check with a Host of its own.
func hostPost(t *testing.T, url, host string, body []byte, header map[string]string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.json)
	return r
}

// A SIGN-IN-WITH-X that proves nothing here is refused 401 siwx_invalid
// with its reason and a fresh challenge, signed, naming nothing it
// carried; nothing is counted (and for a proof that cannot hold, the
// body is never read: not even a body the family would refuse is
// answered); a replayed proof and a proof for another wallet than the
// body's caller are refused after the body, still counting nothing.
func TestSignInRefusals(t *testing.T) {
	clock := &fixedClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	h := testhost.Start(t, testhost.Options{Now: clock.Now}, sdPkg)
	url := h.URL + "/stream-divergence/precheck"
	key, addr := walletOf(3)
	_, other := walletOf(4)
	fresh := func() siwx.Extension {
		e, err := siwx.AskChallenge(context.Background(), http.DefaultClient, url)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	refused := func(what string, r reply, reason string) {
		t.Helper()
		e, _ := r.json["error"].(map[string]any)
		if r.status != 401 || errorCode(r) != "siwx_invalid" || e["reason"] != reason || r.json["free_tier"] != nil ||
			!strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Sign-In-With-X") {
			t.Fatalf("%s: %d %.400s", what, r.status, r.raw)
		}
		challengeOf(t, r)
		verified(t, h, r)
	}
	// the challenge request, with a body no family takes: not read
	r := do(t, "POST", url, []byte(`[not json`), map[string]string{siwx.Header: siwx.Ask})
	if e := challengeOf(t, r); r.status != 401 || errorCode(r) != "siwx_challenge" || r.json["free_tier"] != nil || e.Info.URI != url {
		t.Fatalf("the challenge request: %d %.400s", r.status, r.raw)
	}
	verified(t, h, r)
	refused("a header that is no proof", do(t, "POST", url, []byte(`[not json`), map[string]string{siwx.Header: "e30="}), "not_a_proof")
	e := fresh()
	refused("a proof for another host name", hostPost(t, url, "localhost"+strings.TrimPrefix(h.URL, "http://127.0.0.1"), precheckBody(""),
		map[string]string{siwx.Header: prove(t, e, key)}), "domain")
	refused("a proof for another route", do(t, "POST", h.URL+"/precheck", precheckBody(""), map[string]string{siwx.Header: prove(t, e, key)}), "uri")
	mainnet := e
	mainnet.SupportedChains = []siwx.Chain{{ChainID: x402.SolanaMainnet, Type: "ed25519"}}
	refused("a proof on another chain", do(t, "POST", url, precheckBody(""), map[string]string{siwx.Header: prove(t, mainnet, key)}), "chain")
	clock.Add(siwx.TTL)
	refused("an expired challenge", do(t, "POST", url, precheckBody(""), map[string]string{siwx.Header: prove(t, e, key)}), "expired")
	// planted in a proof's statement: the refusal echoes none of it
	const planted = "PLANTEDSIWXCANARY51c2"
	e = fresh()
	e.Info.Statement = planted
	r = do(t, "POST", url, precheckBody(""), map[string]string{siwx.Header: prove(t, e, key)})
	refused("a proof of an edited challenge", r, "nonce")
	if strings.Contains(string(r.raw), planted) || strings.Contains(string(r.raw), base64.StdEncoding.EncodeToString([]byte(planted))) {
		t.Fatalf("the refusal echoes the proof: %s", r.raw)
	}
	refused("a proof for another wallet than the caller", do(t, "POST", url, precheckBody(other), map[string]string{siwx.Header: prove(t, fresh(), key)}), "caller_mismatch")
	// nothing was counted so far, for the wallet or the address
	proof := prove(t, fresh(), key)
	if r := do(t, "POST", url, precheckBody(addr), map[string]string{siwx.Header: proof}); r.status != 200 || freeTierOf(r)["remaining"] != float64(99) {
		t.Fatalf("the wallet's first: %d %.300s", r.status, r.raw)
	}
	clock.Add(5 * time.Second)
	refused("the same proof again", do(t, "POST", url, precheckBody(addr), map[string]string{siwx.Header: proof}), "replayed")
	if r := post(t, url, precheckBody("")); r.status != 200 || freeTierOf(r)["remaining"] != float64(99) {
		t.Fatalf("the address's first: %d %.300s", r.status, r.raw)
	}
	if r := provenPost(t, url, precheckBody(""), key); r.status != 200 || freeTierOf(r)["remaining"] != float64(98) {
		t.Fatalf("the wallet's second (the replay counted nothing): %d %.300s", r.status, r.raw)
	}
	metricsWith(t, h.URL+"/metrics", `assay_refusals_total{code="siwx_invalid",service="stream-divergence"} 8`,
		`assay_refusals_total{code="siwx_challenge",service="stream-divergence"} 6`, `assay_calls_total{service="stream-divergence",tier="free"} 3`)
}

// A fleet on one store: a challenge one host issued is proved on
// another, and the same proof is then a replay on the first.
func TestSignInAcrossAFleet(t *testing.T) {
	spec, _ := storetest.Spec(t, "postgres")
	clock := &fixedClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	a := testhost.Start(t, testhost.Options{Store: spec, Now: clock.Now}, sdPkg)
	b := testhost.Start(t, testhost.Options{Store: spec, Now: clock.Now}, sdPkg)
	key, addr := walletOf(5)
	e, err := siwx.AskChallenge(context.Background(), http.DefaultClient, a.URL+"/stream-divergence/precheck")
	if err != nil {
		t.Fatal(err)
	}
	// both hosts listen on 127.0.0.1: the challenge's URL names a's port,
	// so b is reached at a's URL through a proxy that keeps the Host
	proof := prove(t, e, key)
	r := hostPost(t, b.URL+"/stream-divergence/precheck", strings.TrimPrefix(a.URL, "http://"), precheckBody(addr), map[string]string{siwx.Header: proof})
	if ft := freeTierOf(r); r.status != 200 || ft["counted"] != "wallet" || ft["remaining"] != float64(99) {
		t.Fatalf("a's challenge proved on b: %d %.300s", r.status, r.raw)
	}
	clock.Add(5 * time.Second)
	r = do(t, "POST", a.URL+"/stream-divergence/precheck", precheckBody(addr), map[string]string{siwx.Header: proof})
	if e, _ := r.json["error"].(map[string]any); r.status != 401 || e["reason"] != "replayed" {
		t.Fatalf("the proof b took, again on a: %d %.300s", r.status, r.raw)
	}
}

// siwxMJS runs siwx.mjs (the official x402 client's sign-in) in dir and
// returns its one line of JSON; its failing (the client threw) is fatal.
func siwxMJS(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"siwx.mjs"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("the official client's sign-in: %v\n%s", err, msg)
	}
	return out
}

// The official x402 client (@x402/extensions' createSIWxClientHook under
// @x402/fetch, as x402's own example uses it; and wrapFetchWithSIWx),
// nobody's code here, signs in on the 402 of an address whose allowance
// is spent: its retry, proved with the wallet, is the pre-check, counted
// against the wallet's own allowance; the address's stays spent.
func TestOfficialClientSignsIn(t *testing.T) {
	dir := nodeDir(t, "../internal/testdata/x402-interop", "@x402/extensions")
	h := startPaid(t, sdPkg)
	h.clock.mu.Lock()
	h.clock.t = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h.clock.mu.Unlock()
	url := h.URL + "/stream-divergence/precheck"
	body := precheckBody("")
	for i := 1; i <= 100; i++ {
		if r := post(t, url, body); r.status != 200 {
			t.Fatalf("pre-check %d: %d", i, r.status)
		}
		h.clock.Add(5 * time.Second)
	}
	tmp := t.TempDir()
	walletPath, bodyPath := filepath.Join(tmp, "payer.json"), filepath.Join(tmp, "body.json")
	key, err := wallet.New(walletPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := solana.EncodeBase58(key.Public().(ed25519.PublicKey))
	_ = os.WriteFile(bodyPath, body, 0o600)
	for i, mode := range []string{"hook", "fetch"} {
		out := siwxMJS(t, dir, "--url", url, "--body", bodyPath, "--wallet", walletPath, "--mode", mode)
		var res struct {
			Status   int             `json:"status"`
			Body     json.RawMessage `json:"body"`
			Proof    map[string]any  `json:"proof"`
			Requests int             `json:"requests"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %v %s", mode, err, out)
		}
		var a struct {
			Kind     string         `json:"kind"`
			FreeTier map[string]any `json:"free_tier"`
		}
		_ = json.Unmarshal(res.Body, &a)
		if res.Status != 200 || a.Kind != "precheck" || a.FreeTier["counted"] != "wallet" || a.FreeTier["remaining"] != float64(99-i) ||
			res.Requests != 2 || res.Proof["address"] != addr || res.Proof["chainId"] != x402.SolanaDevnet || res.Proof["type"] != "ed25519" {
			t.Fatalf("%s: the official client's sign-in: %s", mode, out)
		}
		verified(t, h.Host, reply{raw: res.Body})
		h.clock.Add(5 * time.Second)
	}
	if r := post(t, url, body); r.status != 402 || freeTierOf(r)["counted"] != "address" {
		t.Fatalf("the address after the wallet's sign-ins: %d %.300s", r.status, r.raw)
	}
}
