package server

import (
	"context"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/payment"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// pendingLines bounds the ledger lines committing behind their answers at
// once; a handler that finds them all taken commits its own line before it
// returns, as every handler did before the queue.
const pendingLines = 1024

// lineQueue runs the ledger lines of answers already sent. The answer goes
// before its line in any case (README: a crash between the two leaves a
// report whose claim a re-send redeems); what the queue changes is that
// the handler returns without waiting for the line's commit. Go's HTTP
// server reads a connection's next request only once the handler has
// returned, so a keep-alive client no longer waits for the previous
// line's fsync before its next request is even read. The Server owns the
// goroutines: Drain waits for every one.
type lineQueue struct {
	slots chan struct{}
	wg    sync.WaitGroup
}

func newLineQueue(n int) lineQueue { return lineQueue{slots: make(chan struct{}, n)} }

// run commits write behind the answer when a slot is free, else now.
func (l *lineQueue) run(write func()) {
	select {
	case l.slots <- struct{}{}:
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer func() { <-l.slots }()
			write()
		}()
	default:
		write()
	}
}

// Drain waits until every ledger line of an answer already sent has
// committed (or failed and been logged). A host calls it once its HTTP
// server has shut down (no handler left to add one) and before its store
// closes.
func (s *Server) Drain() { s.behind.wg.Wait() }

// writeLedger appends the delivered answer's line, and with a claim moves
// it to delivered in the same transaction, behind the answer (lineQueue).
// The report is already written, so a store failure is logged (with the
// transaction id, never the submission) and counted for the operator; the
// claim then stays undelivered and a re-send of its payment delivers
// again.
func (s *Server) writeLedger(q *request, r *payment.Receipt, fields string, at time.Time) {
	if s.cfg.Ledger == nil {
		return
	}
	desc := q.sv.Desc
	e := ledger.Entry{Desc: desc, At: at, Payer: r.Payer, PriceUnits: r.USDCUnits, TxID: r.TransactionID,
		FeeLamports: r.FeeLamports, House: r.House, Fields: fields}
	claim := r.Claim
	s.behind.run(func() { s.commitLine(desc, e, claim) })
}

func (s *Server) commitLine(desc *pb.FamilyDescription, e ledger.Entry, claim *payment.Claim) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if claim != nil {
		_, err = s.cfg.Ledger.Deliver(ctx, e, claim.PaymentID, claim.Owner)
	} else {
		_, err = s.cfg.Ledger.Append(ctx, e)
	}
	if err != nil {
		s.cfg.Metrics.LedgerWriteFailed(desc.GetService())
		s.cfg.Logger.Error("ledger line not written", "service", desc.GetService(), "tx", e.TxID, "error", err)
	}
}
