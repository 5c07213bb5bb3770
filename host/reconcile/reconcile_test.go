package reconcile

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
)

// fakeChain holds transactions and the token account's history, newest
// first.
type fakeChain struct {
	txs     map[string]*solanarpc.Transaction
	history []solanarpc.SignatureInfo
	pages   int
}

func (f *fakeChain) GetTransaction(_ context.Context, sig string) (*solanarpc.Transaction, error) {
	return f.txs[sig], nil
}

func (f *fakeChain) Signatures(_ context.Context, _, before string, limit int) ([]solanarpc.SignatureInfo, error) {
	f.pages++
	from := 0
	if before != "" {
		for i, s := range f.history {
			if s.Signature == before {
				from = i + 1
			}
		}
	}
	end := min(from+limit, len(f.history))
	return f.history[from:end], nil
}

const (
	payTo = "Seller1111111111111111111111111111111111111"
	asset = "Mint11111111111111111111111111111111111111"
)

// transfer is a landed transaction moving amount to pay_to, with memo.
func (f *fakeChain) transfer(t *testing.T, sig string, amount int64, memo string, failed bool) {
	_, payer, _ := ed25519.GenerateKey(nil)
	fee, _, _ := ed25519.GenerateKey(nil)
	var feeKey, key solana.PublicKey
	copy(feeKey[:], fee)
	copy(key[:], payer.Public().(ed25519.PublicKey))
	tx, err := solana.BuildExactTransfer(solana.BuildParams{FeePayer: feeKey, Payer: payer, PayTo: key, Mint: key,
		TokenProgram: solana.TokenProgram(), Amount: uint64(amount), Decimals: 6, Memo: []byte(memo)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &solanarpc.Transaction{Wire: tx.Serialize(),
		Pre:  []solanarpc.TokenBalance{{AccountIndex: 2, Mint: asset, Owner: payTo, Amount: 1000}, {AccountIndex: 3, Mint: asset, Owner: "Payer", Amount: 9000}},
		Post: []solanarpc.TokenBalance{{AccountIndex: 2, Mint: asset, Owner: payTo, Amount: 1000 + amount}, {AccountIndex: 3, Mint: asset, Owner: "Payer", Amount: 9000 - amount}}}
	if failed {
		tr.Err = json.RawMessage(`{"InstructionError":[2,{"Custom":1}]}`)
		tr.Post = tr.Pre
	}
	f.txs[sig] = tr
	f.history = append([]solanarpc.SignatureInfo{{Signature: sig, Slot: uint64(len(f.history) + 1), Err: tr.Err}}, f.history...)
}

func line(id int64, tx string, price int64, house bool) store.Line {
	return store.Line{ID: id, Service: "stream-divergence", TxID: &tx, PriceUSDCUnits: price, House: house}
}

var books = Books{PayTo: payTo, Asset: asset, TokenAccount: "ATA", MemoPrefix: "assay:"}

// Each kind of disagreement is found once and named: a line whose
// transaction the chain lacks, one that failed, one that moved another
// amount; a transfer with this host's memo and no line; and nothing of
// lines that match, house lines, or transfers with another memo.
func TestReconcileFindsEachDisagreement(t *testing.T) {
	f := &fakeChain{txs: map[string]*solanarpc.Transaction{}}
	memo := "assay:0123456789abcdef0123456789abcdef"
	f.transfer(t, "ok", 50000, memo, false)
	f.transfer(t, "short", 40000, memo, false)
	f.transfer(t, "failed", 50000, memo, true)
	f.transfer(t, "unrecorded", 50000, memo, false)
	f.transfer(t, "someone-else", 70000, "a gift", false)
	lines := []store.Line{line(1, "ok", 50000, false), line(2, "short", 50000, false), line(3, "failed", 50000, false),
		line(4, "gone", 50000, false), line(5, "house-proof", 50000, true)}
	r, err := Run(context.Background(), f, lines, books)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, l := range r.Lines {
		got = append(got, fmt.Sprintf("%d:%s:%d", l.LineID, l.Problem, l.ReceivedUSDCUnits))
	}
	if strings.Join(got, " ") != "2:different:40000 3:failed:0 4:missing:0" {
		t.Errorf("lines not matching: %v", got)
	}
	if len(r.Unrecorded) != 1 || r.Unrecorded[0].Transaction != "unrecorded" || r.Unrecorded[0].ReceivedUSDCUnits != 50000 || r.Unrecorded[0].Memo != memo {
		t.Errorf("transfers without a line: %+v", r.Unrecorded)
	}
	if r.LinesChecked != 4 || r.TransfersScanned != 5 || r.Clean() {
		t.Errorf("counts: %+v", r)
	}
	text := r.Text()
	for _, want := range []string{"line 2 (stream-divergence): transaction short moved 40000 to pay_to, the line says 50000",
		"line 4 (stream-divergence): transaction gone is not on the chain", "transfer unrecorded (slot 4) moved 50000",
		"4 paid lines checked, 5 transactions of the token account read: 3 lines not matching, 1 transfers without a line"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
}

// The whole history is read, page after page, and books that agree are
// clean.
func TestReconcileReadsEveryPage(t *testing.T) {
	f := &fakeChain{txs: map[string]*solanarpc.Transaction{}}
	var lines []store.Line
	for i := 0; i < 2*pageSize+3; i++ {
		sig := fmt.Sprintf("tx%d", i)
		f.transfer(t, sig, 10, "assay:00000000000000000000000000000000", false)
		if i != 7 {
			lines = append(lines, line(int64(i), sig, 10, false))
		}
	}
	r, err := Run(context.Background(), f, lines, books)
	if err != nil {
		t.Fatal(err)
	}
	if f.pages != 3 || r.TransfersScanned != 2*pageSize+3 || len(r.Unrecorded) != 1 || r.Unrecorded[0].Transaction != "tx7" || len(r.Lines) != 0 {
		t.Errorf("pages %d, %d scanned, unrecorded %+v, lines %+v", f.pages, r.TransfersScanned, r.Unrecorded, r.Lines)
	}
	r, _ = Run(context.Background(), f, append(lines, line(7, "tx7", 10, false)), books)
	if !r.Clean() {
		t.Errorf("agreeing books: %s", r.Text())
	}
}

// On a store that settles on a chain, a house line written since it does
// is checked like a paid one: a house proof (its transaction never on the
// chain) and a payments-off line (no transaction) are listed as house
// lines; a house wallet's real payment agrees and its transfer is not
// listed without a line; a house line from before the store settled is
// the operator's own proof, not looked up.
func TestReconcileListsHouseLinesOnAStoreThatSettles(t *testing.T) {
	f := &fakeChain{txs: map[string]*solanarpc.Transaction{}}
	memo := "assay:0123456789abcdef0123456789abcdef"
	f.transfer(t, "paid", 50000, memo, false)
	f.transfer(t, "wallet", 50000, memo, false)
	since := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(l store.Line, d time.Duration) store.Line { l.At = since.Add(d); return l }
	off := store.Line{ID: 5, Service: "stream-divergence", House: true, At: since.Add(time.Hour)}
	lines := []store.Line{at(line(1, "early-proof", 50000, true), -time.Hour), at(line(2, "paid", 50000, false), 0),
		at(line(3, "late-proof", 50000, true), time.Minute), at(line(4, "wallet", 50000, true), 2*time.Minute), off}
	b := books
	b.SettlesSince = since
	r, err := Run(context.Background(), f, lines, b)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, l := range r.Lines {
		got = append(got, fmt.Sprintf("%d:%s", l.LineID, l.Problem))
	}
	if strings.Join(got, " ") != "3:house 5:house" || len(r.Unrecorded) != 0 || r.LinesChecked != 4 || r.Clean() {
		t.Errorf("lines not matching %v, unrecorded %+v, checked %d", got, r.Unrecorded, r.LinesChecked)
	}
	if text := r.Text(); !strings.Contains(text, `line 3 (stream-divergence): a house line (transaction "late-proof") on a store that settles on a chain`) {
		t.Errorf("the text:\n%s", text)
	}
	// books that name no settlement instant: house lines are not looked up
	if r, _ := Run(context.Background(), f, lines, books); len(r.Lines) != 0 || r.LinesChecked != 1 {
		t.Errorf("a house store: %s", r.Text())
	}
}
