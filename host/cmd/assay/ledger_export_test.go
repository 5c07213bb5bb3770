package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// bookLine is a line the books tests write, with what they expect of it.
type bookLine struct {
	service, payer, tx string
	at                 time.Time
	price              int64
	house              bool
	rate               string // the CAD rate written on the line ("" for pending)
	id                 int64
}

// booksFixture writes lines into a fresh store of kind and returns the
// flags that name it.
func booksFixture(t *testing.T, kind string, lines []bookLine) []string {
	t.Helper()
	spec, dir := storetest.Spec(t, kind)
	ctx := context.Background()
	st, err := store.Open(ctx, spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, l := range lines {
		payer, tx := l.payer, l.tx
		cad := store.CAD{Pending: true}
		if l.rate != "" {
			rate, day, basis := l.rate, store.Day(l.at), "BoC daily"
			cad = store.CAD{Rate: &rate, RateDate: &day, Basis: &basis}
		}
		id, err := st.AppendLine(ctx, store.Line{Service: l.service, CriteriaID: l.service + "/v1", CriteriaRevision: "1.0.0", At: l.at,
			Payer: &payer, PriceUSDCUnits: l.price, TxID: &tx, House: l.house, CAD: cad, FamilyFields: `{"op":"compare"}`})
		if err != nil {
			t.Fatal(err)
		}
		lines[i].id = id
	}
	return []string{"--store", spec, "--data-dir", dir}
}

// ledgerRun runs `assay ledger <args> <where>` in process.
func ledgerRun(where []string, args ...string) (stdout, stderr string, err error) {
	var out, errs bytes.Buffer
	err = run(append(append([]string{"ledger"}, args...), where...), &out, &errs)
	return out.String(), errs.String(), err
}

func writeRatesFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rates.csv")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// units prints USDC units as dollars, worked apart from the ledger's own.
func usdcOf(n int64) string { return big.NewRat(n, 1_000_000).FloatString(6) }

func cadAt(price int64, rate string) *big.Rat {
	r, _ := new(big.Rat).SetString(rate)
	return r.Mul(r, big.NewRat(price, 1_000_000))
}

func sameDecimal(t *testing.T, got string, want *big.Rat) bool {
	t.Helper()
	r, ok := new(big.Rat).SetString(got)
	return ok && r.Cmp(want) == 0
}

func TestLedgerBooksCommands(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			d1 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			d2, d3 := d1.Add(24*time.Hour), d1.Add(48*time.Hour)
			lines := []bookLine{
				{service: "alpha", payer: "PayerA", tx: "txA", at: d1, price: 50000, rate: "1.3945"},
				{service: "alpha", payer: "PayerB", tx: "txB", at: d2, price: 20001},
				{service: "beta", payer: "HouseW", tx: "txH", at: d2.Add(time.Hour), price: 50000, house: true},
				{service: "beta", payer: "PayerC", tx: "txC", at: d3, price: 123457},
			}
			where := booksFixture(t, kind, lines)
			// the rates file covers d2 only: the d3 line keeps waiting
			fileRates := map[string]string{store.Day(d2): "1.4001"}
			rate := func(l bookLine) string {
				if l.rate != "" {
					return l.rate
				}
				return fileRates[store.Day(l.at)]
			}
			rates := writeRatesFile(t, "date,usd_cad\n"+store.Day(d2)+","+fileRates[store.Day(d2)]+"\n")

			out, _, err := ledgerRun(where, "fill-fmv", "--basis", "BoC daily", rates)
			var written int
			var waiting []bookLine
			for _, l := range lines {
				switch {
				case l.rate != "":
				case rate(l) != "":
					written++
				default:
					waiting = append(waiting, l)
				}
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d lines still wait for a rate on days %s", len(waiting), store.Day(waiting[0].at))) {
				t.Errorf("fill-fmv with a day missing: %v", err)
			}
			if !strings.Contains(out, fmt.Sprintf("%d amendment rows written", written)) {
				t.Errorf("fill-fmv said:\n%s", out)
			}
			for _, l := range waiting {
				if !strings.Contains(out, fmt.Sprintf("line %d (day %s) waits for a rate", l.id, store.Day(l.at))) {
					t.Errorf("fill-fmv does not list line %d:\n%s", l.id, out)
				}
			}
			// another basis: refused, naming both, and nothing written
			if _, _, err := ledgerRun(where, "fill-fmv", "--basis", "BoC noon", rates); err == nil ||
				!strings.Contains(err.Error(), `"BoC daily"`) || !strings.Contains(err.Error(), `"BoC noon"`) || !strings.Contains(err.Error(), "--rebasis") {
				t.Errorf("fill-fmv under another basis: %v", err)
			}

			// refunds: a house line needs --force; an outside one says what it records
			house, refunded := lines[2], lines[0]
			if _, _, err := ledgerRun(where, "refund", house.tx); err == nil || !strings.Contains(err.Error(), "house line") || !strings.Contains(err.Error(), "--force") {
				t.Errorf("refund of a house line: %v", err)
			}
			reason := "charged twice for one log"
			out, _, err = ledgerRun(where, "refund", refunded.tx, "--reason", reason)
			if err != nil {
				t.Fatalf("refund: %v", err)
			}
			for _, want := range []string{fmt.Sprintf("line %d", refunded.id), refunded.payer, fmt.Sprintf("%d USDC units (%s USDC)", refunded.price, usdcOf(refunded.price)),
				reason, "moves no money"} {
				if !strings.Contains(out, want) {
					t.Errorf("refund output lacks %q:\n%s", want, out)
				}
			}
			if _, _, err := ledgerRun(where, "refund", "--force", house.tx); err != nil {
				t.Errorf("refund of a house line with --force: %v", err)
			}
			refunds := map[string]string{refunded.tx: reason, house.tx: ""}

			// export, CSV: every line, amendments applied
			out, errs, err := ledgerRun(where, "export")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errs, "store: ") || strings.Contains(out, "store: ") {
				t.Errorf("the store line belongs on standard error: %q", errs)
			}
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(recs) != len(lines)+1 {
				t.Fatalf("CSV (%v):\n%s", err, out)
			}
			col := map[string]int{}
			for i, name := range recs[0] {
				col[name] = i
			}
			for i, l := range lines {
				rec := func(name string) string {
					j, ok := col[name]
					if !ok {
						t.Fatalf("no column %s in %v", name, recs[0])
					}
					return recs[i+1][j]
				}
				if rec("id") != strconv.FormatInt(l.id, 10) || rec("service") != l.service || rec("payer") != l.payer || rec("tx_id") != l.tx ||
					rec("day") != store.Day(l.at) || rec("price_usdc_units") != strconv.FormatInt(l.price, 10) || rec("price_usdc") != usdcOf(l.price) ||
					rec("house") != strconv.FormatBool(l.house) || rec("family_fields") != `{"op":"compare"}` {
					t.Errorf("CSV row %v, line %+v", recs[i+1], l)
				}
				if r := rate(l); r == "" {
					if rec("cad_pending") != "true" || rec("cad_amount") != "" {
						t.Errorf("line %d waits for a rate: %v", l.id, recs[i+1])
					}
				} else if rec("cad_rate") != r || rec("cad_basis") != "BoC daily" || !sameDecimal(t, rec("cad_amount"), cadAt(l.price, r)) {
					t.Errorf("line %d CAD: %v, want %s × %s", l.id, recs[i+1], usdcOf(l.price), r)
				}
				if why, ok := refunds[l.tx]; ok {
					if rec("refund_usdc_units") != strconv.FormatInt(l.price, 10) || rec("refund_reason") != why {
						t.Errorf("line %d refund: %v", l.id, recs[i+1])
					}
				} else if rec("refund_usdc_units") != "" {
					t.Errorf("line %d was not refunded: %v", l.id, recs[i+1])
				}
			}

			// export, JSON, one day: the lines of that day only
			out, _, err = ledgerRun(where, "export", "--format", "json", "--from", store.Day(d2), "--to", store.Day(d2))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.UseNumber()
			var rows []map[string]any
			if err := dec.Decode(&rows); err != nil {
				t.Fatalf("JSON: %v\n%s", err, out)
			}
			var ids []string
			for _, l := range lines {
				if store.Day(l.at) == store.Day(d2) {
					ids = append(ids, strconv.FormatInt(l.id, 10))
				}
			}
			var got []string
			for _, r := range rows {
				got = append(got, string(r["id"].(json.Number)))
				if _, ok := r["family_fields"].(map[string]any); !ok {
					t.Errorf("family_fields is not an object: %v", r["family_fields"])
				}
			}
			if !slices.Equal(got, ids) {
				t.Errorf("JSON rows of %s: %v, want %v", store.Day(d2), got, ids)
			}
			for _, bad := range [][]string{{"--from", "2026-13-01"}, {"--to", "29-11-2026"}, {"--from", store.Day(d3), "--to", store.Day(d1)}, {"--format", "xml"}} {
				if _, _, err := ledgerRun(where, append([]string{"export"}, bad...)...); err == nil || !strings.Contains(err.Error(), "ledger export: ") {
					t.Errorf("export %v: %v", bad, err)
				}
			}
			if _, _, err := ledgerRun(where, "report", "--from", store.Day(d1)); err == nil {
				t.Error("report --from was taken and ignored")
			}

			// report: the money, outside and house apart
			out, _, err = ledgerRun(where, "report", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Books struct {
					All       struct{ Outside, House map[string]any } `json:"all"`
					ByService []struct {
						Service        string `json:"service"`
						Outside, House map[string]any
					} `json:"by_service"`
					ByDay []struct {
						Day            string `json:"day"`
						Outside, House map[string]any
					} `json:"by_day"`
				} `json:"books"`
			}
			dec = json.NewDecoder(strings.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("report JSON: %v\n%s", err, out)
			}
			check := func(what string, got map[string]any, keep func(bookLine) bool) {
				t.Helper()
				var n, pending, refundedN int
				var sum, refundedSum int64
				cad := new(big.Rat)
				for _, l := range lines {
					if !keep(l) {
						continue
					}
					n++
					sum += l.price
					if r := rate(l); r != "" {
						cad.Add(cad, cadAt(l.price, r))
					} else {
						pending++
					}
					if _, ok := refunds[l.tx]; ok {
						refundedN++
						refundedSum += l.price
					}
				}
				want := map[string]string{"lines": strconv.Itoa(n), "usdc_units": strconv.FormatInt(sum, 10), "cad_pending_lines": strconv.Itoa(pending),
					"refunded_lines": strconv.Itoa(refundedN), "refunded_usdc_units": strconv.FormatInt(refundedSum, 10),
					"net_usdc_units": strconv.FormatInt(sum-refundedSum, 10), "usdc": usdcOf(sum)}
				for k, v := range want {
					if fmt.Sprint(got[k]) != v {
						t.Errorf("%s %s = %v, want %s", what, k, got[k], v)
					}
				}
				if s, _ := got["cad"].(string); !sameDecimal(t, s, cad) {
					t.Errorf("%s cad = %v, want exactly %s", what, got["cad"], cad.RatString())
				}
			}
			check("all outside", rep.Books.All.Outside, func(l bookLine) bool { return !l.house })
			check("all house", rep.Books.All.House, func(l bookLine) bool { return l.house })
			for _, s := range rep.Books.ByService {
				check("service "+s.Service, s.Outside, func(l bookLine) bool { return !l.house && l.service == s.Service })
				check("service "+s.Service+" house", s.House, func(l bookLine) bool { return l.house && l.service == s.Service })
			}
			for _, d := range rep.Books.ByDay {
				check("day "+d.Day, d.Outside, func(l bookLine) bool { return !l.house && store.Day(l.at) == d.Day })
				check("day "+d.Day+" house", d.House, func(l bookLine) bool { return l.house && store.Day(l.at) == d.Day })
			}
			if len(rep.Books.ByService) != 2 || len(rep.Books.ByDay) != 3 {
				t.Errorf("by service %d, by day %d", len(rep.Books.ByService), len(rep.Books.ByDay))
			}
			out, _, err = ledgerRun(where, "report")
			if err != nil || !strings.Contains(out, "books (") || !strings.Contains(out, "Day-0: "+d1.Format(time.RFC3339Nano)) {
				t.Errorf("report text: %v\n%s", err, out)
			}

			// --rebasis: every line re-rated under the new basis, and done
			var all strings.Builder
			all.WriteString("date,usd_cad\n")
			noon := map[string]string{store.Day(d1): "1.3950", store.Day(d2): "1.4010", store.Day(d3): "1.3990"}
			for _, d := range []time.Time{d1, d2, d3} {
				all.WriteString(store.Day(d) + "," + noon[store.Day(d)] + "\n")
			}
			out, _, err = ledgerRun(where, "fill-fmv", "--basis", "BoC noon", "--rebasis", writeRatesFile(t, all.String()))
			if err != nil || !strings.Contains(out, "every line has a CAD rate under basis \"BoC noon\"") {
				t.Fatalf("fill-fmv --rebasis: %v\n%s", err, out)
			}
			out, _, err = ledgerRun(where, "export", "--format", "json")
			if err != nil {
				t.Fatal(err)
			}
			var after []struct {
				ID        int64   `json:"id"`
				Basis     *string `json:"cad_basis"`
				CADAmount *string `json:"cad_amount"`
			}
			if err := json.Unmarshal([]byte(out), &after); err != nil || len(after) != len(lines) {
				t.Fatalf("JSON after rebasis (%v):\n%s", err, out)
			}
			for i, r := range after {
				l := lines[i]
				if r.ID != l.id || r.Basis == nil || *r.Basis != "BoC noon" || r.CADAmount == nil || !sameDecimal(t, *r.CADAmount, cadAt(l.price, noon[store.Day(l.at)])) {
					t.Errorf("after rebasis: %+v, line %+v", r, l)
				}
			}
		})
	}
}
