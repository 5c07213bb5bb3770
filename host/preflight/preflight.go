// Package preflight checks, before a host takes its first payment, that
// its payment path can take one: the Solana node answers and serves the
// configured network, the seller's USDC token account exists there, and
// the fee payer can pay for transactions. Each failure names what is
// wrong and the fix. Run at start, by `assay serve --check`, and by
// readiness.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
)

// Chain is what the checks ask of a Solana node.
type Chain interface {
	GenesisHash(ctx context.Context) (string, error)
	Balance(ctx context.Context, addr string) (uint64, error)
	AccountExists(ctx context.Context, addr string) (bool, error)
}

// Facilitator is a remote facilitator: what its /supported offers.
type Facilitator interface {
	// Offers is whether /supported lists the scheme on the network.
	Offers(ctx context.Context, scheme, network string) (bool, error)
}

// Params are the payment path's settings.
type Params struct {
	// Chain is the Solana node (nil: none configured, the chain checks
	// are not run).
	Chain Chain
	// Facilitator is the remote facilitator (nil: the embedded one).
	Facilitator Facilitator
	// Network is the CAIP-2 id payments are taken on ("solana:" and the
	// first 32 characters of the network's genesis hash).
	Network string
	// PayTo is the seller's wallet; Mint the network's USDC.
	PayTo, Mint string
	// FeePayer is the embedded facilitator's fee payer ("" with a remote
	// facilitator: its fees are the facilitator's).
	FeePayer string
}

// Transactions is how many settlements the fee payer must be able to pay
// for, at LamportsPerTransaction each (the signature fee and a margin for
// a priority fee), for the check to pass.
const (
	Transactions           = 1000
	LamportsPerTransaction = 10_000
)

// Finding is one check: ok, or what is wrong and how to fix it. Fatal
// findings fail `serve --check`, and refuse the start unless they are
// Unreachable; the rest warn.
type Finding struct {
	What string
	// Err is what is wrong in static words and public values (addresses,
	// a network id): /readyz shows it to anyone.
	Err string
	// Detail is the underlying error's text (a node's or facilitator's
	// address among it): for the log and serve --check, never /readyz.
	Detail string
	Fix    string
	Fatal  bool
	// Unreachable: the node or the facilitator did not answer (no answer,
	// a timeout, an unreadable reply), which says nothing of the
	// configuration. A running host survives it (its payers get 503, the
	// rest is served), so a start does too: it starts and takes no payment
	// until the path answers. The other failures are definite answers.
	Unreachable bool
}

// Misconfigured is a failed check whose answer came and refuses every
// payment (or would settle to the wrong place): a start is refused on it.
func (f Finding) Misconfigured() bool { return !f.OK() && f.Fatal && !f.Unreachable }

// OK reports a check that passed.
func (f Finding) OK() bool { return f.Err == "" }

// Explained is Err with Detail, for the operator (the log, serve --check).
func (f Finding) Explained() string {
	if f.Detail == "" {
		return f.Err
	}
	return f.Err + ": " + f.Detail
}

// Run runs every check that can run: one that depends on a failed one is
// not run (a node that does not answer cannot say whether an account
// exists).
func Run(ctx context.Context, p Params) []Finding {
	var out []Finding
	if p.Facilitator != nil {
		out = append(out, facilitator(ctx, p))
	}
	if p.Chain == nil {
		return out
	}
	genesis, err := p.Chain.GenesisHash(ctx)
	var answered *solanarpc.Error
	switch {
	case errors.As(err, &answered):
		// it answers JSON-RPC, so the URL and its key reach a server: one
		// that is not a Solana node, or one that does not serve the method
		return append(out, Finding{What: "the Solana node answers", Err: "the node answers but lacks getGenesisHash", Detail: err.Error(),
			Fix: "point solana_rpc (ASSAY_SOLANA_RPC_FILE or --solana-rpc) at a Solana JSON-RPC node serving the full API (getGenesisHash, getAccountInfo, getLatestBlockhash, sendTransaction, getSignatureStatuses): this URL reaches a server that does not", Fatal: true})
	case err != nil:
		return append(out, Finding{What: "the Solana node answers", Err: "no answer to getGenesisHash (unreachable)", Detail: err.Error(),
			Fix: "check solana_rpc (ASSAY_SOLANA_RPC_FILE or --solana-rpc): the URL, its API key, and that this host reaches it", Fatal: true, Unreachable: true})
	}
	out = append(out, Finding{What: "the Solana node answers"})
	ref, _ := strings.CutPrefix(p.Network, "solana:")
	if len(genesis) < 32 || ref != genesis[:32] {
		return append(out, Finding{What: "the node serves network " + p.Network,
			Err: fmt.Sprintf("its genesis hash begins %.32s", genesis),
			Fix: "point solana_rpc at a node of " + p.Network + ", or set the network (ASSAY_NETWORK: mainnet or devnet) to the node's", Fatal: true})
	}
	out = append(out, Finding{What: "the node serves network " + p.Network})
	out = append(out, payTo(ctx, p))
	if p.FeePayer != "" {
		out = append(out, feePayer(ctx, p))
	}
	return out
}

