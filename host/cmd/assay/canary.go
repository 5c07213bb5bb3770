package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/canaryproof"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
)

// logCapture keeps what the host logs (plugins' stderr included) while a
// canary proof runs, so the proof can search it.
type logCapture struct {
	out io.Writer
	mu  sync.Mutex
	buf *bytes.Buffer // nil once the proof is over
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.buf != nil && l.buf.Len() < 256<<20 {
		l.buf.Write(p)
	}
	l.mu.Unlock()
	return l.out.Write(p)
}

// stop ends the capture and returns what it kept.
func (l *logCapture) stop() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf.Bytes()
	l.buf = nil
	return b
}

// canaryProof plants a canary in every corpus request of every family and
// sends them through the served handler (paid ops meet its payment gate)
// and through a twin with payments off over a scratch store (so every
// paid op is measured, reported and written to a ledger), then searches
// the host's log, its data dir, both stores, both metrics outputs and the
// temp dir. Any trace refuses the launch.
func canaryProof(ctx context.Context, services []server.Service, board *servicestate.Board, served http.Handler, keys *signing.Keyring, st *store.Store,
	dataDir string, capture *logCapture, log hclog.Logger) error {
	start := time.Now()
	c, err := canaryproof.New()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "assay-canary-proof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	scratch, err := store.OpenSQLite(ctx, filepath.Join(tmp, "proof.db"))
	if err != nil {
		return err
	}
	defer scratch.Close()
	free, err := freetier.New(ctx, scratch)
	if err != nil {
		return err
	}
	twinMetrics := metrics.New()
	twin := server.New(server.Config{Services: services, Keys: keys, Payments: payment.Off{}, FreeTier: free,
		Ledger: &ledger.Writer{Store: scratch}, Metrics: twinMetrics, Logger: log})
	// the same routes as MCP tool calls (/mcp), on both
	mcpServed := mcptools.Mount(served, mcptools.New(mcptools.Config{Host: served, Version: "canary-proof", MaxBody: mcpBody(services)}))
	mcpTwin := mcptools.Mount(twin, mcptools.New(mcptools.Config{Host: twin, Version: "canary-proof", MaxBody: mcpBody(services)}))
	sent := map[int]int{}
	var findings []canaryproof.Finding
	count := func(m map[int]int, f []canaryproof.Finding) {
		for k, v := range m {
			sent[k] += v
		}
		findings = append(findings, f...)
	}
	toolCalls := 0
	countMCP := func(m map[int]int, f []canaryproof.Finding) {
		for _, v := range m {
			toolCalls += v
		}
		count(m, f)
	}
	for _, svc := range services {
		if board.State(keyOf(svc)).Stopped {
			continue // not served (its corpus failed at launch)
		}
		name := svc.Desc.GetService()
		reqs, err := c.Requests(name, svc.Desc.GetCorpus())
		if err != nil {
			return err
		}
		exempt := svc.Desc.GetTripwires().GetExemptMembers()
		count(c.Send(ctx, twin, reqs, exempt))
		var paid []canaryproof.Request
		for _, r := range reqs {
			if !strings.HasSuffix(r.Path, "/precheck") {
				paid = append(paid, r)
			}
		}
		count(c.Send(ctx, served, paid, exempt))
		countMCP(c.SendMCP(ctx, mcpTwin, reqs, exempt))
		countMCP(c.SendMCP(ctx, mcpServed, paid, exempt))
		gets := []canaryproof.Request{{Method: "GET", Path: "/" + name + "/criteria"}, {Method: "GET", Path: "/" + name + "/metrics"}}
		count(c.Send(ctx, served, gets, nil))
	}
	count(c.Send(ctx, served, []canaryproof.Request{{Method: "GET", Path: "/"}, {Method: "GET", Path: "/keys"}, {Method: "GET", Path: "/healthz"}, {Method: "GET", Path: "/readyz"},
		{Method: "POST", Path: "/" + c.Value, Body: []byte(c.Value)}}, nil))
	// the plugins' stderr reaches the host log asynchronously
	time.Sleep(500 * time.Millisecond)

	findings = append(findings, c.Scan("the host log", capture.stop())...)
	for label, h := range map[string]http.Handler{"/metrics": served, "/metrics (payments-off twin)": twin} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		findings = append(findings, c.Scan(label, rec.Body.Bytes())...)
	}
	for label, s := range map[string]*store.Store{"the store's rows": st, "the scratch store's rows": scratch} {
		rows, err := s.DumpText(ctx)
		if err != nil {
			return err
		}
		findings = append(findings, c.Scan(label, []byte(rows))...)
	}
	if err := scratch.Close(); err != nil { // its WAL into the file searched below
		return err
	}
	findings = append(findings, c.ScanDir(dataDir, time.Time{})...)
	findings = append(findings, c.ScanDir(os.TempDir(), start)...)
	total := 0
	for _, n := range sent {
		total += n
	}
	if len(findings) > 0 {
		for _, f := range findings {
			log.Error("canary proof: a trace of the canary", "surface", f.String())
		}
		return fmt.Errorf("canary proof failed: the canary was found on %d surfaces; not serving", len(findings))
	}
	log.Info("canary proof passed: no trace on any surface", "requests", total, "mcp_tool_calls", toolCalls, "statuses", fmt.Sprint(sent),
		"surfaces", "answers, log, /metrics, store rows, data dir, temp dir", "ms", time.Since(start).Milliseconds())
	return nil
}
