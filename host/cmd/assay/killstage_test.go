package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// A paying client that goes away at each stage of its paid request, from
// a host whose embedded facilitator settles on a chain, gets its report
// once by sending the same payment again: cut off while its body is on
// the way (the payment never read), gone while the family measures, gone
// once the transfer is confirmed on the chain, and gone after the host
// wrote its answer, never read (the old order, answer then line, made
// that a spent claim whose report nobody held: the re-send was a replay).
// After each re-send the ledger holds exactly one line for the payment's
// transaction and the chain moved its price once; the same payment sent
// again is the same bytes; another submission with it is a conflict, and
// a fresh payment under its payment-identifier id the same report, with
// nothing moved.
func TestAClientThatDropsAtEachStageGetsItsReportOnce(t *testing.T) {
	r := newStageRig(t, "sqlite")
	h := r.serve(t)
	url := h.url() + "/stream-divergence/compare"

	stages := []struct {
		name string
		// send carries the paid request for the client; the client gets
		// no answer from it. held is the answer the host wrote, when it
		// wrote one the client never read.
		send func(t *testing.T, req *http.Request) (held []byte)
	}{
		{"its body cut short", func(t *testing.T, req *http.Request) []byte {
			before := r.requestLines(h, "code=body_incomplete")
			cutBody(t, req)
			// the host refused what it got before looking at the payment
			eventually(t, "the host's refusal of the cut body", 20*time.Second, func() bool {
				return r.requestLines(h, "code=body_incomplete") == before+1
			})
			r.nothingMoved(t)
			return nil
		}},
		{"gone while the family measures", func(t *testing.T, req *http.Request) []byte {
			r.holdMeasuring(t)
			before := r.requestLines(h, "payment=undelivered")
			conn := forward(t, req)
			r.measuring(t, h)
			conn.Close()
			eventually(t, "the host's answer to the client that left while it measured", 20*time.Second, func() bool {
				return r.requestLines(h, "payment=undelivered") == before+1
			})
			// on a chain nothing is settled before the report is ready
			r.nothingMoved(t)
			return nil
		}},
		{"gone once the transfer is confirmed on the chain", func(t *testing.T, req *http.Request) []byte {
			reached, resume := r.tap.pause(t, "getTransaction")
			before := r.paidOutcomes(h)
			conn := forward(t, req)
			hostCtx := arrived(t, reached, "the settlement's confirmation")
			if got := r.chain.Tokens(t, address(r.seller)); got != r.seller0+uint64(r.reports+1)*sdPrice {
				t.Fatalf("the transfer is not on the chain as the client leaves: the seller holds %d", got)
			}
			conn.Close()
			// the client left while the settlement was under way; the host
			// notices a closed connection at once (its server reads the
			// connection in the background), and the settlement must go on
			// regardless: the money has moved. A settlement on the
			// request's context was cut here, the transfer left on the
			// chain with no line until the payer came back.
			time.Sleep(300 * time.Millisecond)
			if hostCtx.Err() != nil {
				t.Fatal("the host gave up its settlement when the client left")
			}
			resume()
			eventually(t, "the host's end of the request", 20*time.Second, func() bool {
				return r.paidOutcomes(h) == before+1
			})
			// issued before anyone asks again: the transfer has its line
			// and its claim is issued, with the client long gone
			if lines := allLines(t, r.store(t)); len(lines) != r.reports+1 {
				t.Errorf("%d ledger lines once the settlement ended, want %d (the transfer's among them)", len(lines), r.reports+1)
			}
			for _, state := range []string{store.ClaimSettling, store.ClaimSettled} {
				if left, _ := r.store(t).Claims(context.Background(), state); len(left) != 0 {
					t.Errorf("%d claims %s once the settlement ended", len(left), state)
				}
			}
			return nil
		}},
		{"its answer written and never read", func(t *testing.T, req *http.Request) []byte {
			conn := forward(t, req)
			defer conn.Close()
			resp, err := http.ReadResponse(bufio.NewReader(conn), req)
			if err != nil {
				t.Fatalf("the host's answer: %v", err)
			}
			held, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the host's answer: %d %v\n%s", resp.StatusCode, err, held)
			}
			// issued before written: the answer's line is in the books by
			// the time the answer can be read
			if lines := allLines(t, r.store(t)); len(lines) != r.reports+1 {
				t.Fatalf("%d ledger lines once the answer was written, want %d", len(lines), r.reports+1)
			}
			return held
		}},
	}
	for _, s := range stages {
		t.Run(s.name, func(t *testing.T) {
			var held []byte
			p := &x402.Payer{Wallet: r.payer, MarkerRetries: -1, Client: &http.Client{Timeout: time.Minute,
				Transport: paidVia(func(req *http.Request) { held = s.send(t, req) })}}
			res, err := p.Call(context.Background(), url, r.body)
			if err == nil || res == nil || res.Payment == "" || res.Identifier == "" {
				t.Fatalf("the client that went away: %v %+v", err, res)
			}
			got := r.resendOnce(t, url, res.Payment, r.booksEqual)
			r.booksEqual(t)
			if held != nil && !bytes.Equal(got.Body, held) {
				t.Errorf("the re-sent payment's report is not the answer the host wrote:\n%s\n%s", got.Body, held)
			}
			if s.name != "its answer written and never read" {
				return
			}
			// the same payment with another submission opens nothing
			other := bytes.Replace(r.body, []byte(`"YWJk"`), []byte(`"YWJl"`), 1)
			status, code, raw := postCode(t, url, other, map[string]string{x402.HeaderSignature: res.Payment})
			if status != http.StatusConflict || code != x402.CodeConflict {
				t.Errorf("the payment with another submission: %d %s", status, raw)
			}
			// a fresh payment under its id: the official client's retry
			retry := &x402.Payer{Wallet: r.payer, Identifier: res.Identifier, MarkerRetries: -1}
			again, err := retry.Call(context.Background(), url, r.body)
			if err != nil || again.Status != http.StatusOK || !bytes.Equal(again.Body, got.Body) {
				t.Errorf("a fresh payment under the same id: %v %+v", err, again)
			}
			r.booksEqual(t)
		})
	}
	r.booksEqual(t)
	if r.reports != len(stages) {
		t.Errorf("%d reports for %d stages", r.reports, len(stages))
	}
}

