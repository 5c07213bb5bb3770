package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/store"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// booksLine is a line a books test writes, and what it expects of it.
type booksLine struct {
	service, payer, tx string
	at                 time.Time
	price              int64
	id                 int64
}

func (l booksLine) house() bool { return l.payer == "HOUSE" }

// cadOf is a line's CAD at a rate, worked with big.Rat apart from the
// package's own decimals.
func cadOf(price int64, rate string) *big.Rat {
	r, ok := new(big.Rat).SetString(rate)
	if !ok {
		panic(rate)
	}
	return r.Mul(r, big.NewRat(price, 1_000_000))
}

func ratOf(t *testing.T, s string) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("not a decimal: %q", s)
	}
	return r
}

func TestBooksTotalsAndRows(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			d1 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			d2, d3 := d1.Add(24*time.Hour), d1.Add(48*time.Hour)
			first := map[string]string{store.Day(d1): "1.3945"}
			later := map[string]string{store.Day(d1): "1.3945", store.Day(d2): "1.4001"}
			rates, _ := LoadRates(writeRates(t, store.Day(d1)+","+first[store.Day(d1)]+"\n"), "BoC daily")
			f := newFixture(t, kind, rates)
			lines := []booksLine{
				{service: "alpha", payer: "A", tx: "ta", at: d1, price: 50000},
				{service: "alpha", payer: "B", tx: "tb", at: d2, price: 20001},
				{service: "beta", payer: "HOUSE", tx: "th", at: d2, price: 50000},
				{service: "beta", payer: "C", tx: "tc", at: d3, price: 7},
			}
			for i, l := range lines {
				desc := &pb.FamilyDescription{Service: l.service, CriteriaId: l.service + "/v1", CriteriaRevision: "1.0.0"}
				id, err := f.w.Append(ctx, Entry{Desc: desc, At: l.at, Payer: l.payer, PriceUnits: l.price, TxID: l.tx, Fields: `{"op":"x"}`})
				if err != nil {
					t.Fatal(err)
				}
				lines[i].id = id
			}
			more, _ := LoadRates(writeRates(t, store.Day(d1)+","+later[store.Day(d1)]+"\n"+store.Day(d2)+","+later[store.Day(d2)]+"\n"), "BoC daily")
			filled, err := FillFMV(ctx, f.st, more, d3, FillOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var wantWritten int
			var wantWaiting []int64
			for _, l := range lines {
				if _, ok := first[store.Day(l.at)]; ok {
					continue
				}
				if _, ok := later[store.Day(l.at)]; ok {
					wantWritten++
				} else {
					wantWaiting = append(wantWaiting, l.id)
				}
			}
			if filled.Written != wantWritten || len(filled.Waiting) != len(wantWaiting) || filled.Waiting[0].LineID != wantWaiting[0] || filled.Waiting[0].Day != store.Day(d3) {
				t.Fatalf("fill-fmv %+v, want %d written and lines %v waiting", filled, wantWritten, wantWaiting)
			}

			refunded := lines[0]
			if _, err := Refund(ctx, f.st, RefundRequest{TxID: "th"}, d3); !errors.Is(err, ErrHouseLine) {
				t.Errorf("a house line's refund without Force: %v", err)
			}
			if _, err := Refund(ctx, f.st, RefundRequest{TxID: refunded.tx, Reason: "bad\x00reason"}, d3); !errors.Is(err, servicestate.ErrReason) {
				t.Errorf("an unprintable reason: %v", err)
			}
			r, err := Refund(ctx, f.st, RefundRequest{TxID: refunded.tx, Reason: "asked within the day"}, d3)
			if err != nil || r.Units != refunded.price || r.Line.ID != refunded.id || *r.Line.Payer != refunded.payer {
				t.Fatalf("refund %+v %v", r, err)
			}

			books, err := LoadBooks(ctx, f.st)
			if err != nil {
				t.Fatal(err)
			}
			got, err := BuildBooks(books)
			if err != nil {
				t.Fatal(err)
			}
			type want struct {
				lines, cadLines, pending, refundedLines int
				units, refundedUnits                    int64
				cad                                     *big.Rat
			}
			add := func(w *want, l booksLine) {
				w.lines++
				w.units += l.price
				if rate, ok := later[store.Day(l.at)]; ok {
					w.cad.Add(w.cad, cadOf(l.price, rate))
					w.cadLines++
				} else {
					w.pending++
				}
				if l.tx == refunded.tx {
					w.refundedLines++
					w.refundedUnits += l.price
				}
			}
			newWant := func() *want { return &want{cad: new(big.Rat)} }
			check := func(what string, s Sums, w *want) {
				t.Helper()
				if s.Lines != w.lines || s.USDCUnits != w.units || s.CADLines != w.cadLines || s.CADPendingLines != w.pending ||
					s.RefundedLines != w.refundedLines || s.RefundedUnits != w.refundedUnits || s.NetUnits != w.units-w.refundedUnits {
					t.Errorf("%s: %+v, want %+v", what, s, *w)
				}
				if ratOf(t, s.USDC).Cmp(big.NewRat(w.units, 1_000_000)) != 0 || ratOf(t, s.NetUSDC).Cmp(big.NewRat(w.units-w.refundedUnits, 1_000_000)) != 0 {
					t.Errorf("%s: USDC %s net %s, want %d and %d units", what, s.USDC, s.NetUSDC, w.units, w.units-w.refundedUnits)
				}
				if ratOf(t, s.CAD).Cmp(w.cad) != 0 {
					t.Errorf("%s: CAD %s, want exactly %s", what, s.CAD, w.cad.RatString())
				}
			}
			outside, house := newWant(), newWant()
			bySvc, byDay := map[string][2]*want{}, map[string][2]*want{}
			for _, l := range lines {
				for _, m := range []struct {
					m map[string][2]*want
					k string
				}{{bySvc, l.service}, {byDay, store.Day(l.at)}} {
					if _, ok := m.m[m.k]; !ok {
						m.m[m.k] = [2]*want{newWant(), newWant()}
					}
				}
				i := 0
				if l.house() {
					i = 1
					add(house, l)
				} else {
					add(outside, l)
				}
				add(bySvc[l.service][i], l)
				add(byDay[store.Day(l.at)][i], l)
			}
			check("all outside", got.All.Outside, outside)
			check("all house", got.All.House, house)
			if len(got.ByService) != len(bySvc) || len(got.ByDay) != len(byDay) {
				t.Fatalf("by service %d, by day %d; want %d and %d", len(got.ByService), len(got.ByDay), len(bySvc), len(byDay))
			}
			for _, s := range got.ByService {
				check("service "+s.Service+" outside", s.Outside, bySvc[s.Service][0])
				check("service "+s.Service+" house", s.House, bySvc[s.Service][1])
			}
			for _, d := range got.ByDay {
				check("day "+d.Day+" outside", d.Outside, byDay[d.Day][0])
				check("day "+d.Day+" house", d.House, byDay[d.Day][1])
			}
			if len(got.CADBases) != 1 || got.CADBases[0] != "BoC daily" {
				t.Errorf("bases %v", got.CADBases)
			}
			if text := got.Text(); !strings.Contains(text, "service alpha:") || !strings.Contains(text, "day "+store.Day(d3)+":") {
				t.Errorf("books text:\n%s", text)
			}

			rows, err := Rows(books, store.Day(d2), store.Day(d2))
			if err != nil {
				t.Fatal(err)
			}
			var inD2 []booksLine
			for _, l := range lines {
				if store.Day(l.at) == store.Day(d2) {
					inD2 = append(inD2, l)
				}
			}
			if len(rows) != len(inD2) {
				t.Fatalf("rows of %s: %d, want %d", store.Day(d2), len(rows), len(inD2))
			}
			for i, row := range rows {
				l := inD2[i]
				if row.ID != l.id || row.PriceUSDCUnits != l.price || *row.Payer != l.payer || *row.TxID != l.tx || row.House != l.house() ||
					row.CADPending || *row.CADRate != later[store.Day(l.at)] || row.CADAmendmentID == nil || row.RefundUSDCUnits != nil {
					t.Errorf("row %+v, line %+v", row, l)
				}
				if ratOf(t, *row.CADAmount).Cmp(cadOf(l.price, later[store.Day(l.at)])) != 0 || ratOf(t, row.PriceUSDC).Cmp(big.NewRat(l.price, 1_000_000)) != 0 {
					t.Errorf("row %d: CAD %s, USDC %s", row.ID, *row.CADAmount, row.PriceUSDC)
				}
			}
			all, _ := Rows(books, "", "")
			if len(all) != len(lines) || all[0].RefundUSDCUnits == nil || *all[0].RefundUSDCUnits != refunded.price || *all[0].RefundReason != "asked within the day" ||
				all[0].CADAmendmentID != nil || !all[len(all)-1].CADPending || all[len(all)-1].CADAmount != nil {
				t.Errorf("all rows %+v", all)
			}
		})
	}
}

