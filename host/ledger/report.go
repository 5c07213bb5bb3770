package ledger

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"time"

	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk"
)

// Report is the kill-line figures for every service and criteria version
// in the ledger.
type Report struct {
	GeneratedAt string          `json:"generated_at"`
	Services    []ServiceReport `json:"services"`
	// NotIssued are the payments taken (settled), or being settled when a
	// host died (settling), whose report was never issued: each is issued
	// by a re-send of its payment, and none expires by itself. An issued
	// report (its line committed before its answer was written) is never
	// here, whether or not its payer read it.
	NotIssued []NotIssuedClaim `json:"paid_claims_not_issued"`
	// Issued is how many claims are issued: spent, each with its line.
	Issued int `json:"issued_claims"`
	// Books is the money: USDC, CAD and refunds, outside and house apart,
	// in all and by service and UTC day.
	Books Books `json:"books"`
}

// NotIssuedClaim is a payment whose report is owed.
type NotIssuedClaim struct {
	Service        string `json:"service"`
	Op             string `json:"op"`
	State          string `json:"state"` // settled, or settling (the outcome unknown: a re-send settles again)
	TxID           string `json:"transaction,omitempty"`
	Payer          string `json:"payer,omitempty"`
	PriceUSDCUnits int64  `json:"price_usdc_units"`
	Since          string `json:"since"`
}

// ServiceReport is one service under one criteria version.
type ServiceReport struct {
	Service          string `json:"service"`
	CriteriaID       string `json:"criteria_id"`
	CriteriaRevision string `json:"criteria_revision"`
	Lines            int    `json:"ledger_lines"`
	HouseLines       int    `json:"house_lines"`
	OutsidePaidCalls int    `json:"outside_paid_calls"`
	FreeCalls        int64  `json:"free_calls"`
	// Day0 is the first outside paid settle; nil before there is one.
	Day0         *string     `json:"day0"`
	Checkpoint60 *Checkpoint `json:"day0_plus_60"`
	KeepPark     *KeepPark   `json:"six_month_inputs"`
	Tripwires    []Tripwire  `json:"tripwires"`
}

// Checkpoint is the report-only Day-0 + 60 figures.
type Checkpoint struct {
	From          string `json:"from"`
	To            string `json:"to"`
	Reached       bool   `json:"reached"`
	Usage         int    `json:"usage"`
	Payers        int    `json:"payers"`
	RepeatPayers  int    `json:"repeat_payers"`
	Refunds       int    `json:"refunds"`
	FreeCalls     int64  `json:"free_calls"`
	FreeVsPaid    any    `json:"free_vs_paid_ratio"`
	FreeVsPaidDef string `json:"free_vs_paid_ratio_is"`
}

// KeepPark is the six-month keep/park decision's inputs (no decision).
type KeepPark struct {
	At                    string `json:"decision_due"`
	MoreThanOnePayer      bool   `json:"outside_paid_calls_from_more_than_one_payer"`
	Payers                int    `json:"payers"`
	AtLeastOneRepeatPayer bool   `json:"at_least_one_repeat_payer"`
	GrossUnits            int64  `json:"gross_usdc_units"`
	RefundedUnits         int64  `json:"refunded_usdc_units"`
	NetUnits              int64  `json:"net_usdc_units_before_rail_fees"`
	RailFeesLamports      int64  `json:"rail_fees_lamports"`
	LinesWithoutFee       int    `json:"lines_without_a_known_fee"`
	NetAfterRailFees      any    `json:"net_after_rail_fees"`
}

// Tripwire is one kill-line tripwire the ledger and counters can compute.
type Tripwire struct {
	Rule    string         `json:"rule"`
	State   string         `json:"state"` // clear, tripped, not computable
	Reason  string         `json:"reason,omitempty"`
	Figures map[string]any `json:"figures,omitempty"`
}

type group struct {
	lines  []store.Line
	refund map[int64]store.Amendment
}

// Build computes the report at now. freeUse returns a scope's free calls by
// day (the scope is service|criteria_id|revision).
func Build(ctx context.Context, st *store.Store, now time.Time) (*Report, error) {
	lines, amends, err := load(ctx, st)
	if err != nil {
		return nil, err
	}
	refunds := map[int64]store.Amendment{}
	for _, a := range amends {
		if a.Kind == "refund" {
			refunds[a.LineID] = a
		}
	}
	groups := map[[3]string]*group{}
	var order [][3]string
	for _, l := range lines {
		k := [3]string{l.Service, l.CriteriaID, l.CriteriaRevision}
		g := groups[k]
		if g == nil {
			g = &group{refund: map[int64]store.Amendment{}}
			groups[k] = g
			order = append(order, k)
		}
		g.lines = append(g.lines, l)
		if a, ok := refunds[l.ID]; ok {
			g.refund[l.ID] = a
		}
	}
	sort.Slice(order, func(i, j int) bool {
		return order[i][0]+"\x00"+order[i][1]+"\x00"+order[i][2] < order[j][0]+"\x00"+order[j][1]+"\x00"+order[j][2]
	})
	books, err := BuildBooks(Apply(lines, amends))
	if err != nil {
		return nil, err
	}
	r := &Report{GeneratedAt: sdk.Instant(now), Services: []ServiceReport{}, NotIssued: []NotIssuedClaim{}, Books: books}
	for _, state := range []string{store.ClaimSettled, store.ClaimSettling} {
		claims, err := st.Claims(ctx, state)
		if err != nil {
			return nil, err
		}
		for _, c := range claims {
			r.NotIssued = append(r.NotIssued, NotIssuedClaim{Service: c.Service, Op: c.Op, State: c.State, TxID: c.TxID,
				Payer: c.Payer, PriceUSDCUnits: c.PriceUSDCUnits, Since: sdk.Instant(c.Created)})
		}
	}
	if r.Issued, err = st.CountClaims(ctx, store.ClaimIssued); err != nil {
		return nil, err
	}
	for _, k := range order {
		free, err := st.FreeUse(ctx, UsageScope(k[0], k[1], k[2]))
		if err != nil {
			return nil, err
		}
		r.Services = append(r.Services, serviceReport(k, groups[k], free, now))
	}
	return r, nil
}

