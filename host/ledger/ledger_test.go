package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

var decl = []*pb.LedgerField{
	{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"compare"}},
	{Name: "byte_equal", Type: pb.LedgerField_BOOL},
	{Name: "count", Type: pb.LedgerField_NUMBER, Nullable: true},
	{Name: "line", Type: pb.LedgerField_STRING, Pattern: `X: [0-9]+`},
}

func TestCheckFields(t *testing.T) {
	ok := `{"line":"X: 12","count":null,"byte_equal":true,"op":"compare"}`
	got, err := CheckFields(decl, []byte(ok))
	if err != nil || got != `{"byte_equal":true,"count":null,"line":"X: 12","op":"compare"}` {
		t.Fatalf("valid fields: %q %v", got, err)
	}
	for name, raw := range map[string]string{
		"undeclared key":      `{"op":"compare","byte_equal":true,"count":1,"line":"X: 1","extra":1}`,
		"missing field":       `{"op":"compare","byte_equal":true,"line":"X: 1"}`,
		"outside vocabulary":  `{"op":"CANARY","byte_equal":true,"count":1,"line":"X: 1"}`,
		"pattern not matched": `{"op":"compare","byte_equal":true,"count":1,"line":"X: 1 and more"}`,
		"wrong type":          `{"op":"compare","byte_equal":"yes","count":1,"line":"X: 1"}`,
		"null not nullable":   `{"op":"compare","byte_equal":null,"count":1,"line":"X: 1"}`,
		"object value":        `{"op":"compare","byte_equal":true,"count":{"a":1},"line":"X: 1"}`,
		"not an object":       `[1]`,
	} {
		_, err := CheckFields(decl, []byte(raw))
		if !errors.Is(err, ErrRefusedLine) {
			t.Errorf("%s: %v", name, err)
		} else if strings.Contains(err.Error(), "CANARY") {
			t.Errorf("%s: the error quotes a value", name)
		}
	}
}