func TestFillFMVRefusesAnotherBasis(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			d1 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			d2 := d1.Add(24 * time.Hour)
			daily, _ := LoadRates(writeRates(t, store.Day(d1)+",1.3945\n"+store.Day(d2)+",1.4001\n"), "BoC daily")
			f := newFixture(t, kind, daily)
			f.pay(t, d1, "A", "t1", nil)
			f.pay(t, d2, "B", "t2", nil)
			noon, _ := LoadRates(writeRates(t, store.Day(d1)+",1.3950\n"), "BoC noon")
			_, err := FillFMV(ctx, f.st, noon, d2, FillOptions{})
			var conflict *BasisConflictError
			if !errors.As(err, &conflict) || conflict.Lines != 2 || conflict.Want != "BoC noon" || len(conflict.Have) != 1 || conflict.Have[0] != "BoC daily" ||
				!strings.Contains(err.Error(), `"BoC daily"`) || !strings.Contains(err.Error(), `"BoC noon"`) {
				t.Fatalf("another basis without Rebasis: %v", err)
			}
			if am, _ := f.st.Amendments(ctx); len(am) != 0 {
				t.Fatalf("a refused run wrote %d rows", len(am))
			}
			r, err := FillFMV(ctx, f.st, noon, d2, FillOptions{Rebasis: true})
			if err != nil || r.Written != 1 || r.Rebased != 1 || len(r.OtherBasis) != 1 || r.OtherBasis[0].Day != store.Day(d2) || r.OtherBasis[0].Basis != "BoC daily" {
				t.Fatalf("rebasis %+v %v", r, err)
			}
			books, _ := LoadBooks(ctx, f.st)
			if books[0].Basis() != "BoC noon" || *books[0].CAD.Rate != "1.3950" || books[1].Basis() != "BoC daily" {
				t.Errorf("after rebasis: %s %s", books[0].Basis(), books[1].Basis())
			}
			if b, _ := BuildBooks(books); len(b.CADBases) != 2 || !strings.Contains(b.Text(), "MIXED bases") {
				t.Errorf("mixed bases not said: %v", b.CADBases)
			}
		})
	}
}