// UsageScope is the free-use counter's key for a service version.
func UsageScope(service, criteriaID, revision string) string {
	return service + "|" + criteriaID + "|" + revision
}

const day = 24 * time.Hour

func serviceReport(k [3]string, g *group, free []store.DayCount, now time.Time) ServiceReport {
	sr := ServiceReport{Service: k[0], CriteriaID: k[1], CriteriaRevision: k[2], Lines: len(g.lines)}
	var outside []store.Line
	for _, l := range g.lines {
		if l.House {
			sr.HouseLines++
			continue
		}
		outside = append(outside, l)
	}
	sr.OutsidePaidCalls = len(outside)
	for _, d := range free {
		sr.FreeCalls += d.N
	}
	notYet := "no outside paid settle yet (house proofs never start Day-0)"
	if len(outside) == 0 {
		for _, rule := range []string{refundRule, freeRule} {
			sr.Tripwires = append(sr.Tripwires, Tripwire{Rule: rule, State: "not computable", Reason: notYet})
		}
		return sr
	}
	day0 := outside[0].At
	d0 := day0.Format(time.RFC3339Nano)
	sr.Day0 = &d0

	end60 := day0.Add(60 * day)
	cp := &Checkpoint{From: sdk.Instant(day0), To: sdk.Instant(end60), Reached: !now.Before(end60),
		FreeVsPaidDef: "free calls / outside paid calls in the window"}
	var window []store.Line
	for _, l := range outside {
		if l.At.Before(end60) {
			window = append(window, l)
		}
	}
	cp.Usage = len(window)
	cp.Payers, cp.RepeatPayers = payers(window)
	for _, l := range window {
		if _, ok := g.refund[l.ID]; ok {
			cp.Refunds++
		}
	}
	cp.FreeCalls = freeBetween(free, day0, end60)
	cp.FreeVsPaid = ratio(cp.FreeCalls, int64(cp.Usage))
	sr.Checkpoint60 = cp

	kp := &KeepPark{At: sdk.Instant(day0.AddDate(0, 6, 0))}
	kp.Payers, _ = payers(outside)
	_, repeat := payers(outside)
	kp.MoreThanOnePayer, kp.AtLeastOneRepeatPayer = kp.Payers > 1, repeat > 0
	for _, l := range outside {
		kp.GrossUnits += l.PriceUSDCUnits
		if a, ok := g.refund[l.ID]; ok && a.RefundUnits != nil {
			kp.RefundedUnits += *a.RefundUnits
		}
		if l.FeeLamports != nil {
			kp.RailFeesLamports += *l.FeeLamports
		} else {
			kp.LinesWithoutFee++
		}
	}
	kp.NetUnits = kp.GrossUnits - kp.RefundedUnits
	kp.NetAfterRailFees = sdk.NotStated{Token: sdk.NotComputable,
		Reason: "rail fees are in lamports and the ledger holds no SOL/USDC rate; compare net_usdc_units_before_rail_fees with rail_fees_lamports"}
	sr.KeepPark = kp

	sr.Tripwires = []Tripwire{refundTripwire(outside, g.refund, now), freeTripwire(int64(len(outside)), freeBetween(free, day0, now.Add(day)))}
	return sr
}

const (
	refundRule = "refunds > 5% of paid calls in any rolling 30 days (refunded calls / outside paid calls, by the call's UTC day)"
	freeRule   = "free use > 10x paid use (since Day-0)"
)

func payers(lines []store.Line) (distinct, repeat int) {
	n := map[string]int{}
	for _, l := range lines {
		if l.Payer != nil {
			n[*l.Payer]++
		}
	}
	for _, c := range n {
		if c > 1 {
			repeat++
		}
	}
	return len(n), repeat
}

func freeBetween(free []store.DayCount, from, to time.Time) int64 {
	var n int64
	lo, hi := store.Day(from), store.Day(to)
	for _, d := range free {
		if d.Day >= lo && d.Day < hi {
			n += d.N
		}
	}
	return n
}