// facilitator checks that the remote facilitator offers the exact scheme
// on the network. One that answers without it would refuse every payment:
// that refuses the start. One that does not answer only warns: payers get
// 503 payment_unavailable (nothing taken) until it does, and the free
// pre-checks stay up meanwhile.
func facilitator(ctx context.Context, p Params) Finding {
	what := "the facilitator's /supported offers the exact scheme on " + p.Network
	ok, err := p.Facilitator.Offers(ctx, "exact", p.Network)
	switch {
	case err != nil:
		return Finding{What: what, Err: "no answer", Detail: err.Error(), Fix: "check the facilitator's URL (payments) and that this host reaches it", Unreachable: true}
	case !ok:
		return Finding{What: what, Err: "its /supported does not list exact on " + p.Network,
			Fix: "use a facilitator that settles " + p.Network + ", or set the network (ASSAY_NETWORK) to one it offers", Fatal: true}
	}
	return Finding{What: what}
}

func payTo(ctx context.Context, p Params) Finding {
	what := "pay_to's USDC token account exists"
	owner, err := solana.ParsePublicKey(p.PayTo)
	if err != nil {
		return Finding{What: what, Err: "pay_to is not a Solana address", Fix: "set pay_to (--pay-to) to the seller's wallet address", Fatal: true}
	}
	mint, err := solana.ParsePublicKey(p.Mint)
	if err != nil {
		return Finding{What: what, Err: "the network's USDC mint is not an address", Fatal: true}
	}
	ata, err := solana.FindAssociatedTokenAddress(owner, mint, solana.TokenProgram())
	if err != nil {
		return Finding{What: what, Err: "no associated token address", Detail: err.Error(), Fatal: true}
	}
	exists, err := p.Chain.AccountExists(ctx, ata.String())
	switch {
	case err != nil:
		return Finding{What: what, Err: "the node did not say", Detail: err.Error(), Fix: "check the node", Fatal: true, Unreachable: true}
	case !exists:
		// every payer's transfer to it would fail: each would get 402
		// payment_invalid for a fault of the seller's
		return Finding{What: what, Err: "no USDC token account " + ata.String() + " for pay_to on " + p.Network,
			Fix: "create pay_to's associated token account for USDC (e.g. spl-token create-account " + p.Mint + " --owner " + p.PayTo + "), or receive any USDC there", Fatal: true}
	}
	return Finding{What: what}
}

func feePayer(ctx context.Context, p Params) Finding {
	need := uint64(Transactions * LamportsPerTransaction)
	what := fmt.Sprintf("the fee payer holds SOL for %d transactions", Transactions)
	have, err := p.Chain.Balance(ctx, p.FeePayer)
	switch {
	case err != nil:
		return Finding{What: what, Err: "the node did not say", Detail: err.Error(), Fix: "check the node", Unreachable: true}
	case have < need:
		// a warning, not a refusal: on a fleet, one host's start refused
		// would take its free pre-checks down too, and a top-up fixes the
		// payer without a restart; settlements fail until then
		return Finding{What: what, Err: fmt.Sprintf("fee payer %s holds %d lamports, under %d", p.FeePayer, have, need),
			Fix: fmt.Sprintf("send at least %.4f SOL to %s", float64(need-have)/1e9, p.FeePayer)}
	}
	return Finding{What: what}
}