// A host killed with SIGKILL at each stage of a paid request, started
// again, and every payment that got no report sent again: while the
// family measures (the payment checked, nothing settled), once the
// transfer is on the chain and before its line commits (the store's
// write lock held: on PostgreSQL the ledger's table lock, the claim
// recorded settled; on SQLite the one database lock, so the claim is
// still settling and the restarted host finds it landed on the chain),
// and between the line's commit and the answer's write (the host's fault
// hook). Each payment then has its report, its one line and its one
// transfer on the chain: the books equal the chain. The last stage runs
// with the official x402 facilitator settling too.
func TestAHostKilledAtEachStageLeavesBooksEqualToTheChain(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			r := newStageRig(t, kind)
			var unanswered []string

			// while measuring
			h := r.serve(t)
			url := h.url() + "/stream-divergence/compare"
			r.holdMeasuring(t)
			paid := r.payAsync(url)
			r.measuring(t, h)
			r.kill(h)
			unanswered = append(unanswered, r.noReport(t, paid, "killed while measuring"))
			// on a chain nothing is claimed before the report is ready
			if got := r.chain.Tokens(t, address(r.seller)); got != 0 || r.claims(t) != "" {
				t.Fatalf("after a kill while measuring the seller holds %d, the claims are %q", got, r.claims(t))
			}

			// settled on the chain, the line not committed
			h = r.serve(t)
			url = h.url() + "/stream-divergence/compare"
			r.store(t) // opened before the locks: opening migrates, which waits for them
			if kind == "postgres" {
				waiting := r.lockLedger(t)
				paid = r.payAsync(url)
				eventually(t, "the claim settled and the line waiting for the ledger's lock", 30*time.Second, func() bool {
					settled, _ := r.store(t).Claims(context.Background(), store.ClaimSettled)
					return len(settled) == 1 && waiting()
				})
			} else {
				reached, resume := r.tap.pause(t, "getTransaction")
				paid = r.payAsync(url)
				arrived(t, reached, "the settlement's confirmation")
				r.release = storetest.HoldWriteLock(t, r.dbPath())
				resume()
			}
			if got := r.chain.Tokens(t, address(r.seller)); got != sdPrice {
				t.Fatalf("the seller holds %d as the host is killed, want the price (%d)", got, sdPrice)
			}
			r.kill(h)
			r.unlock()
			unanswered = append(unanswered, r.noReport(t, paid, "killed before the line committed"))
			// PostgreSQL recorded the settlement; on SQLite it waited for the
			// lock with the line, and the chain has the transfer either way
			want := map[string]string{"postgres": "settled", "sqlite": "settling"}[kind]
			if lines := allLines(t, r.store(t)); len(lines) != 0 || r.claims(t) != want {
				t.Fatalf("after a kill before the line committed: %d ledger lines, claims %q (want none, %q)", len(lines), r.claims(t), want)
			}

			// between the line's commit and the answer's write
			paused := filepath.Join(t.TempDir(), "issued")
			h = r.serve(t, EnvPauseAfterIssue+"="+paused)
			if kind == "sqlite" && !strings.Contains(h.log(), "looked up on the chain: landed_now_settled=1 never_landed_released=0 still_unknown=0") {
				t.Errorf("the restarted host did not find the settling claim landed:\n%s", h.log())
			}
			url = h.url() + "/stream-divergence/compare"
			paid = r.payAsync(url)
			waitFile(t, paused, h)
			if lines := allLines(t, r.store(t)); len(lines) != 1 {
				t.Fatalf("%d ledger lines once the report was issued, want 1", len(lines))
			}
			r.kill(h)
			unanswered = append(unanswered, r.noReport(t, paid, "killed between the line's commit and the answer's write"))
			if got, claims := r.chain.Tokens(t, address(r.seller)), r.claims(t); got != 2*sdPrice || claims != "settled,issued" {
				t.Fatalf("before the re-sends the seller holds %d (want %d), the claims are %q", got, 2*sdPrice, claims)
			}

			h = r.serve(t)
			url = h.url() + "/stream-divergence/compare"
			for _, p := range unanswered {
				r.resendOnce(t, url, p, nil)
			}
			r.booksEqual(t)
		})
	}

	t.Run("official facilitator", func(t *testing.T) {
		r := newStageRig(t, "sqlite")
		f := startOfficial(t, filepath.Join(r.dir, "fee-payer.json"), r.chain.URL)
		paused := filepath.Join(t.TempDir(), "issued")
		h := r.remote(t, f.url(), EnvPauseAfterIssue+"="+paused)
		r.payer402 = solanarpc.New(r.chain.URL) // a remote facilitator's 402 has no blockhash
		paid := r.payAsync(h.url() + "/stream-divergence/compare")
		waitFile(t, paused, h)
		if lines := allLines(t, r.store(t)); len(lines) != 1 {
			t.Fatalf("%d ledger lines once the report was issued, want 1", len(lines))
		}
		r.kill(h)
		p := r.noReport(t, paid, "killed between the line's commit and the answer's write")
		h = r.remote(t, f.url())
		r.resendOnce(t, h.url()+"/stream-divergence/compare", p, nil)
		r.booksEqual(t)
	})
}
