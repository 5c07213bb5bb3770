package x402

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/host/internal/chaintest"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
)

// A claim a remote facilitator was settling is found on the chain by its
// memo among the transfers into pay_to's token account: landed, with its
// transaction id and fee; not there while its blockhash lives, unknown;
// not there once the blockhash expired (it never can land), never landed.
func TestChainLookupFindsAClaimByItsMemo(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, USDCDevnet)
	dir := t.TempDir()
	fee, _ := wallet.New(filepath.Join(dir, "fee.json"))
	chain.Airdrop(t, solana.EncodeBase58(fee.Public().(ed25519.PublicKey)), 1_000_000_000)
	seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
	payTo := solana.EncodeBase58(seller.Public().(ed25519.PublicKey))
	chain.TokenAccount(t, payTo, 0)
	payer, _ := wallet.New(filepath.Join(dir, "payer.json"))
	chain.TokenAccount(t, solana.EncodeBase58(payer.Public().(ed25519.PublicKey)), 1_000_000)
	lookup, err := NewChainLookup(chain.RPC, payTo, USDCDevnet)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hash, ok := lookup.RecentBlockhash(ctx)
	if !ok {
		t.Fatal("no blockhash")
	}
	reqs := Requirements{Scheme: "exact", Network: SolanaDevnet, Amount: "50000", Asset: USDCDevnet, PayTo: payTo, MaxTimeoutSeconds: 60,
		Extra: map[string]any{"feePayer": solana.EncodeBase58(fee.Public().(ed25519.PublicKey)), "recentBlockhash": hash.Hash}}
	send := func(memo string) string {
		t.Helper()
		sig, err := (&Payer{Wallet: payer}).Sign(reqs.withMemo(memo), Resource{URL: "http://x/y"})
		if err != nil {
			t.Fatal(err)
		}
		p, _ := DecodePayment(sig)
		raw, _ := base64.StdEncoding.DecodeString(p.Payload.Transaction)
		tx, _ := solana.DecodeTransaction(raw)
		if err := tx.SignAs(fee); err != nil {
			t.Fatal(err)
		}
		id, err := chain.RPC.Send(ctx, tx.Serialize())
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	landed := send(MemoPrefix + "11111111111111111111111111111111")
	send(MemoPrefix + "22222222222222222222222222222222") // another payment's
	claim := func(memo string) store.Claim { return store.Claim{Blockhash: hash.Hash, Memo: memo} }

	res, l, err := lookup.Resolve(ctx, claim(MemoPrefix+"11111111111111111111111111111111"))
	if err != nil || res != Landed || l.TxID != landed || l.FeeLamports == nil || *l.FeeLamports <= 0 {
		t.Errorf("a landed claim: %v %+v %v", res, l, err)
	}
	lost := claim(MemoPrefix + "33333333333333333333333333333333")
	if res, _, err := lookup.Resolve(ctx, lost); err != nil || res != Unknown {
		t.Errorf("not there, its blockhash alive: %v %v", res, err)
	}
	if res, _, err := lookup.Resolve(ctx, store.Claim{Memo: lost.Memo}); err != nil || res != Unknown {
		t.Errorf("a claim without a blockhash: %v %v", res, err)
	}
	chain.ExpireBlockhash(t)
	if res, _, err := lookup.Resolve(ctx, lost); err != nil || res != NeverLanded {
		t.Errorf("not there, its blockhash expired: %v %v", res, err)
	}
	if res, l, err := lookup.Resolve(ctx, claim(MemoPrefix+"11111111111111111111111111111111")); err != nil || res != Landed || l.TxID != landed {
		t.Errorf("a landed claim after the expiry: %v %+v %v", res, l, err)
	}
	// no page may be read: the history is not known to its start, so unknown
	lookup.MaxPages = 0
	if res, _, err := lookup.Resolve(ctx, lost); err != nil || res != Unknown {
		t.Errorf("history not read to its start: %v %v", res, err)
	}
}
