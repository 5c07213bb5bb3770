// Package reconcile checks a host's books against the chain: every paid
// ledger line's transaction landed and moved exactly its price of the
// asset to pay_to, and every transfer to pay_to that carries one of this
// host's memos has its line. It reads the ledger and the chain, and
// writes nothing.
package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
)

// Chain is what reconciling reads from a node.
type Chain interface {
	GetTransaction(ctx context.Context, sig string) (*solanarpc.Transaction, error)
	Signatures(ctx context.Context, addr, before string, limit int) ([]solanarpc.SignatureInfo, error)
}

// Books names what the ledger's payments were paid to.
type Books struct {
	PayTo, Asset string
	// TokenAccount is pay_to's associated token account of Asset, whose
	// history lists every transfer it received.
	TokenAccount string
	// MemoPrefix marks this host's payments (x402.MemoPrefix).
	MemoPrefix string
	// SettlesSince is when the store began to settle on a chain: its
	// payment identity's stamp, or its first line paid outside, whichever
	// came first (zero: it never did). A house line written since then is
	// checked like a paid one, since no house proof belongs in books that
	// hold real money: one whose transaction moved its price to pay_to (a
	// house wallet's real payment) agrees, any other is listed.
	SettlesSince time.Time
}

// Problem kinds of a ledger line.
const (
	Missing   = "missing"   // the chain has no such transaction
	Failed    = "failed"    // it landed with an error: nothing moved
	Different = "different" // it moved another amount to pay_to
	// House: a house line (a house proof, or payments off) written on a
	// store that settles on a chain, whose transaction moved nothing there
	House = "house"
)

// Line is a ledger line whose transfer is not what it says.
type Line struct {
	LineID            int64  `json:"line_id"`
	Service           string `json:"service"`
	Transaction       string `json:"transaction"`
	PriceUSDCUnits    int64  `json:"price_usdc_units"`
	Problem           string `json:"problem"`
	ReceivedUSDCUnits int64  `json:"received_usdc_units"`
}

// Transfer is a transfer to pay_to carrying this host's memo that no
// ledger line records.
type Transfer struct {
	Transaction       string `json:"transaction"`
	Slot              uint64 `json:"slot"`
	ReceivedUSDCUnits int64  `json:"received_usdc_units"`
	Memo              string `json:"memo"`
}

// Report is what reconciling found.
type Report struct {
	PayTo        string `json:"pay_to"`
	Asset        string `json:"asset"`
	TokenAccount string `json:"token_account"`
	// LinesChecked counts the lines looked up: the paid lines, and the
	// house lines written since the store settles on a chain (house
	// lines before then have no transfer and are not counted).
	LinesChecked int `json:"lines_checked"`
	// TransfersScanned counts the token account's transactions read.
	TransfersScanned int        `json:"transfers_scanned"`
	Lines            []Line     `json:"lines_not_matching"`
	Unrecorded       []Transfer `json:"transfers_without_line"`
}

// Clean reports whether the books and the chain agree.
func (r *Report) Clean() bool { return len(r.Lines) == 0 && len(r.Unrecorded) == 0 }

// pageSize is getSignaturesForAddress's largest page.
const pageSize = 1000

// Run reconciles lines against the chain.
func Run(ctx context.Context, chain Chain, lines []store.Line, b Books) (*Report, error) {
	r := &Report{PayTo: b.PayTo, Asset: b.Asset, TokenAccount: b.TokenAccount, Lines: []Line{}, Unrecorded: []Transfer{}}
	recorded := map[string]bool{}
	for _, l := range lines {
		if l.TxID != nil {
			// a house wallet's real payment has its line too
			recorded[*l.TxID] = true
		}
		onChain := !b.SettlesSince.IsZero() && !l.At.Before(b.SettlesSince)
		if l.House && !onChain {
			continue // the operator's own proof, before the store settled
		}
		if l.TxID == nil && !l.House {
			continue
		}
		r.LinesChecked++
		f, err := check(ctx, chain, l, b)
		if err != nil {
			return nil, err
		}
		if f.Problem != "" {
			r.Lines = append(r.Lines, f)
		}
	}
	if err := r.scan(ctx, chain, b, recorded); err != nil {
		return nil, err
	}
	return r, nil
}

