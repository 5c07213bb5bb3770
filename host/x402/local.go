package x402

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strconv"

	"github.com/assay-audit/assay/host/solana"
)

// MaxComputeUnitPrice caps the priority fee a payment may ask the fee
// payer to sponsor: 5 lamports per compute unit, the reference cap.
const MaxComputeUnitPrice = 5_000_000

// Local is the embedded facilitator: it checks an exact-scheme Solana
// payment with the rules the scheme makes mandatory and co-signs as fee
// payer. The transaction id is the fee payer's signature (base58), known
// before settlement since Ed25519 signatures are deterministic.
//
// Without a chain it never broadcasts, and every payment it accepts is a
// house proof (account existence and balances are not checked). With one
// (WithChain: a Solana RPC node) it settles for real: see onchain.go.
type Local struct {
	key     ed25519.PrivateKey
	pub     solana.PublicKey
	addr    string // pub in base58, asked for on every request
	network string
	chain   *chain
}

// NewLocal builds the facilitator around its fee-payer key.
func NewLocal(feePayer ed25519.PrivateKey, network string) *Local {
	var pub solana.PublicKey
	copy(pub[:], feePayer.Public().(ed25519.PublicKey))
	return &Local{key: feePayer, pub: pub, addr: pub.String(), network: network}
}

// FeePayer is the fee payer's address.
func (l *Local) FeePayer() string { return l.addr }

// Offline is true without a chain: nothing is broadcast.
func (l *Local) Offline() bool { return l.chain == nil }

// checked is a payment that passed every rule, co-signed.
type checked struct {
	transfer *solana.ExactTransfer
	tx       *solana.Transaction
	id       string
	payer    string // transfer.Payer in base58
}

func (l *Local) inspect(p *PaymentPayload, r Requirements) (*checked, string) {
	if p.Accepted.Scheme != "exact" || r.Scheme != "exact" {
		return nil, "unsupported_scheme"
	}
	if p.Accepted.Network != l.network || r.Network != l.network {
		return nil, "invalid_network"
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(p.Payload.Transaction)
	if err != nil {
		return nil, "invalid_exact_svm_payload_transaction"
	}
	tx, err := solana.DecodeTransaction(raw)
	if err != nil {
		return nil, "invalid_exact_svm_payload_transaction"
	}
	payTo, err1 := solana.ParsePublicKey(r.PayTo)
	mint, err2 := solana.ParsePublicKey(r.Asset)
	amount, err3 := strconv.ParseUint(r.Amount, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, "invalid_payment_requirements"
	}
	rules := solana.ExactRules{FeePayer: l.pub, PayTo: payTo, Mint: mint, Amount: amount, MaxComputeUnitPrice: MaxComputeUnitPrice}
	if memo, ok := r.Extra["memo"].(string); ok {
		rules.Memo = &memo
	}
	x, err := solana.VerifyExact(tx, rules)
	if err != nil {
		if inv, ok := err.(*solana.Invalid); ok {
			return nil, inv.Reason
		}
		return nil, "invalid_exact_svm_payload_transaction"
	}
	if err := tx.SignAs(l.key); err != nil {
		return nil, "invalid_exact_svm_payload_transaction"
	}
	return &checked{transfer: x, tx: tx, id: solana.EncodeBase58(tx.Signatures[0][:]), payer: x.Payer.String()}, ""
}

// Verify checks the payment and names the transaction id settlement will
// produce; with a chain, the co-signed transaction is simulated too.
func (l *Local) Verify(ctx context.Context, p *PaymentPayload, r Requirements) (*Verified, error) {
	c, reason := l.inspect(p, r)
	if reason != "" {
		return &Verified{Reason: reason}, nil
	}
	v := &Verified{Payer: c.payer, TxID: c.id}
	if l.chain == nil {
		// nothing is broadcast: the check and the co-signature are the
		// whole settlement
		v.Settled = l.offline(c)
		return v, nil
	}
	if reason, err := l.chain.verify(ctx, c); err != nil || reason != "" {
		return &Verified{Reason: reason}, err
	}
	v.Blockhash = solana.EncodeBase58(c.tx.Message.RecentBlockhash[:])
	return v, nil
}

// Settle checks again, co-signs and reports the settlement: with a chain,
// sent and confirmed (onchain.go); without, not broadcast, the fee being
// what the network would charge the fee payer.
func (l *Local) Settle(ctx context.Context, p *PaymentPayload, r Requirements) (*Settled, error) {
	c, reason := l.inspect(p, r)
	if reason != "" {
		return &Settled{Reason: reason, Network: l.network}, nil
	}
	if l.chain != nil {
		return l.chain.settle(ctx, c, l.network)
	}
	return l.offline(c), nil
}

// offline is a checked payment's settlement without a chain: not
// broadcast, the fee being what the network would charge the fee payer.
func (l *Local) offline(c *checked) *Settled {
	fee := int64(c.transfer.FeeLamports(len(c.tx.Signatures)))
	return &Settled{TxID: c.id, Payer: c.payer, Network: l.network, FeeLamports: &fee}
}