// The decimals are checked against values worked by hand.
func TestExactDecimals(t *testing.T) {
	for units, want := range map[int64]string{0: "0.000000", 1: "0.000001", 50000: "0.050000", 123456789: "123.456789", -20001: "-0.020001"} {
		if got := USDC(units); got != want {
			t.Errorf("USDC(%d) = %s, want %s", units, got, want)
		}
	}
	for _, c := range []struct {
		price int64
		rate  string
		want  string
	}{{50000, "1.3945", "0.069725"}, {1, "1.3945", "0.0000013945"}, {1_000_000, "1.40", "1.40"}, {1_000_000, "2", "2.00"}, {7, "0.5", "0.0000035"}} {
		b := Book{Line: store.Line{PriceUSDCUnits: c.price}, CAD: store.CAD{Rate: &c.rate}}
		if got, ok, err := b.CADAmount(); err != nil || !ok || got != c.want {
			t.Errorf("%d units at %s: %s %v %v, want %s", c.price, c.rate, got, ok, err, c.want)
		}
	}
	var sum decimal
	for _, x := range []decimal{{c: big.NewInt(69725), scale: 6}, {c: big.NewInt(13945), scale: 10}, {c: big.NewInt(2), scale: 0}} {
		sum.add(&x)
	}
	if got := sum.String(); got != "2.0697263945" {
		t.Errorf("sum %s", got)
	}
	bad := "1e3"
	if _, _, err := (Book{CAD: store.CAD{Rate: &bad}}).CADAmount(); !errors.Is(err, errRate) {
		t.Errorf("a rate that is no plain decimal: %v", err)
	}
}

// The CSV header and the JSON objects name the same fields in the same
// order, so the two formats of one export read alike.
func TestColumnsAreTheRowsJSONNames(t *testing.T) {
	raw, err := json.Marshal(Row{FamilyFields: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var names []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(names, Columns) {
		t.Errorf("JSON names %v\nCSV columns %v", names, Columns)
	}
	if got := len(Row{}.record()); got != len(Columns) {
		t.Errorf("a CSV record has %d fields, the header %d", got, len(Columns))
	}
}
