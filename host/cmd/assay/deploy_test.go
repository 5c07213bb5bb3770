package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
)

// roundRobin is the reverse proxy of the deployment's compose file, in
// small: requests alternate between the hosts, and one a host refuses to
// connect (it is down) goes to the next; a request that reached a host
// and lost its answer is not sent twice (the client re-sends it).
type roundRobin struct {
	backends []string
	next     atomic.Int64
	rt       http.RoundTripper
}

func (p *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	first := int(p.next.Add(1))
	for i := range p.backends {
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, p.backends[(first+i)%len(p.backends)]+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		client, _, _ := net.SplitHostPort(r.RemoteAddr)
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			client = prior + ", " + client
		}
		out.Header.Set("X-Forwarded-For", client)
		resp, err := p.rt.RoundTrip(out)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue
		}
		if err != nil {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, "no host answers", http.StatusBadGateway)
}

// The deployment's topology without Docker: two `assay serve` processes,
// each with its own data dir, on one PostgreSQL, sharing the key secret
// and the local facilitator's fee payer, behind a round-robin proxy. The
// free tier is exact across them; paid calls run through the proxy while
// one host is killed with SIGKILL and never comes back; the other keeps
// serving; afterwards no payment was accepted twice, every payment left
// undelivered delivers once when re-sent, and every delivered report has
// its one ledger line.
func TestFleetBehindAProxy(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"keys", "secret", "--out", filepath.Join(dir, "keys.secret")}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := wallet.New(filepath.Join(dir, "fee-payer.json")); err != nil {
		t.Fatal(err)
	}
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(sdConfig(t))
	cfg := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(cfg, append(raw, []byte(fmt.Sprintf("keys_secret_file = \"keys.secret\"\nfee_payer_key_file = \"fee-payer.json\"\npay_to = %q\n"+
		"trusted_proxies = [\"127.0.0.1\"]\nadmission {\n  waiting = 64\n  wait = \"30s\"\n}\n", solana.EncodeBase58(seller.Public().(ed25519.PublicKey))))...), 0o600)
	pg := storetest.PostgresURL(t)
	hosts := []*killable{
		{t: t, bin: bin, cfg: cfg, dir: t.TempDir(), store: pg, addr: freePort(t)},
		{t: t, bin: bin, cfg: cfg, dir: t.TempDir(), store: pg, addr: freePort(t)},
	}
	for _, h := range hosts {
		h.start()
		t.Cleanup(h.kill)
	}
	proxy := httptest.NewServer(&roundRobin{backends: []string{"http://" + hosts[0].addr, "http://" + hosts[1].addr},
		rt: &http.Transport{DisableKeepAlives: true}})
	defer proxy.Close()
	logs := func() string { return hosts[0].log() + hosts[1].log() }

	// one caller's burst of pre-checks at one instant, split over both
	// hosts: exactly one is free
	precheck := func(caller, forwarded string) *http.Request {
		req, _ := http.NewRequest("POST", proxy.URL+"/stream-divergence/precheck",
			bytes.NewReader([]byte(`{`+caller+`"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`)))
		if forwarded != "" {
			req.Header.Set("X-Forwarded-For", forwarded)
		}
		return req
	}
	statuses := burst(t, 40, func(int) *http.Request {
		return precheck(`"caller":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",`, "")
	})
	if statuses[200] != 1 || statuses[429] != 39 {
		t.Fatalf("one caller's burst through the proxy: %v, want exactly one free pre-check", statuses)
	}
	// callers without a wallet are counted by the address the trusted
	// proxy names: two clients' bursts, one free pre-check each
	statuses = burst(t, 40, func(i int) *http.Request { return precheck("", fmt.Sprintf("198.51.100.%d", 7+i%2)) })
	if statuses[200] != 2 || statuses[429] != 38 {
		t.Fatalf("two clients' bursts through the proxy: %v, want one free pre-check each", statuses)
	}

	url := proxy.URL + "/stream-divergence/compare"
	load := startPaying(t, url, 4, 0)
	waitDelivered := func(n int) {
		for deadline := time.Now().Add(30 * time.Second); load.delivered() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d reports delivered, waiting for %d\n%s", load.delivered(), n, logs())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitDelivered(20)
	hosts[0].kill()
	atKill := load.delivered()
	waitDelivered(atKill + 40) // the other host keeps serving
	seen := load.stop()
	st, err := store.Open(context.Background(), pg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	answered, unanswered, resent := resendUndelivered(t, st, url, seen, logs)
	t.Logf("%d payments: %d delivered at once (%d before the kill), %d without an answer, %d re-sent", len(seen), answered, atKill, unanswered, resent)
}

// burst sends n requests at once and counts their statuses.
func burst(t *testing.T, n int, req func(i int) *http.Request) map[int]int {
	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.DefaultClient.Do(req(i))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return statuses
}
