package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(yardstickEnv); addr != "" {
		serveYardstick(addr) // BenchmarkSmallRequests's yardstick process
		os.Exit(0)
	}
	if url := os.Getenv(floodEnv); url != "" {
		floodUntilStdinCloses(url) // BenchmarkPaidUnderFreeFlood's flood process
		os.Exit(0)
	}
	code := m.Run()
	testhost.Cleanup()
	os.Exit(code)
}

func freePort(t *testing.T) string { return testhost.FreePort(t) }

// startHost runs `assay serve` as its own process.
func startHost(t *testing.T, bin, cfg, dataDir, storeURL string) string {
	addr := freePort(t)
	args := []string{"serve", "--config", cfg, "--listen", addr, "--data-dir", dataDir, "--store", storeURL}
	if raw, _ := os.ReadFile(cfg); !bytes.Contains(raw, []byte("payments =")) {
		args = append(args, "--payments", "house") // the config names none: take none
	}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	url := "http://" + addr
	if startOver(url, 15*time.Second, nil) {
		return url
	}
	t.Fatalf("host did not start:\n%s", logs.String())
	return ""
}

// Two host processes on one PostgreSQL share one free tier and one ledger.
func TestTwoHostProcessesShareOnePostgres(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	plugin := testhost.Plugin(t, "plugins/stream-divergence")
	sum, err := pluginhost.PinOf(plugin)
	if err != nil {
		t.Fatal(err)
	}
	// each host its own data dir; they share the key secret, the local
	// facilitator's fee payer and the seller, as a fleet does
	shared := t.TempDir()
	secret, feePayer := filepath.Join(shared, "keys.secret"), filepath.Join(shared, "fee-payer.json")
	if err := signing.NewSecret(secret); err != nil {
		t.Fatal(err)
	}
	if _, err := wallet.New(feePayer); err != nil {
		t.Fatal(err)
	}
	seller, err := wallet.New(filepath.Join(shared, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(shared, "assay.hcl")
	// every one of the burst below must reach the free tier: room to wait
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf("plugin_dir = %q\nplugin \"stream-divergence\" {\n  path = %q\n  sha256 = %q\n}\n"+
		"admission {\n  waiting = 200\n  wait = \"60s\"\n}\nkeys_secret_file = %q\nfee_payer_key_file = %q\npay_to = %q\n",
		filepath.Dir(plugin), filepath.Base(plugin), sum, secret, feePayer, solana.EncodeBase58(seller.Public().(ed25519.PublicKey)))), 0o600)
	pg := storetest.PostgresURL(t)
	urls := []string{startHost(t, bin, cfg, t.TempDir(), pg), startHost(t, bin, cfg, t.TempDir(), pg)}

	chunk := base64.StdEncoding.EncodeToString([]byte("abc"))
	body := []byte(`{"caller":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin","streamed_capture":{"chunks":["` + chunk + `"]},"reference_output":{"chunks":["` + chunk + `"]}}`)
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(urls[i%2]+"/stream-divergence/precheck", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[200] != 1 || statuses[429] != 199 {
		t.Fatalf("200 pre-checks over two hosts inside one interval: %v, want exactly one admitted", statuses)
	}
	// paid calls (the embedded local facilitator, both hosts sharing the
	// data dir's fee payer and seller) alternate hosts; a payment issued on
	// one host is answered again by the other, the same answer byte for
	// byte (the hosts share a key secret, so either opens what the other
	// kept)
	priv, err := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &sigRecorder{}
	payer := &x402.Payer{Wallet: priv, Client: &http.Client{Transport: rec}}
	var last []byte
	for i := 0; i < 4; i++ {
		res, err := payer.Call(context.Background(), urls[i%2]+"/stream-divergence/compare", body)
		if err != nil || res.Status != 200 {
			t.Fatalf("paid compare %d: %v %+v", i, err, res)
		}
		last = res.Body
	}
	st, err := store.Open(context.Background(), pg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// a paid answer's line commits before the answer is written
	lines, err := st.Lines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 {
		t.Fatalf("ledger lines %d, want 4 from both hosts", len(lines))
	}
	req, _ := http.NewRequest("POST", urls[0]+"/stream-divergence/compare", bytes.NewReader(body))
	req.Header.Set("PAYMENT-SIGNATURE", rec.last)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(again, last) {
		t.Fatalf("a payment issued on host B, sent again to host A: %d %.200s", resp.StatusCode, again)
	}
	for _, l := range lines {
		// local facilitator: house proofs at the criteria's price, no rate
		// file so CAD pending, the family's closed fields with the stored
		// verdict line
		if !l.House || l.PriceUSDCUnits != 50000 || !l.CAD.Pending || l.Payer == nil || l.TxID == nil || l.FeeLamports == nil ||
			!strings.HasPrefix(l.FamilyFields, `{"byte_equal":true,"op":"compare","verdict_line":"STREAM-CAPTURE DIVERGENCE — byte-equal: YES`) {
			t.Errorf("line %+v", l)
		}
	}
	var out, said bytes.Buffer
	if err := run([]string{"ledger", "report", "--json", "--store", pg}, &out, &said); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said.String(), "store: postgres 127.0.0.1:5432/test schema assay_t_") {
		t.Errorf("the report did not name its store: %q", said.String())
	}
	var rep struct {
		Services []struct {
			Service    string `json:"service"`
			Lines      int    `json:"ledger_lines"`
			HouseLines int    `json:"house_lines"`
			FreeCalls  int64  `json:"free_calls"`
			Day0       *string
		} `json:"services"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out.String())
	}
	if len(rep.Services) != 1 || rep.Services[0].Lines != 4 || rep.Services[0].HouseLines != 4 || rep.Services[0].FreeCalls != 1 || rep.Services[0].Day0 != nil {
		t.Errorf("report %+v", rep)
	}
}

func TestLedgerCommands(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tx := "5VERYlongTx"
	if _, err := st.AppendLine(ctx, store.Line{Service: "s", CriteriaID: "s/v1", CriteriaRevision: "1", At: at, PriceUSDCUnits: 50000, TxID: &tx, CAD: store.CAD{Pending: true}, FamilyFields: "{}"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	rates := filepath.Join(dir, "rates.csv")
	_ = os.WriteFile(rates, []byte("date,usd_cad\n2026-11-29,1.3945\n"), 0o600)
	var out bytes.Buffer
	if err := run([]string{"ledger", "fill-fmv", "--data-dir", dir, rates}, &out, &out); err == nil {
		t.Error("fill-fmv without a stated basis was accepted")
	}
	out.Reset()
	if err := run([]string{"ledger", "fill-fmv", "--data-dir", dir, "--basis", "BoC daily", rates}, &out, &out); err != nil || !strings.Contains(out.String(), "1 amendment rows written") {
		t.Errorf("fill-fmv: %v %s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"ledger", "refund", "--data-dir", dir, tx}, &out, &out); err != nil || !strings.Contains(out.String(), "refund amendment") {
		t.Errorf("refund: %v %s", err, out.String())
	}
	if err := run([]string{"ledger", "refund", "--data-dir", dir, tx}, &out, &out); err == nil {
		t.Error("a second refund was accepted")
	}
	out.Reset()
	if err := run([]string{"ledger", "report", "--data-dir", dir}, &out, &out); err != nil || !strings.Contains(out.String(), "Day-0: 2026-11-29T10:00:00Z") {
		t.Errorf("report: %v\n%s", err, out.String())
	}
}

// sigRecorder keeps the last PAYMENT-SIGNATURE a client sent.
type sigRecorder struct{ last string }

func (r *sigRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if s := req.Header.Get("PAYMENT-SIGNATURE"); s != "" {
		r.last = s
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestAssayCallPays: the README's paid call, end to end over the real host
// and plugin binaries: `assay wallet new`, then `assay call` (402 -> build
// and sign the transfer -> retry -> report checked against /keys -> saved).
func TestAssayCallPays(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	cfg := sdConfig(t)
	dataDir := filepath.Join(dir, "var")
	url := startHost(t, bin, cfg, dataDir, "sqlite")

	walletPath, bodyPath, reportPath := filepath.Join(dir, "payer.json"), filepath.Join(dir, "body.json"), filepath.Join(dir, "report.json")
	var out bytes.Buffer
	if err := run([]string{"wallet", "new", "--out", walletPath}, &out, &out); err != nil {
		t.Fatal(err)
	}
	chunk := base64.StdEncoding.EncodeToString([]byte("hello"))
	_ = os.WriteFile(bodyPath, []byte(`{"streamed_capture":{"chunks":["`+chunk+`"]},"reference_output":{"chunks":["`+chunk+`"]}}`), 0o600)
	out.Reset()
	if err := run([]string{"call", "--wallet", walletPath, "--out", reportPath, url + "/stream-divergence/compare", bodyPath}, &out, &out); err != nil {
		t.Fatalf("assay call: %v\n%s", err, out.String())
	}
	// the host serves house mode (startHost): the payer is told no USDC moved
	if !strings.Contains(out.String(), "paid: transaction ") || !strings.Contains(out.String(), "signature checked") ||
		!strings.Contains(out.String(), "house mode: the host's own facilitator co-signed it and nothing moved on a chain") {
		t.Errorf("assay call said: %s", out.String())
	}
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	_ = json.Unmarshal(raw, &rep)
	if rep["kind"] != "report" || rep["byte_equal"] != true {
		t.Errorf("saved report: %s", raw)
	}
	out.Reset()
	if err := run([]string{"verify", "--keys", url + "/keys", reportPath}, &out, &out); err != nil {
		t.Errorf("assay verify: %v", err)
	}
	// a failed call says why and saves nothing
	_ = os.WriteFile(bodyPath, []byte(`[]`), 0o600)
	if err := run([]string{"call", "--wallet", walletPath, "--out", reportPath + ".2", url + "/stream-divergence/compare", bodyPath}, &out, &out); err == nil || !strings.Contains(err.Error(), "body_not_object") {
		t.Errorf("refused call: %v", err)
	}
	if _, err := os.Stat(reportPath + ".2"); err == nil {
		t.Error("a refused call saved a report")
	}
}

// `assay call` keeps what it paid for: a report whose keys cannot be
// fetched is saved, and the error names the file and the transaction; a
// payment that got no answer is saved beside --out, and `--payment FILE`
// sent later buys the report with it.
func TestAssayCallSavesWhatItPaidFor(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	cfg := sdConfig(t)
	host := startHost(t, bin, cfg, filepath.Join(dir, "var"), "sqlite")
	walletPath, bodyPath := filepath.Join(dir, "payer.json"), filepath.Join(dir, "body.json")
	var out bytes.Buffer
	if err := run([]string{"wallet", "new", "--out", walletPath}, &out, &out); err != nil {
		t.Fatal(err)
	}
	chunk := base64.StdEncoding.EncodeToString([]byte("hello"))
	_ = os.WriteFile(bodyPath, []byte(`{"streamed_capture":{"chunks":["`+chunk+`"]},"reference_output":{"chunks":["`+chunk+`"]}}`), 0o600)

	// the keys are out of reach: the report is saved all the same
	report := filepath.Join(dir, "r.json")
	err := run([]string{"call", "--wallet", walletPath, "--keys", "http://127.0.0.1:9/keys", "--out", report, host + "/stream-divergence/compare", bodyPath}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "saved "+report) || !strings.Contains(err.Error(), "transaction \"") || !strings.Contains(err.Error(), "assay verify") {
		t.Fatalf("unverifiable answer: %v", err)
	}
	if err := run([]string{"verify", "--keys", host + "/keys", report}, &out, &out); err != nil {
		t.Errorf("the saved report does not verify later: %v", err)
	}

	// a proxy that loses every paid request: the payment is saved
	target, _ := url.Parse(host)
	fwd := httputil.NewSingleHostReverseProxy(target)
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("PAYMENT-SIGNATURE") != "" {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	defer lossy.Close()
	report2 := filepath.Join(dir, "r2.json")
	err = run([]string{"call", "--wallet", walletPath, "--out", report2, lossy.URL + "/stream-divergence/compare", bodyPath}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--payment "+report2+".payment") {
		t.Fatalf("a paid request lost in transit: %v", err)
	}
	out.Reset()
	saved, _ := os.ReadFile(report2 + ".payment")
	if err := run([]string{"call", "--payment", report2 + ".payment", "--out", report2, host + "/stream-divergence/compare", bodyPath}, &out, &out); err != nil {
		t.Fatalf("the saved payment sent again: %v", err)
	}
	// the file that bought the report is gone: a new call with the same
	// --out pays anew instead of being refused
	if _, err := os.Stat(report2 + ".payment"); !os.IsNotExist(err) {
		t.Errorf("the payment file is still there once its report was saved: %v", err)
	}
	_ = os.WriteFile(report2+".payment.kept", saved, 0o600)
	if !strings.Contains(out.String(), "signature checked") {
		t.Errorf("call said %s", out.String())
	}
	// sent a third time: the same report again, nothing more charged
	if err := run([]string{"call", "--payment", report2 + ".payment.kept", "--out", report2 + ".again", host + "/stream-divergence/compare", bodyPath}, &out, &out); err != nil {
		t.Errorf("the payment sent a third time: %v", err)
	}
	first, _ := os.ReadFile(report2)
	third, _ := os.ReadFile(report2 + ".again")
	if len(first) == 0 || !bytes.Equal(first, third) {
		t.Errorf("the payment sent a third time saved another report:\n%s\n%s", first, third)
	}
}
