// Package payment is the gate between a validated paid request and its
// measurement. The family never sees it; the server asks it whether a
// request may be measured and, once the report is ready, to settle.
package payment

import (
	"context"
	"net/http"
)

// Price is what one op costs, from the family's criteria.
type Price struct {
	USDCUnits int64
	Label     string
	Basis     string
}

// Admission is a gate's leave to measure one request.
type Admission struct {
	// Facts are the payment members the answer carries.
	Facts map[string]any
}

// Receipt is a settled payment, as the ledger records it.
type Receipt struct {
	Payer         string
	TransactionID string
	USDCUnits     int64
	// FeeLamports is nil when the fee is not known.
	FeeLamports *int64
	House       bool
	Facts       map[string]any
}

// Gate decides whether a paid request may be measured and settles it after.
type Gate interface {
	// Admit inspects the request's payment headers. When it returns false it
	// has answered the client itself (e.g. 402) through w.
	Admit(w http.ResponseWriter, r *http.Request, price Price) (*Admission, bool)
	// Settle is called only when the report is ready to issue.
	Settle(ctx context.Context, a *Admission) (*Receipt, error)
	// Facts are the payment members of an answer that was refused or failed
	// before settlement on a paid route.
	UnchargedFacts() map[string]any
}

// Off serves paid routes without payment, for private deployments: every
// answer is a house answer at price 0.
type Off struct{}

// Admit always admits.
func (Off) Admit(http.ResponseWriter, *http.Request, Price) (*Admission, bool) {
	return &Admission{Facts: map[string]any{"mode": "off"}}, true
}

// Settle records nothing to charge.
func (Off) Settle(context.Context, *Admission) (*Receipt, error) {
	return &Receipt{House: true, Facts: map[string]any{"mode": "off"}}, nil
}

// UnchargedFacts says payments are off.
func (Off) UnchargedFacts() map[string]any { return map[string]any{"mode": "off"} }
