package x402

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
)

// Resolved counts the settling claims a starting gate looked up on the
// chain: Settled landed (the report is owed, delivered on a re-send),
// Dropped never landed and never can (nothing was taken), Unknown the
// chain cannot say yet (or a claim without a transaction id: a remote
// facilitator's).
type Resolved struct{ Settled, Dropped, Unknown int }

// resolveSettling resolves, from the chain, each claim left settling whose
// lease has run out (a crash's): landed, it becomes settled; never landed
// and never can, it goes. The chain decides, not a timer.
func (g *Gate) resolveSettling(ctx context.Context, r Resolver) (Resolved, error) {
	var out Resolved
	claims, err := g.cfg.Store.Claims(ctx, store.ClaimSettling)
	if err != nil {
		return out, err
	}
	for _, c := range claims {
		now := g.cfg.Now()
		if c.Blockhash == "" {
			out.Unknown++ // nothing the chain knows it by
			continue
		}
		leased, err := g.cfg.Store.LeaseClaim(ctx, c.PaymentID, g.owner, now, now.Add(g.cfg.Lease))
		if err != nil {
			return out, err
		}
		if !leased {
			out.Unknown++ // another running host holds it
			continue
		}
		res, landing, err := r.Resolve(ctx, c)
		switch {
		case err != nil || res == Unknown:
			out.Unknown++
		case res == Landed:
			c.TxID, c.FeeLamports, c.LeaseUntil = landing.TxID, landing.FeeLamports, time.Time{}
			if c.Network == "" {
				c.Network = g.cfg.Network
			}
			if err := g.cfg.Store.SettleClaim(ctx, c.PaymentID, g.owner, c, now); err != nil {
				return out, err
			}
			out.Settled++
		case res == NeverLanded:
			if err := g.cfg.Store.DropClaim(ctx, c.PaymentID, g.owner); err != nil {
				return out, err
			}
			out.Dropped++
			continue
		}
		g.release(c.PaymentID)
	}
	return out, nil
}

// resolver is what looks claims up on the chain: the configured chain, or
// the embedded facilitator on one; nil without a chain.
func (g *Gate) resolver() Resolver {
	if g.cfg.Chain != nil {
		return g.cfg.Chain
	}
	if l, ok := g.cfg.Facilitator.(*Local); ok && l.chain != nil {
		return l
	}
	return nil
}

// settleFromChain resolves a taken-over settling claim on the chain:
// landed, it is recorded settled; never landed and never can, it is
// dropped and the payer told nothing was taken; done is false when the
// chain cannot say yet (the facilitator is asked, as before).
func (g *Gate) settleFromChain(ctx context.Context, req payment.Request, r Resolver, c store.Claim) (_ store.Claim, d *payment.Demand, done bool, err error) {
	res, landing, err := r.Resolve(ctx, c)
	switch {
	case err != nil || res == Unknown:
		return c, nil, false, nil
	case res == NeverLanded:
		err = g.cfg.Store.DropClaim(ctx, c.PaymentID, g.owner)
		return c, g.settleFailure(req, CodeNotSettled, ReasonExpired, c.Payer), true, err
	}
	c.TxID, c.FeeLamports, c.LeaseUntil = landing.TxID, landing.FeeLamports, g.cfg.Now().Add(deliveryLease)
	if c.Network == "" {
		c.Network = g.cfg.Network
	}
	if err := g.cfg.Store.SettleClaim(ctx, c.PaymentID, g.owner, c, g.cfg.Now()); err != nil {
		g.release(c.PaymentID)
		return c, nil, true, err
	}
	c.State = store.ClaimSettled
	return c, nil, true, nil
}

// payloadBlockhash is the payment transaction's recent blockhash ("" when
// it does not decode: the facilitator refuses such a payment anyway).
func payloadBlockhash(p *PaymentPayload) string {
	raw, err := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	if err != nil {
		return ""
	}
	tx, err := solana.DecodeTransaction(raw)
	if err != nil {
		return ""
	}
	return solana.EncodeBase58(tx.Message.RecentBlockhash[:])
}