func writeRates(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "rates.csv")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRatesFile(t *testing.T) {
	r, err := LoadRates(writeRates(t, "date,usd_cad\n2026-11-29,1.3945\n\n# note\n2026-11-30,1.40\n"), "BoC daily")
	if err != nil {
		t.Fatal(err)
	}
	c := r.For("2026-11-29")
	if c.Pending || *c.Rate != "1.3945" || *c.RateDate != "2026-11-29" || *c.Basis != "BoC daily" {
		t.Errorf("rate %+v", c)
	}
	if !r.For("2026-12-01").Pending || !(*Rates)(nil).For("2026-11-29").Pending {
		t.Error("a day without a rate must be cad_pending")
	}
	for _, bad := range []string{"2026-11-29;1.3\n", "2026-13-45,1.3\n", "2026-11-29,1.3e2\n"} {
		if _, err := LoadRates(writeRates(t, bad), "b"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

type fixture struct {
	st   *store.Store
	w    *Writer
	desc *pb.FamilyDescription
}

func newFixture(t *testing.T, kind string, rates *Rates) fixture {
	st := storetest.Open(t, kind)
	return fixture{st: st, w: &Writer{Store: st, Rates: rates, House: map[string]bool{"HOUSE": true}},
		desc: &pb.FamilyDescription{Service: "svc", CriteriaId: "svc/v1", CriteriaRevision: "1.0.0"}}
}

func (f fixture) pay(t *testing.T, at time.Time, payer, tx string, fee *int64) int64 {
	id, err := f.w.Append(context.Background(), Entry{Desc: f.desc, At: at, Payer: payer, PriceUnits: 50000, TxID: tx, FeeLamports: fee, Fields: `{"op":"x"}`})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAppendFillAndRefund(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			rates, _ := LoadRates(writeRates(t, "2026-11-29,1.3945\n"), "BoC daily")
			f := newFixture(t, kind, rates)
			d1 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			d2 := d1.Add(24 * time.Hour)
			f.pay(t, d1, "A", "tx1", nil)
			f.pay(t, d2, "HOUSE", "tx2", nil)
			lines, _ := f.st.Lines(ctx)
			if lines[0].CAD.Pending || *lines[0].CAD.Rate != "1.3945" || lines[0].House {
				t.Errorf("line 1: %+v", lines[0])
			}
			if !lines[1].CAD.Pending || !lines[1].House {
				t.Errorf("line 2 (house wallet, no rate yet): %+v", lines[1])
			}
			later, _ := LoadRates(writeRates(t, "2026-11-29,1.3945\n2026-11-30,1.4001\n"), "BoC daily")
			if r, err := FillFMV(ctx, f.st, later, d2, FillOptions{}); err != nil || r.Written != 1 || len(r.Waiting) != 0 {
				t.Fatalf("fill-fmv wrote %+v (%v), want 1", r, err)
			}
			if r, _ := FillFMV(ctx, f.st, later, d2, FillOptions{}); r.Written != 0 {
				t.Error("fill-fmv is not idempotent")
			}
			if _, err := Refund(ctx, f.st, RefundRequest{TxID: "tx1"}, d2); err != nil {
				t.Fatal(err)
			}
			if _, err := Refund(ctx, f.st, RefundRequest{TxID: "tx1"}, d2); !errors.Is(err, ErrAlreadyRefunded) {
				t.Errorf("second refund: %v", err)
			}
			if _, err := Refund(ctx, f.st, RefundRequest{TxID: "nope"}, d2); !errors.Is(err, ErrNoSuchTx) {
				t.Errorf("unknown tx: %v", err)
			}
			am, _ := f.st.Amendments(ctx)
			if len(am) != 2 || am[0].Kind != "fmv" || *am[0].CAD.Rate != "1.4001" || am[1].Kind != "refund" || *am[1].RefundUnits != 50000 {
				t.Errorf("amendments %+v", am)
			}
			after, _ := f.st.Lines(ctx)
			if !after[1].CAD.Pending {
				t.Error("the line itself was rewritten")
			}
		})
	}
}

// The figures below are worked by hand from the ledger each test writes.
func TestKillLineReport(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "sqlite", nil)
	day0 := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	fee := int64(5000)
	f.pay(t, day0.Add(-48*time.Hour), "HOUSE", "h1", nil) // a house proof: never Day-0
	f.pay(t, day0, "A", "t1", &fee)
	f.pay(t, day0.Add(24*time.Hour), "A", "t2", &fee)
	f.pay(t, day0.Add(48*time.Hour), "B", "t3", nil)
	f.pay(t, day0.Add(70*24*time.Hour), "C", "t4", &fee) // after the 60-day window
	if _, err := Refund(ctx, f.st, RefundRequest{TxID: "t3"}, day0.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// 40 free calls on Day-0's day for this service version
	for i := 0; i < 40; i++ {
		if _, err := f.st.AdmitFree(ctx, UsageScope("svc", "svc/v1", "1.0.0"), "k"+string(rune('a'+i)), day0, 100, 0); err != nil {
			t.Fatal(err)
		}
	}
	now := day0.Add(100 * 24 * time.Hour)
	r, err := Build(ctx, f.st, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Services) != 1 {
		t.Fatalf("services %d", len(r.Services))
	}
	s := r.Services[0]
	if s.Lines != 5 || s.HouseLines != 1 || s.OutsidePaidCalls != 4 || s.FreeCalls != 40 {
		t.Errorf("counts %+v", s)
	}
	if s.Day0 == nil || *s.Day0 != "2026-01-10T09:00:00Z" {
		t.Errorf("Day-0 %v", s.Day0)
	}
	c := s.Checkpoint60
	// window: t1, t2, t3; payers A, B; A repeats; t3 refunded; 40 free / 3 paid
	if !c.Reached || c.Usage != 3 || c.Payers != 2 || c.RepeatPayers != 1 || c.Refunds != 1 || c.FreeCalls != 40 || c.FreeVsPaid != "13.33" {
		t.Errorf("checkpoint %+v", c)
	}
	k := s.KeepPark
	if !k.MoreThanOnePayer || k.Payers != 3 || !k.AtLeastOneRepeatPayer || k.GrossUnits != 200000 || k.RefundedUnits != 50000 ||
		k.NetUnits != 150000 || k.RailFeesLamports != 15000 || k.LinesWithoutFee != 1 || k.At != "2026-07-10T09:00:00Z" {
		t.Errorf("six-month inputs %+v", k)
	}
	if ns, ok := k.NetAfterRailFees.(sdk.NotStated); !ok || ns.Token != "NOT-COMPUTABLE" || ns.Reason == "" {
		t.Errorf("net after rail fees %v", k.NetAfterRailFees)
	}
	// t3 (Jan 12) is refunded. The window ending Jan 12 holds t1–t3: 1/3;
	// the worst is the window ending Feb 10 (Jan 12–Feb 10), holding t3
	// alone: 1/1 = 100.0 %, the first window to reach that share.
	refund, free := s.Tripwires[0], s.Tripwires[1]
	if refund.State != "tripped" || refund.Figures["refund_share"] != "100.0%" || refund.Figures["worst_window_end"] != "2026-02-10" {
		t.Errorf("refund tripwire %+v", refund)
	}
	// 40 free calls > 10 × 4 paid? 40 > 40 is false
	if free.State != "clear" || free.Figures["free_calls"] != int64(40) {
		t.Errorf("free tripwire %+v", free)
	}
	if !strings.Contains(r.Text(), "Day-0: 2026-01-10T09:00:00Z") {
		t.Errorf("text report:\n%s", r.Text())
	}
}

func TestReportBeforeDay0(t *testing.T) {
	f := newFixture(t, "sqlite", nil)
	f.pay(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "HOUSE", "", nil)
	r, err := Build(context.Background(), f.st, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Services[0]
	if s.Day0 != nil || s.Checkpoint60 != nil || len(s.Tripwires) != 2 || s.Tripwires[0].State != "not computable" {
		t.Errorf("before Day-0: %+v", s)
	}
}

func TestNumberFieldWithATokenVocabulary(t *testing.T) {
	d := []*pb.LedgerField{{Name: "used_count", Type: pb.LedgerField_NUMBER, Vocabulary: []string{"NOT-COMPUTABLE"}}}
	for raw, ok := range map[string]bool{`{"used_count":3}`: true, `{"used_count":"NOT-COMPUTABLE"}`: true, `{"used_count":"3"}`: false, `{"used_count":"NOT COMPUTABLE"}`: false} {
		if _, err := CheckFields(d, []byte(raw)); (err == nil) != ok {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// The report lists every payment taken whose report is owed, and stops
// listing it once its line is delivered with the claim.
func TestReportListsClaimsNotIssued(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, "sqlite")
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, err := st.OpenClaim(ctx, store.Claim{PaymentID: "p", Service: "svc", Op: "compare", PriceUSDCUnits: 50000, Owner: "h/1", LeaseUntil: at, Created: at}); err != nil {
		t.Fatal(err)
	}
	if err := st.SettleClaim(ctx, "p", "h/1", store.Claim{TxID: "tx9", Payer: "payer9", Network: "n"}, at); err != nil {
		t.Fatal(err)
	}
	r, err := Build(ctx, st, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NotIssued) != 1 || r.NotIssued[0].TxID != "tx9" || r.NotIssued[0].State != "settled" || r.NotIssued[0].PriceUSDCUnits != 50000 ||
		!strings.Contains(r.Text(), "paid claims whose report is not yet issued: 1") || r.Issued != 0 {
		t.Fatalf("not issued %+v\n%s", r.NotIssued, r.Text())
	}
	w := &Writer{Store: st}
	desc := &pb.FamilyDescription{Service: "svc", CriteriaId: "svc/v1", CriteriaRevision: "1"}
	if _, err := w.Issue(ctx, Entry{Desc: desc, At: at, Payer: "payer9", PriceUnits: 50000, TxID: "tx9", Fields: "{}"}, "p", "h/1", nil); err != nil {
		t.Fatal(err)
	}
	if r, _ = Build(ctx, st, at); len(r.NotIssued) != 0 || r.Services[0].Lines != 1 || r.Issued != 1 || !strings.Contains(r.Text(), "issued paid claims: 1\n") {
		t.Errorf("after the issue: %+v", r)
	}
}