func ratio(num, den int64) any {
	if den == 0 {
		return sdk.NotStated{Token: sdk.NotComputable, Reason: "no outside paid call in the window"}
	}
	return sdk.Ratio(bigInt(num), bigInt(den), 2)
}

// refundTripwire slides a 30-day window (by UTC day) from Day-0 to now and
// reports the worst window: of the outside paid calls made in it, the share
// later refunded. A refund counts on its call's day, so a late refund of an
// old call never lands in a window without that call.
func refundTripwire(outside []store.Line, refunds map[int64]store.Amendment, now time.Time) Tripwire {
	paidByDay := map[string]int64{}
	refByDay := map[string]int64{}
	for _, l := range outside {
		paidByDay[l.Day]++
		if _, ok := refunds[l.ID]; ok {
			refByDay[l.Day]++
		}
	}
	start := outside[0].At.UTC().Truncate(day)
	var worst struct {
		end          string
		paid, refund int64
	}
	tripped := false
	for d := start; !d.After(now); d = d.Add(day) {
		var paid, ref int64
		for i := 0; i < 30; i++ {
			k := store.Day(d.Add(-time.Duration(i) * day))
			paid += paidByDay[k]
			ref += refByDay[k]
		}
		if ref*20 > paid { // refunds > 5 % of paid calls
			tripped = true
		}
		if paid > 0 && (worst.end == "" || ref*worst.paid > worst.refund*paid) {
			worst.end, worst.paid, worst.refund = store.Day(d), paid, ref
		}
	}
	t := Tripwire{Rule: refundRule, State: "clear", Figures: map[string]any{
		"worst_window_end": worst.end, "paid_calls": worst.paid, "refunds": worst.refund,
	}}
	if pct, ok := sdk.Percent(worst.refund, worst.paid, 1); ok {
		t.Figures["refund_share"] = pct
	}
	if tripped {
		t.State = "tripped"
	}
	return t
}

func freeTripwire(paid, free int64) Tripwire {
	t := Tripwire{Rule: freeRule, State: "clear", Figures: map[string]any{"free_calls": free, "outside_paid_calls": paid}}
	if free > 10*paid {
		t.State = "tripped"
	}
	return t
}

// Text renders the report for a terminal.
func (r *Report) Text() string {
	out := fmt.Sprintf("kill-line report at %s\n", r.GeneratedAt)
	out += fmt.Sprintf("issued paid claims: %d\n", r.Issued)
	if len(r.NotIssued) > 0 {
		out += fmt.Sprintf("paid claims whose report is not yet issued: %d (settled: taken, the report owed; settling: the outcome unknown; a re-send of its payment issues each)\n", len(r.NotIssued))
		for _, c := range r.NotIssued {
			out += fmt.Sprintf("  %s %s %s since %s: transaction %q, payer %q, %d USDC units\n", c.Service, c.Op, c.State, c.Since, c.TxID, c.Payer, c.PriceUSDCUnits)
		}
	}
	if len(r.Services) == 0 {
		return out + "no ledger lines yet\n"
	}
	for _, s := range r.Services {
		out += fmt.Sprintf("\n%s — %s (%s)\n  ledger lines %d (house %d), outside paid calls %d, free calls %d\n",
			s.Service, s.CriteriaID, s.CriteriaRevision, s.Lines, s.HouseLines, s.OutsidePaidCalls, s.FreeCalls)
		if s.Day0 == nil {
			out += "  Day-0: none yet (house proofs never start it)\n"
		} else {
			c, k := s.Checkpoint60, s.KeepPark
			out += fmt.Sprintf("  Day-0: %s\n  Day-0+60 (%s, reached: %v): usage %d, payers %d, repeat payers %d, refunds %d, free calls %d, free/paid %v\n",
				*s.Day0, c.To, c.Reached, c.Usage, c.Payers, c.RepeatPayers, c.Refunds, c.FreeCalls, show(c.FreeVsPaid))
			out += fmt.Sprintf("  six-month inputs (due %s): more than one payer %v, a repeat payer %v, net %d USDC units before rail fees, rail fees %d lamports (%d lines without a known fee)\n",
				k.At, k.MoreThanOnePayer, k.AtLeastOneRepeatPayer, k.NetUnits, k.RailFeesLamports, k.LinesWithoutFee)
		}
		for _, t := range s.Tripwires {
			out += fmt.Sprintf("  tripwire %q: %s", t.Rule, t.State)
			if t.Reason != "" {
				out += " — " + t.Reason
			}
			if len(t.Figures) > 0 {
				keys := make([]string, 0, len(t.Figures))
				for k := range t.Figures {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					out += fmt.Sprintf(" %s=%v", k, t.Figures[k])
				}
			}
			out += "\n"
		}
	}
	return out + r.Books.Text()
}

func show(v any) string {
	if n, ok := v.(sdk.NotStated); ok {
		return n.Token + " (" + n.Reason + ")"
	}
	return fmt.Sprint(v)
}

func bigInt(n int64) *big.Int { return big.NewInt(n) }
