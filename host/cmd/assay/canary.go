package main

import (
	"context"
	"fmt"
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
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/version"
)

// canaryProof plants a canary in every corpus request of every family and
// sends them through the served handler (paid ops meet its payment gate)
// and through a twin with payments off over a scratch store (so every
// paid op is measured, reported and written to a ledger), then searches
// the host's log, its data dir, both stores, both metrics outputs and the
// temp dir. Any trace refuses the launch.
func canaryProof(ctx context.Context, services []server.Service, served http.Handler, keys *signing.Keyring, st *store.Store,
	dataDir string, tap *launchproof.Tap, log hclog.Logger) (findings []canaryproof.Finding, requests int, err error) {
	start := time.Now()
	c, err := canaryproof.New()
	if err != nil {
		return nil, 0, err
	}
	offset := tap.Begin()
	logged := false
	defer func() {
		if !logged {
			tap.End(offset)
		}
	}()
	tmp, err := os.MkdirTemp("", "assay-canary-proof-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	scratch, err := store.OpenSQLite(ctx, filepath.Join(tmp, "proof.db"))
	if err != nil {
		return nil, 0, err
	}
	defer scratch.Close()
	free, err := freetier.New(ctx, scratch)
	if err != nil {
		return nil, 0, err
	}
	twinMetrics := metrics.New()
	twin := server.New(server.Config{Services: services, Keys: keys, Payments: payment.Off{}, FreeTier: free,
		Ledger: &ledger.Writer{Store: scratch}, Metrics: twinMetrics, Logger: log})
	// the same routes as MCP tool calls (/mcp), on both
	mcpServed := mcptools.Mount(served, mcptools.New(mcptools.Config{Host: served, Version: "canary-proof", MaxBody: mcpBody(services)}))
	mcpTwin := mcptools.Mount(twin, mcptools.New(mcptools.Config{Host: twin, Version: "canary-proof", MaxBody: mcpBody(services)}))
	sent := map[int]int{}
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
		name := svc.Desc.GetService()
		reqs, err := c.Requests(name, svc.Desc.GetCorpus())
		if err != nil {
			return nil, 0, err
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

	logged = true
	findings = append(findings, c.Scan("the host log", tap.End(offset))...)
	for label, h := range map[string]http.Handler{"/metrics": served, "/metrics (payments-off twin)": twin} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		findings = append(findings, c.Scan(label, rec.Body.Bytes())...)
	}
	for label, s := range map[string]*store.Store{"the store's rows": st, "the scratch store's rows": scratch} {
		rows, err := s.DumpText(ctx)
		if err != nil {
			return nil, 0, err
		}
		findings = append(findings, c.Scan(label, []byte(rows))...)
	}
	if err := scratch.Close(); err != nil { // its WAL into the file searched below
		return nil, 0, err
	}
	findings = append(findings, c.ScanDir(dataDir, time.Time{})...)
	findings = append(findings, c.ScanDir(os.TempDir(), start)...)
	total := 0
	for _, n := range sent {
		total += n
	}
	log.Info("canary proof sent", "services", len(services), "requests", total, "mcp_tool_calls", toolCalls, "statuses", fmt.Sprint(sent),
		"findings", len(findings), "ms", time.Since(start).Milliseconds())
	return findings, total, nil
}

// canaryRun is the canary proofs a start owes under --canary-proof: each
// service of a plugin set not yet proven so on the store is held back
// after its launch proof, proven one at a time (the log's window is its
// own), recorded when it passes, stopped on this host when it does not.
type canaryRun struct {
	todo  []launchproof.Target
	store *store.Store
	board *servicestate.Board
	// hostID and build name the host in the proofs it records
	hostID, build string

	mu    sync.Mutex
	phase string
}

// canaryProofs are the canary proofs this start owes (none without
// --canary-proof, or when every service's is on record).
func (s serving) canaryProofs(ctx context.Context, st *store.Store, board *servicestate.Board, ps *plugins, hostID, hostBuild string) *canaryRun {
	c := &canaryRun{store: st, board: board, hostID: hostID, build: version.String()}
	if !s.flags.proof {
		return c
	}
	for _, t := range proofTargets(ps, hostBuild, launchproof.KindCanary) {
		if st != nil {
			if p, ok, err := st.ProofOf(ctx, t.Key); err == nil && ok {
				s.log.Info("canary proof on record for this plugin set", "service", t.Service.Desc.GetService(), "passed_at", p.Passed.Format(time.RFC3339), "by_host", p.HostID)
				continue
			}
		}
		board.StartLocal(keyOf(t.Service), "its launch proof and canary proof run on this host")
		c.todo = append(c.todo, t)
	}
	return c
}

// holds says whether t waits for its canary proof once its launch proof
// passed.
func (c *canaryRun) holds(t launchproof.Target) bool {
	for _, w := range c.todo {
		if keyOf(w.Service) == keyOf(t.Service) {
			return true
		}
	}
	return false
}

func (c *canaryRun) running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.phase == "" {
		return nil
	}
	return []string{c.phase}
}

func (c *canaryRun) at(phase string) {
	c.mu.Lock()
	c.phase = phase
	c.mu.Unlock()
}

// run proves each service it holds, through the served handler (its
// requests marked as the host's own proof, so a held service answers
// them) and a payments-off twin.
func (c *canaryRun) run(ctx context.Context, served http.Handler, keys *signing.Keyring, st *store.Store, dataDir string, tap *launchproof.Tap, log hclog.Logger) {
	for i, t := range c.todo {
		k, name := keyOf(t.Service), t.Service.Desc.GetService()
		if st := c.board.State(k); !st.Starting {
			continue // stopped: its launch proof failed
		}
		c.at(fmt.Sprintf("%s: canary proof (%d of %d)", name, i+1, len(c.todo)))
		findings, sent, err := canaryProof(server.LaunchProof(ctx), []server.Service{t.Service}, served, keys, st, dataDir, tap, log)
		switch {
		case ctx.Err() != nil:
			c.at("")
			return
		case err != nil:
			log.Error("canary proof not run: not served", "service", name, "error", err)
			c.board.StopLocal(k, "canary proof not run: "+err.Error(), "canary proof")
		case len(findings) > 0:
			for _, f := range findings {
				log.Error("canary proof: a trace of the canary: not served", "service", name, "surface", f.String())
			}
			c.board.StopLocal(k, fmt.Sprintf("canary proof failed: the canary was found on %d surfaces (first: %s)", len(findings), findings[0].String()), "canary proof")
		default:
			log.Info("canary proof passed: no trace on any surface", "service", name, "requests", sent,
				"surfaces", "answers, log, /metrics, store rows, data dir, temp dir")
			if c.store != nil {
				d := t.Service.Desc
				if err := c.store.PutProof(ctx, store.Proof{Key: t.Key, Service: name, CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision(),
					Kind: launchproof.KindCanary, Passed: time.Now(), HostID: c.hostID, Version: c.build, Planted: int64(sent)}); err != nil {
					log.Warn("canary proof passed but not recorded: the next start proves this set again", "service", name, "error", err)
				}
			}
			c.board.ClearLocal(k)
		}
	}
	c.at("")
}
