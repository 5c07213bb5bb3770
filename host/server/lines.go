package server

import (
	"context"
	"errors"
	"time"

	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/store"
)

// issue commits a paid answer's ledger line before the answer is
// written: with a claim, the claim's move to issued (or, for a claim not
// yet written, the claim itself) and the answer kept for redelivery go in
// the same transaction. An error (logged, counted) when the store
// refused: the answer is then not written, and the payment stays
// redeemable; errIssuedElsewhere when another request with the same
// payment issued first.
//
// The order is the money promise (docs/payers.md, "Issued before it
// leaves"): written first, a client that never reads its answer, or a
// host killed between the write and the commit, left a charge with no
// line (the books short of the chain) or a delivered claim whose report
// nobody holds. Issued first, every charge has its line, and its report
// can be had again.
func (s *Server) issue(q *request, pc *paidCall, r *payment.Receipt, fields string, signed []byte) error {
	if s.cfg.Ledger == nil {
		return nil
	}
	desc := q.sv.Desc
	e := ledger.Entry{Desc: desc, At: s.cfg.Now(), Payer: r.Payer, PriceUnits: r.USDCUnits, TxID: r.TransactionID,
		FeeLamports: r.FeeLamports, House: r.House, Fields: fields}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if r.Claim == nil {
		_, err = s.cfg.Ledger.Append(ctx, e)
	} else {
		kept, serr := s.sealFor(pc, r, signed)
		switch {
		case serr != nil:
			err = serr
		case r.Claim.Pending != nil:
			_, err = s.cfg.Ledger.OpenAndIssue(ctx, e, *r.Claim.Pending, kept)
		default:
			_, err = s.cfg.Ledger.Issue(ctx, e, r.Claim.PaymentID, r.Claim.Owner, kept)
		}
	}
	if errors.Is(err, store.ErrClaimTaken) || errors.Is(err, store.ErrIdentifierClaimed) || errors.Is(err, store.ErrDuplicateTx) {
		// another request with the same payment (or identifier) issued
		// first: nothing of this one was written or charged, and a re-send
		// has that report
		return errIssuedElsewhere
	}
	if err != nil {
		s.cfg.Metrics.LedgerWriteFailed(desc.GetService())
		s.cfg.Logger.Error("ledger line not written; the answer is withheld and the payment stays redeemable", "service", desc.GetService(), "tx", e.TxID, "error", err)
		return err
	}
	return nil
}

// errIssuedElsewhere: another request issued this payment's report first.
var errIssuedElsewhere = errors.New("server: the payment's report was issued by another request")
