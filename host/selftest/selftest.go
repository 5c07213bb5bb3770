// Package selftest runs a family's corpus against the host's own handler,
// in Go and in process: what `assay serve` does before it serves a family,
// and what `assay service resume` requires before a stopped one serves
// again. It checks what corpus/harness.mjs checks (status, signature
// against the host's keys, issued_at's form, the corpus pin, and deep
// equality with the expected answer, placeholders substituted); the node
// harness stays the independent check that `make test` runs.
package selftest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/sdk/canary"
	"github.com/assay-audit/assay/sdk/corpus"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Corpus is a corpus file (sdk/corpus, the format every runner shares).
type Corpus = corpus.Corpus

// Case is one request and what must come back.
type Case = corpus.Case

// Result is one corpus run. Failures name the case and the first
// difference (paths and the corpus's own expected values: a corpus is
// synthetic, never a submission).
type Result struct {
	Cases, Passed int
	Failures      []string
	Elapsed       time.Duration
}

// OK reports a run where every case passed.
func (r Result) OK() bool { return r.Cases > 0 && r.Passed == r.Cases }

// Pin is a corpus file's pin (corpus.Pin).
func Pin(raw []byte) (string, error) {
	pin, err := corpus.Pin(raw)
	if err != nil {
		return "", fmt.Errorf("selftest: %w", err)
	}
	return pin, nil
}

// Parse reads a corpus file and checks that its pin is both the one it
// states and want (corpus.Parse: a mismatch names which pin).
func Parse(raw []byte, want string) (*Corpus, error) {
	c, err := corpus.Parse(raw, want)
	if err != nil {
		return nil, fmt.Errorf("selftest: %w", err)
	}
	return c, nil
}

// KeySet is the JWKS an answer is checked against, read when the answer
// arrives: a key rotated in while the corpus runs (on any host of the
// store) signs what follows, and the set the host publishes then lists it.
type KeySet func() []byte

// Fixed is a key set that never changes.
func Fixed(jwks []byte) KeySet { return func() []byte { return jwks } }

// Run sends every case to h, one at a time, each from its own client
// address and with a fresh caller on pre-checks that name none (as the
// node harness does), and checks each answer against keys.
func Run(ctx context.Context, h http.Handler, keys KeySet, c *Corpus) Result {
	start := time.Now()
	r := Result{Cases: len(c.Cases)}
	// each case from its own client address (the free tier counts callers
	// without a wallet by address), fresh on every run
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	for i, tc := range c.Cases {
		if ctx.Err() != nil {
			r.Failures = append(r.Failures, "stopped: "+ctx.Err().Error())
			break
		}
		addr := fmt.Sprintf("[fd%02x:%02x%02x:%02x%02x:%02x::%x]:4402", prefix[0], prefix[1], prefix[2], prefix[3], prefix[4], prefix[5], i+1)
		if msg := runCase(ctx, h, keys, c.SHA256, addr, tc); msg != "" {
			r.Failures = append(r.Failures, tc.Name+": "+msg)
			continue
		}
		r.Passed++
	}
	r.Elapsed = time.Since(start)
	return r
}

func runCase(ctx context.Context, h http.Handler, keys KeySet, pin, addr string, tc Case) string {
	body, err := tc.Body(freshCaller)
	if err != nil {
		return err.Error()
	}
	req := httptest.NewRequestWithContext(ctx, tc.Method(), tc.Request.Path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = addr
	sent := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := corpus.Answer{Status: rec.Code, Body: rec.Body.Bytes(), Sent: sent, Received: time.Now()}
	if a.Status == tc.Expect.Status && tc.Expect.BodyText == nil {
		if _, err := signing.Verify(a.Body, keys()); err != nil {
			return "signature: " + err.Error()
		}
	}
	return corpus.Compare(tc, pin, a)
}

// freshCaller is a well-formed Solana address of 32 random bytes, as the
// node harness gives each pre-check.
func freshCaller() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return solana.EncodeBase58(k)
}

// Custody plants a canary in every case of c and probes the family's
// tripwires (canary.Check), each request sent to h in process from its
// own client address: what a host runs at load, after the corpus passes,
// to warn of a family that prints what a caller sent.
func Custody(ctx context.Context, h http.Handler, c *Corpus, tw *pb.Tripwires) (canary.Result, error) {
	can, err := canary.New()
	if err != nil {
		return canary.Result{}, fmt.Errorf("selftest: %w", err)
	}
	return CustodyWith(ctx, h, c, tw, can), nil
}

// CustodyWith is Custody with the caller's canary, for a caller that also
// searches its other surfaces (the host's log, a store) for it.
func CustodyWith(ctx context.Context, h http.Handler, c *Corpus, tw *pb.Tripwires, can *canary.Canary) canary.Result {
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	n := 0
	send := func(method, path string, body []byte) (int, []byte) {
		n++
		req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = fmt.Sprintf("[fd%02x:%02x%02x:%02x%02x:%02x::%x]:4402", prefix[0], prefix[1], prefix[2], prefix[3], prefix[4], prefix[5], n)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}
	return can.Check(c, tw, send)
}
