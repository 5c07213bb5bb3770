package server

import (
	"context"
	"time"

	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/payment"
)

// issue commits a paid answer's ledger line before the answer is
// written: with a claim, the claim's move to issued and the answer kept
// for redelivery go in the same transaction. false (logged, counted)
// when the store refused: the answer is then not written, and the
// payment stays settled for a re-send to issue.
//
// The order is the money promise (docs/payers.md, "Issued before it
// leaves"): written first, a client that never reads its answer, or a
// host killed between the write and the commit, left a charge with no
// line (the books short of the chain) or a delivered claim whose report
// nobody holds. Issued first, every charge has its line, and its report
// can be had again.
func (s *Server) issue(q *request, pc *paidCall, r *payment.Receipt, fields string, signed []byte) bool {
	if s.cfg.Ledger == nil {
		return true
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
		if serr != nil {
			err = serr
		} else {
			_, err = s.cfg.Ledger.Issue(ctx, e, r.Claim.PaymentID, r.Claim.Owner, kept)
		}
	}
	if err != nil {
		s.cfg.Metrics.LedgerWriteFailed(desc.GetService())
		s.cfg.Logger.Error("ledger line not written; the answer is withheld and the payment stays redeemable", "service", desc.GetService(), "tx", e.TxID, "error", err)
		return false
	}
	return true
}