// check looks a line's transaction up: a house line whose transfer is
// not on the chain (a house proof, or payments off: no transaction) is a
// House problem.
func check(ctx context.Context, chain Chain, l store.Line, b Books) (Line, error) {
	f := Line{LineID: l.ID, Service: l.Service, PriceUSDCUnits: l.PriceUSDCUnits}
	if l.TxID == nil {
		f.Problem = House
		return f, nil
	}
	f.Transaction = *l.TxID
	tx, err := chain.GetTransaction(ctx, *l.TxID)
	if err != nil {
		return f, fmt.Errorf("reconcile: line %d: %w", l.ID, err)
	}
	switch {
	case l.House && (tx == nil || tx.Failed() || tx.Received(b.PayTo, b.Asset) == 0):
		f.Problem = House
	case tx == nil:
		f.Problem = Missing
	case tx.Failed():
		f.Problem = Failed
	default:
		f.ReceivedUSDCUnits = tx.Received(b.PayTo, b.Asset)
		if f.ReceivedUSDCUnits != l.PriceUSDCUnits {
			f.Problem = Different
		}
	}
	return f, nil
}

// scan reads the token account's whole history for this host's transfers
// with no line.
func (r *Report) scan(ctx context.Context, chain Chain, b Books, recorded map[string]bool) error {
	before := ""
	for {
		page, err := chain.Signatures(ctx, b.TokenAccount, before, pageSize)
		if err != nil {
			return fmt.Errorf("reconcile: the token account's history: %w", err)
		}
		for _, s := range page {
			r.TransfersScanned++
			if recorded[s.Signature] || (len(s.Err) > 0 && string(s.Err) != "null") {
				continue
			}
			if s.Memo != nil && !strings.Contains(*s.Memo, b.MemoPrefix) {
				continue // the node says its memos: none of this host's
			}
			tx, err := chain.GetTransaction(ctx, s.Signature)
			if err != nil {
				return fmt.Errorf("reconcile: a transfer at slot %d: %w", s.Slot, err)
			}
			if tx == nil || tx.Failed() {
				continue
			}
			memo, ok := hostMemo(tx.Wire, b.MemoPrefix)
			if !ok {
				continue
			}
			if n := tx.Received(b.PayTo, b.Asset); n > 0 {
				r.Unrecorded = append(r.Unrecorded, Transfer{Transaction: s.Signature, Slot: s.Slot, ReceivedUSDCUnits: n, Memo: memo})
			}
		}
		if len(page) < pageSize {
			return nil
		}
		before = page[len(page)-1].Signature
	}
}

// hostMemo is the transaction's memo when it is one of this host's.
func hostMemo(wire []byte, prefix string) (string, bool) {
	tx, err := solana.DecodeTransaction(wire)
	if err != nil {
		return "", false
	}
	memoProgram := solana.MemoProgram()
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIndex) < len(tx.Message.AccountKeys) && tx.Message.AccountKeys[ix.ProgramIndex] == memoProgram &&
			strings.HasPrefix(string(ix.Data), prefix) {
			return string(ix.Data), true
		}
	}
	return "", false
}

// Text is the report for a terminal: one line a problem, then the counts.
func (r *Report) Text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pay_to %s (token account %s), asset %s\n", r.PayTo, r.TokenAccount, r.Asset)
	for _, l := range r.Lines {
		switch l.Problem {
		case House:
			fmt.Fprintf(&sb, "line %d (%s): a house line (transaction %q) on a store that settles on a chain: nothing moved to pay_to, the line says %d\n", l.LineID, l.Service, l.Transaction, l.PriceUSDCUnits)
		case Different:
			fmt.Fprintf(&sb, "line %d (%s): transaction %s moved %d to pay_to, the line says %d\n", l.LineID, l.Service, l.Transaction, l.ReceivedUSDCUnits, l.PriceUSDCUnits)
		case Failed:
			fmt.Fprintf(&sb, "line %d (%s): transaction %s failed on the chain: nothing moved, the line says %d\n", l.LineID, l.Service, l.Transaction, l.PriceUSDCUnits)
		default:
			fmt.Fprintf(&sb, "line %d (%s): transaction %s is not on the chain, the line says %d\n", l.LineID, l.Service, l.Transaction, l.PriceUSDCUnits)
		}
	}
	for _, t := range r.Unrecorded {
		fmt.Fprintf(&sb, "transfer %s (slot %d) moved %d to pay_to with this host's memo and has no ledger line\n", t.Transaction, t.Slot, t.ReceivedUSDCUnits)
	}
	fmt.Fprintf(&sb, "%d paid lines checked, %d transactions of the token account read: %d lines not matching, %d transfers without a line\n",
		r.LinesChecked, r.TransfersScanned, len(r.Lines), len(r.Unrecorded))
	return sb.String()
}
